"""The day's input, whatever its mode, as one checked change set (see `changes`).

Everything that can be checked without the open partition is checked by the mode's strategy
(`inputs.modes`), before anything is written: NULL and repeated keys (or equal `sequence_by`
values), operation values, the columns (and what the day does to them), and the problems found
between the changes of one key within the day. What needs the open rows (whether a key had to be
open, whether a delete matches the open row) is checked by `check_open` between the merge's two
jobs, still before anything is published."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from zipper.inputs import conform, sources
from zipper.inputs.changeset import CheckedInput, Day, DayRequest, float_precision
from zipper.inputs.modes import mode_of
from zipper.inputs.refusals import add_counts, collect_problems, handle_problems, refused_problems
from zipper.tablespec.model import TableSpec
from zipper.transforms import changes
from zipper.transforms.shape import MergeShape

# the types the merge takes and gives
__all__ = [
    "CheckedInput",
    "Day",
    "DayRequest",
    "check_open",
    "counted_open",
    "first_columns",
    "open_problems",
    "prepare",
]


def prepare(request: DayRequest, ds: dt.date) -> Day:
    """The change set of `ds` for the table in its state, with the shape of its merge; an input a
    rerun already read and checked (`request.checked`) is not read or checked again."""
    spec = request.spec
    day = mode_of(spec).change_set(request, ds)
    day.float_precision = float_precision(request.widened_from_float, day.columns, day.column_changes)
    tracked = conform.tracked_columns(spec, day.names, ds.isoformat())
    # a day without changes joins nothing: its deletes are the mode's (counted, at 0)
    deletes = changes.OP in day.changes.columns if day.rows else mode_of(spec).closes_keys
    day.shape = MergeShape.of(spec, ds, day.names, tracked, deletes=deletes, float_precision=day.float_precision)
    return day


def open_problems(spec: TableSpec, day: Day, touched_rows):
    """The change set's rows whose first action does not fit the open rows (`touched_rows`: the
    open rows of the day's keys): keys, `changes.PROBLEM`, `changes.DIFF`."""
    firsts = day.changes.where(F.col(changes.STEP) == 1) if changes.STEP in day.changes.columns else day.changes
    return changes.open_problems(
        touched_rows,
        firsts,
        keys=spec.keys,
        columns=day.names,
        float_precision=day.float_precision,
        deleted=spec.tombstone_column,
    )


def check_open(spec: TableSpec, ds: dt.date, day: Day, touched_rows) -> dict:
    """The first action of each key against the open rows (`touched_rows`: the open rows of the
    day's keys): fails on a delete that does not match, or on an anomaly with on_anomaly:
    error; returns the day's counts with those that are reported added."""
    found = collect_problems(open_problems(spec, day, touched_rows), spec.keys)
    what = f"increment {day.located.description}"
    reported = handle_problems(spec, ds, what, found, "the open row", mode_of(spec).reports_anomalies)
    return add_counts(dict(day.counts), reported)


def counted_open(spec: TableSpec, ds: dt.date, day: Day, counted: dict[str, int], touched_rows) -> dict:
    """`check_open`'s outcome from the problems a write counted (`counted`: problem -> rows): one that
    fails the day is looked up, so that its refusal names its keys; those only counted need no job."""
    anomalies = mode_of(spec).reports_anomalies
    found = {problem: rows for problem, rows in counted.items() if rows}
    if found.keys() & refused_problems(spec, anomalies):
        return check_open(spec, ds, day, touched_rows)
    what = f"increment {day.located.description}"
    reported = handle_problems(spec, ds, what, {p: (n, []) for p, n in found.items()}, "the open row", anomalies)
    return add_counts(dict(day.counts), reported)


def first_columns(spark, spec: TableSpec, located: sources.Input, ds: dt.date) -> list[tuple[str, str]] | None:
    """The data columns of a day's input, for a table created from it (None when it has none)."""
    return mode_of(spec).first_columns(spark, spec, located, ds)
