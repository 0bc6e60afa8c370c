"""Every source mode as one day change set, as pure DataFrame -> DataFrame functions.

The merge applies a *change set*: the table's columns, at most one row per key, and what the
day does to the key (`zipper_op`: upsert | delete). An upsert increment is one already (no
op column: every row upserts). The other modes become one here:

- cdc rows and landing-zone change files are *events* (`zipper_action`: insert, update,
  upsert or delete), possibly several per key, in an order (`zipper_order`: the sequence
  column, or file number then row position). `flag_events` marks each event against the
  state its key's previous event of the day left; `collapse` keeps the key's state at the end
  of the day, with its first action of the day (`zipper_first`: whether the key had to be
  open is only known against the open partition) and, for deletes that must match the open
  row, the values they carry (`zipper_match`).
- a snapshot is diffed against the open partition (`snapshots.snapshot_changes`).

Problems are named per key (`zipper_problem`): insert_open (insert of a key that exists),
update_absent / delete_absent (update or delete of a key that does not), delete_mismatch (a
delete whose values differ from the row it deletes; `zipper_diff` names the columns)."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from zipper.transforms.equality import any_of, equal_at_float_precision, same, types_of
from zipper.transforms.vocabulary import DELETE, FINAL, LAST, LATE, OP, OVERDUE, STEP, UPSERT

FIRST = "zipper_first"
MATCH = "zipper_match"
ACTION = "zipper_action"
ORDER = "zipper_order"
PROBLEM = "zipper_problem"
DIFF = "zipper_diff"
CONTINUES = "zipper_continues"  # ignore_null_updates: the key's state goes on from its open row (no delete that day)
INSERT, UPDATE = "insert", "update"
INSERT_OPEN, UPDATE_ABSENT, DELETE_ABSENT, DELETE_MISMATCH = (
    "insert_open",
    "update_absent",
    "delete_absent",
    "delete_mismatch",
)
# landing-zone __rowMarker__ values
MARKERS = {0: INSERT, 1: UPDATE, 2: DELETE, 4: UPSERT}
_OPEN = "zipper__open__"
_SEGMENT = "zipper__segment__"


def _equal(left: Column, right: Column, data_type, float_precision: bool) -> Column:
    """NULL-safe equality; at float precision for a double column that holds or is fed floats."""
    if float_precision and isinstance(data_type, DoubleType):
        return equal_at_float_precision(left, right)
    return same(left, right, data_type)


def _differing(columns: list[str], left, right, types: dict, float_precision: frozenset[str] = frozenset()) -> Column:
    """The names of the columns whose values differ (NULL-safe; `float_precision` columns as
    floats), as an array."""
    return F.array_compact(
        F.array(
            *[F.when(~_equal(left(c), right(c), types[c], c in float_precision), F.lit(c)) for c in columns],
            F.lit(None).cast("string"),
        )
    )


def _values_struct(values: list[str]) -> Column:
    return F.struct(*[F.col(c) for c in values]) if values else F.struct(F.lit(None).alias("none"))


# ---------------------------------------------------------------- reading events


def bad_operations(rows: DataFrame, *, op_column: str) -> DataFrame:
    """cdc rows whose operation is not 0 or 1 (NULL included), with the file they came from."""
    op = F.col(op_column).cast("string")
    return rows.where(op.isNull() | ~op.isin("0", "1")).select(op.alias("op"), F.input_file_name().alias("file"))


def cdc_events(rows: DataFrame, *, op_column: str, columns: list[str], order: str | None = None) -> DataFrame:
    """cdc rows (already checked by `bad_operations`) as events: 0 upserts, 1 deletes."""
    action = F.when(F.col(op_column).cast("string") == "1", F.lit(DELETE)).otherwise(F.lit(UPSERT))
    ordered = [F.col(order).alias(ORDER)] if order else []
    return rows.select(*columns, action.alias(ACTION), *ordered)


def upsert_events(rows: DataFrame, *, columns: list[str], order: str) -> DataFrame:
    """Upsert rows ordered by a sequence column as events."""
    return rows.select(*columns, F.lit(UPSERT).alias(ACTION), F.col(order).alias(ORDER))


def bad_markers(rows: DataFrame, *, marker: str, written: str, file: str, row: str) -> DataFrame:
    """Landing-zone rows whose marker (`marker`, as an int) is not 0, 1, 2 or 4, with the marker
    as written (`written`), their file and row position."""
    return rows.where(F.col(marker).isNull() | ~F.col(marker).isin(*MARKERS)).select(
        F.col(written).alias("marker"), F.col(file).alias("file"), F.col(row).alias("row")
    )


def landing_events(
    rows: DataFrame, *, columns: list[str], marker: str, file: str, row: str, order: str | None = None
) -> DataFrame:
    """Landing-zone rows (markers checked) as events, in file order, then row order; with `order`
    (`source.updated_at`), in that column's order, whatever file a change came in."""
    action = F.when(F.col(marker) == 0, F.lit(INSERT))
    for value, name in MARKERS.items():
        action = action.when(F.col(marker) == value, F.lit(name))
    ordered = F.col(order) if order else F.struct(F.col(file), F.col(row))
    return rows.select(*columns, action.alias(ACTION), ordered.alias(ORDER))


