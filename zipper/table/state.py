"""The committed state of a zipper table, read from its partition parameters in the metastore.

The open partition's parameters say which date the table is at; each closed partition's
parameters record the run that produced it (input fingerprint, counts, run id). Both are
written by the same metastore call that publishes the data, so they cannot drift from it.
What each parameter holds is zipper.table.records; its names are this module's too (state.DS,
state.Commit), as every job reads them here."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

from zipper.core import layout
from zipper.core.dates import date_of
from zipper.core.errors import StateError
from zipper.core.properties import P_KEYS
from zipper.table import catalog
from zipper.table.catalog_interface import Catalog, Partition
from zipper.table.records import (  # noqa: F401 - the records' names, as the jobs know them (state.DS)
    ACTION,
    ALTER,
    ALTERED,
    COLUMNS,
    COMMITTED_AT,
    CORRECTED,
    CORRECTION,
    COUNTS,
    DS,
    FINGERPRINT,
    FLOAT_COLUMNS,
    FORMAT_VERSION,
    INIT_ADOPTED,
    INIT_DS,
    INIT_FINGERPRINT,
    INIT_OPEN,
    LANDING,
    LAST_COMMITTED,
    NO_BASE_FINGERPRINT,
    P_END_STYLE,
    P_FORMAT,
    P_OPEN_END,
    P_OWN_COLUMNS,
    P_SPEC_NAME,
    REPLAY,
    REPLAY_LANDING,
    ROWS,
    RUN_ID,
    RUN_ID_TIME,
    Commit,
    CommitAction,
    Correction,
    ReplayMarker,
    alter_params,
    correction_params,
    is_dry_run_id,
    new_run_id,
    run_time,
)
from zipper.tablespec.model import TableSpec


def earliest_reachable_end(spec: TableSpec, moment) -> str:
    """The end value of the first closed partition a change at `moment` (a validity timestamp) can
    reach: a version that ends after `moment` was closed by the load of its date or later, so it
    is in that load's partition (`spec.closed_end`) or a later one. The one rule of which history a
    late change reads, for the change set's latest events and for putting late changes in place."""
    return spec.closed_end(date_of(moment)).isoformat()


@dataclass(frozen=True)
class TableState:
    exists: bool
    location: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    open_partition: Partition | None = None
    commits: dict[str, Commit] = field(default_factory=dict)  # by ds
    closed: list[Partition] = field(default_factory=list)
    pending: list[Partition] = field(default_factory=list)  # added, never published

    @property
    def initialized(self) -> bool:
        return self.open_partition is not None and LAST_COMMITTED in self.open_partition.params

    @property
    def last_committed(self) -> dt.date | None:
        if not self.initialized:
            return None
        return dt.date.fromisoformat(self.open_partition.params[LAST_COMMITTED])

    @property
    def open_run(self) -> str:
        """The run that published the open partition ("" before the first commit): a publish
        checks it is unchanged (catalog.repoint's expected_run)."""
        return self.open_partition.params.get(RUN_ID, "") if self.open_partition else ""

    @property
    def open_rows(self) -> int:
        return int(self.open_partition.params.get(ROWS, "0")) if self.open_partition else 0

    def reachable_from(self, spec: TableSpec, moment) -> list[Partition]:
        """The closed partitions a change at `moment` can reach (`earliest_reachable_end`)."""
        earliest = earliest_reachable_end(spec, moment)
        return [p for p in self.closed if p.end >= earliest]

    def kept_input_copies(self) -> list[str]:
        """The copies of their inputs that dates read from (a landing zone's consumed files),
        named by their commits' records, and by a replay under way for the dates its restore
        took away: kept so that those dates read the same again."""
        records = [c.landing for c in self.commits.values() if c.landing]
        records += list(self.replay.landing.values()) if self.replay else []
        return [r["kept"] for r in records if r.get("kept")]

    @property
    def recorded_column_change(self) -> dict[str, list[tuple[str, str]]]:
        """Columns the last commit added or widened ({"added": [(name, type)], "widened": [...]}),
        or that `zipper alter` renamed ({"renamed": [(old, new)]}) or dropped ({"dropped":
        [(name, type)]}), so a run can finish a schema change that a crash interrupted after the
        publish."""
        value = self.open_partition.params.get(COLUMNS) if self.open_partition else None
        raw = json.loads(value) if value else {}
        return {kind: [tuple(c) for c in raw.get(kind, [])] for kind in ("added", "widened", "renamed", "dropped")}

    @property
    def widened_from_float(self) -> frozenset[str]:
        """The columns some commit widened from float to double (its counts' `columns_widened`,
        `price float -> double`), or that the open partition records as such (`FLOAT_COLUMNS`)."""
        value = self.open_partition.params.get(FLOAT_COLUMNS) if self.open_partition else None
        names = set(json.loads(value)) if value else set()
        suffix = " float -> double"
        for commit in self.commits.values():
            names.update(
                entry[: -len(suffix)] for entry in commit.counts.get("columns_widened", []) if entry.endswith(suffix)
            )
        return frozenset(names)

    def float_columns_params(self, widened_today: set[str] = frozenset()) -> dict[str, str]:
        """The open partition's FLOAT_COLUMNS parameter once `widened_today` are widened too ({} if none)."""
        names = self.widened_from_float | set(widened_today)
        return {FLOAT_COLUMNS: json.dumps(sorted(names))} if names else {}

    @property
    def replay(self) -> ReplayMarker | None:
        """The replay a crash interrupted, if any (a marker at or behind the table is spent)."""
        marker = ReplayMarker.from_params(self.open_partition.params) if self.initialized else None
        return marker if marker is not None and marker.last > self.last_committed else None

    @property
    def corrections(self) -> list[Correction]:
        """The row-level corrections published to the table, oldest first (run ids sort by time)."""
        params = self.open_partition.params if self.open_partition else {}
        return [Correction.from_param(k, v) for k, v in sorted(correction_params(params).items())]

    @property
    def alters(self) -> list[dict]:
        """The column renames and drops published to the table (`zipper alter`), oldest first."""
        params = self.open_partition.params if self.open_partition else {}
        return [{"run_id": k[len(ALTER) :]} | json.loads(v) for k, v in sorted(alter_params(params).items())]

    @property
    def init_ds(self) -> dt.date | None:
        value = self.open_partition.params.get(INIT_DS) if self.open_partition else None
        return dt.date.fromisoformat(value) if value else None

    @property
    def adopted_from(self) -> str | None:
        """The table `zipper adopt` took the history up to the base date from (None: not adopted)."""
        return self.open_partition.params.get(INIT_ADOPTED) if self.open_partition else None

    @property
    def init_open(self) -> str | None:
        """The directory of the open rows `zipper adopt` wrote (None: not adopted, or not recorded)."""
        return self.open_partition.params.get(INIT_OPEN) if self.open_partition else None


