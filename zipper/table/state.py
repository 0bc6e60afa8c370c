"""The committed state of a zipper table, read from its partition parameters in the metastore.

The open partition's parameters say which date the table is at; each closed partition's
parameters record the run that produced it (input fingerprint, counts, run id). Both are
written by the same metastore call that publishes the data, so they cannot drift from it."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from dataclasses import dataclass, field
from enum import StrEnum

from zipper.core import layout
from zipper.core.corrections import CorrectionKind
from zipper.core.dates import date_of
from zipper.core.errors import StateError
from zipper.core.properties import P_KEYS
from zipper.core.reports import SKIPPED
from zipper.table import catalog
from zipper.table.catalog_interface import Catalog, Partition
from zipper.tablespec.model import TableSpec

FORMAT_VERSION = "1"

# table properties
P_SPEC_NAME = "zipper.spec_name"
P_END_STYLE = "zipper.end_style"
P_OPEN_END = "zipper.open_end"
P_FORMAT = "zipper.format_version"
# zipper's own data columns (validity, deleted), comma-separated: a spec that drops one would read them as data
P_OWN_COLUMNS = "zipper.own_columns"

# partition parameters
LAST_COMMITTED = catalog.AT_PARAM
DS = "zipper.ds"
RUN_ID = catalog.RUN_PARAM
ROWS = "zipper.rows"
COMMITTED_AT = "zipper.committed_at"
FINGERPRINT = "zipper.fingerprint"
COUNTS = "zipper.counts"
ACTION = "zipper.action"  # what committed the date: a CommitAction (records before it: merge)
INIT_DS = "zipper.init_ds"
INIT_FINGERPRINT = "zipper.init_fingerprint"
LANDING = "zipper.landing"  # a landing-zone date: the files it consumed and where their copy is kept
COLUMNS = "zipper.columns"  # on the open partition: columns the last commit added or widened
# on the open partition: the double columns that were float once (their older values are floats), kept by
# every commit and restore, as the commits that widened them may be undone by a replay
FLOAT_COLUMNS = "zipper.float_columns"
REPLAY = "zipper.replay"  # on the open partition while a rerun's replay is under way
REPLAY_LANDING = "zipper.replay_landing."  # + ds: the landing-zone files a replayed date reads
# on the open partition: one record per row-level correction (+ its run id), carried by every later commit
CORRECTION = "zipper.correction."
# on each partition a correction rewrote (+ its run id): the rows it held before and after, and what went
CORRECTED = "zipper.corrected."
# on the open partition: one record per column rename or drop (`zipper alter`; + its run id), carried by every
# later commit; on each partition it rewrote (+ its run id): the rows it held before and after
ALTER = "zipper.alter."
ALTERED = "zipper.altered."


RUN_ID_TIME = "%Y%m%dT%H%M%S.%fZ"


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable and unique: UTC time of the run to the microsecond plus random bits; names the
    run's directory. Runs of one table are serial, so sorting run ids sorts runs by start."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime(RUN_ID_TIME) + "-" + secrets.token_hex(3)


def run_time(run_id: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(run_id.split("-")[0], RUN_ID_TIME).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


class CommitAction(StrEnum):
    """What committed a date, as its commit record says: a merge, a rerun's replay of it, or a rebuild."""

    MERGE = "merge"
    REPLAY = "replay"
    REBUILD = "rebuild"


@dataclass(frozen=True)
class Commit:
    """One committed date: what went in and what came out."""

    ds: str
    run_id: str
    committed_at: str
    fingerprint: str
    counts: dict
    rows: int
    end: str
    # what the date read beyond its fingerprint, as its source mode records it (a landing zone:
    # the range of files consumed and their kept copy, `landing_zone.files.Consumed.record`)
    landing: dict | None = None
    action: CommitAction = CommitAction.MERGE

    @classmethod
    def from_partition(cls, part: Partition) -> Commit:
        p = part.params
        return cls(
            ds=p[DS],
            run_id=p.get(RUN_ID, ""),
            committed_at=p.get(COMMITTED_AT, ""),
            fingerprint=p.get(FINGERPRINT, ""),
            counts=json.loads(p.get(COUNTS, "{}")),
            rows=int(p.get(ROWS, "0")),
            end=part.end,
            landing=json.loads(p[LANDING]) if LANDING in p else None,
            action=CommitAction(p.get(ACTION, CommitAction.MERGE)),
        )

    @property
    def skipped(self) -> str | None:
        """Why the date was committed without changes (`no input`: `on_missing_input: skip`), or None."""
        return self.counts.get(SKIPPED)

    def params(self) -> dict[str, str]:
        params = {
            DS: self.ds,
            RUN_ID: self.run_id,
            COMMITTED_AT: self.committed_at,
            FINGERPRINT: self.fingerprint,
            COUNTS: json.dumps(self.counts, sort_keys=True),
            ROWS: str(self.rows),
            ACTION: str(self.action),
        }
        if self.landing is not None:
            params[LANDING] = json.dumps(self.landing, sort_keys=True)
        return params