def order_offenders(events: DataFrame, keys: list[str], read_all_columns: bool = False) -> DataFrame:
    """Keys that are NULL, have a NULL order, or have two events with the same order.

    `read_all_columns`: also hash the other columns, so that Spark reads and types them all (as
    `transforms.key_offenders` does)."""
    others = [c for c in events.columns if c not in keys and c != ORDER]
    readers = [F.max(F.xxhash64(*others)).alias("_read")] if read_all_columns and others else []
    return (
        events.groupBy(*keys, ORDER)
        .agg(F.count(F.lit(1)).alias("copies"), *readers)
        .where(any_of([F.col(k).isNull() for k in keys]) | F.col(ORDER).isNull() | (F.col("copies") > 1))
        .orderBy(*keys)
    )


# ---------------------------------------------------------------- events -> change set


def fill_null_updates(events: DataFrame, *, keys: list[str], columns: list[str]) -> DataFrame:
    """ignore_null_updates: ordered events whose NULLs keep what the key's previous change of the
    day left, each column's last non-NULL value since the key's last delete. A delete's own values
    stay as sent (it is still a delete, matched as before); a change after it starts afresh.
    Adds CONTINUES: no delete comes before the event that day, so the merge fills what is still
    NULL from the key's open version (`daily.day_rows`)."""
    deleting = F.col(ACTION) == DELETE
    so_far = Window.partitionBy(*keys).orderBy(ORDER).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    segmented = events.select("*", F.sum(F.when(deleting, 1).otherwise(0)).over(so_far).alias(_SEGMENT))
    running = (
        Window.partitionBy(*keys, _SEGMENT).orderBy(ORDER).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )

    def filled(c: str) -> Column:
        last_sent = F.last(F.when(~deleting, F.col(c)), ignorenulls=True).over(running)
        return F.when(deleting, F.col(c)).otherwise(last_sent).alias(c)

    values = [c for c in columns if c not in keys]
    return segmented.select(
        *[filled(c) if c in values else F.col(c) for c in events.columns], (F.col(_SEGMENT) == 0).alias(CONTINUES)
    )


