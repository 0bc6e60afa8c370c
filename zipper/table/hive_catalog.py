"""The Hive metastore as zipper's Catalog, over its thrift API (zipper.core.hms): no JVM on the client.

One implementation for every reader and writer: the data path reaches the metastore through its
Spark session's kept connection (`HiveCatalog.of_session`), the CLI's status, the no-op check and
the view through a connection of their own (zipper.table.thrift_catalog). The publish is
`repoint`: one `alter_partitions` call, which the metastore applies in a single transaction."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from zipper.core import faults, fs
from zipper.core.errors import StateError
from zipper.core.hms import LockNotGranted, LocksUnsupported, MetastoreClient
from zipper.core.paths import hadoop_path
from zipper.table import hive_schema
from zipper.table.catalog_interface import AT_PARAM, RUN_PARAM, ConcurrentChange, Partition, TableLocked
from zipper.table.session_metastore import session_metastore
from zipper.tablespec.model import TableSpec

FETCH_ONE_BY_ONE = 4
STATS_PARAMS = ("numRows", "rawDataSize", "totalSize", "numFiles", "COLUMN_STATS_ACCURATE")
# Hive's client drops it before an alter, so that the metastore stamps the time of this change.
DDL_TIME_PARAM = "transient_lastDdlTime"
# How long a publish waits for the table's metastore lock, which another publish holds for
# milliseconds (one killed while holding it: until the metastore times the lock out).
PUBLISH_LOCK_WAIT_S = 30.0
# Spark's table properties hide these (HiveClientImpl and HiveExternalCatalog): its own keys,
# the statistics, and the two Hive keeps in fields of their own.
HIDDEN_TABLE_PARAMS = (*STATS_PARAMS, "numPartitions", "comment", "EXTERNAL")

_without_locks: set[str] = set()  # metastores that refused the lock call, told once per process
log = logging.getLogger(__name__)


class HiveCatalog:
    """The Catalog (zipper.table.catalog_interface) of a Hive metastore, over thrift.

    `connect`: opens the metastore connection for one call (a context manager of a MetastoreClient).
    The table's definition is read once per HiveCatalog for its reads (`state.state_from` asks
    three questions about it); every write reads the table afresh."""

    def __init__(self, connect: Callable[[], AbstractContextManager[MetastoreClient]]):
        self._connect = connect
        self._tables: dict[str, object] = {}  # by database.table

    @classmethod
    def of_session(cls, spark) -> HiveCatalog:
        """The catalog of the session's metastore, through this thread's kept connection."""
        return cls(lambda: session_metastore(spark))

    def _table(self, metastore: MetastoreClient, spec: TableSpec):
        if spec.table not in self._tables:
            self._tables[spec.table] = metastore.table(spec.database, spec.table_name)
        return self._tables[spec.table]

    def _existing(self, metastore: MetastoreClient, spec: TableSpec):
        table = self._table(metastore, spec)
        if table is None:
            raise StateError("table does not exist in the metastore", table=spec.table)
        return table

    def _changed(self, spec: TableSpec) -> None:
        self._tables.pop(spec.table, None)  # a write: the next read asks the metastore again

    # -- reads

    def database_location(self, database: str) -> str | None:
        with self._connect() as metastore:
            found = metastore.database(database)
        return None if found is None else hadoop_path(found.locationUri or "")

    def table_exists(self, spec: TableSpec) -> bool:
        with self._connect() as metastore:
            return self._table(metastore, spec) is not None

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        with self._connect() as metastore:
            return _properties_of(self._existing(metastore, spec))

    def table_location(self, spec: TableSpec) -> str:
        with self._connect() as metastore:
            return hadoop_path(self._existing(metastore, spec).sd.location).rstrip("/")

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        """Every partition with its location and parameters, sorted by end value: two thrift calls,
        however many partitions the table has (one when the table was read already)."""
        with self._connect() as metastore:
            table = self._existing(metastore, spec)
            return partitions_of(spec, table, metastore.partitions(spec.database, spec.table_name))

    def column_types(self, spec: TableSpec) -> dict[str, str]:
        with self._connect() as metastore:
            return {column.name.lower(): column.type for column in self._existing(metastore, spec).sd.cols or []}

    def data_columns(self, spec: TableSpec) -> list[tuple[str, str]] | None:
        with self._connect() as metastore:
            stored = hive_schema.stored_schema(self._existing(metastore, spec).parameters or {})
        if stored is None:
            return None
        from pyspark.sql.types import StructType  # on use: as hive_schema.data_type

        fields = StructType.fromJson(stored).fields
        return [
            (f.name, f.dataType.simpleString()) for f in fields if f.name not in (spec.begin_column, spec.end_column)
        ]

    def signature(self, spec: TableSpec) -> tuple | None:
        """The table's parameters and its open partition's location and parameters (None: no such
        table). Equal signatures, equal committed state: a reader may keep the state it listed
        and skip listing every partition again."""
        with self._connect() as metastore:
            table = self._table(metastore, spec)
            if table is None:
                return None
            opened = metastore.partition(
                spec.database, spec.table_name, {spec.end_column: spec.open_end.isoformat()}, table
            )  # None too when the table has other partition columns: then no partition is open
        return (
            tuple(sorted((table.parameters or {}).items())),
            opened.sd.location if opened else None,
            tuple(sorted((opened.parameters or {}).items())) if opened else None,
        )

    def tables_named(self, database: str, pattern: str) -> dict[str, dict[str, str]]:
        with self._connect() as metastore:
            found = {}
            for name in metastore.table_names(database, pattern):
                table = metastore.table(database, name)
                if table is not None:
                    found[name] = _properties_of(table)
            return found

    # -- writes

    def add_partitions(self, spec: TableSpec, locations: dict[str, str]) -> None:
        """Each added as Hive adds one: the table's storage (columns, formats, serde) at its own
        location. Over thrift, as the publish itself: a Spark SQL statement was a Spark execution."""
        if not locations:
            return
        from pymetastore.hive_metastore.ttypes import Partition as HivePartition  # on use: as zipper.core.hms

        self._changed(spec)
        with self._connect() as metastore:
            table = self._existing(metastore, spec)
            if [column.name for column in table.partitionKeys or []] != [spec.end_column]:
                raise StateError(
                    f"the table is partitioned by {[c.name for c in table.partitionKeys or []]}, not by"
                    f" {spec.end_column} alone",
                    table=spec.table,
                )
            added = []
            for end, location in sorted(locations.items()):
                storage = copy.deepcopy(table.sd)
                storage.location = fs.qualify(location)
                added.append(
                    HivePartition(
                        values=[end], dbName=table.dbName, tableName=table.tableName, sd=storage, parameters={}
                    )
                )
            metastore.add_partitions(added, if_not_exists=True)

    def repoint(
        self, spec: TableSpec, changes: list[Partition], *, expected_run: str | None, ds: str | None = None
    ) -> None:
        """The partitions are read over thrift as the metastore holds them, edited here (location and
        parameters; their storage formats and every other field stay as they are), and sent back in
        one `alter_partitions` call: one metastore transaction, whatever the number of partitions.

        `expected_run`: the run id the open partition had when the caller read the table's state
        ("" before the first commit; None: no check, for repairs). If another run has published since
        (a rerun and a merge of one table at once, with an external metastore), nothing is published:
        ConcurrentChange. The check reads the open partition as fetched for the publish, so it costs
        no extra call.

        The read, the check and `alter_partitions` hold the metastore's exclusive lock on the table
        (`_publish_lock`), so that two clients publishing at the same moment take turns: the second
        reads what the first published and is refused. One that waits longer than
        PUBLISH_LOCK_WAIT_S is refused as well (TableLocked). A metastore without lock support
        publishes after the check alone, with one warning."""
        self._changed(spec)
        with self._connect() as metastore, _publish_lock(metastore, spec, ds):
            table = self._existing(metastore, spec)
            by_end = _fetched_for(metastore, spec, table, changes)
            if expected_run is not None:
                _require_unchanged(metastore, table, spec, by_end, expected_run, ds)
            missing = [change.end for change in changes if change.end not in by_end]
            if missing:
                raise StateError(f"cannot re-point partitions that do not exist: {missing}", table=spec.table, ds=ds)
            parts = [by_end[change.end] for change in changes]
            for part, change in zip(parts, changes):
                _edit_partition(part, change)
            metastore.alter_partitions(spec.database, spec.table_name, parts)

    def require_unchanged(self, spec: TableSpec, expected_run: str, ds: str | None = None) -> None:
        """Asked before a change that must not outlive a publish that will fail (a column's widening)."""
        self._changed(spec)  # the table as it is now
        with self._connect() as metastore:
            _require_unchanged(metastore, self._existing(metastore, spec), spec, {}, expected_run, ds)

    def write_data_columns(
        self, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None, *, threshold: int
    ) -> None:
        """Hive's columns and Spark's schema alike, in one `alter_table` call; each renamed column's
        comment follows it.

        A drop moves the later columns one place to the left, and the metastore compares the new
        types with the old ones place by place (`hms.POSITIONAL_TYPE_CHECK`). Where it lets this
        connection turn the check off (Hive 3 on), it does; else (Hive 2) the change is two calls,
        each of which the check passes: the columns before the first place whose type changes,
        then all of them (it compares only the places both lists have). Spark's schema is the
        final one from the first call, so a run killed between the two completes the second
        (`complete_data_columns`)."""
        self.planned_data_columns(spec, fields, renamed, threshold=threshold)()

    def planned_data_columns(
        self, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None, *, threshold: int
    ) -> Callable[[], None]:
        """`write_data_columns` with the table read now; the returned call opens a connection and
        writes (the calls `write_data_columns` describes, and nothing else)."""
        self._changed(spec)
        with self._connect() as metastore:
            table = self._existing(metastore, spec)
        old = list(table.sd.cols or [])
        existing = hive_schema.edited_columns(copy.deepcopy(old), dict(renamed or {}))
        new = hive_schema.hive_columns(fields, existing)
        params = hive_schema.schema_params(table, fields, threshold)
        params.pop(DDL_TIME_PARAM, None)
        table.parameters = params

        def write() -> None:
            with self._connect() as metastore, metastore.without_positional_type_check() as unchecked:
                kept = hive_schema.places_kept(old, new)
                if not unchecked and kept < min(len(old), len(new)):
                    table.sd.cols = new[:kept]
                    metastore.alter_table(spec.database, spec.table_name, table)
                    faults.checkpoint("between_column_calls")
                table.sd.cols = new
                metastore.alter_table(spec.database, spec.table_name, table)
            self._changed(spec)

        return write

    def complete_data_columns(self, spec: TableSpec) -> bool:
        """Give the table the Hive columns of its Spark schema where a change killed between its two
        calls left it with fewer (`write_data_columns`). True when it changed the table."""
        with self._connect() as metastore:
            table = self._existing(metastore, spec)
            stored = hive_schema.stored_schema(table.parameters or {})
            if stored is None:
                return False
            partitions = {column.name for column in table.partitionKeys or []}
            wanted = [field["name"] for field in stored["fields"] if field["name"] not in partitions]
            have = [column.name for column in table.sd.cols or []]
            if len(have) >= len(wanted) or wanted[: len(have)] != have:
                return False  # not a change stopped after its first call
            table.sd.cols = hive_schema.stored_columns(stored, partitions, table.sd.cols or [])
            metastore.alter_table(spec.database, spec.table_name, table)
        self._changed(spec)
        return True

    def copy_table(self, spec: TableSpec, name: str, location: str, properties: dict[str, str]) -> None:
        """Its definition and every partition as the metastore holds them (locations, columns,
        parameters), external, at `location`, with `properties` added. No file is copied: the copy's
        partitions point at the table's directories. Three metastore calls, however many partitions."""
        with self._connect() as metastore:
            table = self._existing(metastore, spec)
            parts = metastore.partitions(spec.database, spec.table_name)
            made = copy.deepcopy(table)
            made.tableName = name
            made.tableType = "EXTERNAL_TABLE"
            made.sd.location = fs.qualify(location)
            made.parameters = {
                k: v for k, v in (table.parameters or {}).items() if k not in STATS_PARAMS and k != DDL_TIME_PARAM
            }
            made.parameters.update({"EXTERNAL": "TRUE", **properties})
            made.createTime = made.lastAccessTime = 0
            metastore.create_table(made)
            copies = []
            for part in parts:
                part = copy.deepcopy(part)
                part.tableName = name
                part.parameters = {k: v for k, v in (part.parameters or {}).items() if k != DDL_TIME_PARAM}
                part.createTime = part.lastAccessTime = 0
                copies.append(part)
            if copies:
                metastore.add_partitions(copies)

    def drop_entry(self, database: str, name: str) -> None:
        self._tables.pop(f"{database}.{name}", None)
        with self._connect() as metastore:
            metastore.drop_table(database, name)


def partitions_of(spec: TableSpec, table, thrift_partitions: list) -> list[Partition]:
    """Thrift `Partition`s of `table` as Partitions, sorted by end value."""
    position = _end_position(spec, table)
    result = [
        Partition(
            end=part.values[position],
            location=hadoop_path(part.sd.location or ""),
            params={str(k): str(v) for k, v in (part.parameters or {}).items()},
        )
        for part in thrift_partitions
    ]
    return sorted(result, key=lambda p: p.end)


def _properties_of(table) -> dict[str, str]:
    """The table's properties as Spark's catalog shows them: without Spark's own and Hive's statistics."""
    return {
        str(k): str(v)
        for k, v in (table.parameters or {}).items()
        if not k.startswith("spark.sql.") and k not in HIDDEN_TABLE_PARAMS
    }


def _end_position(spec: TableSpec, table) -> int:
    names = [column.name for column in table.partitionKeys or []]
    if spec.end_column not in names:
        raise StateError(f"the table is not partitioned by {spec.end_column} (it is by {names})", table=spec.table)
    return names.index(spec.end_column)


def _fetched_for(metastore: MetastoreClient, spec: TableSpec, table, changes: list[Partition]) -> dict:
    """The thrift partitions `changes` name, by end value, as the metastore holds them now; one
    that is gone is left out (the recovery of a run that overtook this one drops pending ones)."""
    position = _end_position(spec, table)
    if len(changes) <= FETCH_ONE_BY_ONE:  # the daily merge: two partitions
        fetched = [
            metastore.partition(spec.database, spec.table_name, {spec.end_column: change.end}, table)
            for change in changes
        ]
    else:  # one metastore call instead of one per partition
        fetched = metastore.partitions(spec.database, spec.table_name)
    return {part.values[position]: part for part in fetched if part is not None}


def _edit_partition(part, change: Partition) -> None:
    """A thrift partition pointed at the change's location, its zipper parameters replaced."""
    kept = {
        k: v
        for k, v in (part.parameters or {}).items()
        if not k.startswith("zipper.") and k not in STATS_PARAMS and k != DDL_TIME_PARAM
    }
    kept.update(change.params)
    # as Spark's Hive client stores a location: the qualified path, not its URI escapes
    part.sd.location = fs.qualify(change.location)
    part.parameters = kept
    if change.column_edits:
        part.sd.cols = hive_schema.edited_columns(part.sd.cols or [], change.column_edits)


@contextlib.contextmanager
def _publish_lock(metastore: MetastoreClient, spec: TableSpec, ds: str | None) -> Iterator[None]:
    """The metastore's exclusive lock on the table for the block, or nothing (and one warning per
    metastore and process) when the metastore has no lock support: an external one whose
    transaction tables were never created."""
    agent = f"zipper publish {spec.table} {ds or ''} pid {os.getpid()}".replace("  ", " ")
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                metastore.exclusive_lock(spec.database, spec.table_name, wait_s=PUBLISH_LOCK_WAIT_S, agent=agent)
            )
        except LockNotGranted as refused:
            raise TableLocked(
                f"another client held the table's metastore lock for more than {PUBLISH_LOCK_WAIT_S:g} s"
                f" ({refused.holder}); nothing of this run was published. Run it again: it plans from the table"
                " as it is then (a date already committed is a no-op)",
                table=spec.table,
                ds=ds,
            ) from None
        except LocksUnsupported as unsupported:
            if metastore.uri not in _without_locks:
                _without_locks.add(metastore.uri)
                log.warning(
                    "zipper: warning: the metastore at %s refused a table lock (%s): publishes check the"
                    " table's last run without it, and two publishes within milliseconds are not told apart"
                    " (docs: The metastore service, The publish's lock)",
                    metastore.uri,
                    unsupported,
                )
        yield


def _require_unchanged(
    metastore: MetastoreClient, table, spec: TableSpec, fetched: dict, expected_run: str, ds: str | None
) -> None:
    open_end = spec.open_end.isoformat()
    part = fetched.get(open_end) or metastore.partition(
        spec.database, spec.table_name, {spec.end_column: open_end}, table
    )
    current = (part.parameters or {}) if part is not None else {}
    found = current.get(RUN_PARAM, "")
    if found != expected_run:
        raise ConcurrentChange(
            f"another run ({found or 'unknown'}, table now at {current.get(AT_PARAM, 'no date')}) published to the"
            " table while this one was running; nothing of this run was published. Run it again: it plans from"
            " the table as it is now (a date already committed is a no-op)",
            table=spec.table,
            ds=ds,
        )
