"""`zipper rebuild`: the whole table from the base plus every increment up to E, in one job,
published atomically at the end (the alternative to restore and replay).

Computed by `rebuild_transforms`, independently of the daily merge, and written with the same
commit records a merge writes (input fingerprints, counts per date), so `zipper status`, later
merges and `zipper check` work on a rebuilt table as on any other. Publish: partitions the
rebuild needs and the table lacks are first added pointing at the empty directory (invisible
to readers); one metastore call then re-points the open partition and every history partition
at the new directories and every partition that no longer belongs at the empty directory; those
are dropped afterwards. A crash before that call leaves the table as it was (plus empty
partitions without a commit record, which the next run drops); after it, the rebuilt table."""

from __future__ import annotations

import datetime as dt
import time

from pyspark.sql import functions as F

from zipper.core import faults, fs, layout
from zipper.core.dates import DAY, date_range, describe_dates
from zipper.core.errors import StateError
from zipper.core.reports import NO_INPUT_REASON, SKIPPED, RunAction
from zipper.inputs import conform, dated, modes, refusals
from zipper.inputs.refusals import MAX_LISTED_KEYS
from zipper.jobs import corrected, replay
from zipper.jobs.context import quiet
from zipper.jobs.init import init_table
from zipper.jobs.one_pass import Located, Marked, one_pass
from zipper.jobs.plan import check_in_schedule, source_kind
from zipper.jobs.result import RunResult
from zipper.table import audit, catalog, clone, publish, recovery, state, store
from zipper.tablespec.model import TableSpec
from zipper.transforms import changes, timelines
from zipper.transforms.timelines import DS, KINDS, VANISHED


def rebuild(
    spark,
    spec: TableSpec,
    last: dt.date | None = None,
    progress=quiet,
    uncommit_later: bool = False,
    undo_corrections: bool = False,
) -> RunResult:
    """Rebuild up to `last` (default: the last committed date, or where an interrupted replay was going).
    A `last` before the last committed date drops the later dates' history and commits: only with
    `uncommit_later`, as for a rerun, since their scheduled runs, already done, would have to run again."""
    started = time.monotonic()
    st = state.read_state(spark, spec)
    _refuse_adopted(spec, st, last)
    state.check_owned(st, spec, last or spec.start_date)
    st = _initialized(spark, spec, st, last, progress)
    init_ds = st.init_ds
    end = _rebuilt_to(spec, st, last, uncommit_later, progress)
    st = recovery.recover(spark, spec, st, end)
    if not modes.mode_of(spec).rebuilds_in_one_pass(spec) and end > init_ds:
        return _by_replay(spark, spec, st, end, progress, uncommit_later, undo_corrections, started)
    run_id = state.new_run_id()
    # erased keys stay out of every input; a value fix or delete is refused unless undone here
    undone = corrected.undone(spec, st, None, undo_corrections, run_id, "rebuild")

    dates = date_range(init_ds + DAY, end)
    found = _locate_inputs(spark, spec, init_ds, dates)
    recorded = st.open_partition.params.get(state.INIT_FINGERPRINT)
    base_fingerprint = dated.base_fingerprint(found.base, recorded)
    if dated.base_changed(found.base, recorded):
        progress(f"{spec.table}: the base differs from the one loaded on {init_ds}; the rebuild uses it as it is now")

    run_root = state.run_dir(st, run_id)
    per_date = _write_versions(spark, spec, st, init_ds, found, run_root)
    counts = _commit_counts(spec, per_date, init_ds, dates)
    for day in dates:  # a date skipped for want of input is recorded so, as its merge records it
        if found.increments[day].missing:
            counts[day][SKIPPED] = NO_INPUT_REASON
    open_dir = layout.slot_dir(run_root, layout.Slot.OPEN)
    closed_dirs = {
        day: layout.slot_dir(run_root, layout.closed_slot(spec.closed_end(day).isoformat())) for day in dates
    }
    open_rows = counts[end]["open_after"] if dates else per_date.get(init_ds.isoformat(), {}).get("new", 0)
    expected = {open_dir: open_rows} | {closed_dirs[day]: counts[day]["closed"] for day in dates}
    audit_slots(spec, end, expected)
    faults.checkpoint("after_rebuild_write")

    fingerprints = {day: found.increments[day].fingerprint for day in closed_dirs}
    init_params = {state.INIT_DS: init_ds.isoformat(), state.INIT_FINGERPRINT: base_fingerprint}
    init_params |= state.correction_params(st.open_partition.params) | undone  # corrections last: their records stay
    init_params |= state.alter_params(st.open_partition.params)  # the column renames and drops: their records too
    rebuilt = publish.RebuildCommit(
        run_id, run_root, end, open_dir, open_rows, closed_dirs, counts, fingerprints, init_params
    )
    publish.publish_rebuild(spark, spec, st, rebuilt)
    closed_rows = sum(c["closed"] for c in counts.values())
    return RunResult(
        spec.table,
        end.isoformat(),
        RunAction.REBUILD,
        f"rebuilt from the base of {init_ds} and {len(dates)} increments up to {end}:"
        f" {open_rows} open rows, {closed_rows} closed rows in {len(dates)} history partitions",
        {"open_after": open_rows, "closed": closed_rows, "dates": len(dates)},
        time.monotonic() - started,
        run_id,
    )