def check_owned(st: TableState, spec: TableSpec, ds: dt.date | None = None) -> None:
    """Refuse a table zipper did not create, or whose spec changed what cannot change: its keys
    (every version is found by them) and its end style (every reader's date filters use it)."""
    if not st.exists:
        return
    where = {"table": spec.table, "ds": ds.isoformat() if ds else None}
    props = st.properties
    if P_SPEC_NAME not in props:
        raise StateError("table exists and was not created by zipper; refusing to change it", **where)
    recorded_keys = props.get(P_KEYS, "")
    # a spec may leave its keys to the table (a landing zone's to _metadata.json): nothing to compare
    if recorded_keys and spec.keys and recorded_keys.split(",") != spec.keys:
        raise StateError(
            f"spec keys {spec.keys} differ from the table's keys {recorded_keys.split(',')}; "
            "keys cannot change on an existing table",
            **where,
        )
    # turning such an option on is refused where the merge finds the column missing (conform)
    dropped = [c for c in props.get(P_OWN_COLUMNS, "").split(",") if c and c not in spec.own_columns]
    if dropped:
        raise StateError(
            f"the table's column(s) {dropped} are zipper's own (source.updated_at's validity, hard_deletes:"
            " new_record's deleted flag), and the spec no longer names them: an existing table cannot turn"
            " these options off or rename their columns (its versions and tombstones would be read as data);"
            " load it again as a new table",
            **where,
        )
    if props.get(P_END_STYLE, spec.end_style) != spec.end_style:
        raise StateError(
            f"spec end_style {spec.end_style} differs from the table's {props[P_END_STYLE]};"
            " a table's end style cannot change",
            **where,
        )


def read_state(spark, spec: TableSpec) -> TableState:
    return state_from(catalog.session_catalog(spark), spec)


def state_from(reader: Catalog, spec: TableSpec) -> TableState:
    """The table's committed state as `reader` sees the catalog: the session's
    (catalog.session_catalog) or one read without a JVM (thrift_catalog.ThriftCatalog)."""
    if not reader.table_exists(spec):
        return TableState(exists=False)
    properties = reader.table_properties(spec)
    location = reader.table_location(spec)
    if P_SPEC_NAME not in properties:  # not a zipper table: do not interpret it
        return TableState(exists=True, location=location, properties=properties)
    open_end = spec.open_end.isoformat()
    open_partition = None
    commits: dict[str, Commit] = {}
    closed: list[Partition] = []
    pending: list[Partition] = []
    for part in reader.list_partitions(spec):
        if part.end == open_end:
            open_partition = part
        elif DS in part.params:
            commits[part.params[DS]] = Commit.from_partition(part)
            closed.append(part)
        else:
            pending.append(part)
    return TableState(
        exists=True,
        location=location,
        properties=properties,
        open_partition=open_partition,
        commits=commits,
        closed=closed,
        pending=pending,
    )


def versions_root(state: TableState) -> str:
    return layout.versions_root(state.location)


def run_dir(state: TableState, run_id: str) -> str:
    return layout.run_dir(state.location, run_id)


def empty_dir(location: str) -> str:
    """A directory that stays empty: pending partitions point here until they are published."""
    return layout.empty_dir(location)
