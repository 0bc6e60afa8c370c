"""`zipper rerun`: restore the table to the day before D, then replay D..E serially in one
Spark application, publishing after each date.

SCD2 history depends on order: the run of D builds on the open partition of D - 1, so every
date from D on is replayed. The restore is derived from the table itself (the versions that
were open at the end of D - 1) and published like a merge: one metastore call re-points the
open partition at the restored rows and every history partition made by the runs of D and
later at an empty directory; those partitions are dropped afterwards. The same call records
the replay under way on the open partition (`zipper.replay`), and every replayed date but the
last keeps it, so a crash leaves a consistent table at some date and the same command resumes."""

from __future__ import annotations

import contextlib
import datetime as dt
import time

from zipper.core import faults, fs, layout, sqltemplates
from zipper.core.alter import AlterKind
from zipper.core.dates import DAY, date_range, describe_dates
from zipper.core.errors import (
    InputError,
    SpecError,
    StateError,
    UnreadableInputError,
    ZipperError,
    failed_file,
    summarize_failure,
)
from zipper.core.paths import user_path
from zipper.core.reports import RunAction
from zipper.inputs import conform, csv_values, dated, dayinput, file_types, metrics, modes
from zipper.inputs.modes import mode_of
from zipper.jobs import apply, corrected, one_pass
from zipper.jobs.context import Run, open_run, quiet
from zipper.jobs.plan import plan_rerun
from zipper.jobs.result import RunResult
from zipper.table import audit, catalog, clone, publish, state, store
from zipper.tablespec.model import TableSpec
from zipper.transforms import timelines


def rerun(
    spark,
    spec: TableSpec,
    first: dt.date,
    last: dt.date | None = None,
    progress=quiet,
    uncommit_later: bool = False,
    resume_said: bool = False,
    undo_corrections: bool = False,
    accept_large_change: bool = False,
) -> RunResult:
    """Restore to first - 1 (unless the table is there already) and replay first..last
    (default: the last committed date, or where an interrupted replay was going). A `last`
    before the last committed date needs `uncommit_later`. `resume_said`: the caller's progress
    has said that an interrupted replay is being finished (a merge's first line), so the
    rerun's own notes do not say it again. A value fix or row delete the replay would undo is
    refused unless `undo_corrections` (`corrected.undone`)."""
    run = open_run(spark, spec, first, progress, accept_large_change)
    spec, st = run.spec, run.state
    plan, located = _plan(spark, spec, st, first, last, uncommit_later)
    marker_run = run.run_id  # names the rerun on the table until its last date
    # before any input is read: a correction in the way is said first
    undone = (
        corrected.undone(spec, st, plan.restore_from, undo_corrections, marker_run, "rerun")
        if plan.restore_from is not None
        else {}
    )
    for note in _notes(plan, resume_said):
        progress(f"{spec.table}: {note}")

    # Every increment of the range is found and readable before anything changes, and what can be
    # checked without the open rows is (`_checked_inputs`); the rest date by date, before each publish.
    replayed, ahead = mode_of(spec).replay_inputs(spark, spec, st, plan.dates, located)
    checked = _check_inputs(spark, spec, first, replayed | ahead)  # what they read is not read again
    marker = state.ReplayMarker(plan.marker_from, plan.marker_to, marker_run, mode_of(spec).replay_records(replayed))
    marker = _start_replay(spark, spec, st, plan, marker, undone, progress)
    results = _replay_dates(run, plan, marker, replayed, checked)
    span = f"{plan.dates[0]}..{plan.dates[-1]}" if len(plan.dates) > 1 else plan.dates[0].isoformat()
    return RunResult(
        spec.table,
        span,
        RunAction.RERUN,
        f"replayed {span} ({len(plan.dates)} date{'s' if len(plan.dates) != 1 else ''}); table at {plan.dates[-1]}",
        {"dates": len(plan.dates), "restored": plan.restore_from is not None},
        run.seconds(),
        results[-1].run_id,
        replayed=results,
    )


