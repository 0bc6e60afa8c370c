"""Every partition move a job publishes, built and committed here.

Nothing a reader can see changes until `catalog.repoint`, one metastore transaction that moves
the open partition (and history partitions) to new directories together with the commit
record. Before it, a failure leaves the table as it was; after it, the commit is complete.
Partitions a publish needs and the table lacks are first added pointing at the empty directory
(invisible to readers, and dropped by `recovery.recover` if the run dies before the publish).

The open partition's parameters are built by one function, `_open_params`, for every job: the
init, a merged or replayed date, a rerun's restore and a rebuild. The fault checkpoints around
each publish are the ones `zipper.core.faults` names, in the same order."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import dataclass

from zipper.core import faults, fs
from zipper.core.dates import DAY, utc_now_iso
from zipper.core.errors import StateError
from zipper.table import catalog, state
from zipper.table.catalog import Partition
from zipper.tablespec.model import TableSpec


@dataclass(frozen=True)
class DayCommit:
    """What one merged (or replayed) date publishes: where it wrote, what it counted, what it read."""

    ds: dt.date
    run_id: str
    run_root: str
    open_dir: str
    closed_dir: str
    counts: dict  # the audited counts: open_after and closed among them
    fingerprint: str  # of the day's input
    landing: dict | None = None  # a landing zone's record of the files the day consumed
    action: state.CommitAction = state.CommitAction.MERGE  # or REPLAY: a rerun's date (the commit log shows which)
    rewritten: tuple = ()  # history partitions the day's late changes wrote again (`Rewritten`), published with it
    carry_params: dict[str, str] | None = None  # extra open-partition parameters (a replay keeps its marker so)


@dataclass(frozen=True)
class DayColumns:
    """The columns a date publishes with: what the day did to them (`changes`, a
    `conform.ColumnChanges`), the table's columns before it, the day's own, and the double columns
    now compared at float precision (`widened_from_float`)."""

    changes: object
    table_columns: list[tuple[str, str]]
    day_columns: list[tuple[str, str]]
    widened_from_float: set[str]


@dataclass(frozen=True)
class InitCommit:
    """The table's first state: the base's rows (or none) open as of `ds`."""

    ds: dt.date
    run_id: str
    open_dir: str
    rows: int
    fingerprint: str  # of the base


@dataclass(frozen=True)
class RestoreCommit:
    """A replay's restore: the table as it was at the end of `first` - 1, recording `marker`.
    `undone`: correction records to replace, marked as undone by this replay."""

    first: dt.date
    run_id: str
    open_dir: str
    rows: int
    marker: state.ReplayMarker
    undone: dict[str, str] | None = None


@dataclass(frozen=True)
class RebuildCommit:
    """A rebuild up to `end`: the open partition and each date's history partition at their new
    directories, with each date's counts and input fingerprint, and the open partition's init record."""

    run_id: str
    run_root: str
    end: dt.date
    open_dir: str
    open_rows: int
    closed_dirs: dict[dt.date, str]
    counts: dict[dt.date, dict]
    fingerprints: dict[dt.date, str]
    init_params: dict[str, str]


@dataclass(frozen=True)
class AdoptCommit:
    """A table `zipper adopt` took over: its open rows, and the versions each date closed."""

    through: dt.date
    run_id: str
    run_root: str
    open_dir: str
    open_rows: int
    closed_dirs: dict[dt.date, str]  # the date whose run closed them -> their directory
    closed_rows: dict[dt.date, int]
    source: str  # the table adopted
    # with untracked columns: the open rows are recorded and kept, as a rerun from the day after
    # `through` takes the untracked values from them (there is no base nor input before it)
    open_kept: bool = False


@dataclass(frozen=True)
class AlterCommit:
    """A column rename or drop: every partition rewritten (`rewritten`), the alter's record, the
    column edits (old name -> new name, or None for a drop) and the columns' record."""

    run_id: str
    record: dict
    run_root: str
    rewritten: list
    edits: dict[str, str | None]
    column_record: dict


def _open_params(
    kept: dict[str, str], last_committed: str, run_id: str, rows: int, committed_at: str, *more: dict[str, str]
) -> dict[str, str]:
    """The open partition's parameters: `kept` ones, the commit of `last_committed`, then `more`."""
    params = dict(kept)
    params.update(
        {
            state.LAST_COMMITTED: last_committed,
            state.RUN_ID: run_id,
            state.ROWS: str(rows),
            state.COMMITTED_AT: committed_at,
        }
    )
    for extra in more:
        params.update(extra)
    return params


