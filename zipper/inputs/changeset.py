"""A day's change set as the merge takes it (`Day`), and the steps every mode's building of one
shares: the input read with its sequence column checked, the change set written to scratch and
read back, several changes of a key in one day collapsed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Window
from pyspark.sql import functions as F

from zipper.core import layout
from zipper.core.errors import InputError
from zipper.inputs import conform, metrics, sources
from zipper.inputs.refusals import add_counts, collect_problems, handle_problems, where_of
from zipper.tablespec.model import VALIDITY_TYPES, TableSpec
from zipper.transforms import changes
from zipper.transforms.equality import holds_map
from zipper.transforms.shape import MergeShape


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
    # what this day's merge is, as data (`transforms.shape`); set by `dayinput.prepare`
    shape: MergeShape | None = None

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
    located: sources.Input  # the date's input
    table_columns: list[tuple[str, str]]  # the table's data columns before the date
    widened_from_float: frozenset[str]  # the table's columns an earlier date widened from float
    checked: CheckedInput | None = None  # the input as a rerun already read and checked it
    keep: Callable | None = None  # a filter of the rows read (a replayed date's keys erased since)
    rows: object = None  # table.store.TableRows: the table's rows and the run's scratch, as inputs read them


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


def materialize(rows, df, counted: tuple = ()):
    """Write a change set to a scratch directory of the run and read it back (`rows`: the table
    store's `TableRows`): later steps read it several times, and its row count comes from the
    footers. `counted`: aggregate columns observed as it is written; returns their values by name
    too (none when Spark handed none over)."""
    observation = None
    if counted:
        df, observation = metrics.observe_with(df, "change_set", *counted)
    kept, directory = rows.kept(df, layout.CHANGE_SET)
    observed = metrics.observed_metrics(observation) if observation is not None else {}
    return kept, rows.rows_in(directory), directory, observed


def open_rows_of(rows, columns: list[tuple[str, str]]):
    """The table's open rows as `columns` (None before it has any; `rows`: the table store's
    `TableRows`): with `source.updated_at` and `ignore_null_updates`, a change's NULLs may need
    its key's open values."""
    if rows is None or not rows.has_open_rows:
        return None
    return rows.open(conform.struct_type(columns))


def float_precision(
    widened_before: frozenset[str], columns: list[tuple[str, str]], column_changes: conform.ColumnChanges
) -> frozenset[str]:
    """The double columns a day compares at float precision, given the columns earlier dates
    widened from float (`TableState.widened_from_float`)."""
    return conform.float_precision_columns(columns, column_changes, widened_before)


def evolved_columns(spec: TableSpec, ds: dt.date, input_columns, table_columns, what: str) -> list:
    """The table's columns once an input of `input_columns` is merged (`conform.evolve`)."""
    return conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)[0]


@dataclass(frozen=True)
class KeyChanges:
    """A day's changes with several per key (cdc or landing-zone events, ordered upserts), and how
    the mode judges the problems between a key's changes: the columns a delete must carry
    (`match`), what a change is checked against (`against`; "" for an upsert, whose changes cannot
    conflict), whether it reports anomalies (a landing zone's), whether it deletes. What is
    reported is added to `counts`."""

    spec: TableSpec
    ds: dt.date
    what: str  # how errors name the input
    events: object  # DataFrame
    columns: list[tuple[str, str]]
    counts: dict
    match: list[str] | None = None
    against: str = ""
    anomalies: bool = False
    deletes: bool = True

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    def judged(self, events) -> object:
        """`events` flagged against each key's previous change (`changes.flag_events`), their problems
        refused or counted."""
        spec = self.spec
        flagged = changes.flag_events(events, keys=spec.keys, columns=self.names, match=self.match)
        found = collect_problems(flagged, spec.keys)
        add_counts(self.counts, handle_problems(spec, self.ds, self.what, found, self.against, self.anomalies))
        return flagged


def collapsed(day: KeyChanges):
    """Several changes of a key in one day, collapsed to the state the last one leaves; the
    problems between them (a delete that does not match `against`, ...) refused or counted first."""
    return changes.collapse(day.judged(day.events), columns=day.names, deletes=True)