def _plan(spark, spec: TableSpec, st: state.TableState, first: dt.date, last: dt.date | None, uncommit_later: bool):
    """The rerun's plan, and the inputs it located to compare their fingerprints with the commits'
    (date -> input): the replay takes them rather than locating them again."""
    located: dict[dt.date, object] = {}
    committed = {d: c.fingerprint for d, c in st.commits.items()}

    def current_fingerprint(day: dt.date) -> str:
        if day not in located:
            located.update(modes.locate_dates(spark, spec, [day], st))
        return located[day].fingerprint_against(committed.get(day.isoformat()))

    pending = st.replay
    plan = plan_rerun(
        spec,
        first,
        last,
        initialized=st.initialized,
        last_committed=st.last_committed,
        init_ds=st.init_ds,
        pending_replay=(pending.first, pending.last) if pending else None,
        committed_fingerprints=committed,
        current_fingerprint=current_fingerprint,
        uncommit_later=uncommit_later,
    )
    if plan.restore_from is not None:
        rewrites = {
            d: ends
            for d, ends in publish.late_rewrites(st).items()
            if d >= plan.restore_from and (d > plan.dates[-1] or current_fingerprint(d) != committed.get(d.isoformat()))
        }
        _refuse_late_reach(spec, plan.restore_from, rewrites)
    return plan, located


def _refuse_late_reach(spec: TableSpec, first: dt.date, rewrites: dict[dt.date, list[str]]) -> None:
    """The restore drops the partitions from `first` on; late changes a later date put in place in
    partitions before them stay. A date replayed with the same input finds them in place (re-sent),
    so that is refused only for a date whose input changed, or that the rerun leaves uncommitted
    (`rewrites`: those dates, with the partitions their late changes rewrote): the rerun must
    start at the earliest partition they reached."""
    start = first
    while True:  # a rerun from an earlier date drops more partitions: until none is left behind
        bound = spec.closed_end(start).isoformat()
        behind = sorted(end for ends in rewrites.values() for end in ends if end < bound)
        if not behind:
            break
        start = spec.closed_by(dt.date.fromisoformat(behind[0]))
    if start == first:
        return
    dates = describe_dates(sorted(rewrites))
    raise StateError(
        f"the late changes of {dates} were put in place in history partitions before {first}, and that input"
        f" changed since (or the rerun would leave it uncommitted): a rerun from {first} cannot take them out;"
        f" rerun from {start} instead (`zipper rerun {spec.name} --from {start}`)",
        table=spec.table,
        ds=first.isoformat(),
    )


def _start_replay(spark, spec: TableSpec, st: state.TableState, plan, marker: state.ReplayMarker, undone, progress):
    """Record the replay on the table before its first date, so that a crash leaves it to
    resume: with the restore, or alone when several dates replay onto the table as it is. A
    resumed replay keeps its marker (and what it recorded of the dates restored away). Returns
    the marker the replayed dates carry."""
    pending = st.replay
    if plan.restore_from is not None:
        progress(restore(spark, spec, st, plan.restore_from, marker, undone, progress).summary())
    elif pending is not None and (pending.first, pending.last) == (marker.first, marker.last):
        return state.ReplayMarker(pending.first, pending.last, pending.run_id, pending.landing | marker.landing)
    elif len(plan.dates) > 1:
        publish.publish_marker(spark, spec, st, marker)
    return marker


def _replay_dates(run: Run, plan, marker: state.ReplayMarker, replayed: dict, checked: dict):
    """Merge and publish each date in turn, every one but the last keeping the marker. A date
    located only when its turn comes (`replay_inputs`) is located once the date before is
    committed. Returns each date's result."""
    spark, spec = run.spark, run.spec
    results = []
    for n, day in enumerate(plan.dates, start=1):
        st = state.read_state(spark, spec)  # as the date before left it
        carry = marker.params() if n < len(plan.dates) else {}
        try:
            day_input = replayed[day] if day in replayed else mode_of(spec).locate(spark, spec, st, day)
            result = apply.apply_date(
                run.next_date(st),
                day,
                day_input,
                carry_params=carry,
                checked=checked.get(day),
                action=state.CommitAction.REPLAY,
            )
        except Exception as exc:
            if (plan.restore_from is None and n == 1) or not run.publisher.leaves_work_to_resume:
                raise  # nothing has changed, or only a dry run's copy (`preview.on_copy`): nothing to resume
            raise _left_pending(exc, spec, st, marker, day) from (None if isinstance(exc, ZipperError) else exc)
        results.append(result)
        run.progress(result.summary())
        if n < len(plan.dates):
            faults.checkpoint("after_replayed_date")
    return results