def _init_params(st: state.TableState) -> dict[str, str]:
    """The base's record (date and fingerprint), the corrections' and the alters' records: every commit
    carries them on."""
    params = st.open_partition.params
    return (
        {k: v for k, v in params.items() if k.startswith("zipper.init_")}
        | state.correction_params(params)
        | state.alter_params(params)
    )


@contextlib.contextmanager
def _discarded_if_overtaken(spark, run_root: str):
    """A run another run published before deletes what it wrote, then fails."""
    try:
        yield
    except catalog.ConcurrentChange:
        fs.delete(run_root)  # written for a table state that is gone
        raise


def publish_init(spark, spec: TableSpec, st: state.TableState, init: InitCommit) -> None:
    """The table's first state: the base's rows (or none) open as of `init.ds`."""
    ds, run_id, open_dir, rows, fingerprint = init.ds, init.run_id, init.open_dir, init.rows, init.fingerprint
    open_end = spec.open_end.isoformat()
    catalog.add_partitions(spark, spec, {open_end: state.empty_dir(st.location)})
    fs.mkdirs(state.empty_dir(st.location))
    params = _open_params(
        {},
        ds.isoformat(),
        run_id,
        rows,
        utc_now_iso(),
        {state.INIT_DS: ds.isoformat(), state.INIT_FINGERPRINT: fingerprint},
    )
    catalog.repoint(spark, spec, [Partition(open_end, open_dir, params)], expected_run=st.open_run, ds=ds.isoformat())


def publish_adoption(spark, spec: TableSpec, st: state.TableState, adopted: AdoptCommit) -> None:
    """An adopted table's first state, in one repoint: the open rows as of `adopted.through`, and a
    history partition per closing date with its commit record (action `adopt`). Its partitions are
    added at the empty directory first, so a kill before the repoint leaves nothing a reader sees
    (the next adopt or run drops them)."""
    through, run_id = adopted.through.isoformat(), adopted.run_id
    fingerprint = f"adopted:{adopted.source}"
    empty = state.empty_dir(st.location)
    fs.mkdirs(empty)
    now = utc_now_iso()
    closed = [
        _history_partition(
            spec,
            day,
            directory,
            run_id,
            now,
            fingerprint,
            {"closed": adopted.closed_rows[day]},
            state.CommitAction.ADOPT,
        )
        for day, directory in sorted(adopted.closed_dirs.items())
    ]
    open_end = spec.open_end.isoformat()
    catalog.add_partitions(spark, spec, {p.end: empty for p in [Partition(open_end, empty, {}), *closed]})
    faults.checkpoint("before_adopt_publish")
    base = {state.INIT_DS: through, state.INIT_FINGERPRINT: fingerprint, state.INIT_ADOPTED: adopted.source}
    if adopted.open_kept:
        base[state.INIT_OPEN] = adopted.open_dir
    params = _open_params({}, through, run_id, adopted.open_rows, now, base)
    with _discarded_if_overtaken(spark, adopted.run_root):
        catalog.repoint(
            spark, spec, [Partition(open_end, adopted.open_dir, params), *closed], expected_run=st.open_run, ds=through
        )


def _history_partition(
    spec: TableSpec,
    day: dt.date,
    directory: str,
    run_id: str,
    now: str,
    fingerprint: str,
    counts: dict,
    action: state.CommitAction,
) -> Partition:
    """The history partition of the versions `day`'s run closed, at `directory`, with the commit
    record of `day` (a rebuild's or an adoption's: their closed rows are `counts["closed"]`)."""
    end = spec.closed_end(day).isoformat()
    commit = state.Commit(day.isoformat(), run_id, now, fingerprint, counts, counts["closed"], end, action=action)
    return Partition(end, directory, commit.params())


