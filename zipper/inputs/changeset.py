"""A day's change set as the merge takes it (`Day`), and the steps every mode's building of one
shares: the input read with its sequence column checked, the change set written to scratch and
read back, several changes of a key in one day collapsed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import functions as F

from zipper.core import fs, layout
from zipper.core.errors import InputError
from zipper.inputs import conform, metrics, sources
from zipper.inputs.refusals import add_counts, collect_problems, handle_problems, where_of
from zipper.tablespec.model import VALIDITY_TYPES, TableSpec
from zipper.transforms import changes
from zipper.transforms.equality import holds_map


@dataclass
class Day:
    """A checked change set and what the merge needs to know about it."""

    changes: object  # DataFrame: the table's columns (+ zipper_op, zipper_first, zipper_match); None when empty
    rows: int
    columns: list[tuple[str, str]]  # the table's columns once this day is published
    column_changes: conform.ColumnChanges
    located: sources.Input  # what was read (for a landing zone, the kept copy)
    counts: dict = field(default_factory=dict)  # added to the run's counts
    check_open: bool = False  # first actions to check against the open rows (cdc, landing_zone)
    scratch: list[str] = field(default_factory=list)  # directories to delete once merged
    # Bytes of the string and binary columns per input row, observed while the keys were checked
    # (None when not observed): sizes the broadcast of the day's rows (jobs.broadcast.broadcasts).
    variable_bytes_per_row: float | None = None
    # the double columns compared at float precision (conform.float_precision_columns); set by `prepare`
    float_precision: frozenset[str] = frozenset()
    # with source.updated_at: the keys of the change set, which holds each key's versions of the day
    keys: int | None = None
    # counted from its files' footers: the merge's write checks the keys (`refusals.checked_as_read`)
    keys_unchecked: bool = False
    # with source.updated_at: the change set's late changes (`changes.LATE`), counted as it was
    # written; None when not counted (they are then looked for)
    late: int | None = None

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]


@dataclass(frozen=True)
class CheckedInput:
    """An input a rerun read, and checked, before its restore: a cdc input's operations, keys and
    types, an ordered upsert's keys, sequence values and types (`check_read_inputs`), a plain upsert's
    or a snapshot's keys (`dated.check_keys`). The merge of its date takes it as it is instead of
    reading and checking the files again."""

    df: object  # DataFrame, as `read_day_input` returns it
    table_columns: list[tuple[str, str]]  # the table's columns it was read for (a CSV's types)


@dataclass(frozen=True)
class DayRequest:
    """What the merge hands a source mode to make a date's change set from (`Mode.change_set`):
    one record rather than eight parameters restated by every mode and by `dayinput.prepare`. The
    date itself goes beside it, so that what follows the date stays where the date is used."""

    spark: object
    spec: TableSpec
    st: object  # the table's state before the date
    located: sources.Input  # the date's input
    table_columns: list[tuple[str, str]]  # the table's data columns before the date
    run_root: str  # the run's directory: the change set's scratch goes under it
    checked: CheckedInput | None = None  # the input as a rerun already read and checked it
    keep: Callable | None = None  # a filter of the rows read (a replayed date's keys erased since)


def read_day_input(spark, spec: TableSpec, located: sources.Input, table_columns, ds: dt.date, what: str):
    df = conform.read_input(spark, spec, located, spec.source, table_columns, ds.isoformat(), what)
    sequence, key = spec.source.order_column, spec.source.order_key
    if sequence and sequence not in df.columns:
        raise InputError(f"{what} lacks the {key} column {sequence!r}", **where_of(spec, ds))
    if sequence and holds_map(df.schema[sequence].dataType):  # Spark cannot sort by it
        raise InputError(
            f"{what} {key} column {sequence!r} has type {df.schema[sequence].dataType.simpleString()},"
            " which has no order",
            **where_of(spec, ds),
        )
    kind = df.schema[sequence].dataType.simpleString() if spec.source.updated_at else None
    if kind is not None and kind not in VALIDITY_TYPES:  # its values become the versions' valid_from
        raise InputError(
            f"{what} updated_at column {sequence!r} has type {kind}; it must be a date or timestamp",
            **where_of(spec, ds),
        )
    return df


def columns_of(df, leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields if f.name not in leave_out]


def materialize(spark, df, run_root: str, counted: tuple = ()):
    """Write a change set to a scratch directory of the run and read it back: later steps read
    it several times, and its row count comes from the footers. `counted`: aggregate columns
    observed as it is written; returns their values by name too (none when Spark handed none over)."""
    directory = f"{run_root}/{layout.CHANGE_SET}"
    schema = df.schema
    observation = None
    if counted:
        df, observation = metrics.observe_with(df, "change_set", *counted)
    df.write.parquet(directory)
    fs.mkdirs(directory)
    observed = metrics.observed_metrics(observation) if observation is not None else {}
    return spark.read.schema(schema).parquet(directory), fs.written_rows(directory), directory, observed


def open_rows_of(spark, st, columns: list[tuple[str, str]]):
    """The table's open rows as `columns` (None before it has any): with `source.updated_at` and
    `ignore_null_updates`, a change's NULLs may need its key's open values."""
    if st is None or st.open_partition is None or not st.open_rows:
        return None
    return spark.read.schema(conform.struct_type(columns)).parquet(st.open_partition.location)


def float_precision(st, columns: list[tuple[str, str]], column_changes: conform.ColumnChanges) -> frozenset[str]:
    """The double columns a day of a table in state `st` compares at float precision."""
    return conform.float_precision_columns(columns, column_changes, st.widened_from_float)


def evolved_columns(spec: TableSpec, ds: dt.date, input_columns, table_columns, what: str) -> list:
    """The table's columns once an input of `input_columns` is merged (`conform.evolve`)."""
    return conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)[0]