def fill_from_open(
    events: DataFrame, open_rows: DataFrame, *, keys: list[str], columns: list[str], deleted: str | None = None
) -> DataFrame:
    """Filled events (`fill_null_updates`) whose NULLs left are the key's open version's values,
    where its changes go on from its open row (CONTINUES) and that row is live (not a tombstone,
    `deleted`): with `source.updated_at` each change is a version of its own, so each needs the
    values before it, not only the day's last. CONTINUES is dropped: nothing is left to fill."""
    values = [c for c in columns if c not in keys and c != deleted]
    old = open_rows.join(events.select(*keys).distinct(), on=keys, how="left_semi").select(
        *[F.col(k).alias(_OPEN + k) for k in keys],
        *[F.col(c).alias(_OPEN + "v_" + c) for c in values],
        (~F.col(deleted) if deleted else F.lit(True)).alias(_OPEN + "live"),
    )
    joined = events.join(old, on=_all_equal(events, keys), how="left")
    goes_on = F.col(CONTINUES) & F.coalesce(F.col(_OPEN + "live"), F.lit(False))

    def value(c: str) -> Column:
        if c not in values:
            return F.col(c)
        return F.when(goes_on, F.coalesce(F.col(c), F.col(_OPEN + "v_" + c))).otherwise(F.col(c)).alias(c)

    return joined.select(*[value(c) for c in events.columns if c != CONTINUES])


def _all_equal(events: DataFrame, keys: list[str]) -> Column:
    return reduce(lambda a, b: a & b, [events[k] == F.col(_OPEN + k) for k in keys])


def flag_events(events: DataFrame, *, keys: list[str], columns: list[str], match: list[str] | None) -> DataFrame:
    """Each event with the problem it meets in the state its key's previous event of the day
    left (none for a key's first event: that one meets the open partition, see `open_problems`),
    whether it is the key's last event, and the key's first action and first values.

    `match`: the columns a delete must carry the values of (all but the keys and the sequence
    column, with delete_match: all_columns), or None."""
    by_key = Window.partitionBy(*keys).orderBy(ORDER)
    whole = by_key.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    previous = F.lag(ACTION).over(by_key)
    present = previous.isNotNull() & (previous != DELETE)
    absent = previous.isNotNull() & (previous == DELETE)
    action = F.col(ACTION)
    problem = (
        F.when(present & (action == INSERT), F.lit(INSERT_OPEN))
        .when(absent & (action == UPDATE), F.lit(UPDATE_ABSENT))
        .when(absent & (action == DELETE), F.lit(DELETE_ABSENT))
    )
    diff = F.lit(None).cast("array<string>")
    first_values = []
    if match is not None:
        # filled events (CONTINUES): a value the key's changes that day left NULL is still the open
        # version's, which only the open rows know, so it is not compared here
        def previous_value(c: str) -> Column:
            before = F.lag(c).over(by_key)
            if CONTINUES not in events.columns:
                return before
            return F.when(F.lag(CONTINUES).over(by_key) & before.isNull(), F.col(c)).otherwise(before)

        diff = F.when(present & (action == DELETE), _differing(match, F.col, previous_value, types_of(events)))
        problem = F.when(F.size(diff) > 0, F.lit(DELETE_MISMATCH)).otherwise(problem)
        first_values = [F.first(_values_struct(match)).over(whole).alias(MATCH)]
    return events.select(
        *columns,
        F.col(ACTION),
        problem.alias(PROBLEM),
        diff.alias(DIFF),
        F.lead(ACTION).over(by_key).isNull().alias(LAST),
        F.first(ACTION).over(whole).alias(FIRST),
        *first_values,
        *([F.col(CONTINUES)] if CONTINUES in events.columns else []),
    )


def collapse(flagged: DataFrame, *, columns: list[str], deletes: bool) -> DataFrame:
    """One row per key: its state at the end of the day.

    deletes=False (upsert with sequence_by): the table's columns only, as an upsert increment.
    Otherwise also OP, FIRST and (when `flag_events` had columns to match) MATCH: the values a
    first-action delete must find in the open row (NULL unless the key's first action is a delete),
    and CONTINUES when the events were filled (`fill_null_updates`)."""
    last = flagged.where(F.col(LAST))
    if not deletes:
        return last.select(*columns)
    op = F.when(F.col(ACTION) == DELETE, F.lit(DELETE)).otherwise(F.lit(UPSERT))
    matched = [F.when(F.col(FIRST) == DELETE, F.col(MATCH)).alias(MATCH)] if MATCH in flagged.columns else []
    continues = [F.col(CONTINUES)] if CONTINUES in flagged.columns else []
    return last.select(*columns, op.alias(OP), F.col(FIRST), *matched, *continues)