def publish_day(spark, spec: TableSpec, st: state.TableState, day: DayCommit, columns: DayColumns) -> None:
    """One date's new open partition and its closed partition, with its commit record.

    The day's column changes (`columns.changes`): a widening is applied to the table just before
    the repoint (older files read the same values through the wider type, while the new files
    need it); added columns (`columns.day_columns`) just after it, so that a column never shows
    before the data that fills it. The open partition records them, so that a run killed in
    between is completed by the next one (`recovery.recover`)."""
    column_changes, table_columns, day_columns = columns.changes, columns.table_columns, columns.day_columns
    ds_text = day.ds.isoformat()
    closed_end = spec.closed_end(day.ds).isoformat()
    if closed_end in {p.end for p in st.closed}:
        raise StateError(
            f"partition {spec.end_column}={closed_end} already holds a commit", table=spec.table, ds=ds_text
        )
    if closed_end not in {p.end for p in st.pending}:
        fs.mkdirs(state.empty_dir(st.location))
        catalog.add_partitions(spark, spec, {closed_end: state.empty_dir(st.location)})
    faults.checkpoint("before_publish")

    now = utc_now_iso()
    open_params = _open_params(
        _init_params(st),
        ds_text,
        day.run_id,
        day.counts["open_after"],
        now,
        st.float_columns_params(columns.widened_from_float),
        day.carry_params or {},
    )
    if column_changes.alters_table:
        open_params[state.COLUMNS] = json.dumps(column_changes.record(), sort_keys=True)
    commit = state.Commit(
        ds_text,
        day.run_id,
        now,
        day.fingerprint,
        day.counts,
        day.counts["closed"],
        closed_end,
        day.landing,
        day.action,
        day.open_dir,
    )
    with _discarded_if_overtaken(spark, day.run_root):
        if column_changes.widened:
            catalog.require_unchanged(spark, spec, st.open_run, ds_text)  # not widened for a run that cannot publish
            wider = dict((name, new) for name, _, new in column_changes.widened)
            catalog.alter_data_columns(spark, spec, [(name, wider.get(name, kind)) for name, kind in table_columns])
        catalog.repoint(
            spark,
            spec,
            [
                Partition(spec.open_end.isoformat(), day.open_dir, open_params),
                Partition(closed_end, day.closed_dir, commit.params()),
                *_rewritten_partitions(st, day),
            ],
            expected_run=st.open_run,
            ds=ds_text,
        )
    if column_changes.added:
        faults.checkpoint("before_add_columns")
        catalog.alter_data_columns(spark, spec, day_columns)
    faults.checkpoint("after_publish")


def _rewritten_partitions(st: state.TableState, day: DayCommit) -> list[Partition]:
    """History partitions a day's late changes wrote again: at their new directories, each keeping
    its commit record with its new row count, and noting the date that rewrote it."""
    by_end = {p.end: p for p in st.closed}
    partitions = []
    for part in day.rewritten:
        params = {k: v for k, v in by_end[part.end].params.items() if k.startswith("zipper.")}
        params[state.ROWS] = str(part.rows)
        params[LATE_FROM + day.ds.isoformat()] = day.run_id
        partitions.append(Partition(part.end, part.directory, params))
    return partitions


LATE_FROM = "zipper.late_from."  # + the date whose late changes rewrote the partition: its run id


def late_rewrites(st: state.TableState) -> dict[dt.date, list[str]]:
    """The dates whose late changes rewrote history partitions, each with those partitions' end
    values (from the partitions' `LATE_FROM` records)."""
    found: dict[dt.date, list[str]] = {}
    for part in st.closed:
        for name in part.params:
            if name.startswith(LATE_FROM):
                found.setdefault(dt.date.fromisoformat(name[len(LATE_FROM) :]), []).append(part.end)
    return {d: sorted(ends) for d, ends in sorted(found.items())}


def publish_marker(spark, spec: TableSpec, st: state.TableState, marker: state.ReplayMarker) -> None:
    """Record a replay that starts right after the last committed date (nothing to restore)."""
    params = {
        k: v
        for k, v in st.open_partition.params.items()
        if k.startswith("zipper.") and not k.startswith((state.REPLAY, state.REPLAY_LANDING))
    }
    catalog.repoint(
        spark,
        spec,
        [Partition(spec.open_end.isoformat(), st.open_partition.location, params | marker.params())],
        expected_run=st.open_run,
    )