def versioned(day: KeyChanges, open_rows=None, latest=None):
    """Every change of a key in one day kept as its own version (`source.updated_at`,
    `changes.versions_of_day`); the problems between changes refused or counted first, as
    `collapsed` does (not without `against`: an upsert's changes cannot conflict).

    `open_rows` (the table's open rows as `columns`; with `source.ignore_null_updates`): a NULL
    of a change keeps the value of the key's previous change that day (since its last delete),
    else its open version's: every version is whole before it is compared with the one before.

    `latest` (`latest_events`): a change older than its key's latest moment in the table is
    marked late, to be put in place by the merge (`transforms.late`) rather than follow the open
    version."""
    spec, names, events = day.spec, day.names, day.events
    fills = spec.source.fills_null_updates
    if latest is not None:
        events = late_marked(events, latest, spec.keys, whole_keys=fills)
    if fills:
        events = _filled(events, open_rows, spec, names)
    if day.against:
        day.judged(events)
    return changes.versions_of_day(
        events,
        keys=spec.keys,
        columns=names,
        tracked=conform.tracked_columns(spec, names, day.ds.isoformat()),
        validity=spec.validity_columns,
        open_end=spec.open_end.isoformat(),
        deletes=day.deletes,
        match=day.match,
    )


def latest_events(rows, columns: list[tuple[str, str]], spec: TableSpec, events, seen=None):
    """Each of the day's keys' latest moment in the table: the open version's valid_from, or for a
    key a delete closed, its last version's valid_to (keys and LATEST_AT). None for a table
    without an open partition yet. A version ending after a change at t was closed by the load
    of date(t) or later, so only the closed partitions from the day's earliest change on are read:
    the earliest as the key check's pass saw it (`seen`, a `metrics.Seen`), else looked for.
    `rows`: the table store's `TableRows`."""
    if rows is None or not rows.has_open_partition:
        return None
    valid_from, valid_to = spec.validity_columns
    schema = conform.struct_type([(c, k) for c, k in columns if c in (*spec.keys, valid_from, valid_to)])
    day_keys = F.broadcast(events.select(*spec.keys).distinct())
    moments = [rows.open(schema).select(*spec.keys, F.col(valid_from).alias(LATEST_AT))]
    if seen is not None and seen.first_order_seen:
        earliest = seen.first_order
    else:
        earliest = events.agg(F.min(changes.ORDER)).first()[0]
    closed = rows.closed_reachable(schema, earliest) if earliest is not None else None
    if closed is not None:
        moments.append(closed.select(*spec.keys, F.col(valid_to).alias(LATEST_AT)))
    return reduce(lambda a, b: a.unionByName(b), moments).join(day_keys, on=spec.keys, how="left_semi")


LATEST_AT = "zipper__latest_at__"


def late_marked(events, latest, keys: list[str], whole_keys: bool = False):
    """`events` with LATE: older than their key's latest moment in the table (`latest_events`).

    `whole_keys` (ignore_null_updates): every change of a key with a late one is LATE, and
    OVERDUE tells the late ones. Their NULLs take the values of the changes before them in time,
    which only the key's history put together with its late changes knows (`transforms.late`)."""
    last = latest.groupBy(*keys).agg(F.max(LATEST_AT).alias(LATEST_AT))
    joined = events.join(last, on=keys, how="left")
    late = F.coalesce(F.col(changes.ORDER) < F.col(LATEST_AT), F.lit(False))
    if not whole_keys:
        return joined.select(*events.columns, late.alias(changes.LATE))
    placed = F.max(late.cast("int")).over(Window.partitionBy(*keys)) == 1
    return joined.select(*events.columns, placed.alias(changes.LATE), late.alias(changes.OVERDUE))


def _filled(events, open_rows, spec: TableSpec, names: list[str]):
    """ignore_null_updates: the changes not LATE filled, from the key's changes before them that
    day and its open row (`changes.fill_null_updates`, `fill_from_open`); the LATE ones as sent,
    filled where they are put in place. CONTINUES stays: a NULL it marks is not compared."""
    late = changes.LATE in events.columns
    on_time = events.where(~F.col(changes.LATE)) if late else events
    filled = changes.fill_null_updates(on_time, keys=spec.keys, columns=names)
    if open_rows is not None:
        filled = changes.fill_from_open(
            filled, open_rows, keys=spec.keys, columns=names, deleted=spec.tombstone_column
        ).withColumn(changes.CONTINUES, F.lit(False))
    if not late:
        return filled
    return filled.unionByName(events.where(F.col(changes.LATE)).withColumn(changes.CONTINUES, F.lit(True)))
