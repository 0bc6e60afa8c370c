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

from zipper.transforms.equality import all_of, any_of, same, types_of
from zipper.transforms.shape import MergeShape
from zipper.transforms.vocabulary import DELETE, LATE, OP, UPSERT

_AT, _ACTION, _START, _RUN = "zipper__at__", "zipper__action__", "zipper__start__", "zipper__run__"
_BEGIN, _END, _HOLDER = "zipper__begin__", "zipper__end__", "zipper__holder__"
_NEW_TO, _VALUES = "zipper__new_to__", "zipper__values__"
_LIFE, _OLD_LIFE = "zipper__life__", "zipper__old_life__"  # a key's deletes so far: all, the table's own
_ON_TIME, _FOLLOWED, _HELD = "zipper__on_time__", "zipper__followed__", "zipper__held__"
_REFILLED = "zipper__refilled__"  # a version of the table whose NULL a late change before it fills
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
    # a tombstone is its key's delete, at the moment it begins
    version_action = F.when(F.col(shape.tombstone), F.lit(DELETE)) if shape.tombstone else F.lit(None)
    starts = history.select(
        *keys,
        *values,
        F.col(valid_from).alias(_AT),
        F.coalesce(version_action, F.lit(UPSERT)).alias(_ACTION),
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
        F.lit(not shape.tombstone)  # with tombstones a delete is a version, never a gap
        & (F.col(valid_to) != F.col("zipper__oe__"))
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
    tombstone = shape.tombstone
    values = [c for c in columns if c not in keys and c not in validity and c != tombstone]
    events = _events(history, late, shape, values)
    # one exchange by key: every window and aggregate below is by key, and needs no other
    events = events.repartition(*keys)
    types = types_of(events)
    by_time = Window.partitionBy(*keys).orderBy(_AT, LATE)
    if shape.fill_nulls:
        events = _filled(events, shape, values, by_time)
        # a change after the key's latest event (ignore_null_updates puts them in place too)
        latest = F.max(F.when(~F.col(LATE), F.col(_AT))).over(Window.partitionBy(*keys))
        events = events.withColumn(_ON_TIME, F.coalesce(F.col(LATE) & (F.col(_AT) > latest), F.lit(False)))
    previous = F.lag(_ACTION).over(by_time)
    equal = all_of([same(F.lag(c).over(by_time), F.col(c), types[c]) for c in tracked])
    # a run: a live version (upserts in a row with equal tracked values) or a delete (deletes in a row)
    starts = previous.isNull() | (previous != F.col(_ACTION)) | ((F.col(_ACTION) == UPSERT) & ~equal)
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
        F.max(F.col(_REFILLED).cast("int") if shape.fill_nulls else F.lit(0)).alias(_REFILLED),
        F.count(F.when(~F.col(LATE), F.lit(1))).alias("zipper__kept__"),
        F.max(_OLD_TO).alias(_OLD_TO),
        F.collect_set(_END).alias(REPLACES),
        F.min(F.col(_ON_TIME).cast("int") if shape.fill_nulls else F.lit(0)).alias(_ON_TIME),
        # the values the table holds for the run (its latest version's): a tombstone read without
        # the version it ends keeps its own
        F.max_by(F.struct(*values), F.when(~F.col(LATE), F.col(_AT))).alias(_HELD),
    )
    by_run = Window.partitionBy(*keys).orderBy(_RUN)
    first = F.col("zipper__first__")
    is_delete = first[_ACTION] == DELETE
    # with tombstones a late version within a delete splits the tombstone, as any version
    holder = F.col(_END) if tombstone else F.when(is_delete, F.lit(_GAP)).otherwise(F.col(_END))
    next_from = F.lead(first[_AT]).over(by_run)
    new_to = F.coalesce(next_from, F.lit(shape.open_end).cast(kind))
    # unchanged: one version of the table, alone in its run, ending where it did, its values as they were
    changed = (
        (F.col("zipper__has_late__") == 1)
        | (F.col(_REFILLED) == 1)
        | (F.col("zipper__kept__") != 1)
        | ~new_to.eqNullSafe(F.col(_OLD_TO))
    )
    own = F.struct(*[(first[c] if c in tracked else F.col("zipper__later__")[c]).alias(c) for c in values])
    held = runs.select(
        "*",
        new_to.alias(_NEW_TO),
        F.last(holder, ignorenulls=True).over(by_run.rowsBetween(Window.unboundedPreceding, -1)).alias(_HOLDER),
        own.alias(_VALUES),
        changed.alias(CHANGED),
        next_from.isNotNull().alias(_FOLLOWED),
    )
    if tombstone:
        # a tombstone: the values of the live version it ends (changed with them), or its own when
        # that version is older than every late change (not read); a late delete with no live
        # version before it makes nothing
        before = F.coalesce(F.lag(_VALUES).over(by_run), F.col(_HELD))
        ends_changed = F.coalesce(F.lag(CHANGED).over(by_run), F.lit(False))
        held = held.select(
            *[c for c in held.columns if c not in (_VALUES, CHANGED)],
            F.when(is_delete, before).otherwise(F.col(_VALUES)).alias(_VALUES),
            (F.col(CHANGED) | (is_delete & ends_changed)).alias(CHANGED),
        )
        kept = F.col(_VALUES).isNotNull()
    else:
        kept = ~is_delete
    in_gap = F.col(_HOLDER).isNull() | (F.col(_HOLDER) == _GAP)
    late_end = F.when(in_gap, F.lit(shape.closed_end)).otherwise(F.col(_HOLDER))
    # begins on the date whose load closed that partition, as a version within a day does
    lag = shape.end_lag
    late_begin = F.date_format(F.date_add(F.to_date(late_end), lag), "yyyy-MM-dd") if lag else late_end

    def column(c: str) -> Column:
        if c in keys:
            return F.col(c)
        if c == valid_from:
            return first[_AT].cast(kind).alias(c)
        if c == valid_to:
            return F.col(_NEW_TO).alias(c)
        if c == tombstone:
            return is_delete.alias(c)
        return F.col(_VALUES)[c].alias(c)

    # today's changes (ignore_null_updates): versions the day opens, in its closed partition when
    # a later one follows, as a daily merge makes them; the open version they follow is closed today
    today = F.when(F.col(_FOLLOWED), F.lit(shape.closed_end)).otherwise(F.lit(shape.open_end))
    begin = F.when(F.col(_ON_TIME) == 1, F.lit(shape.ds)).otherwise(F.coalesce(F.col(_BEGIN), late_begin))
    end = (
        F.when(F.col(_ON_TIME) == 1, today)
        .when((F.col(_END) == shape.open_end) & F.col(_FOLLOWED), F.lit(shape.closed_end))
        .otherwise(F.coalesce(F.col(_END), late_end))
    )
    return held.where(kept).select(
        *[column(c) for c in columns],
        begin.alias(shape.begin_column),
        end.alias(shape.end_column),
        F.col(CHANGED),
        F.col(REPLACES),
    )


