"""Late changes put in place: a key's history rebuilt from its versions and its late changes.

With `source.updated_at`, a change is late when it is older than its key's latest event (the open
version's valid_from, or the valid_to of the version a delete closed). It belongs inside the
key's history, not after it. `in_place` gives the key's versions from the earliest late change
on as if every change had arrived in updated_at order, while keeping the days of the daily loads:

- Each version becomes an event at its valid_from (its values), and a version followed by a gap
  (a delete) a delete event at its valid_to. The late changes are events too.
- Events in time order make versions as a day's changes do (`changes.versions_of_day`): an
  upsert starts a version unless the one before has equal tracked values; a delete ends it. The
  other columns take the values of the latest event, by the `updated_at` column (a version's own
  value says when its columns were last updated in place).
- A version that holds an existing version's event keeps that version's begin and end days: it
  was the open one in those daily loads. A late version, never open in a daily load, gets
  begin = end = the end day of the version it splits; in a gap or before the key's first version
  (nothing to split), the day being merged (`shape.closed_end`: its closed partition), like a version that
  began and ended within it (its begin the date of that load: the end day itself, or the day
  after with `end_style: inclusive`). So only the partitions of split versions (and the day's) are written.

Pure DataFrame -> DataFrame; the caller reads the versions (only those whose valid_to is after
the key's earliest late change) and writes the result in their partitions."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zipper.transforms.equality import all_of, same, types_of
from zipper.transforms.shape import MergeShape
from zipper.transforms.vocabulary import DELETE, LATE, OP, UPSERT

_AT, _ACTION, _START, _RUN = "zipper__at__", "zipper__action__", "zipper__start__", "zipper__run__"
_BEGIN, _END, _HOLDER = "zipper__begin__", "zipper__end__", "zipper__holder__"
_OLD_TO = "zipper__old_to__"  # an existing version's valid_to, to tell whether the late changes moved it
CHANGED = "zipper_changed"  # a version of the result that differs from the table's (or is new)
REPLACES = "zipper_replaces"  # the end values of the partitions holding the versions a changed one replaces
_GAP = ""  # a holder that is a delete: the late version is in a gap


def _events(history: DataFrame, late: DataFrame, shape: MergeShape, values: list[str]) -> DataFrame:
    """The versions and the late changes as one stream of events per key (`values`: the columns
    neither keys nor validity)."""
    keys, begin_column, end_column, open_end = shape.keys, shape.begin_column, shape.end_column, shape.open_end
    valid_from, valid_to = shape.validity
    kind = history.schema[valid_from].dataType
    by_key = Window.partitionBy(*keys).orderBy(valid_from)
    starts = history.select(
        *keys,
        *values,
        F.col(valid_from).alias(_AT),
        F.lit(UPSERT).alias(_ACTION),
        F.lit(False).alias(LATE),
        F.col(begin_column).alias(_BEGIN),
        F.col(end_column).alias(_END),
        F.col(valid_to).alias(_OLD_TO),
    )
    # a version not followed by the next one's start (nor open) was ended by a delete
    followed = history.select(
        "*", F.lead(valid_from).over(by_key).alias("zipper__next__"), F.lit(open_end).cast(kind).alias("zipper__oe__")
    )
    ended = followed.where(
        (F.col(valid_to) != F.col("zipper__oe__"))
        & (F.col("zipper__next__").isNull() | (F.col("zipper__next__") != F.col(valid_to)))
    ).select(
        *keys,
        *[F.lit(None).cast(history.schema[c].dataType).alias(c) for c in values],
        F.col(valid_to).alias(_AT),
        F.lit(DELETE).alias(_ACTION),
        F.lit(False).alias(LATE),
        F.lit(None).cast("string").alias(_BEGIN),
        F.lit(None).cast("string").alias(_END),
        F.lit(None).cast(kind).alias(_OLD_TO),
    )
    action = F.coalesce(F.col(OP), F.lit(UPSERT)) if OP in late.columns else F.lit(UPSERT)
    changes = late.select(
        *keys,
        *[F.col(c).cast(history.schema[c].dataType).alias(c) for c in values],
        F.col(valid_from).cast(kind).alias(_AT),
        action.alias(_ACTION),
        F.lit(True).alias(LATE),
        F.lit(None).cast("string").alias(_BEGIN),
        F.lit(None).cast("string").alias(_END),
        F.lit(None).cast(kind).alias(_OLD_TO),
    )
    known = starts.unionByName(ended).select(*keys, _AT).distinct()
    # a re-sent change (the same moment as an event the table has) changes nothing; one with
    # other values is refused before (`conflicts`)
    fresh = changes.join(known, on=[*keys, _AT], how="left_anti")
    return starts.unionByName(ended).unionByName(fresh)


def in_place(history: DataFrame, late: DataFrame, shape: MergeShape) -> DataFrame:
    """The versions of the late changes' keys with those changes put in place.

    `history`: the keys' versions from the earliest late change on (columns, begin_column,
    end_column; the open version with the open end). `late`: the day's late changes, one row
    each (columns, valid_from their updated_at, and `zipper_op` for deletes). Returns columns,
    begin_column and end_column: the rows that replace `history`'s, with CHANGED (the version is
    not one of `history`'s as it was) and REPLACES (the end values of the versions it replaces:
    the partitions a changed version makes the caller write again). From the shape: the day's
    closed partition (`closed_end`) holds a late version with nothing to split; `end_lag` (1 with
    `end_style: inclusive`) gives a late version's begin day."""
    keys, columns, tracked, validity = shape.keys, shape.columns, shape.tracked, shape.validity
    valid_from, valid_to = validity
    kind = history.schema[valid_from].dataType
    values = [c for c in columns if c not in keys and c not in validity]
    events = _events(history, late, shape, values)
    # one exchange by key: every window and aggregate below is by key, and needs no other
    events = events.repartition(*keys)
    types = types_of(events)
    by_time = Window.partitionBy(*keys).orderBy(_AT, LATE)
    previous = F.lag(_ACTION).over(by_time)
    equal = all_of([same(F.lag(c).over(by_time), F.col(c), types[c]) for c in tracked])
    starts = previous.isNull() | (previous == DELETE) | (F.col(_ACTION) == DELETE) | ~equal
    marked = events.select("*", starts.alias(_START))
    numbered = marked.select(
        "*", F.sum(F.col(_START).cast("int")).over(by_time.rowsBetween(Window.unboundedPreceding, 0)).alias(_RUN)
    )
    later = [c for c in values if c not in tracked]
    updated_at = shape.updated_at
    stamp = F.coalesce(F.col(updated_at).cast(kind), F.col(_AT)) if updated_at in values else F.col(_AT)
    runs = numbered.groupBy(*keys, _RUN).agg(
        F.min_by(F.struct(*[c for c in values if c in tracked], _ACTION, _AT), F.col(_AT)).alias("zipper__first__"),
        F.max_by(F.struct(*later), stamp).alias("zipper__later__"),
        F.max(_BEGIN).alias(_BEGIN),
        F.max(_END).alias(_END),
        F.max(F.col(LATE).cast("int")).alias("zipper__has_late__"),
        F.count(F.when(~F.col(LATE), F.lit(1))).alias("zipper__kept__"),
        F.max(_OLD_TO).alias(_OLD_TO),
        F.collect_set(_END).alias(REPLACES),
    )
    by_run = Window.partitionBy(*keys).orderBy(_RUN)
    first = F.col("zipper__first__")
    is_delete = first[_ACTION] == DELETE
    holder = F.when(is_delete, F.lit(_GAP)).otherwise(F.col(_END))
    held = runs.select(
        "*",
        F.lead(first[_AT]).over(by_run).alias("zipper__to__"),
        F.last(holder, ignorenulls=True).over(by_run.rowsBetween(Window.unboundedPreceding, -1)).alias(_HOLDER),
    )
    in_gap = F.col(_HOLDER).isNull() | (F.col(_HOLDER) == _GAP)
    late_end = F.when(in_gap, F.lit(shape.closed_end)).otherwise(F.col(_HOLDER))
    # begins on the date whose load closed that partition, as a version within a day does
    lag = shape.end_lag
    late_begin = F.date_format(F.date_add(F.to_date(late_end), lag), "yyyy-MM-dd") if lag else late_end

    new_to = F.coalesce(F.col("zipper__to__"), F.lit(shape.open_end).cast(kind))

    def column(c: str) -> Column:
        if c in keys:
            return F.col(c)
        if c == valid_from:
            return first[_AT].cast(kind).alias(c)
        if c == valid_to:
            return new_to.alias(c)
        return (first[c] if c in tracked else F.col("zipper__later__")[c]).alias(c)

    # unchanged: one version of the table, alone in its run, ending where it did
    changed = (F.col("zipper__has_late__") == 1) | (F.col("zipper__kept__") != 1) | ~new_to.eqNullSafe(F.col(_OLD_TO))
    return held.where(~is_delete).select(
        *[column(c) for c in columns],
        F.coalesce(F.col(_BEGIN), late_begin).alias(shape.begin_column),
        F.coalesce(F.col(_END), late_end).alias(shape.end_column),
        changed.alias(CHANGED),
        F.col(REPLACES),
    )


def conflicts(history: DataFrame, late: DataFrame, *, keys: list[str], tracked: list[str], validity) -> DataFrame:
    """Late changes at the very moment a version of their key begins, with other tracked values:
    the same moment cannot hold two versions. Keys and that moment (`zipper_from`), in key order.
    (The other columns may differ: the version's were updated in place since.)"""
    valid_from = validity[0]
    values = list(tracked)
    types = types_of(history)
    old = history.select(*keys, F.col(valid_from), *[F.col(c).alias("zipper__old__" + c) for c in values])
    upserts = late.where(F.coalesce(F.col(OP), F.lit(UPSERT)) == UPSERT) if OP in late.columns else late
    joined = upserts.join(old, on=[*keys, valid_from], how="inner")
    differ = ~all_of([same(F.col("zipper__old__" + c), F.col(c), types[c]) for c in values])
    return joined.where(differ).select(*keys, F.col(valid_from).alias("zipper_from")).orderBy(*keys)