def collapsed(
    spec: TableSpec,
    ds: dt.date,
    what: str,
    events,
    names: list[str],
    counts: dict,
    match,
    against: str,
    anomalies: bool,
):
    """Several changes of a key in one day, collapsed to the state the last one leaves; the
    problems between them (a delete that does not match `against`, ...) refused or counted first.
    `anomalies`: the mode reports a landing zone's anomalies."""
    flagged = changes.flag_events(events, keys=spec.keys, columns=names, match=match)
    add_counts(counts, handle_problems(spec, ds, what, collect_problems(flagged, spec.keys), against, anomalies))
    return changes.collapse(flagged, columns=names, deletes=True)


def versioned(
    spec: TableSpec,
    ds: dt.date,
    what: str,
    events,
    columns: list[tuple[str, str]],
    counts: dict,
    match,
    against: str,
    anomalies: bool,
    deletes: bool,
    open_rows=None,
    latest=None,
):
    """Every change of a key in one day kept as its own version (`source.updated_at`,
    `changes.versions_of_day`); the problems between changes refused or counted first, as
    `collapsed` does (with `against`: not for an upsert, whose changes cannot conflict).

    `open_rows` (the table's open rows as `columns`; with `source.ignore_null_updates`): a NULL
    of a change keeps the value of the key's previous change that day (since its last delete),
    else its open version's: every version is whole before it is compared with the one before.

    `latest` (`latest_events`): a change older than its key's latest moment in the table is
    marked late, to be put in place by the merge (`transforms.late`) rather than follow the open
    version."""
    names = [c for c, _ in columns]
    if spec.source.fills_null_updates:
        events = changes.fill_null_updates(events, keys=spec.keys, columns=names)
        if open_rows is not None:
            events = changes.fill_from_open(
                events, open_rows, keys=spec.keys, columns=names, deleted=spec.tombstone_column
            )
    if against:
        flagged = changes.flag_events(events, keys=spec.keys, columns=names, match=match)
        found = collect_problems(flagged, spec.keys)
        add_counts(counts, handle_problems(spec, ds, what, found, against, anomalies))
    if latest is not None:
        events = late_marked(events, latest, spec.keys)
    return changes.versions_of_day(
        events,
        keys=spec.keys,
        columns=names,
        tracked=conform.tracked_columns(spec, names, ds.isoformat()),
        validity=spec.validity_columns,
        open_end=spec.open_end.isoformat(),
        deletes=deletes,
        match=match,
    )


def latest_events(spark, st, columns: list[tuple[str, str]], spec: TableSpec, events, seen=None):
    """Each of the day's keys' latest moment in the table: the open version's valid_from, or for a
    key a delete closed, its last version's valid_to (keys and LATEST_AT). None for a table
    without an open partition yet. A version ending after a change at t was closed by the load
    of date(t) or later, so only the closed partitions from the day's earliest change on are read:
    the earliest as the key check's pass saw it (`seen`, a `metrics.Seen`), else looked for."""
    location = getattr(getattr(st, "open_partition", None), "location", None)
    if location is None:
        return None
    valid_from, valid_to = spec.validity_columns
    schema = conform.struct_type([(c, k) for c, k in columns if c in (*spec.keys, valid_from, valid_to)])
    day_keys = F.broadcast(events.select(*spec.keys).distinct())
    moments = [spark.read.schema(schema).parquet(location).select(*spec.keys, F.col(valid_from).alias(LATEST_AT))]
    if seen is not None and seen.first_order_seen:
        earliest = seen.first_order
    else:
        earliest = events.agg(F.min(changes.ORDER)).first()[0]
    if earliest is not None:
        reachable = [p.location for p in st.reachable_from(spec, earliest)]
        if reachable:
            closed = spark.read.schema(schema).parquet(*reachable)
            moments.append(closed.select(*spec.keys, F.col(valid_to).alias(LATEST_AT)))
    return reduce(lambda a, b: a.unionByName(b), moments).join(day_keys, on=spec.keys, how="left_semi")


LATEST_AT = "zipper__latest_at__"


def late_marked(events, latest, keys: list[str]):
    """`events` with LATE: older than their key's latest moment in the table (`latest_events`)."""
    last = latest.groupBy(*keys).agg(F.max(LATEST_AT).alias(LATEST_AT))
    joined = events.join(last, on=keys, how="left")
    late = F.coalesce(F.col(changes.ORDER) < F.col(LATEST_AT), F.lit(False))
    return joined.select(*events.columns, late.alias(changes.LATE))