def _refuse_adopted(spec: TableSpec, st: state.TableState, last: dt.date | None) -> None:
    """An adopted table's history up to its base date came from the table it took over, not from
    inputs a rebuild could read again."""
    if st.adopted_from:
        raise StateError(
            f"the table's history up to {st.init_ds} was adopted from {st.adopted_from}, and a rebuild would make"
            f" it again from inputs it never had; rerun the dates after it instead"
            f" (`zipper rerun {spec.name} --from {st.init_ds + DAY}`); nothing was changed",
            table=spec.table,
            ds=last.isoformat() if last else None,
        )


def _by_replay(
    spark,
    spec: TableSpec,
    st: state.TableState,
    end: dt.date,
    progress,
    uncommit_later: bool,
    undo_corrections: bool,
    started: float,
) -> RunResult:
    """A mode the one pass does not compute (`source.updated_at`, whose every change is a version
    with its own validity; a landing zone, whose dates take the files the dates before them left):
    every date replayed by the daily merge from the base, on a working copy of the table, then the
    copy's state published to the table in one repoint. The table is as it was until then; a
    failure or a kill leaves it so (the copy's entry and directories go as a killed run's)."""
    with clone.working_copy(spark, spec, st) as copied:

        def said(line: str) -> None:
            progress(line.replace(copied.table, spec.table))

        replayed = replay.rerun(
            spark,
            copied,
            st.init_ds + DAY,
            end,
            progress=said,
            uncommit_later=uncommit_later,
            undo_corrections=undo_corrections,
            accept_large_change=True,
        )
        publish.publish_copy(spark, spec, st, copied)
    done = state.read_state(spark, spec)
    closed_rows = sum(c.rows for c in done.commits.values())
    dates = len(replayed.replayed)
    return RunResult(
        spec.table,
        end.isoformat(),
        RunAction.REBUILD,
        f"rebuilt from the base of {st.init_ds} and {dates} increments up to {end}, replayed date by date"
        f" (source mode {source_kind(spec)}): {done.open_rows} open rows, {closed_rows} closed rows in"
        f" {dates} history partitions",
        {"open_after": done.open_rows, "closed": closed_rows, "dates": dates},
        time.monotonic() - started,
        replayed.run_id,
    )


