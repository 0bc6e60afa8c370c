"""The records a zipper table keeps in its metastore entry: the parameter names, and what each
record holds (a date's commit, a replay under way, a row-level correction).

Kept apart from how the committed state is read (zipper.table.state) because the records are the
table's format: every writer builds them and every reader parses them, whichever catalog holds
them. Each record says what it stores and reads back its own parameters."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from dataclasses import dataclass, field
from enum import StrEnum

from zipper.core import names
from zipper.core.corrections import CorrectionKind
from zipper.core.reports import SKIPPED
from zipper.table.catalog_interface import AT_PARAM, RUN_PARAM, Partition

FORMAT_VERSION = "1"

# table properties
P_SPEC_NAME = "zipper.spec_name"
P_END_STYLE = "zipper.end_style"
P_OPEN_END = "zipper.open_end"
P_FORMAT = "zipper.format_version"
# zipper's own data columns (validity, deleted), comma-separated: a spec that drops one would read them as data
P_OWN_COLUMNS = "zipper.own_columns"

# partition parameters
LAST_COMMITTED = AT_PARAM
DS = "zipper.ds"
RUN_ID = RUN_PARAM
ROWS = "zipper.rows"
COMMITTED_AT = "zipper.committed_at"
FINGERPRINT = "zipper.fingerprint"
COUNTS = "zipper.counts"
ACTION = "zipper.action"  # what committed the date: a CommitAction (records before it: merge)
# the open partition's directory the date's commit left (a day without change keeps the one before):
# a rerun from the next date reads untracked values there, until vacuum removes it
OPEN_LOCATION = "zipper.open_location"
INIT_DS = "zipper.init_ds"
INIT_FINGERPRINT = "zipper.init_fingerprint"
INIT_ADOPTED = "zipper.init_adopted_from"  # the table `zipper adopt` took the history up to the base date from
# the directory of the open rows `zipper adopt` wrote: a rerun from the day after reads untracked values there
INIT_OPEN = "zipper.init_open"
# the INIT_FINGERPRINT of a table `zipper init` created without a base: its first input types it
NO_BASE_FINGERPRINT = names.NO_BASE_FINGERPRINT
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


DRY_RUN_TAG = "-dry"  # ends a dry run's id: what a killed one left is known by its directory's name


def new_run_id(now: dt.datetime | None = None, dry_run: bool = False) -> str:
    """Sortable and unique: UTC time of the run to the microsecond plus random bits; names the
    run's directory. Runs of one table are serial, so sorting run ids sorts runs by start. A dry
    run's id ends with DRY_RUN_TAG."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime(RUN_ID_TIME) + "-" + secrets.token_hex(3) + (DRY_RUN_TAG if dry_run else "")


def is_dry_run_id(run_id: str) -> bool:
    return run_id.endswith(DRY_RUN_TAG)


def run_time(run_id: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(run_id.split("-")[0], RUN_ID_TIME).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


class CommitAction(StrEnum):
    """What committed a date, as its commit record says: a merge, a rerun's replay of it, a rebuild, or an
    adoption (the versions a table written by hand closed that date)."""

    MERGE = "merge"
    REPLAY = "replay"
    REBUILD = "rebuild"
    ADOPT = "adopt"  # a history partition `zipper adopt` took over from a table written by hand


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
    open_location: str = ""  # the open rows at the end of the date (none recorded: a rebuild's, older ones)

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
            open_location=p.get(OPEN_LOCATION, ""),
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
        if self.open_location:
            params[OPEN_LOCATION] = self.open_location
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
