"""Apply one day: read its change set, write its slots, audit them, and hand them to the run's
publisher (`publishers`: the table's own run publishes, a dry run shows what it would publish).

Used by the daily merge and by a rerun's replay, date by date. Everything is written to fresh
directories; nothing a reader can see changes until the publish."""

from __future__ import annotations

import datetime as dt

from zipper.core import faults, fs, layout
from zipper.core.errors import InputError, SpecError
from zipper.core.layout import Slot
from zipper.inputs import csv_values, dayinput, file_types, sources
from zipper.inputs.modes import mode_of
from zipper.jobs import corrected, late_changes
from zipper.jobs.context import Run
from zipper.jobs.publishers import Audited
from zipper.jobs.result import RunResult
from zipper.jobs.write_day import Written, write_day
from zipper.table import audit, catalog, state, store


def apply_date(
    run: Run,
    ds: dt.date,
    located: sources.Input,
    carry_params: dict[str, str] | None = None,
    checked: dayinput.CheckedInput | None = None,
    action: state.CommitAction = state.CommitAction.MERGE,
) -> RunResult:
    """Merge the input of `ds` into a table that is at ds - 1, and publish (as the run's kind says).

    `carry_params`: extra open-partition parameters to publish with the commit (a replay keeps
    its marker this way until its last date). `checked`: the input as the replay's own checks
    already read it. `action`: what the commit record says did it (`replay` for a rerun's dates).

    Column changes are applied to the table around the publish, and recorded by it, so that a
    run killed in between is completed by the next one (`publish.publish_day`)."""
    spark, spec = run.spark, run.spec
    table_columns = catalog.data_columns(spark, spec)
    keep = corrected.input_filter(spark, spec, run.state, ds)  # keys erased since, if `ds` is a past date
    rows = store.TableRows(spark, spec, run.state, run.root)  # the table's rows, as the inputs read them
    request = dayinput.DayRequest(
        spark, spec, located, table_columns, run.state.widened_from_float, checked, keep, rows
    )
    try:
        with (
            # a file typing a column otherwise, or one Spark's parser cannot read: the outer, so that
            file_types.explained_column_types(spark, spec, ds.isoformat(), located),
            csv_values.explained(
                spark, spec.table, spec.keys, ds.isoformat()
            ),  # a CSV value that does not parse is told first
        ):
            day = dayinput.prepare(request, ds)
            written = write_day(run, day)
            run.publisher.keep(run, day)
    except (InputError, SpecError):
        fs.delete(run.root)  # bad input or spec: nothing of this run is worth keeping
        raise
    for directory in day.scratch:
        fs.delete(directory)
    faults.checkpoint("after_write")
    summary = _audit(run, day, written)
    return run.publisher.publish(run, Audited(day, written, summary, table_columns, action, carry_params))


def _audit(run: Run, day: dayinput.Day, written: Written) -> dict:
    """Reconcile what was written with what was read (`audit.reconcile`) before anything is
    published; returns the day's summary: the audit's counts, the day's and its column changes."""
    spark, spec, st = run.spark, run.spec, run.state
    closed_dir = layout.slot_dir(run.root, Slot.CLOSED)
    tally = audit.Tally(
        open_recorded=st.open_rows,
        open_read=store.rows_in(st.open_partition.location),
        input_rows=day.rows,
        kinds=written.kinds,
        untouched=written.untouched,
        touched=written.touched,
        open_written=store.rows_in(written.open_dir),
        closed_written=store.rows_in(closed_dir),
        max_closed_begin=store.largest(spark, closed_dir, spec.begin_column),
        # keys with only late changes (their open rows counted as written, or as ended) count with the day's keys
        input_keys=None
        if day.keys is None
        else day.keys + sum(written.kinds.get(k, 0) for k in late_changes.LATE_KEY_KINDS),
    )
    summary = audit.reconcile(tally, ds=day.shape.ds, table=spec.table)
    summary.update(written.counts)
    if mode_of(spec).complete_source:  # keys of the snapshot equal to their open version: not in the change set
        summary["unchanged"] = (
            summary["source_rows"] - summary["new"] - summary["changed"] - summary["updated_in_place"]
        )
    summary.update(day.column_changes.report())
    return summary