def _initialized(spark, spec: TableSpec, st: state.TableState, last: dt.date | None, progress) -> state.TableState:
    """The table's state, once it is initialized: a table not there yet is created first (its
    base), which needs the last date to build, as nothing says where it stops."""
    if st.initialized:
        return st
    if last is None:
        raise StateError(
            f"table does not exist yet; give the last date to build: `zipper rebuild {spec.name} --to E`",
            table=spec.table,
        )
    progress(init_table(spark, spec).summary())
    return state.read_state(spark, spec)


def _rebuilt_to(spec: TableSpec, st: state.TableState, last: dt.date | None, uncommit_later: bool, progress) -> dt.date:
    """The date the rebuild ends at: `last`, else where the table is (or an interrupted replay
    was going). Before the last committed date only with `uncommit_later`, and said."""
    init_ds = st.init_ds
    end = last or (st.replay.last if st.replay else st.last_committed)
    where = {"table": spec.table, "ds": end.isoformat()}
    if end < init_ds:
        raise StateError(f"--to {end} is before the table's base date {init_ds}", **where)
    if end > init_ds:
        check_in_schedule(spec, end)
    later = describe_dates(date_range(end + DAY, st.last_committed)) if end < st.last_committed else ""
    if later and not uncommit_later:
        raise StateError(
            f"--to {end} is before the last committed date {st.last_committed}: {later} would no longer"
            " be committed (their history dropped, and their done runs would have to run again); pass"
            f" --uncommit-later to do that, or leave out --to to rebuild up to {st.last_committed};"
            " nothing was changed",
            **where,
        )
    if later:
        progress(
            f"{spec.table}: the table will be at {end}: {later} will no longer be committed;"
            " merge them again to bring them back"
        )
    return end


def _write_versions(
    spark, spec: TableSpec, st: state.TableState, init_ds: dt.date, found: Located, run_root: str
) -> dict[str, dict[str, int]]:
    """Write every version under `run_root`, by slot, in one job; returns each date's counts by
    kind (ds text -> kind -> rows), read from the same marked rows, kept in memory for both."""
    with found.explained(spark, spec):  # a file typing a column otherwise than its input is read with
        marked = _marked_inputs(spark, spec, init_ds, found, corrected.dated_filter(spark, spec, st, DS))
        # read twice, the counts then the versions: kept in memory at the changes' size
        kept = timelines.collapsed(marked.rows).persist()
        try:
            per_date = {
                r[DS]: {k: int(v or 0) for k, v in r.asDict().items() if k != DS}
                for r in timelines.daily_counts(kept).collect()
            }
            with replay.said_nothing_changed(spec.table):  # found once marked, before anything is written
                marked.refuse_bad_keys(per_date)
                _refuse_mismatched_deletes(spec, kept, per_date, found)
            versions = timelines.with_slot(
                timelines.versions(kept, marked.timeline), spec.end_column, spec.open_end.isoformat()
            )
            store.write_slots(versions, run_root)
        finally:
            kept.unpersist()
    return per_date


def _refuse_mismatched_deletes(spec: TableSpec, rows, per_date: dict, found: Located) -> None:
    """A delete whose values differ from the row it deletes (delete_match: all_columns) fails the
    rebuild as it fails the earliest such date's merge, naming its keys; nothing is written."""
    dates = sorted(ds for ds, c in per_date.items() if c.get(timelines.MISMATCHED))
    if not dates:
        return
    ds = dt.date.fromisoformat(dates[0])
    keys = rows.where(F.col(timelines.MISMATCHED) & (F.col(DS) == dates[0])).select(*spec.keys).orderBy(*spec.keys)
    found_problems = {
        changes.DELETE_MISMATCH: (per_date[dates[0]][timelines.MISMATCHED], keys.limit(MAX_LISTED_KEYS).collect())
    }
    what = f"increment {found.increments[ds].description}"
    refusals.handle_problems(spec, ds, what, found_problems, "the open row", anomalies=False)


