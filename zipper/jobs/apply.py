"""Apply one day: write the new open and closed slots, audit them, publish (`publish.publish_day`).

Used by the daily merge and by a rerun's replay, date by date. Everything is written to fresh
directories; nothing a reader can see changes until the publish."""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
from dataclasses import dataclass

from pyspark.sql import Observation
from pyspark.sql import functions as F

from zipper.core import faults, fs, layout
from zipper.core.errors import InputError, LargeChangeError, SpecError
from zipper.core.layout import Slot
from zipper.core.reports import RunAction
from zipper.inputs import conform, csv_values, dayinput, file_types, metrics, refusals, sources
from zipper.inputs.modes import mode_of
from zipper.jobs import corrected, late_changes, preview
from zipper.jobs.broadcast import broadcasts
from zipper.jobs.context import Run
from zipper.jobs.result import RunResult
from zipper.table import audit, catalog, clone, guard, publish, state, store
from zipper.transforms import changes, daily


@dataclass(frozen=True)
class Written:
    """What the two merge jobs wrote, counted for the audit."""

    kinds: dict[str, int]  # increment keys found open, by what the day does to them
    untouched: int  # open rows the big pass kept as they were (footers)
    touched: int  # open rows the big pass set aside for the small job (footers)
    rewritten: tuple = ()  # history partitions the day's late changes rewrote (publish.Rewritten)


# a change whose first action does not fit the open rows (`dayinput.open_problems`), counted by the small job
PROBLEM_KINDS = (changes.INSERT_OPEN, changes.UPDATE_ABSENT, changes.DELETE_ABSENT, changes.DELETE_MISMATCH)


