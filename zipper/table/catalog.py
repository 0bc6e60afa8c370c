"""Hive metastore operations. The publish step is `repoint`: one thrift `alter_partitions` call,
which the metastore applies in a single transaction.

DDL goes through Spark SQL and reads and the one-call writes through the metastore's thrift API
(zipper.core.hms): neither needs a JVM on the client, so the data path runs the same on a Spark
Connect session. The metastore is the one the session uses (its `hive.metastore.uris`)."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

from zipper.core import fs, sqltemplates
from zipper.core.errors import StateError
from zipper.core.hms import LockNotGranted, LocksUnsupported, MetastoreClient, MetastoreUnreachable
from zipper.core.paths import hadoop_path
from zipper.tablespec.model import TableSpec

# The open partition's parameters that name the run that published it and the date it is at
# (zipper.table.state's RUN_ID and LAST_COMMITTED).
RUN_PARAM = "zipper.run_id"
AT_PARAM = "zipper.last_committed"
FETCH_ONE_BY_ONE = 4
STATS_PARAMS = ("numRows", "rawDataSize", "totalSize", "numFiles", "COLUMN_STATS_ACCURATE")
# Hive's client drops it before an alter, so that the metastore stamps the time of this change.
DDL_TIME_PARAM = "transient_lastDdlTime"
# Where the thrift URI comes from: the session's Spark conf, else this variable (an external
# metastore configured in hive-site.xml, which a session's conf does not show).
URIS_CONF = "spark.hadoop.hive.metastore.uris"
URI_ENV = "ZIPPER_METASTORE_URI"
# How long a publish waits for the table's metastore lock, which another publish holds for
# milliseconds (one killed while holding it: until the metastore times the lock out).
PUBLISH_LOCK_WAIT_S = 30.0
# Spark keeps a Hive table's Spark schema in these table properties (HiveExternalCatalog), split
# into parts above the threshold, as the metastore's parameter values are limited in length.
SCHEMA_PARAM = "spark.sql.sources.schema"
SCHEMA_THRESHOLD_CONF = "spark.sql.sources.schemaStringLengthThreshold"
SCHEMA_THRESHOLD_DEFAULT = 4000
# Spark's table properties hide these (HiveClientImpl and HiveExternalCatalog): its own keys,
# the statistics, and the two Hive keeps in fields of their own.
HIDDEN_TABLE_PARAMS = (*STATS_PARAMS, "numPartitions", "comment", "EXTERNAL")
# Spark's schema keeps a char or varchar column as a string, its declared type in this metadata.
CHAR_VARCHAR_METADATA = "__CHAR_VARCHAR_TYPE_STRING"


@dataclass(frozen=True)
class Partition:
    end: str
    location: str
    params: dict[str, str] = field(default_factory=dict)
    # `zipper alter`: the partition's own Hive columns renamed (old -> new) or dropped (old -> None):
    # Hive keeps a column list per partition, and it must name what the new files hold
    column_edits: dict[str, str | None] | None = None


_session_uris: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a session's metastore setting


def metastore_uri(spark) -> str:
    """The thrift URI of the session's metastore: the session's conf (the warehouse's own server,
    or an external one given to Spark), else ZIPPER_METASTORE_URI. The session's setting is asked
    once (on a Spark Connect client each ask is a round trip; a merge makes several calls)."""
    try:
        setting = _session_uris[spark]
    except (KeyError, TypeError):  # not asked yet (or a session that cannot be weakly referenced)
        setting = spark.conf.get(URIS_CONF, None) or ""
        with contextlib.suppress(TypeError):
            _session_uris[spark] = setting
    configured = setting or os.environ.get(URI_ENV, "")
    uri = next((u.strip() for u in configured.split(",") if u.strip()), "")
    if not uri:
        raise StateError(
            f"no metastore URI: set {URIS_CONF} in the Spark conf or {URI_ENV}=thrift://host:port"
            " in the environment (the tables are read and published over the metastore's thrift API)"
        )
    return uri


_kept = threading.local()  # this thread's open connections, by (process, URI)
_without_locks: set[str] = set()  # metastores that refused the lock call, told once per process
log = logging.getLogger(__name__)


@contextlib.contextmanager
def _metastore(spark) -> Iterator[MetastoreClient]:
    """This thread's connection to the session's metastore, opened on first use and kept for the
    next call: the server sets up a store for each new connection (measured: 50-70 ms for a
    new connection and one call, 7 ms for the call on an open one), and a publish makes several
    calls. One the server has closed since (a restart) is opened again; one a call failed on
    is closed, and the failure told in one line."""
    from thrift.transport.TTransport import TTransportException  # on use: as zipper.core.hms

    uri = metastore_uri(spark)
    key = (os.getpid(), uri)  # a forked process opens its own: a socket is not shared
    kept = _kept.__dict__.setdefault("clients", {})
    client = kept.pop(key, None)  # taken while in use: a nested call opens another
    if client is not None and not client.is_open():
        client.__exit__(None, None, None)
        client = None
    if client is None:
        client = MetastoreClient(uri).__enter__()
    try:
        yield client
    except StateError:
        kept[key] = client  # zipper's own refusal, between calls: the connection is fine
        raise
    except (TTransportException, ConnectionError, TimeoutError) as exc:  # the socket's, not a file's
        client.__exit__(None, None, None)
        raise MetastoreUnreachable(
            f"the metastore at {uri} stopped answering ({type(exc).__name__}: {exc}); what it had not applied"
            " was not published, and the table is as its last commit says (`zipper status`; `zipper metastore"
            " status` shows the warehouse's server)"
        ) from None
    except BaseException:
        client.__exit__(None, None, None)
        raise
    kept[key] = client


def ensure_database(spark, database: str) -> None:
    # Asked first: the Hive metastore answers CREATE DATABASE IF NOT EXISTS for an existing
    # database with an AlreadyExistsException that it logs, with its Java stack, at ERROR level.
    with _metastore(spark) as metastore:
        exists = metastore.database(database) is not None
    if not exists:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {sqltemplates.quote_identifier(database)}")


def table_exists(spark, spec: TableSpec) -> bool:
    with _metastore(spark) as metastore:
        return metastore.table(spec.database, spec.table_name) is not None


def default_table_location(spark, spec: TableSpec) -> str:
    with _metastore(spark) as metastore:
        database = metastore.database(spec.database)
    if database is None:
        raise StateError(f"database {spec.database} does not exist", table=spec.table)
    return hadoop_path(database.locationUri).rstrip("/") + "/" + spec.table_name


def _existing_table(metastore: MetastoreClient, spec: TableSpec):
    table = metastore.table(spec.database, spec.table_name)
    if table is None:
        raise StateError("table does not exist in the metastore", table=spec.table)
    return table


def table_location(spark, spec: TableSpec) -> str:
    with _metastore(spark) as metastore:
        return _location_of(_existing_table(metastore, spec))


def _location_of(table) -> str:
    return hadoop_path(table.sd.location).rstrip("/")


def table_properties(spark, spec: TableSpec) -> dict[str, str]:
    with _metastore(spark) as metastore:
        return _properties_of(_existing_table(metastore, spec))


def _properties_of(table) -> dict[str, str]:
    """The table's properties as Spark's catalog shows them: without Spark's own and Hive's statistics."""
    return {
        str(k): str(v)
        for k, v in (table.parameters or {}).items()
        if not k.startswith("spark.sql.") and k not in HIDDEN_TABLE_PARAMS
    }


def create_table(
    spark, spec: TableSpec, columns: list[tuple[str, str]], location: str, properties: dict[str, str]
) -> None:
    ensure_database(spark, spec.database)
    spark.sql(
        sqltemplates.render(
            "create_table.sql",
            table=spec.table,
            columns=columns,
            begin_column=spec.begin_column,
            end_column=spec.end_column,
            open_end=spec.open_end.isoformat(),
            location=location,
            properties=sorted(properties.items()),
        )
    )


def list_partitions(spark, spec: TableSpec) -> list[Partition]:
    """Every partition with its location and parameters, sorted by end value: two thrift calls,
    however many partitions the table has."""
    with _metastore(spark) as metastore:
        table = _existing_table(metastore, spec)
        return partitions_of(spec, table, metastore.partitions(spec.database, spec.table_name))


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


def _end_position(spec: TableSpec, table) -> int:
    names = [column.name for column in table.partitionKeys or []]
    if spec.end_column not in names:
        raise StateError(f"the table is not partitioned by {spec.end_column} (it is by {names})", table=spec.table)
    return names.index(spec.end_column)


def add_partitions(spark, spec: TableSpec, locations: dict[str, str]) -> None:
    """Add partitions (end value -> location) in one metastore call, each as Hive adds one: the
    table's storage (columns, formats, serde) at its own location; one the table has is left as
    it is. Over thrift, as the publish itself: a Spark SQL statement was a Spark execution."""
    if not locations:
        return
    from pymetastore.hive_metastore.ttypes import Partition as HivePartition  # on use: as zipper.core.hms

    with _metastore(spark) as metastore:
        table = _existing_table(metastore, spec)
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
                HivePartition(values=[end], dbName=table.dbName, tableName=table.tableName, sd=storage, parameters={})
            )
        metastore.add_partitions(added, if_not_exists=True)


def drop_table(spark, spec: TableSpec) -> None:
    """The table's metastore entry (external: its files stay, for the caller to delete)."""
    spark.sql(f"DROP TABLE IF EXISTS {sqltemplates.quote_identifier(spec.table)}")