_START = "zipper__start__"


def versions_of_day(
    events: DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    tracked: list[str],
    validity: tuple[str, str],
    open_end: str,
    deletes: bool,
    match: list[str] | None = None,
) -> DataFrame:
    """Every change of a key in a day kept, in order (`ORDER`, the updated_at column): one row
    per version the day makes, with its validity (`validity`: the valid-from and valid-to columns,
    in the table's types). A version is valid from its first change until the next version's (or
    the delete that ends it), the last one until `open_end` at midnight. Consecutive changes with
    equal `tracked` values continue one version, its other columns taking the later change's
    values; a delete ends the version before it and makes none.

    Each row: the table's `columns`, STEP (1, 2, ... within the key), LAST (the key's last row of
    the day), and with `deletes` OP, FIRST (the key's first action), FINAL (its last) and MATCH
    (with `match`: the first event's values a first-action delete must find). The first row meets
    the key's open version (`transforms.daily.day_versions`); the others only follow it.

    With a LATE column (changes older than their key's latest event, `transforms.late`): each late
    change is a row of its own (LATE true, LAST false), numbered apart from the others, which
    make the key's versions of the day as above."""
    valid_from, valid_to = validity
    lateness = [c for c in (LATE, OVERDUE) if c in events.columns]
    by_key = Window.partitionBy(*keys, *lateness).orderBy(ORDER)
    whole = by_key.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    types = types_of(events)
    previous = F.lag(ACTION).over(by_key)
    same_values = reduce(
        lambda a, b: a & b, [same(F.lag(c).over(by_key), F.col(c), types[c]) for c in tracked], F.lit(True)
    )
    starts = previous.isNull() | (previous == DELETE) | (F.col(ACTION) == DELETE) | ~same_values
    if lateness:
        starts = starts | F.col(LATE)
    first_values = [F.first(_values_struct(match)).over(whole).alias(MATCH)] if match is not None else []
    marked = events.select(
        "*",
        starts.alias(_START),
        F.first(ACTION).over(whole).alias(FIRST),
        F.last(ACTION).over(whole).alias(FINAL),
        *first_values,
    )
    numbered = marked.select(
        "*", F.sum(F.col(_START).cast("int")).over(by_key.rowsBetween(Window.unboundedPreceding, 0)).alias(STEP)
    )
    values = [c for c in columns if c not in keys and c not in validity]
    begun = [c for c in values if c in tracked] + [ACTION, ORDER, FIRST, FINAL] + ([MATCH] if match else [])
    later = [c for c in values if c not in tracked]
    runs = numbered.groupBy(*keys, *lateness, STEP).agg(
        F.min_by(F.struct(*begun), F.col(ORDER)).alias("zipper__begun__"),
        F.max_by(_values_struct(later), F.col(ORDER)).alias("zipper__later__"),
    )
    by_step = Window.partitionBy(*keys, *lateness).orderBy(STEP)
    begin_at = F.col("zipper__begun__")[ORDER]
    kind = types[valid_from] if valid_from in types else types[ORDER]
    next_begin = F.lead(begin_at).over(by_step)

    def column(c: str) -> Column:
        if c == valid_from:
            return begin_at.cast(kind).alias(c)
        if c == valid_to:
            return F.coalesce(next_begin, F.lit(open_end)).cast(kind).alias(c)
        if c in keys:
            return F.col(c)
        return (F.col("zipper__begun__")[c] if c in tracked else F.col("zipper__later__")[c]).alias(c)

    action = F.col("zipper__begun__")[ACTION]
    last = F.lead(STEP).over(by_step).isNull()
    flags = [F.col(STEP), (last & ~F.col(LATE) if lateness else last).alias(LAST), *[F.col(c) for c in lateness]]
    if not deletes:
        return runs.select(*[column(c) for c in columns], *flags)
    op = F.when(action == DELETE, F.lit(DELETE)).otherwise(F.lit(UPSERT))
    ends = [F.col("zipper__begun__")[FIRST].alias(FIRST), F.col("zipper__begun__")[FINAL].alias(FINAL)]
    first_delete = (F.col(STEP) == 1) & (action == DELETE)
    matched = [F.when(first_delete, F.col("zipper__begun__")[MATCH]).alias(MATCH)] if match is not None else []
    return runs.select(*[column(c) for c in columns], *flags, op.alias(OP), *ends, *matched)