def _left_pending(exc: Exception, spec: TableSpec, st: state.TableState, marker: state.ReplayMarker, day: dt.date):
    """The failure of a replayed date once the table has changed, saying where the table is and
    how the pending replay resumes: the input or the cause is to be fixed first."""
    unreadable = failed_file(exc)  # a file of the day's input, or one of the table's own
    input_problem = isinstance(exc, (InputError, SpecError)) or (
        unreadable is not None and not fs.is_under(unreadable, st.location)
    )
    fix = "fix the input" if input_problem else "fix the cause"
    pending_note = (
        f"; the table is at {st.last_committed}, the replay of {marker.first}..{marker.last}"
        f" pending: {fix}, then `zipper rerun {spec.name} --from {marker.first}`"
        " (or the next merge) resumes it"
    )
    if isinstance(exc, ZipperError):
        return exc.reworded(exc.detail + pending_note, table=exc.table, ds=exc.ds)
    # a Spark failure (a file that cannot be read, ...) on this date: say so and where the table is
    return ZipperError(summarize_failure(exc) + pending_note, table=spec.table, ds=day.isoformat())


NOTHING_CHANGED = "; nothing was changed"


@contextlib.contextmanager
def said_nothing_changed(table: str):
    """A refusal that comes before anything is written says the table was left as it was (once)."""
    try:
        yield
    except ZipperError as exc:
        if exc.detail.endswith(NOTHING_CHANGED):
            raise
        raise exc.reworded(exc.detail + NOTHING_CHANGED, table=exc.table or table, ds=exc.ds) from None


def _check_inputs(spark, spec: TableSpec, first: dt.date, replayed: dict) -> dict[dt.date, dayinput.CheckedInput]:
    """The replayed dates' inputs checked before the restore, as far as they can be without the
    open rows, so that a bad one fails while nothing has changed. Returns each date's input as
    read here: its merge takes it rather than reading the files again."""
    try:
        with (
            said_nothing_changed(spec.table),  # every refusal of the check comes before the restore
            csv_values.explained(spark, spec.table, spec.keys, first.isoformat()),
            file_types.explained_column_types_of(spark, spec, replayed, NOTHING_CHANGED),
        ):
            checked = _checked_inputs(spark, spec, replayed)
            # the check reads the keys (a cdc input's operations too): the other columns' files by their footers
            file_types.refuse_mistyped_files(
                spark, spec, {day: (replayed[day], inp.df.schema) for day, inp in checked.items()}, NOTHING_CHANGED
            )
            return checked
    except fs.spark_failures() as exc:  # a file Spark cannot read: name its date, not the first one
        day = _date_of_file(failed_file(exc), replayed) or first
        raise UnreadableInputError(
            f"{summarize_failure(exc)}{NOTHING_CHANGED}", table=spec.table, ds=day.isoformat()
        ) from exc


def _checked_inputs(spark, spec: TableSpec, replayed: dict) -> dict[dt.date, dayinput.CheckedInput]:
    """Every mode: each date's column types against the table's as the dates before it leave them,
    and their keys, every date in one job: NULL and repeated keys, or with sequence_by NULL and
    repeated sequence values of a key (all of the earliest bad date's in one refusal). cdc inputs:
    their operations. Landing zones: their files' types from the footers, their row markers and NULL
    keys (their merges read them again). Then the changes of one key within a day that fail its
    merge (`dated_checks.check_within_days`), every date in one job."""
    table_columns = catalog.data_columns(spark, spec)
    return mode_of(spec).check_before_rerun(spark, spec, replayed, table_columns)


def _notes(plan, resume_said: bool) -> list[str]:
    """The plan's notes, less the resumption of an interrupted replay when that was said: of
    that note, only what the caller could not know (inputs changed since they were replayed)."""
    if not resume_said or plan.resume_news is None:
        return plan.notes
    return plan.resume_news + plan.notes[1:]