def _write_merge(run: Run, ds: dt.date, day: dayinput.Day, tracked: list[str], broadcast: bool) -> tuple[Written, dict]:
    """Write the new open and closed slots under the run's directory in two jobs; return what
    was written and the day's counts (with what the open rows showed about its changes).

    The big pass copies the open partition into the new open slot, setting aside the rows whose
    keys the change set names (`zipper_slot=touched`, a scratch directory no partition points
    to). The small job reads them back, decides each one against the change set, counts the
    outcome as it writes, and appends successors and new keys to the open slot and old versions
    to the closed slot. It also counts the change set's first actions that do not fit the open
    rows (cdc and landing zone), which are then looked up and refused or reported as before, and
    the increment's NULL and repeated keys where no job of their own checked them. Late changes
    are put in place between the jobs (their keys' first actions checked before them).

    (One job for both, reading a small open partition twice, was measured slower than the two:
    1.41 s against 1.25 s a day of a 1,000-row table, 2.65 s against 2.33 s at 100,000 rows.)"""
    spark, spec, st, run_root = run.spark, run.spec, run.state, run.root
    open_schema = conform.struct_type(day.columns, spec.begin_column)
    open_rows = store.read_rows(spark, open_schema, st.open_partition.location)
    # append: the run directory may already hold the day's change set or landing-zone files
    versioned = bool(spec.validity_columns)  # several versions of a key a day: route by its last
    late_rows = None
    # late changes: put in place (`late_changes`), unless the change set counted none as it was written
    if versioned and changes.LATE in day.changes.columns and day.late != 0:
        late_rows = day.changes.where(F.col(changes.LATE))
        day = dataclasses.replace(day, changes=day.changes.where(~F.col(changes.LATE)))
    keyed = day.changes.where(F.col(daily.LAST)).select(*spec.keys) if versioned else day.changes
    if late_rows is not None:  # a key with only late changes: its open version may move too
        keyed = keyed.unionByName(late_rows.select(*spec.keys)).distinct()
    routed = daily.route_open(
        open_rows, keyed, keys=spec.keys, broadcast_increment=broadcast, columns=open_schema.fieldNames()
    )
    store.write_slots(routed, run_root, append=True)
    open_dir, touched_dir = (layout.slot_dir(run_root, slot) for slot in (Slot.OPEN, Slot.TOUCHED))
    for directory in (open_dir, touched_dir):
        fs.mkdirs(directory)
    untouched, touched = fs.written_rows(open_dir), fs.written_rows(touched_dir)
    touched_rows = store.read_rows(spark, open_schema, touched_dir)
    problems = None  # the first actions' problems, counted by the small job
    if day.check_open and late_rows is None:
        problems, counts = dayinput.open_problems(spec, day, touched_rows), None
    else:
        counts = dayinput.check_open(spec, ds, day, touched_rows) if day.check_open else dict(day.counts)
    unplaced = touched_rows
    placed = None
    if late_rows is not None:
        placed = late_changes.put_in_place(run, ds, day, touched_rows, late_rows, tracked, open_schema)
        if placed is not None:
            touched_rows = placed.touched

    deletes = daily.OP in day.changes.columns
    kinds = ("changed", "updated", "unchanged") + (("deleted", "vanished") if deletes else ())
    kinds += (daily.INTRADAY,) if versioned else ()
    kinds += (daily.TOMBSTONE, daily.STILL_DELETED) if spec.tombstone_column else ()
    observation = Observation(f"zipper_kinds_{secrets.token_hex(6)}")
    arguments = dict(
        keys=spec.keys,
        columns=day.names,
        tracked=tracked,
        begin_column=spec.begin_column,
        ds=ds.isoformat(),
        broadcast_increment=broadcast,
        float_precision=day.float_precision,
    )
    if versioned:
        rows = daily.day_versions(
            touched_rows, day.changes, validity=spec.validity_columns, deleted=spec.tombstone_column, **arguments
        )
    else:
        increment, keys_seen = day.changes, None
        if day.keys_unchecked:  # counted from footers: its keys are checked as this job reads them
            increment, keys_seen = refusals.checked_as_read(day.changes, spec.keys)
        rows = daily.day_rows(
            touched_rows,
            increment,
            fill_nulls=spec.source.fills_null_updates,
            deleted=spec.tombstone_column,
            **arguments,
        )
    if placed is not None:  # the keys with only late changes, and the late versions with nothing to split
        rows = rows.unionByName(placed.rows)
        kinds += (late_changes.LATE_KIND, late_changes.LATE_OPEN_KIND)
    observed_kinds = kinds
    if problems is not None:  # counted in no slot, as vanished deletes are
        flagged = problems.select(F.lit(Slot.NONE).alias(layout.SLOT), F.col(changes.PROBLEM).alias(daily.KIND))
        rows = rows.unionByName(flagged, allowMissingColumns=True)
        observed_kinds += PROBLEM_KINDS
    rows = rows.observe(observation, *daily.kind_counts(observed_kinds))
    if deletes or problems is not None:  # counted above, not written
        rows = rows.where(F.col(layout.SLOT) != Slot.NONE)
    store.write_slots(rows.drop(daily.KIND), run_root, append=True)
    if day.keys_unchecked and not versioned:  # before the counts: repeated keys would put them out
        refusals.refuse_if_seen(
            keys_seen, day.changes, spec, ds, f"increment {day.located.description}", day.located.paths
        )
    observed = metrics.observed_metrics(observation)
    if problems is not None:  # refused (their keys looked up) or counted, as before
        if all(kind in observed for kind in PROBLEM_KINDS):
            counted = {kind: int(observed[kind]) for kind in PROBLEM_KINDS}
            counts = dayinput.counted_open(spec, ds, day, counted, unplaced)
        else:  # the metrics were not handed over: the check's own job
            counts = dayinput.check_open(spec, ds, day, unplaced)
    fs.delete(touched_dir)
    if placed is not None:
        counts.update(late_changes=placed.changes, partitions_rewritten=len(placed.rewritten))
    written = Written({kind: int(observed.get(kind, 0)) for kind in kinds}, untouched, touched)
    if placed is None:
        return written, counts
    return dataclasses.replace(written, rewritten=placed.rewritten), counts