def publish_restore(spark, spec: TableSpec, st: state.TableState, restore: RestoreCommit) -> list[str]:
    """The table as it was at the end of first - 1, recording the replay's marker: the open
    partition at the restored rows, every history partition made by the runs of `first` and later
    at the empty directory, then dropped. Returns the dropped partitions' end values."""
    first, run_id, open_dir, rows = restore.first, restore.run_id, restore.open_dir, restore.rows
    marker, undone = restore.marker, restore.undone
    closed_end = spec.closed_end(first).isoformat()
    dropped = [p.end for p in st.closed if p.end >= closed_end]
    empty = state.empty_dir(st.location)
    fs.mkdirs(empty)
    open_params = _open_params(
        _init_params(st),
        (first - DAY).isoformat(),
        run_id,
        rows,
        utc_now_iso(),
        st.float_columns_params(),  # the commits that widened them may be dropped here
        marker.params(),
        undone or {},
    )
    catalog.repoint(
        spark,
        spec,
        [Partition(spec.open_end.isoformat(), open_dir, open_params)] + [Partition(end, empty, {}) for end in dropped],
        expected_run=st.open_run,
        ds=first.isoformat(),
    )
    faults.checkpoint("after_restore_publish")
    # Empty and without a commit record: `recovery.recover` drops them too if this run dies here.
    catalog.drop_partitions(spark, spec, dropped)
    return dropped


def publish_rebuild(spark, spec: TableSpec, st: state.TableState, rebuilt: RebuildCommit) -> None:
    """A rebuilt table: the open partition and every history partition at the new directories,
    with a commit record per date; partitions that no longer belong at the empty directory, then
    dropped."""
    run_id, run_root, end, open_dir, open_rows = (
        rebuilt.run_id,
        rebuilt.run_root,
        rebuilt.end,
        rebuilt.open_dir,
        rebuilt.open_rows,
    )
    closed_dirs, counts, fingerprints, init_params = (
        rebuilt.closed_dirs,
        rebuilt.counts,
        rebuilt.fingerprints,
        rebuilt.init_params,
    )
    empty = state.empty_dir(st.location)
    fs.mkdirs(empty)
    now = utc_now_iso()
    wanted = {
        spec.closed_end(day).isoformat(): _history_partition(
            spec, day, directory, run_id, now, fingerprints[day], counts[day], state.CommitAction.REBUILD
        )
        for day, directory in closed_dirs.items()
    }
    existing = {p.end for p in st.closed + st.pending}
    stale = sorted(existing - set(wanted))
    catalog.add_partitions(spark, spec, {e: empty for e in wanted if e not in existing})
    faults.checkpoint("before_rebuild_publish")
    # later merges compare the float columns at float precision
    open_params = _open_params(dict(init_params) | st.float_columns_params(), end.isoformat(), run_id, open_rows, now)
    with _discarded_if_overtaken(spark, run_root):
        catalog.repoint(
            spark,
            spec,
            [Partition(spec.open_end.isoformat(), open_dir, open_params), *wanted.values()]
            + [Partition(e, empty, {}) for e in stale],
            expected_run=st.open_run,
            ds=end.isoformat(),
        )
    faults.checkpoint("after_rebuild_publish")
    catalog.drop_partitions(spark, spec, stale)


def publish_copy(spark, spec: TableSpec, st: state.TableState, copied: TableSpec) -> None:
    """The state a job left on a working copy of the table (`clone.working_copy`) as the table's, in
    one repoint: the copy's open partition and history partitions (their directories are the
    table's own, their commit records as the job wrote them), partitions the copy lacks at the
    empty directory, then dropped. The copy's column types are given to the table just before (a
    widening), its added columns just after, as a merge does; the open partition records both, for
    a run to finish what a kill between left (`recovery.recover`)."""
    done = state.read_state(spark, copied)
    empty = state.empty_dir(st.location)
    fs.mkdirs(empty)
    wanted = {p.end: p for p in done.closed}
    existing = {p.end for p in st.closed + st.pending}
    stale = sorted(existing - set(wanted))
    catalog.add_partitions(spark, spec, {e: empty for e in wanted if e not in existing})
    columns, copied_columns = catalog.data_columns(spark, spec), catalog.data_columns(spark, copied)
    if columns != copied_columns:
        catalog.require_unchanged(spark, spec, st.open_run, done.last_committed.isoformat())
        typed = dict(copied_columns)
        catalog.alter_data_columns(spark, spec, [(name, typed.get(name, kind)) for name, kind in columns])
    faults.checkpoint("before_rebuild_publish")

    def own(part: Partition) -> Partition:
        return Partition(part.end, part.location, {k: v for k, v in part.params.items() if k.startswith("zipper.")})

    opened = own(done.open_partition)
    if columns != copied_columns:
        had = dict(columns)
        changed = {
            "added": [[name, kind] for name, kind in copied_columns if name not in had],
            "widened": [[name, kind] for name, kind in copied_columns if name in had and had[name] != kind],
        }
        opened.params[state.COLUMNS] = json.dumps(changed, sort_keys=True)
    catalog.repoint(
        spark,
        spec,
        [opened, *[own(p) for p in wanted.values()]] + [Partition(e, empty, {}) for e in stale],
        expected_run=st.open_run,
        ds=done.last_committed.isoformat(),
    )
    faults.checkpoint("after_rebuild_publish")
    if columns != copied_columns:
        catalog.alter_data_columns(spark, spec, copied_columns)
    catalog.drop_partitions(spark, spec, stale)