def _date_of_file(path: str | None, located: dict) -> dt.date | None:
    """The date whose input holds `path` (as Spark names it, a URI)."""
    if not path:
        return None
    wanted = user_path(path)
    for day, inp in sorted(located.items()):
        if any(user_path(f.path) == wanted for f in inp.files):
            return day
    return None


def restored_open_rows(
    spark, spec: TableSpec, st: state.TableState, first: dt.date, table_columns: list[tuple[str, str]]
):
    """The open partition as it was at the end of first - 1: columns + begin."""
    return _restored(spark, spec, st, first, table_columns)[0]


def _restored(
    spark,
    spec: TableSpec,
    st: state.TableState,
    first: dt.date,
    table_columns: list[tuple[str, str]],
    progress=quiet,
):
    """`restored_open_rows`, and the inputs they are read from (date -> input; none when read
    from the table itself), for naming a file of theirs that Spark cannot read."""
    names = [c for c, _ in table_columns]
    tracked = conform.tracked_columns(spec, names, first.isoformat())
    untracked = conform.untracked_columns(spec, names, tracked)
    if untracked:
        if mode_of(spec).rebuilds_in_one_pass(spec) and not st.adopted_from:
            rebuilt, read_from = _rebuilt_open_rows(spark, spec, st, first, table_columns, tracked)
        else:  # validity, a landing zone's files, an adopted history: what the run of first - 1 left
            rebuilt = _open_rows_left_before(spark, spec, st, first, [*spec.keys, *untracked], progress)
            read_from = {}
        # the versions as the table holds them (corrections kept), their untracked values as the inputs left them
        versions = _open_before(spark, spec, first, table_columns)
        return timelines.with_values_of(versions, rebuilt, spec.keys, untracked), read_from
    return _open_before(spark, spec, first, table_columns), {}


def _open_before(spark, spec: TableSpec, first: dt.date, table_columns: list[tuple[str, str]]):
    """The table's versions valid at the end of first - 1, reopened: columns + begin."""
    return spark.sql(
        sqltemplates.render(
            "restore_open_before.sql",
            table=spec.table,
            columns=[c for c, _ in table_columns],
            begin_column=spec.begin_column,
            end_column=spec.end_column,
            first=first.isoformat(),
            closed_end=spec.closed_end(first).isoformat(),
            open_end=spec.open_end.isoformat(),
            valid_to_column=spec.validity_columns[1] if spec.validity_columns else None,
            valid_to_type=dict(table_columns).get(spec.validity_columns[1]) if spec.validity_columns else None,
        )
    )