def apply_date(
    run: Run,
    ds: dt.date,
    located: sources.Input,
    carry_params: dict[str, str] | None = None,
    checked: dayinput.CheckedInput | None = None,
    action: state.CommitAction = state.CommitAction.MERGE,
) -> RunResult:
    """Merge the input of `ds` into a table that is at ds - 1, and publish.

    `carry_params`: extra open-partition parameters to publish with the commit (a replay keeps
    its marker this way until its last date). `checked`: the input as the replay's own checks
    already read it. `action`: what the commit record says did it (`replay` for a rerun's dates).

    Column changes are applied to the table around the publish, and recorded by it, so that a
    run killed in between is completed by the next one (`publish.publish_day`)."""
    spark, spec, st, run_root = run.spark, run.spec, run.state, run.root
    ds_text = ds.isoformat()
    table_columns = catalog.data_columns(spark, spec)
    closed_dir = layout.slot_dir(run_root, Slot.CLOSED)

    try:
        with (
            csv_values.explained(spark, spec.table, spec.keys, ds_text),  # a CSV value that does not parse
            file_types.explained_column_types(spark, spec, ds_text, located),
        ):  # a file typing a column otherwise
            keep = corrected.input_filter(spark, spec, st, ds)  # keys erased since, if `ds` is a past date
            day = dayinput.prepare(
                dayinput.DayRequest(spark, spec, st, located, table_columns, run_root, checked, keep), ds
            )
            written, counts, open_dir, join = _write_day(run, ds, day)
            if run.dry_run:
                preview.keep_keys(run, day)
    except (InputError, SpecError):
        fs.delete(run_root)  # bad input or spec: nothing of this run is worth keeping
        raise
    for directory in day.scratch:
        fs.delete(directory)
    faults.checkpoint("after_write")

    summary = _audit(run, ds, day, written, counts, open_dir, closed_dir)
    if run.dry_run:
        return _dry_run(run, ds, day, written, summary, open_dir, join)
    if clone.is_copy(st):  # a rerun's or rebuild's dry run (`preview.on_copy`): the verdict is shown, not enforced
        summary["guard"] = _guard_verdict(run, ds, summary)
    else:
        try:
            guard.check(
                spec, st, ds, summary, accepted=run.accept_large_change, accept=_how_to_accept(spec, ds, action)
            )
        except LargeChangeError:
            fs.delete(run_root)  # refused: nothing of this run is published, nothing left behind
            raise
    faults.checkpoint("after_audit")

    publish.publish_day(
        spark,
        spec,
        st,
        publish.DayCommit(
            ds,
            run.run_id,
            run_root,
            open_dir,
            closed_dir,
            summary,
            day.located.fingerprint,
            mode_of(spec).commit_record(day.located),
            state.CommitAction(action),  # a caller's text (replay's "replay") as its member
            written.rewritten,
        ),
        day.column_changes,
        table_columns=table_columns,
        day_columns=day.columns,
        widened_from_float=conform.widened_from_float(day.column_changes),
        carry_params=carry_params,
    )
    # a date skipped for want of input says what was not there
    skipped = f"no input: {day.located.description} not found" if day.located.missing else ""
    return RunResult(spec.table, ds_text, RunAction.MERGE, skipped, summary, run.seconds(), run.run_id, join)


def _dry_run(run: Run, ds: dt.date, day, written: Written, summary: dict, open_dir: str, join: str) -> RunResult:
    """The day as the merge would publish it, without the publish: its counts, the guard's verdict
    as a line (not a refusal) and a sample of keys whose history would differ, before and after.
    The run's directory is deleted: nothing is published, nothing is left behind."""
    spec = run.spec
    try:
        verdict = _guard_verdict(run, ds, summary)
        schema = conform.struct_type(day.columns, spec.begin_column)
        closed_dir = layout.slot_dir(run.root, Slot.CLOSED)
        found = preview.sample(run, ds, schema, open_dir, closed_dir, written.rewritten)
    finally:
        preview.clean(run)
    counts = dict(summary, dry_run=True, guard=verdict, sample=found)
    return RunResult(spec.table, ds.isoformat(), RunAction.MERGE, "dry run", counts, run.seconds(), run.run_id, join)