def copy_table(spark, spec: TableSpec, name: str, location: str, properties: dict[str, str]) -> None:
    """Create table `name` in the spec's database as a copy of the table's metastore entry: its
    definition and every partition as the metastore holds them (locations, columns, parameters),
    external, at `location`, with `properties` added. No file is copied: the copy's partitions
    point at the table's directories. Three metastore calls, however many partitions."""
    with _metastore(spark) as metastore:
        table = _existing_table(metastore, spec)
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


def tables_named(spark, database: str, pattern: str) -> dict[str, dict[str, str]]:
    """The database's tables whose names match `pattern` (`*` for any characters), with their properties."""
    with _metastore(spark) as metastore:
        found = {}
        for name in metastore.table_names(database, pattern):
            table = metastore.table(database, name)
            if table is not None:
                found[name] = _properties_of(table)
        return found


def drop_entry(spark, database: str, name: str) -> None:
    """Drop a table's metastore entry and its partitions', deleting no file."""
    with _metastore(spark) as metastore:
        metastore.drop_table(database, name)


def drop_partitions(spark, spec: TableSpec, ends: list[str]) -> None:
    if not ends:
        return
    clauses = ", ".join(
        f"PARTITION ({sqltemplates.quote_identifier(spec.end_column)} = {sqltemplates.quote_literal(end)})"
        for end in sorted(ends)
    )
    spark.sql(f"ALTER TABLE {sqltemplates.quote_identifier(spec.table)} DROP IF EXISTS {clauses}")