def _filled(events: DataFrame, shape: MergeShape, values: list[str], by_time) -> DataFrame:
    """With `ignore_null_updates`, the events as the partial updates they came from, filled again
    in time order: an upsert's NULL takes the value of its key's latest upsert before it, as a
    daily merge fills from the open row; after a delete values stay NULL.

    The table keeps filled values, not the updates: a version's value equal to the one of the
    table's version before it is taken as carried (a NULL of its update), so a late change before
    it passes its value on, as the updates in time order would. A version of the table whose
    values change so is marked (_REFILLED): its partition is written again."""
    keys = shape.keys
    types = types_of(events)
    so_far = by_time.rowsBetween(Window.unboundedPreceding, 0)
    is_delete = F.col(_ACTION) == DELETE
    lived = events.select(
        "*",
        F.sum(F.when(is_delete, 1).otherwise(0)).over(so_far).alias(_LIFE),
        F.sum(F.when(is_delete & ~F.col(LATE), 1).otherwise(0)).over(so_far).alias(_OLD_LIFE),
    )
    before = Window.partitionBy(*keys, _LIFE).orderBy(_AT, LATE).rowsBetween(Window.unboundedPreceding, -1)
    # the table's versions filled one another as they were merged: between the table's own deletes
    before_in_table = Window.partitionBy(*keys, _OLD_LIFE).orderBy(_AT, LATE).rowsBetween(Window.unboundedPreceding, -1)
    upsert = F.col(_ACTION) == UPSERT
    kept = upsert & ~F.col(LATE)
    carried = {
        c: kept & same(F.last(F.when(kept, F.col(c)), ignorenulls=True).over(before_in_table), F.col(c), types[c])
        for c in values
    }
    stored = {c: "zipper__stored__" + c for c in values}
    updates = lived.select(
        *[c for c in lived.columns if c not in carried],
        *[F.when(carried[c], F.lit(None).cast(types[c])).otherwise(F.col(c)).alias(c) for c in values],
        *[F.col(c).alias(stored[c]) for c in values],
    )
    filled = {c: F.coalesce(F.col(c), F.last(F.when(upsert, F.col(c)), ignorenulls=True).over(before)) for c in values}
    refilled = kept & any_of([~same(filled[c], F.col(stored[c]), types[c]) for c in values])
    return updates.select(
        *[c for c in events.columns if c not in filled],
        *[F.when(upsert, filled[c]).otherwise(F.col(c)).alias(c) for c in values],
        refilled.alias(_REFILLED),
    )


def conflicts(
    history: DataFrame, late: DataFrame, *, keys: list[str], tracked: list[str], validity, fill_nulls: bool = False
) -> DataFrame:
    """Late changes at the very moment a version of their key begins, with other tracked values:
    the same moment cannot hold two versions. Keys and that moment (`zipper_from`), in key order.
    (The other columns may differ: the version's were updated in place since.) With `fill_nulls`
    a change's NULL keeps the version's value: a partial update re-sent is the same change."""
    valid_from = validity[0]
    values = list(tracked)
    types = types_of(history)
    old = history.select(*keys, F.col(valid_from), *[F.col(c).alias("zipper__old__" + c) for c in values])
    upserts = late.where(F.coalesce(F.col(OP), F.lit(UPSERT)) == UPSERT) if OP in late.columns else late
    joined = upserts.join(old, on=[*keys, valid_from], how="inner")
    kept = (lambda c: F.col(c).isNull()) if fill_nulls else (lambda c: F.lit(False))
    differ = ~all_of([same(F.col("zipper__old__" + c), F.col(c), types[c]) | kept(c) for c in values])
    return joined.where(differ).select(*keys, F.col(valid_from).alias("zipper_from")).orderBy(*keys)