@dataclass(frozen=True)
class ReplayMarker:
    """A replay under way: the table was restored to `first - 1` and is being replayed up to `last`.

    Published with the restore and with every replayed date but the last, which clears it, so
    a table carrying it was left mid-way by a crash and the same rerun resumes it. For a landing
    zone it also carries, per replayed date, the record of the files that date consumed (the
    restore dropped their commit records), so a resumed replay reads the same kept copies."""

    first: dt.date
    last: dt.date
    run_id: str = ""
    landing: dict = field(default_factory=dict)  # ds text -> the record its commit had (`Commit.landing`)

    def params(self) -> dict[str, str]:
        params = {
            REPLAY: json.dumps(
                {"from": self.first.isoformat(), "to": self.last.isoformat(), "run_id": self.run_id}, sort_keys=True
            )
        }
        # one parameter per date: a Hive parameter value holds at most 4000 characters
        params.update({REPLAY_LANDING + ds: json.dumps(record, sort_keys=True) for ds, record in self.landing.items()})
        return params

    @classmethod
    def from_params(cls, params: dict[str, str]) -> ReplayMarker | None:
        if REPLAY not in params:
            return None
        value = json.loads(params[REPLAY])
        landing = {k[len(REPLAY_LANDING) :]: json.loads(v) for k, v in params.items() if k.startswith(REPLAY_LANDING)}
        return cls(
            dt.date.fromisoformat(value["from"]), dt.date.fromisoformat(value["to"]), value.get("run_id", ""), landing
        )


@dataclass(frozen=True)
class Correction:
    """One row-level correction (`zipper correct`): what it did, why, who ran it, and what it counted.

    Kept on the open partition by every later commit, restore and rebuild, so reruns can honour
    it. An erasure records its keys only as salted hashes (`hashes`: a directory of them), never
    the keys themselves: the commit log must not keep what was erased."""

    run_id: str
    kind: CorrectionKind
    reason: str
    by: str
    committed_at: str
    as_of: str  # the table's last committed date when the correction was published
    where: str = ""  # the predicate, as parsed (set, delete)
    assignments: dict = field(default_factory=dict)  # set: column -> value text
    first: str = ""  # --from (set, delete)
    last: str = ""  # --to
    keys: int = 0  # erase: keys asked for
    salt: str = ""  # erase: the salt of the hashes
    hashes: str = ""  # erase: the directory of the salted key hashes
    counts: dict = field(default_factory=dict)  # matched, removed, coalesced, partitions, rows_before, rows_after
    touched_last: str = ""  # the last day any version it changed was valid on (the table's date if one was open)
    removed: str = ""  # erase, delete: the directory of the removed versions' begin and end (no keys)
    undone_by: str = ""  # the rerun or rebuild that made its versions again from the inputs (--undo-corrections)

    def params(self) -> dict[str, str]:
        value = {
            "kind": str(self.kind),
            "reason": self.reason,
            "by": self.by,
            "committed_at": self.committed_at,
            "as_of": self.as_of,
            "counts": self.counts,
        }
        optional = {
            "where": self.where,
            "set": self.assignments,
            "from": self.first,
            "to": self.last,
            "keys": self.keys,
            "salt": self.salt,
            "hashes": self.hashes,
            "touched_last": self.touched_last,
            "undone_by": self.undone_by,
            "removed": self.removed,
        }
        value.update({k: v for k, v in optional.items() if v})
        return {CORRECTION + self.run_id: json.dumps(value, sort_keys=True)}

    @classmethod
    def from_param(cls, name: str, text: str) -> Correction:
        value = json.loads(text)
        return cls(
            run_id=name[len(CORRECTION) :],
            kind=CorrectionKind(value["kind"]),
            reason=value.get("reason", ""),
            by=value.get("by", ""),
            committed_at=value.get("committed_at", ""),
            as_of=value.get("as_of", ""),
            where=value.get("where", ""),
            assignments=value.get("set", {}),
            first=value.get("from", ""),
            last=value.get("to", ""),
            keys=int(value.get("keys", 0)),
            salt=value.get("salt", ""),
            hashes=value.get("hashes", ""),
            counts=value.get("counts", {}),
            touched_last=value.get("touched_last", ""),
            undone_by=value.get("undone_by", ""),
            removed=value.get("removed", ""),
        )

    def describe(self) -> str:
        """The correction in one phrase, as the refusals and the status name it."""
        match self.kind:
            case CorrectionKind.ERASE:
                what = f"erasure of {self.keys} key{'s' if self.keys != 1 else ''}"
            case CorrectionKind.SET:
                what = "set " + ", ".join(f"{k}={v}" for k, v in self.assignments.items()) + f" where {self.where}"
            case _:
                what = f"delete where {self.where}"
        return f"correction {self.run_id} ({what}; reason: {self.reason!r})"


def correction_params(params: dict[str, str]) -> dict[str, str]:
    """The correction records among an open partition's parameters: every commit carries them on."""
    return {k: v for k, v in params.items() if k.startswith(CORRECTION)}


def alter_params(params: dict[str, str]) -> dict[str, str]:
    """The `zipper alter` records among an open partition's parameters: every commit carries them on."""
    return {k: v for k, v in params.items() if k.startswith(ALTER)}


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