def _guard_verdict(run: Run, ds: dt.date, summary: dict) -> str:
    """What the change-volume guard says of a dry run's day: `passes`, or `would refuse: <why>`."""
    why = guard.refusal(run.spec, guard.volume(run.spec, run.state, ds, summary))
    return "passes" if why is None or run.accept_large_change else f"would refuse: {why}"


def _how_to_accept(spec, ds: dt.date, action: state.CommitAction) -> str:
    """The command that accepts a day the change-volume guard refused, for its message."""
    if state.CommitAction(action) == state.CommitAction.REPLAY:
        return "run the same merge or rerun again with --accept-large-change (in Airflow: the rerun form's accept_large_change)"
    return (
        f"zipper merge {spec.name} --ds {ds.isoformat()} --accept-large-change"
        " (in Airflow, then clear the failed task: the date is committed)"
    )


def _write_day(run: Run, ds: dt.date, day: dayinput.Day):
    """Write the day's slots under the run's directory. A day without changes writes no open slot (the
    open partition stays as it is) and an empty closed one. Returns what was written, the day's
    counts, the open slot's directory and the join the merge used ("" without one)."""
    spark, spec, st, run_root = run.spark, run.spec, run.state, run.root
    open_dir = layout.slot_dir(run_root, Slot.OPEN)
    closed_dir = layout.slot_dir(run_root, Slot.CLOSED)
    tracked = conform.tracked_columns(spec, day.names, ds.isoformat())
    if day.rows == 0:
        kinds = {"changed": 0, "updated": 0, "unchanged": 0}
        if mode_of(spec).closes_keys:
            kinds.update(deleted=0, vanished=0)
        if spec.validity_columns:
            kinds[daily.INTRADAY] = 0
        if spec.tombstone_column:
            kinds.update({daily.TOMBSTONE: 0, daily.STILL_DELETED: 0})
        fs.mkdirs(closed_dir)
        return Written(kinds, st.open_rows, 0), dict(day.counts), st.open_partition.location, ""
    broadcast = broadcasts(spark, day.rows, day.columns, spec.begin_column, day.variable_bytes_per_row)
    written, counts = _write_merge(run, ds, day, tracked, broadcast=broadcast)
    for directory in (open_dir, closed_dir):
        fs.mkdirs(directory)
    return written, counts, open_dir, "broadcast" if broadcast else "shuffle"


def _audit(
    run: Run, ds: dt.date, day: dayinput.Day, written: Written, counts: dict, open_dir: str, closed_dir: str
) -> dict:
    """Reconcile what was written with what was read (`audit.reconcile`) before anything is
    published; returns the day's summary: the audit's counts, the day's and its column changes."""
    spark, spec, st = run.spark, run.spec, run.state
    summary = audit.reconcile(
        open_recorded=st.open_rows,
        open_read=fs.written_rows(st.open_partition.location),
        input_rows=day.rows,
        # keys with only late changes (their open rows counted as written) count with the day's keys
        input_keys=None if day.keys is None else day.keys + written.kinds.get(late_changes.LATE_OPEN_KIND, 0),
        kinds=written.kinds,
        untouched=written.untouched,
        touched=written.touched,
        open_written=fs.written_rows(open_dir),
        closed_written=fs.written_rows(closed_dir),
        max_closed_begin=audit.max_value(spark, closed_dir, spec.begin_column),
        ds=ds.isoformat(),
        table=spec.table,
    )
    summary.update(counts)
    if mode_of(spec).complete_source:  # keys of the snapshot equal to their open version: not in the change set
        summary["unchanged"] = (
            summary["source_rows"] - summary["new"] - summary["changed"] - summary["updated_in_place"]
        )
    summary.update(day.column_changes.report())
    return summary