def last_rows(versions: DataFrame) -> DataFrame:
    """The last of each key's versions of the day (`versions_of_day`): one row per key."""
    return versions.where(F.col(LAST))


def single_changes(events: DataFrame, *, columns: list[str], match: list[str] | None) -> DataFrame:
    """Events with unique keys (cdc without sequence_by) as a change set, without a window;
    `match` as for `flag_events`."""
    deleting = F.col(ACTION) == DELETE
    op = F.when(deleting, F.lit(DELETE)).otherwise(F.lit(UPSERT))
    matched = [F.when(deleting, _values_struct(match)).alias(MATCH)] if match is not None else []
    return events.select(*columns, op.alias(OP), F.col(ACTION).alias(FIRST), *matched)


# ---------------------------------------------------------------- problems


def open_problems(
    touched: DataFrame,
    changes: DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    float_precision: frozenset[str] = frozenset(),
    deleted: str | None = None,
) -> DataFrame:
    """Change-set rows whose first action does not fit the open partition: keys, PROBLEM, DIFF.

    `touched`: the open rows of the change set's keys (all of them, or all open rows); a delete
    matches a `float_precision` column's open value when equal at float precision. `deleted`: the
    deleted column; an open row with it true is a tombstone, which is not open."""
    values = [c for c in columns if c not in keys]
    if deleted:
        touched = touched.where(~F.col(deleted))
    opened = touched.select(*keys, *[F.col(c).alias(_OPEN + c) for c in values], F.lit(True).alias(_OPEN))
    joined = changes.join(opened, on=keys, how="left")
    is_open, first = F.col(_OPEN).isNotNull(), F.col(FIRST)
    problem = (
        F.when(is_open & (first == INSERT), F.lit(INSERT_OPEN))
        .when(~is_open & (first == UPDATE), F.lit(UPDATE_ABSENT))
        .when(~is_open & (first == DELETE), F.lit(DELETE_ABSENT))
    )
    diff = F.lit(None).cast("array<string>")
    if MATCH in changes.columns:
        compared = [f.name for f in changes.schema[MATCH].dataType.fields if f.name in values]
        diff = F.when(
            is_open & F.col(MATCH).isNotNull(),
            _differing(
                compared,
                lambda c: F.col(MATCH)[c],
                lambda c: F.col(_OPEN + c),
                {f.name: f.dataType for f in changes.schema[MATCH].dataType.fields},
                float_precision,
            ),
        )
        problem = F.when(F.size(diff) > 0, F.lit(DELETE_MISMATCH)).otherwise(problem)
    return joined.select(*keys, problem.alias(PROBLEM), diff.alias(DIFF)).where(F.col(PROBLEM).isNotNull())


def problem_summary(problems: DataFrame, *, keys: list[str], examples: int) -> DataFrame:
    """Per problem: how many, and the first `examples` keys (with DIFF) in key order."""
    return (
        problems.where(F.col(PROBLEM).isNotNull())
        .groupBy(PROBLEM)
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.slice(F.array_sort(F.collect_list(F.struct(*keys, F.col(DIFF)))), 1, examples).alias("examples"),
        )
    )