def audit_slots(spec: TableSpec, end: dt.date, expected: dict[str, int]) -> None:
    """Every slot directory made (an empty one too), and its rows as the counts expect, before
    anything is published (`audit.reconcile_rebuild`): a rebuild's, and an adoption's."""
    for directory in expected:
        fs.mkdirs(directory)
    written = {directory: store.rows_in(directory) for directory in expected}
    audit.reconcile_rebuild(expected=expected, written=written, last=end.isoformat(), table=spec.table)


def _locate_inputs(spark, spec: TableSpec, init_ds: dt.date, dates: list[dt.date]) -> Located:
    """Every missing increment (then a missing base) named before anything is read, and an
    input the mode cannot take empty refused."""
    increments = modes.locate_dates(spark, spec, dates)
    strategy = modes.mode_of(spec)
    for day, located in increments.items():
        if not located.missing:
            strategy.refuse_empty(spec, day, located)
    return Located(dated.locate_base(spark, spec, init_ds), init_ds, increments)


def _marked_inputs(spark, spec: TableSpec, init_ds: dt.date, found: Located, keep=None) -> Marked:
    """Every bad key named before anything is written. `keep`: a filter of the dated rows (the
    erased keys left out)."""
    dates = sorted(found.increments)
    table_columns = catalog.data_columns(spark, spec)
    tracked = conform.tracked_columns(spec, [c for c, _ in table_columns], dates[-1].isoformat() if dates else None)
    return one_pass(spark, spec, table_columns, tracked, found, keep)


def rebuilt_rows(spark, spec: TableSpec, last: dt.date | None = None):
    """What a rebuild up to `last` (default: the last committed date) would write, as one
    DataFrame of the table's columns; nothing is written. Tests compare live tables with it."""
    st = state.read_state(spark, spec)
    init_ds = st.init_ds
    found = _locate_inputs(spark, spec, init_ds, date_range(init_ds + DAY, last or st.last_committed))
    with found.explained(spark, spec):
        marked = _marked_inputs(spark, spec, init_ds, found, corrected.dated_filter(spark, spec, st, DS))
        return timelines.versions(marked.rows, marked.timeline)


def _commit_counts(
    spec: TableSpec, per_date: dict[str, dict[str, int]], init_ds: dt.date, dates: list[dt.date]
) -> dict:
    """Each date's counts, as the merge of that date reports them: a mode's own counts
    (`empty_counts`: a snapshot's rows), its deletes where it closes keys, tombstones where the
    table keeps them; a snapshot's change set leaves out its unchanged keys."""
    strategy = modes.mode_of(spec)
    tombstones = spec.tombstone_column is not None
    open_rows = per_date.get(init_ds.isoformat(), {}).get("new", 0)  # the base: every row opens
    counts = {}
    for day in dates:
        c = dict.fromkeys((*KINDS, VANISHED), 0) | per_date.get(day.isoformat(), {})
        seen = c["new"] + c["changed"] + c["unchanged"] + c["updated"]
        opened = open_rows + c["new"] - (0 if tombstones else c["deleted"])
        counts[day] = {
            **strategy.empty_counts(spec),
            "input": seen + c["deleted"] + c[VANISHED] - (c["unchanged"] if strategy.complete_source else 0),
            "new": c["new"],
            "changed": c["changed"],
            "unchanged": c["unchanged"],
            "updated_in_place": c["updated"],
            "closed": c["changed"] + c["deleted"],
            "open_before": open_rows,
            "open_after": opened,
        }
        if "source_rows" in counts[day]:  # the input rows: a change's events, else its row
            counts[day]["source_rows"] = c.get(timelines.SOURCE_ROWS, seen)
        if "deletes_of_absent_keys" in counts[day]:
            counts[day]["deletes_of_absent_keys"] = c.get(timelines.ABSENT, 0)
        if strategy.closes_keys:
            counts[day]["deleted"] = c["deleted"]
        if tombstones:
            counts[day]["tombstones"] = c["deleted"]
        open_rows = opened
    return counts