def _open_rows_left_before(
    spark, spec: TableSpec, st: state.TableState, first: dt.date, columns: list[str], progress=quiet
):
    """The open rows as the commit of first - 1 left them (`columns` of them), for the untracked
    values a mode whose state a rebuild cannot compute held then: the open directory its commit
    record names (older records: its run's own), which the table keeps until vacuum's retention
    has passed; once gone, the dates up to first - 1 replayed on a working copy of the table
    (`_replayed_open_rows`). After `zipper init`, the base; after `zipper adopt`, the open rows it
    wrote. A column renamed since is read by its name then; one added since is NULL."""
    before = first - DAY
    where = {"table": spec.table, "ds": first.isoformat()}
    table_types = dict(catalog.data_columns(spark, spec))
    if before == st.init_ds and not st.adopted_from:
        located_base = dated.locate_base(spark, spec, before)
        if dated.base_changed(located_base, st.open_partition.params.get(state.INIT_FINGERPRINT)):
            raise StateError(
                f"the table has untracked columns, so restoring it to {before} takes their values from the base;"
                f" the base differs from the one loaded on {before}: restore it; nothing was changed",
                **where,
            )
        base = dated.read_base(spark, spec, list(table_types.items()), before, located_base)
        if base is not None:
            return base.select(*columns)
        return store.read_rows(
            spark, conform.struct_type([(c, table_types[c]) for c in columns]), state.empty_dir(st.location)
        )
    commit, following = st.commits.get(before.isoformat()), st.commits.get(first.isoformat())
    both = commit is not None and following is not None and following.run_id == commit.run_id
    if before == st.init_ds:
        directory = st.init_open
    elif commit is not None:  # commits before open locations were recorded: the run's own open rows
        directory = commit.open_location or layout.slot_dir(state.run_dir(st, commit.run_id), layout.Slot.OPEN)
    else:
        directory = None
    if (directory is None or both or not fs.exists(directory)) and before != st.init_ds:
        return _replayed_open_rows(spark, spec, st, first, columns, progress)
    if directory is None or not fs.exists(directory):  # an adoption's: no date before it to replay
        why = "were not kept (every column was tracked when the table was adopted)" if directory is None else "are gone"
        raise StateError(
            f"the table has untracked columns, so the table cannot say what they held before {first} (the open rows"
            f" hold their latest values), and its history up to {before} was adopted from {st.adopted_from}: a"
            f" rerun from {first} takes them from the open rows the adoption wrote, which {why};"
            " fix versions with `zipper correct`, rerun from a later date, or track every column in a new table;"
            " nothing was changed",
            **where,
        )
    # names as the run that wrote them had them: the renames published since, undone newest first
    written_by = directory.rstrip("/").rsplit("/", 2)[-2]  # versions/<run id>/zipper_slot=...
    written_as = {c: c for c in columns}
    for alter in reversed([a for a in st.alters if a["run_id"] > written_by]):
        if alter.get("kind") == AlterKind.RENAME:
            written_as = {c: alter["column"] if name == alter["new_name"] else name for c, name in written_as.items()}
    schema = conform.struct_type([(written_as[c], table_types[c]) for c in columns])
    rows = store.read_rows(spark, schema, directory)
    return rows.select(*[rows[written_as[c]].alias(c) for c in columns])


def _replayed_open_rows(spark, spec: TableSpec, st: state.TableState, first: dt.date, columns: list[str], progress):
    """The open rows at the end of first - 1 once the ones its commit left are gone: the dates from
    the base (or the adoption) up to first - 1 replayed by the daily merge on a working copy of the
    table (`clone.working_copy`), from the inputs that were committed, and the copy's open rows
    read; the copy's entry is dropped, its run directories left to vacuum. `columns` of them."""
    before = first - DAY
    _committed_inputs(spark, spec, st, first, "replays the dates up to it")
    progress(
        f"{spec.table}: the open rows of {before} are gone: replaying {st.init_ds + DAY}..{before} on a copy of the"
        " table for the values its untracked columns held then"
    )
    with clone.working_copy(spark, spec, st) as copied:
        rerun(
            spark,
            copied,
            st.init_ds + DAY,
            before,
            uncommit_later=True,
            undo_corrections=True,
            accept_large_change=True,
        )
        location = state.read_state(spark, copied).open_partition.location
    types = dict(catalog.data_columns(spark, spec))
    return store.read_rows(spark, conform.struct_type([(c, types[c]) for c in columns]), location)


def _committed_inputs(spark, spec: TableSpec, st: state.TableState, first: dt.date, how: str):
    """The increments before `first` and the base, located, refused unless they are the ones that
    were committed (the state at first - 1 is computed from them: `how`)."""
    where = {"table": spec.table, "ds": first.isoformat()}
    init_ds = st.init_ds
    dates = date_range(init_ds + DAY, first - DAY)
    located = modes.locate_dates(spark, spec, dates)
    changed = [
        d
        for d in dates
        if st.commits.get(d.isoformat()) is None or not located[d].matches(st.commits[d.isoformat()].fingerprint)
    ]
    if changed:
        raise StateError(
            f"the table has untracked columns, so restoring it to {first - DAY} {how} from the base and"
            f" the increments before {first}; the input of {describe_dates(changed)} differs from what was committed:"
            f" rerun from {changed[0]} instead (`zipper rerun {spec.name} --from {changed[0]}`)",
            **where,
        )
    if st.adopted_from:
        return located, None
    located_base = dated.locate_base(spark, spec, init_ds)
    recorded = st.open_partition.params.get(state.INIT_FINGERPRINT)
    if dated.base_changed(located_base, recorded):
        raise StateError(
            f"the table has untracked columns, so restoring it to {first - DAY} {how} from the base;"
            f" the base differs from the one loaded on {init_ds}: restore it, or `zipper rebuild {spec.name}`",
            **where,
        )
    return located, located_base