class ConcurrentChange(StateError):
    """Another run published to the table after this run read its state."""


def repoint(
    spark, spec: TableSpec, changes: list[Partition], *, expected_run: str | None, ds: str | None = None
) -> None:
    """Re-point partitions at new directories and replace their zipper parameters, atomically.

    The partitions are read over thrift as the metastore holds them, edited here (location and
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
    with _metastore(spark) as metastore, _publish_lock(metastore, spec, ds):
        table = _existing_table(metastore, spec)
        position = _end_position(spec, table)
        if len(changes) <= FETCH_ONE_BY_ONE:  # the daily merge: two partitions
            # one that is gone is left out: the recovery of a run that overtook this one drops pending ones
            fetched = [
                metastore.partition(spec.database, spec.table_name, {spec.end_column: change.end}, table)
                for change in changes
            ]
        else:  # one metastore call instead of one per partition
            fetched = metastore.partitions(spec.database, spec.table_name)
        by_end = {part.values[position]: part for part in fetched if part is not None}
        if expected_run is not None:
            _require_unchanged(metastore, table, spec, by_end, expected_run, ds)
        missing = [change.end for change in changes if change.end not in by_end]
        if missing:
            raise StateError(f"cannot re-point partitions that do not exist: {missing}", table=spec.table, ds=ds)
        parts = [by_end[change.end] for change in changes]
        for part, change in zip(parts, changes):
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
                part.sd.cols = _edited_columns(part.sd.cols or [], change.column_edits)
        metastore.alter_partitions(spec.database, spec.table_name, parts)
    # No refresh of the session's catalog: Spark lists a Hive table's partitions from the metastore
    # at every query, and a publish points them at new directories, which no listing cache holds.
    # A change of columns refreshes it (`_write_data_columns`); reads of the rows refresh first
    # (`table.store.table_rows`).


class TableLocked(ConcurrentChange):
    """Another client held the table's metastore lock for longer than a publish waits: nothing of
    this run was published. Not final: the next try finds the lock free."""


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


def require_unchanged(spark, spec: TableSpec, expected_run: str, ds: str | None = None) -> None:
    """ConcurrentChange if another run published since the caller read the table's state: asked
    before a change that must not outlive a publish that will fail (a column's widening)."""
    with _metastore(spark) as metastore:
        _require_unchanged(metastore, _existing_table(metastore, spec), spec, {}, expected_run, ds)


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


def refresh(spark, spec: TableSpec) -> None:
    spark.catalog.refreshTable(spec.table)


def data_columns(spark, spec: TableSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the stored data columns, without begin and end: read from the
    Spark schema the table keeps in its properties (one metastore call, where asking Spark is a
    plan analysis on the server), else as Spark reads the table."""
    with _metastore(spark) as metastore:
        stored = _stored_schema(_existing_table(metastore, spec).parameters or {})
    if stored is not None:
        from pyspark.sql.types import StructType  # on use: as _data_type

        fields = StructType.fromJson(stored).fields
    else:  # a table whose Spark schema is not in its properties: as Spark reads it
        fields = spark.table(spec.table).schema.fields
    return [(f.name, f.dataType.simpleString()) for f in fields if f.name not in (spec.begin_column, spec.end_column)]


def alter_data_columns(spark, spec: TableSpec, columns: list[tuple[str, str]]) -> None:
    """Make the table's data columns `columns`: widen the types of existing ones in place and
    append the new ones after the existing columns (the metastore checks types by position, so
    new columns go last, after the begin column). One metastore call; Parquet files are read by
    column name, so older files read NULL for an added column and their values widened.

    Written as Spark's `alterTableDataSchema` writes it: the Hive columns, and Spark's schema
    (the data columns, then the partition column) in the table's properties, which is what Spark
    reads the table's types from."""
    wanted = {name: _data_type(kind) for name, kind in columns}
    current = [(f.name, f.dataType) for f in spark.table(spec.table).schema.fields if f.name != spec.end_column]
    have = {name for name, _ in current}
    fields = [(name, wanted.get(name, kind)) for name, kind in current] + [
        (name, wanted[name]) for name, _ in columns if name not in have
    ]
    _write_data_columns(spark, spec, fields)


def edit_data_columns(spark, spec: TableSpec, edits: dict[str, str | None]) -> None:
    """Rename (old -> new) or drop (old -> None) data columns of the table, each renamed one in
    its place with its type and comment: `zipper alter`, after its partitions were published with
    files under the new names. One metastore call."""
    current = [(f.name, f.dataType) for f in spark.table(spec.table).schema.fields if f.name != spec.end_column]
    fields = [(edits.get(name, name), kind) for name, kind in current if edits.get(name, name) is not None]
    _write_data_columns(spark, spec, fields, {old: new for old, new in edits.items() if new})


def _edited_columns(columns: list, edits: dict[str, str | None]) -> list:
    """Hive columns (FieldSchema) with `edits` applied: renamed in place, dropped ones left out."""
    kept = []
    for column in columns:
        name = edits.get(column.name, column.name)
        if name is not None:
            column.name = name
            kept.append(column)
    return kept


def _write_data_columns(spark, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None) -> None:
    """The table's data columns made `fields` ((name, Spark DataType)), Hive's and Spark's alike;
    `renamed`: old -> new names, whose comments follow them."""
    threshold = int(spark.conf.get(SCHEMA_THRESHOLD_CONF, None) or SCHEMA_THRESHOLD_DEFAULT)
    with _metastore(spark) as metastore:
        table = _existing_table(metastore, spec)
        existing = _edited_columns(table.sd.cols or [], dict(renamed or {}))
        table.sd.cols = _hive_columns(fields, existing)
        partition_fields = _partition_fields(table)
        schema = {"type": "struct", "fields": [_schema_field(name, kind) for name, kind in fields] + partition_fields}
        params = {k: v for k, v in (table.parameters or {}).items() if not _is_schema_param(k) and k != DDL_TIME_PARAM}
        params.update(_schema_params(json.dumps(schema, separators=(",", ":"), ensure_ascii=False), threshold))
        params[f"{SCHEMA_PARAM}.numPartCols"] = str(len(table.partitionKeys or []))
        for index, column in enumerate(table.partitionKeys or []):
            params[f"{SCHEMA_PARAM}.partCol.{index}"] = column.name
        table.parameters = params
        metastore.alter_table(spec.database, spec.table_name, table)
    refresh(spark, spec)


def _data_type(kind: str):
    from pyspark.sql import types as T  # on use: the thrift reader of the committed state loads no pyspark

    return T._parse_datatype_string(kind)


def _hive_columns(fields: list, existing: list) -> list:
    """The Hive columns of `fields` ((name, Spark DataType)), each existing one's comment kept."""
    from pymetastore.hive_metastore.ttypes import FieldSchema  # on use: as zipper.core.hms

    comments = {column.name.lower(): column.comment for column in existing}
    return [FieldSchema(name, kind.simpleString(), comments.get(name.lower())) for name, kind in fields]


def _schema_field(name: str, kind) -> dict:
    from pyspark.sql import types as T  # on use: as _data_type

    metadata = {}
    if isinstance(kind, (T.CharType, T.VarcharType)):  # as Spark writes them, for Spark 2 to read
        metadata, kind = {CHAR_VARCHAR_METADATA: kind.simpleString()}, T.StringType()
    return {"name": name, "type": kind.jsonValue(), "nullable": True, "metadata": metadata}


def _partition_fields(table) -> list[dict]:
    """The partition columns' fields of Spark's schema as the table holds it (else their types as
    Hive declares them)."""
    stored = _stored_schema(table.parameters or {})
    by_name = {f["name"]: f for f in stored.get("fields", [])} if stored else {}
    return [
        by_name.get(column.name) or _schema_field(column.name, _data_type(column.type))
        for column in table.partitionKeys or []
    ]


def _stored_schema(params: dict[str, str]) -> dict | None:
    if SCHEMA_PARAM in params:
        return json.loads(params[SCHEMA_PARAM])
    parts = params.get(f"{SCHEMA_PARAM}.numParts")
    if parts is None:
        return None
    return json.loads("".join(params[f"{SCHEMA_PARAM}.part.{i}"] for i in range(int(parts))))


def _is_schema_param(key: str) -> bool:
    """Spark's CatalogTable.isLargeTableProp for the schema: its whole value, or a count and parts."""
    return key in (SCHEMA_PARAM, f"{SCHEMA_PARAM}.numParts") or key.startswith(f"{SCHEMA_PARAM}.part.")


def _schema_params(schema_json: str, threshold: int) -> dict[str, str]:
    """Spark's CatalogTable.splitLargeTableProp: one value up to `threshold` characters, else parts."""
    if len(schema_json) <= threshold:
        return {SCHEMA_PARAM: schema_json}
    parts = [schema_json[i : i + threshold] for i in range(0, len(schema_json), threshold)]
    return {f"{SCHEMA_PARAM}.numParts": str(len(parts))} | {
        f"{SCHEMA_PARAM}.part.{i}": part for i, part in enumerate(parts)
    }


class SparkCatalog:
    """The four questions `state.state_from` asks, about the session's metastore: read over its
    thrift API (no JVM), the table once per reader and its partitions in one call."""

    def __init__(self, spark):
        self.spark = spark
        self._tables: dict[str, object] = {}  # by database.table: three of the questions are about it

    def _table(self, spec: TableSpec):
        if spec.table not in self._tables:
            with _metastore(self.spark) as metastore:
                self._tables[spec.table] = metastore.table(spec.database, spec.table_name)
        return self._tables[spec.table]

    def table_exists(self, spec: TableSpec) -> bool:
        return self._table(spec) is not None

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        return _properties_of(self._table(spec))

    def table_location(self, spec: TableSpec) -> str:
        return _location_of(self._table(spec))

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        table = self._table(spec)
        with _metastore(self.spark) as metastore:
            return partitions_of(spec, table, metastore.partitions(spec.database, spec.table_name))
