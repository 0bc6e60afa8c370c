"""A zipper table computed in one pass from the base and a run of daily increments, as pure
DataFrame -> DataFrame functions (`zipper rebuild`, and the restore of untracked columns).

Independent of the daily merge on purpose, so that the two can check each other: every input
row carries its date; per key, in date order, a row whose tracked columns equal the previous
row's (NULL-safe) continues that row's version, any other row starts a new one. A version
begins on the date of its first row, holds the columns of its last row (untracked columns are
updated in place, as the merge does), and ends where the next version of its key begins (the
day before, with inclusive ends), or is open.

Snapshots close the keys they lack: a key missing from the snapshot after one that had it is
deleted on that date (a delete row is added where its presence stops). A delete ends the key's
version; with a tombstone column it opens a tombstone instead (the version's values, the column
true), and the key's next row closes that as a change."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zipper.core.layout import CLOSED_PREFIX, SLOT, Slot
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import EndStyle
from zipper.transforms import changes
from zipper.transforms.changes import ACTION, CONTINUES, DELETE_ABSENT, DELETE_MISMATCH, FIRST, MATCH, ORDER, PROBLEM
from zipper.transforms.equality import all_of, any_of, same, types_of
from zipper.transforms.vocabulary import DELETE, KIND, OP, UPSERT

DS = "zipper_ds"  # the date a row was loaded: the base date or an increment's run date
VERSION = "zipper_version"
# new: first row of its key (or its first after a delete); changed: tracked columns differ from
# the previous row's (or the key is back from its tombstone); unchanged: every column equal;
# updated: only untracked columns differ (updated in place); deleted: the key left the snapshots.
KINDS = ("new", "changed", "unchanged", "updated", "deleted")
# a delete of a key that is not there (never was, deleted, or a tombstone): no version, counted
VANISHED = "vanished"
# a row whose key is NULL or repeated on its date: no version; its date is refused (`one_pass`)
BAD_KEY = "bad_key"
# what a date's changes count beside their kinds, carried from their events (`day_changes`)
SOURCE_ROWS = "zipper__source_rows"  # the input rows a change stands for
ABSENT = "zipper__absent"  # its deletes that found the key absent (deletes_of_absent_keys)
MISMATCHED = "zipper__mismatched"  # a delete whose values differ from the row it deletes
EVENT_COUNTS = (SOURCE_ROWS, ABSENT, MISMATCHED)
_LAST = "zipper__last"
_FIRST = "zipper__first"
_ENDED = "zipper__ended"  # a version a delete began: a tombstone, or no version at all
_PREV_SNAPSHOT, _NEXT_SNAPSHOT, _ROW = "zipper__prev_snapshot", "zipper__next_snapshot", "zipper__row"
_GONE = "zipper__gone"  # the next snapshot lacks the key
_PREV_DS, _NEXT_SEEN = "zipper__prev_ds", "zipper__next_seen"  # the key's dates before and after the row's
ROWS = "zipper__rows"  # the marked rows a `collapsed` row stands for
_VALUES, _ROW_ID = "zipper__values", "zipper__row_id"
_PRESENT = "zipper__present"  # the key had a live version before the row's date
_LIFE = "zipper__life"  # the key's stretch of changes that fill from each other (ignore_null_updates)


@dataclass(frozen=True)
class Timeline:
    """What a one-pass rebuild varies by, for one table and run of dates, as data (as
    `shape.MergeShape` is for a day's merge).

    `columns`: the table's data columns (keys among them); `tracked`: those whose change opens a
    version. `fill_nulls` (ignore_null_updates): a NULL keeps the key's last value. `tombstone`:
    the deleted column of a table with `hard_deletes: new_record`. `snapshot_dates`: with
    snapshots that close the keys they lack, the dates that have one, in order (the base's first);
    a date skipped for want of input is not among them, so it closes nothing."""

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    tracked: tuple[str, ...]
    begin_column: str = "begin_dt"
    end_column: str = "end_dt"
    end_style: EndStyle = EndStyle.EXCLUSIVE
    open_end: str = "9999-12-31"
    fill_nulls: bool = False
    tombstone: str | None = None
    snapshot_dates: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("keys", "columns", "tracked", "snapshot_dates"):  # a caller's lists, kept as tuples
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @classmethod
    def of(cls, spec: TableSpec, columns: list[str], tracked: list[str], snapshot_dates=()) -> Timeline:
        """`spec`'s timeline over a table of `columns` (`tracked` among them)."""
        return cls(
            keys=tuple(spec.keys),
            columns=tuple(columns),
            tracked=tuple(tracked),
            begin_column=spec.begin_column,
            end_column=spec.end_column,
            end_style=spec.end_style,
            open_end=spec.open_end.isoformat(),
            fill_nulls=spec.source.fills_null_updates,
            tombstone=spec.tombstone_column,
            snapshot_dates=tuple(snapshot_dates),
        )

    @property
    def untracked(self) -> list[str]:
        """The columns updated in place: neither keys, tracked, nor the tombstone column."""
        return [c for c in self.columns if c not in self.keys and c not in self.tracked and c != self.tombstone]


def dated(rows: DataFrame, columns: list[str], ds: str) -> DataFrame:
    """An input in table column order, tagged with the date it belongs to."""
    return rows.select(*columns, F.lit(ds).alias(DS))


def _marked_states(rows: DataFrame, timeline: Timeline) -> DataFrame:
    """`marked` for rows that are whole states of their keys (no OP), in one window over each key
    (one shuffle, one sort): the row's kind from the row before it, and whether the next snapshot
    lacks its key (a delete there, left pending: `with_deletes` adds it), so that marking the
    delete needs no second sort. Each date's snapshot neighbours are looked up after the window,
    in a broadcast table of the dates, so that the shuffle does not carry them (a map literal
    would be scanned per row). A key NULL or repeated on a date is marked BAD_KEY: counted, so
    that the rebuild refuses its date as the merge does (`one_pass`) without a shuffle of its own
    to look for them."""
    keys, columns = list(timeline.keys), list(timeline.columns)
    by_key = Window.partitionBy(*keys).orderBy(DS)
    types = types_of(rows)

    def same_as_before(names: list[str]) -> Column:
        return all_of([same(F.col(c), F.lag(c).over(by_key), types[c]) for c in names])

    seen_before = F.lag(DS).over(by_key)  # the key's date before the row's
    # the kind of a row whose key was live before it (whether it was is known after the window)
    if_present = (
        F.when(any_of([F.col(k).isNull() for k in keys]) | (seen_before == F.col(DS)), F.lit(BAD_KEY))
        .when(~same_as_before(list(timeline.tracked)), F.lit("changed"))
        .when(same_as_before(timeline.untracked), F.lit("unchanged"))
        .otherwise(F.lit("updated"))
    )
    windowed = rows.select(
        *columns,
        DS,
        seen_before.alias(_PREV_DS),
        F.lead(DS).over(by_key).alias(_NEXT_SEEN),
        if_present.alias(KIND),
    )
    prev_ds, dates = F.col(_PREV_DS), timeline.snapshot_dates
    if dates:
        neighbours = [(d, before, after) for before, d, after in zip((None, *dates), dates, (*dates[1:], None))]
        table = rows.sparkSession.createDataFrame(
            neighbours, f"{DS} string, {_PREV_SNAPSHOT} string, {_NEXT_SNAPSHOT} string"
        )
        windowed = windowed.join(F.broadcast(table), on=DS, how="left")
        # live before: a row on the snapshot just before (else a snapshot between them closed the key)
        present = F.coalesce(prev_ds == F.col(_PREV_SNAPSHOT), F.lit(False))
    else:
        present = prev_ds.isNotNull()
    # back after a delete: with tombstones, a change of the tombstone
    back = F.when(prev_ds.isNotNull(), F.lit("changed")).otherwise(F.lit("new")) if timeline.tombstone else F.lit("new")
    kind = F.when(F.col(KIND) == BAD_KEY, F.col(KIND)).when(~present, back).otherwise(F.col(KIND))
    marked_rows = [*columns, DS, F.lit(UPSERT).alias(OP), kind.alias(KIND)]
    if not dates:
        return windowed.select(*marked_rows)
    next_snapshot, next_seen = F.col(_NEXT_SNAPSHOT), F.col(_NEXT_SEEN)
    gone = next_snapshot.isNotNull() & (next_seen.isNull() | (next_seen != next_snapshot))
    return windowed.select(*marked_rows, gone.alias(_GONE), _NEXT_SNAPSHOT)


def with_deletes(marked_rows: DataFrame) -> DataFrame:
    """`marked` rows with their pending deletes added: after each row whose key the next snapshot
    lacks (`_GONE`), a delete row on that snapshot's date (the key's values, OP delete, kind
    deleted). Left pending by the marking (Spark refuses a window inside a generator, so adding
    them is a projection of its own), so that `collapsed` adds them to its few rows, not to every
    row. Rows without pending deletes are returned as they are."""
    if _GONE not in marked_rows.columns:
        return marked_rows
    carried = [c for c in marked_rows.columns if c not in (DS, OP, KIND, _GONE, _NEXT_SNAPSHOT)]

    def row(ds: Column, op: Column, what: Column) -> Column:
        return F.struct(ds.alias(DS), op.alias(OP), what.alias(KIND))

    seen = row(F.col(DS), F.col(OP), F.col(KIND))
    deleted = row(F.col(_NEXT_SNAPSHOT), F.lit(DELETE), F.lit("deleted"))
    each = F.when(F.col(_GONE), F.array(seen, deleted)).otherwise(F.array(seen))
    return marked_rows.select(*carried, F.explode(each).alias(_ROW)).select(*carried, f"{_ROW}.*")


def day_changes(
    events: DataFrame, *, keys: list[str], columns: list[str], match: list[str] | None, fills: bool
) -> DataFrame:
    """Dated events (columns + DS + `changes.ACTION`, and `changes.ORDER` with sequence_by) as one
    change per key and date, as the daily merge makes a day's change set of them: OP the state
    its last event leaves, FIRST its first action, MATCH the values its first delete carries
    (with `match`: delete_match all_columns), CONTINUES (with `fills`: no delete that day), and
    what the date counts of them (EVENT_COUNTS). A key's events within a day are collapsed by the
    daily merge's own steps (`changes.flag_events`, `changes.collapse`), keyed by key and date."""
    deleting = F.col(ACTION) == DELETE
    if ORDER not in events.columns:  # at most one event per key and date: the event is the change
        matched = [F.when(deleting, F.struct(*[F.col(c) for c in match])).alias(MATCH)] if match is not None else []
        return events.select(
            *columns,
            DS,
            F.when(deleting, F.lit(DELETE)).otherwise(F.lit(UPSERT)).alias(OP),
            F.col(ACTION).alias(FIRST),
            *matched,
            F.lit(1).alias(SOURCE_ROWS),
            F.lit(0).alias(ABSENT),
            F.lit(False).alias(MISMATCHED),
        )
    each_day = [*keys, DS]
    if fills:
        events = changes.fill_null_updates(events, keys=each_day, columns=columns)
    flagged = changes.flag_events(events, keys=each_day, columns=[*columns, DS], match=match)
    whole_day = Window.partitionBy(*each_day)
    problem = F.col(PROBLEM)
    counted = flagged.select(
        "*",
        F.count(F.lit(1)).over(whole_day).alias(SOURCE_ROWS),
        F.sum(F.when(problem == DELETE_ABSENT, 1).otherwise(0)).over(whole_day).alias(ABSENT),
        F.coalesce(F.max(problem == DELETE_MISMATCH).over(whole_day), F.lit(False)).alias(MISMATCHED),
    )
    return changes.collapse(counted, columns=[*columns, DS, *EVENT_COUNTS], deletes=True)


def marked(rows: DataFrame, timeline: Timeline) -> DataFrame:
    """Each dated row with what it does to its key's version (one of KINDS, or VANISHED), and OP.

    `rows`: columns + DS, whole states (a key NULL or repeated on a date marked BAD_KEY, to be
    refused; the deletes of keys a snapshot lacks pending, for `with_deletes`, which `collapsed`,
    `versions` and `daily_counts` call: `_marked_states`); or the changes of `day_changes` (with
    OP: cdc, ordered upserts), whose deletes may find their key absent (VANISHED: counted, no
    version) and whose first deletes must match the row they delete (MISMATCHED, with MATCH).
    `timeline.fill_nulls` (ignore_null_updates): a change's NULL keeps its key's last value, as
    the daily merge fills an update from the open version (not after a delete, nor from a
    tombstone)."""
    keys, columns, tracked = list(timeline.keys), list(timeline.columns), list(timeline.tracked)
    by_key = Window.partitionBy(*keys).orderBy(DS)
    if OP not in rows.columns:
        if not timeline.fill_nulls:
            return _marked_states(rows, timeline)
        # ignore_null_updates: a mode whose rows are upserts, never snapshots that close keys
        rows = rows.select("*", F.lit(UPSERT).alias(OP))
    counts = [c for c in EVENT_COUNTS if c in rows.columns]
    present = F.coalesce(F.lag(OP).over(by_key) == UPSERT, F.lit(False))
    rows = rows.select(
        *columns, DS, OP, *[c for c in (FIRST, MATCH, CONTINUES) if c in rows.columns], *counts, present.alias(_PRESENT)
    )
    if timeline.fill_nulls:
        rows = _filled(rows, timeline)
    types = types_of(rows)

    def same_as_before(names: list[str]) -> Column:
        return all_of([same(F.col(c), F.lag(c).over(by_key), types[c]) for c in names])

    was_present, deleting = F.col(_PRESENT), F.col(OP) == DELETE
    # a key absent now that had a live version before was deleted: with tombstones, one is open
    lived_before = F.coalesce(
        F.max(F.col(OP) == UPSERT).over(by_key.rowsBetween(Window.unboundedPreceding, -1)), F.lit(False)
    )
    back = F.when(lived_before, F.lit("changed")).otherwise(F.lit("new")) if timeline.tombstone else F.lit("new")
    # each column is compared once: the tracked ones tell changed rows; of the others (their
    # tracked columns equal), the untracked ones tell unchanged from updated
    kind = (
        F.when(deleting & was_present, F.lit("deleted"))
        .when(deleting, F.lit(VANISHED))
        .when(~was_present, back)
        .when(~same_as_before(tracked), F.lit("changed"))
        .when(same_as_before(timeline.untracked), F.lit("unchanged"))
        .otherwise(F.lit("updated"))
    )
    counted = []
    first_delete = (F.col(FIRST) == DELETE) if FIRST in rows.columns else F.lit(False)
    if ABSENT in rows.columns:
        counted.append((F.col(ABSENT) + F.when(first_delete & ~was_present, 1).otherwise(0)).alias(ABSENT))
    if SOURCE_ROWS in rows.columns:
        counted.append(F.col(SOURCE_ROWS))
    if MISMATCHED in rows.columns:
        differs = F.lit(False)
        if MATCH in rows.columns:
            matched = rows.schema[MATCH].dataType.fieldNames()
            differs = ~all_of([same(F.col(f"{MATCH}.{c}"), F.lag(c).over(by_key), types[c]) for c in matched])
        counted.append((F.col(MISMATCHED) | (first_delete & was_present & differs)).alias(MISMATCHED))
    return rows.select(*columns, DS, F.col(OP), kind.alias(KIND), *counted)


def _filled(rows: DataFrame, timeline: Timeline) -> DataFrame:
    """ignore_null_updates: an upsert's NULL takes its key's last value since its last new start
    (its first row, a row after a delete, or a change whose day deleted the key first: not
    CONTINUES), as the daily merge fills it from the open version. Deletes stay as sent."""
    keys = list(timeline.keys)
    by_key = Window.partitionBy(*keys).orderBy(DS)
    continues = F.col(CONTINUES) if CONTINUES in rows.columns else F.lit(True)
    starts = F.when(~F.col(_PRESENT) | ~continues, 1).otherwise(0)
    lived = rows.select(
        "*", F.sum(starts).over(by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias(_LIFE)
    )
    running = Window.partitionBy(*keys, _LIFE).orderBy(DS).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    upsert = F.col(OP) == UPSERT
    values = [c for c in timeline.columns if c not in keys and c != timeline.tombstone]

    def filled(c: str) -> Column:
        return F.when(upsert, F.last(F.when(upsert, F.col(c)), ignorenulls=True).over(running)).otherwise(F.col(c))

    return lived.select(*[filled(c).alias(c) if c in values else F.col(c) for c in rows.columns])


def _closed_end(next_begin: Column, end_style: EndStyle) -> Column:
    if end_style == EndStyle.EXCLUSIVE:
        return next_begin
    return F.date_format(F.date_sub(F.to_date(next_begin), 1), "yyyy-MM-dd")


def versions(marked_rows: DataFrame, timeline: Timeline) -> DataFrame:
    """Every version of every key: columns, begin_column, end_column. A version holds its first
    row's tracked columns (later rows of the version only equal them, as Spark compares: -0.0 and
    0.0, NaNs, map entries in another order) and its last row's untracked ones (updated in place),
    as the daily merge keeps them. A delete ends its key's version; with a tombstone column it
    begins a tombstone holding that version's values, else no version."""
    keys, columns, tracked = list(timeline.keys), list(timeline.columns), list(timeline.tracked)
    begin_column, tombstone = timeline.begin_column, timeline.tombstone
    running = Window.partitionBy(*keys).orderBy(DS).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    starts = F.when(F.col(KIND).isin("new", "changed", "deleted"), 1).otherwise(0)
    # a delete of an absent key changes nothing; an unchanged row is the row before it again (its
    # untracked values too: the merge leaves the version as it was)
    marked_rows = with_deletes(marked_rows).where(~F.col(KIND).isin(VANISHED, "unchanged"))
    numbered = marked_rows.select(*columns, DS, F.col(OP), F.sum(starts).over(running).alias(VERSION))
    firsts = [c for c in columns if c in tracked and c not in keys]
    lasts = timeline.untracked
    first_row = [F.min_by(F.struct(*firsts), F.col(DS)).alias(_FIRST)] if firsts else []
    last_row = [F.max_by(F.struct(*lasts), F.col(DS)).alias(_LAST)] if lasts else []
    ended = F.max(F.col(OP) == DELETE).alias(_ENDED)  # a delete is a version of its own
    grouped = numbered.groupBy(*keys, VERSION).agg(F.min(DS).alias(begin_column), *first_row, *last_row, ended)
    by_begin = Window.partitionBy(*keys).orderBy(begin_column)
    next_begin = F.lead(begin_column).over(by_begin)
    end = F.when(next_begin.isNull(), F.lit(timeline.open_end)).otherwise(_closed_end(next_begin, timeline.end_style))

    def value(c: str) -> Column:
        if c in keys:
            return F.col(c)
        if c == tombstone:
            return F.col(_ENDED).alias(c)
        held = F.col(f"{_FIRST if c in firsts else _LAST}.{c}")
        # a tombstone holds the values of the version it follows (a delete follows a live version)
        return F.when(F.col(_ENDED), F.lag(held).over(by_begin)).otherwise(held).alias(c)

    result = grouped.select(
        *[value(c) for c in columns], F.col(begin_column), end.alias(timeline.end_column), F.col(_ENDED)
    )
    if not tombstone:
        result = result.where(~F.col(_ENDED))  # a delete leaves no version: it only ended the one before
    return result.drop(_ENDED)


def with_slot(versions_df: DataFrame, end_column: str, open_end: str) -> DataFrame:
    """Versions without the end column, tagged with the directory they are written to:
    `open`, or `closed-<end>` (one per history partition)."""
    slot = F.when(F.col(end_column) == open_end, F.lit(Slot.OPEN)).otherwise(
        F.concat(F.lit(CLOSED_PREFIX), F.col(end_column))
    )
    return versions_df.select(*[c for c in versions_df.columns if c != end_column], slot.alias(SLOT))


def collapsed(marked_rows: DataFrame) -> DataFrame:
    """The marked rows with the unchanged ones of each date collapsed into one (ROWS: how many it
    stands for; NULL values), the others as they are (ROWS 1): what the counts and the versions
    need, at the changes' size, as most rows of most days are unchanged. One hash aggregate on the
    date, kind and a row id that only kept rows have: its partial aggregation collapses them
    where the marking left them, before any shuffle. The values are an aggregate's, not grouped
    by: grouping would fold -0.0 into 0.0 and refuses maps. A row whose key the next snapshot
    lacks is kept, and its pending delete added after the collapse (`with_deletes`)."""
    collapses = F.col(KIND) == "unchanged"
    if _GONE in marked_rows.columns:
        collapses = collapses & ~F.col(_GONE)
    counted = [c for c in (DS, KIND, *EVENT_COUNTS) if c in marked_rows.columns]
    values = [c for c in marked_rows.columns if c not in counted]
    numbered = marked_rows.select(
        *counted,
        F.when(~collapses, F.struct(*values)).alias(_VALUES),  # no values copied for rows that collapse
        F.when(~collapses, F.monotonically_increasing_id()).alias(_ROW_ID),
    )
    grouped = numbered.groupBy(*counted, _ROW_ID).agg(F.first(_VALUES).alias(_VALUES), F.count(F.lit(1)).alias(ROWS))
    return with_deletes(
        grouped.select(
            *[F.col(_VALUES).getField(c).alias(c) if c in values else F.col(c) for c in marked_rows.columns], ROWS
        )
    )


def daily_counts(marked_rows: DataFrame) -> DataFrame:
    """Rows of each kind per date: DS, then one column per kind (VANISHED and BAD_KEY too), and the
    sums of the changes' EVENT_COUNTS where they have them. Of `collapsed` rows too (ROWS each)."""
    marked_rows = with_deletes(marked_rows)
    rows = F.col(ROWS) if ROWS in marked_rows.columns else F.lit(1)
    kinds = [F.sum(F.when(F.col(KIND) == kind, rows).otherwise(0)).alias(kind) for kind in (*KINDS, VANISHED, BAD_KEY)]
    counted = [F.sum(F.col(c).cast("int") * rows).alias(c) for c in EVENT_COUNTS if c in marked_rows.columns]
    return marked_rows.groupBy(DS).agg(*kinds, *counted)


def with_values_of(versions: DataFrame, rebuilt: DataFrame, keys: list[str], columns: list[str]) -> DataFrame:
    """`versions` (one open version per key) with `columns` taken from `rebuilt`'s row of the same
    key where it has one: the restore of a table with untracked columns keeps the versions the
    table holds (a deleted or erased one stays away, a fixed one keeps its fix) and takes only the
    untracked values from the rebuild, which the table cannot say. Columns and order of `versions`."""
    found = "zipper_rebuilt_found"
    renamed = {c: f"zipper_rebuilt_{i}" for i, c in enumerate(columns)}
    values = rebuilt.select(*keys, *[F.col(c).alias(renamed[c]) for c in columns], F.lit(True).alias(found))
    joined = versions.join(values, keys, "left")
    return joined.select(
        *[
            F.when(F.col(found), F.col(renamed[c])).otherwise(F.col(c)).alias(c) if c in renamed else F.col(c)
            for c in versions.columns
        ]
    )