def _rebuilt_open_rows(
    spark,
    spec: TableSpec,
    st: state.TableState,
    first: dt.date,
    table_columns: list[tuple[str, str]],
    tracked: list[str],
):
    """With untracked columns the table cannot say which in-place updates happened before `first`
    (the open row holds the latest ones), so the state at first - 1 is rebuilt from the base and
    the increments up to first - 1, which must be the ones that were committed. Returns the rows
    and those inputs, by date."""
    init_ds = st.init_ds
    located, located_base = _committed_inputs(spark, spec, st, first, "rebuilds that state")
    names = [c for c, _ in table_columns]
    # committed inputs, checked by their merges; the erased keys' rows left out of the dates up to
    # each erasure (the versions come from the table, but an erased row must not lend a value: with
    # ignore_null_updates a later row's NULL would be filled from it)
    marked = one_pass.one_pass(
        spark,
        spec,
        table_columns,
        tracked,
        one_pass.Located(located_base, init_ds, located),
        keep=corrected.dated_filter(spark, spec, st, timelines.DS),
        checks=False,
    )
    open_end = spec.open_end.isoformat()
    return (
        timelines.versions(marked.rows, marked.timeline)
        .where(f"`{spec.end_column}` = '{open_end}'")
        .select(*names, spec.begin_column)
    ), {init_ds: located_base, **located}


def restore(
    spark,
    spec: TableSpec,
    st: state.TableState,
    first: dt.date,
    marker: state.ReplayMarker,
    undone: dict[str, str] | None = None,
    progress=quiet,
) -> RunResult:
    """Publish the table as it was at the end of first - 1, recording `marker`; audited first.
    `undone`: the records of the corrections the replay undoes, marked so (`corrected.undone`)."""
    started = time.monotonic()
    first_text = first.isoformat()
    commit = st.commits.get(first_text)
    if commit is None or "open_before" not in commit.counts:
        raise StateError(
            f"no commit record for {first}; see `zipper check {spec.name}`", table=spec.table, ds=first_text
        )
    table_columns = catalog.data_columns(spark, spec)

    run_id = state.new_run_id()
    open_dir = layout.slot_dir(state.run_dir(st, run_id), layout.Slot.OPEN)
    rows, read_from = _restored(spark, spec, st, first, table_columns, progress)
    # with untracked columns, from the base and the increments before `first`: a file of theirs
    # holding a column in another type than its input is read as fails naming it, as a rebuild's does
    with file_types.explained_column_types_of(spark, spec, read_from, NOTHING_CHANGED):
        observation = store.write_counted(rows, open_dir, "restore")
    fs.mkdirs(open_dir)
    rows_read = int(metrics.observed_metrics(observation).get("rows") or 0)
    rows_written = store.rows_in(open_dir)
    faults.checkpoint("after_restore_write")
    audit.reconcile_restore(
        rows_read=rows_read,
        rows_written=rows_written,
        # the rows that date's merge started from, less those a correction has removed since
        expected=int(commit.counts["open_before"])
        - corrected.removed_open_at(spark, spec, st, first - DAY, commit.run_id),
        first=first_text,
        table=spec.table,
    )

    restore = publish.RestoreCommit(first, run_id, open_dir, rows_written, marker, undone or {})
    dropped = publish.publish_restore(spark, spec, st, restore)
    restored_to = (first - DAY).isoformat()
    return RunResult(
        spec.table,
        restored_to,
        RunAction.RESTORE,
        f"restored to {restored_to}: {rows_written} open rows, {len(dropped)} history partitions"
        f" ({dropped[0] if dropped else '-'}..{dropped[-1] if dropped else '-'}) dropped",
        {"open_after": rows_written, "dropped": len(dropped)},
        time.monotonic() - started,
        run_id,
    )