@dataclass(frozen=True)
class Rewritten:
    """One partition a correction wrote again: its new directory and what it counted there."""

    end: str
    directory: str
    rows: int  # rows written (the audit checked them)
    counts: dict  # rows before, removed, coalesced, fixed, after


def publish_correction(
    spark,
    spec: TableSpec,
    st: state.TableState,
    correction: state.Correction,
    run_root: str,
    rewritten: list[Rewritten],
) -> None:
    """Every partition a correction rewrote at its new directory, with the correction's record,
    in one metastore transaction: readers see the table before or after, never between.

    The open partition is always part of it, rewritten or not: its run id becomes the
    correction's, so a merge that read the table before fails its publish (`ConcurrentChange`)
    instead of publishing a day computed from rows the correction replaced. The table's date
    does not move; each rewritten partition keeps its commit record, with its new row count and
    the correction's counts there."""
    open_end = spec.open_end.isoformat()
    by_end = {p.end: p for p in [st.open_partition, *st.closed]}
    changes = []
    for part in rewritten:
        params = {k: v for k, v in by_end[part.end].params.items() if k.startswith("zipper.")}
        params[state.ROWS] = str(part.rows)
        params[state.CORRECTED + correction.run_id] = json.dumps(part.counts, sort_keys=True)
        changes.append(Partition(part.end, part.directory, params))
    if open_end not in {part.end for part in rewritten}:
        params = {k: v for k, v in st.open_partition.params.items() if k.startswith("zipper.")}
        changes.append(Partition(open_end, st.open_partition.location, params))
    opened = next(change for change in changes if change.end == open_end)
    opened.params.update({state.RUN_ID: correction.run_id} | correction.params())
    faults.checkpoint("before_correct_publish")
    with _discarded_if_overtaken(spark, run_root):
        catalog.repoint(spark, spec, changes, expected_run=st.open_run, ds=correction.as_of)
    faults.checkpoint("after_correct_publish")


def publish_alter(spark, spec: TableSpec, st: state.TableState, alter: AlterCommit) -> None:
    """Every partition of the table at its rewritten directory (files under the new column names,
    or without the dropped column), with the alter's record, in one metastore transaction; then
    the table's columns renamed or dropped to match.

    The open partition records the column change (`state.COLUMNS`), so a run killed between
    the two metastore calls is completed by the next run of the table (`recovery.recover`).
    Its run id becomes the alter's, so a merge that read the table before fails its publish
    (`ConcurrentChange`). The table's date does not move."""
    run_id, record, run_root, rewritten = alter.run_id, alter.record, alter.run_root, alter.rewritten
    edits, column_record = alter.edits, alter.column_record
    open_end = spec.open_end.isoformat()
    by_end = {p.end: p for p in [st.open_partition, *st.closed]}
    changes = []
    for part in rewritten:
        params = {k: v for k, v in by_end[part.end].params.items() if k.startswith("zipper.")}
        params[state.ROWS] = str(part.rows)
        params[state.ALTERED + run_id] = json.dumps(part.counts, sort_keys=True)
        changes.append(Partition(part.end, part.directory, params, column_edits=edits))
    opened = next(change for change in changes if change.end == open_end)
    opened.params.update(
        {
            state.RUN_ID: run_id,
            state.ALTER + run_id: json.dumps(record, sort_keys=True),
            state.COLUMNS: json.dumps(column_record, sort_keys=True),
        }
    )
    edit_columns = catalog.planned_column_edit(spark, spec, edits)  # its reads before the publish
    faults.checkpoint("before_alter_publish")
    with _discarded_if_overtaken(spark, run_root):
        catalog.repoint(spark, spec, changes, expected_run=st.open_run, ds=record["as_of"])
    faults.checkpoint("before_alter_columns")
    edit_columns()
    faults.checkpoint("after_alter_publish")
