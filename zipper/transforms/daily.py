"""The merge as pure DataFrame -> DataFrame functions, split by size.

A day names few keys. The big pass (`route_open`) only sorts the open partition's rows into
those the increment does not name, kept as they are, and the few it does ("touched"). The
increment then looks up its keys among the touched rows (`day_rows`) and gives everything
that changes: successors, closed versions, keys that were not open. Each output row
carries its destination (`zipper_slot`: open | closed) and why it is there (`zipper_kind`,
dropped before writing, so Spark only computes it where a test or a count asks).

The increment is a day change set (see `changes`): without an op column every row upserts its
key (the upsert mode's plan, unchanged); with `zipper_op` a row may delete its key instead: the
open version is closed and nothing succeeds it, and a delete of a key that is not open leaves
one row in no slot (`none`), there only to be counted."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from zipper.core.layout import SLOT, Slot
from zipper.transforms.changes import CONTINUES
from zipper.transforms.equality import all_of, any_of, equal_at_float_precision, float_exact, same, types_of
from zipper.transforms.shape import (
    CHANGED,
    DELETED,
    INTRADAY,
    STILL_DELETED,
    TOMBSTONE,
    UNCHANGED,
    UPDATED,
    VANISHED,
    MergeShape,
)
from zipper.transforms.vocabulary import DELETE, FINAL, KIND, LAST, OP, STEP

# carried: open row whose key is not in the increment; unchanged: re-sent with equal tracked
# values; updated: equal tracked values, other columns updated in place; changed: the new
# version of a changed key; closed: the old version it replaces; new: a key not open before;
# deleted: the open version of a deleted key, closed; vanished: a delete of a key not open.
# With a deleted column (hard_deletes: new_record): tombstone: the open version a deleted key
# gets, its last values, deleted true; still_deleted: a tombstone deleted again, kept as it is.
# A key back from its tombstone is `changed` (the tombstone is closed).
# (the kinds are declared in `shape`, with the merge shape that says which a day counts)
_INC = "zipper__inc__"
_HIT = _INC + "hit"
_OLD = "zipper__old__"
_OLD_HIT = _OLD + "hit"


def route_open(
    open_rows: DataFrame,
    increment: DataFrame,
    *,
    keys: list[str],
    broadcast_increment: bool = True,
    columns: list[str] | None = None,
) -> DataFrame:
    """The open rows, each tagged for the big pass: `open` when the increment does not name its
    key (it stays as it is), `touched` when it does (the small job decides its fate). `columns`:
    the open rows' columns when the caller knows them (asking the DataFrame is a plan analysis on
    a Spark Connect client).

    One lookup per row and no value changes, so this pass costs little more than a copy."""
    flags = increment.select(*[F.col(k).alias(_INC + k) for k in keys], F.lit(True).alias(_HIT))
    if broadcast_increment:
        flags = F.broadcast(flags)
    joined = open_rows.join(flags, on=all_of([open_rows[k] == F.col(_INC + k) for k in keys]), how="left")
    slot = F.when(F.col(_HIT).isNull(), F.lit(Slot.OPEN)).otherwise(F.lit(Slot.TOUCHED))
    return joined.select(*[open_rows[c] for c in columns or open_rows.columns], slot.alias(SLOT))


def _met(touched: DataFrame, day: DataFrame, shape: MergeShape, broadcast: bool) -> DataFrame:
    """The day's rows, each joined to its key's open version (`touched`, its columns prefixed
    `_OLD`; NULLs for a key that was not open). `touched` has at most one row per key of the day,
    so it is the side that is broadcast."""
    keys, begin_column = shape.keys, shape.begin_column
    old = touched.select(
        *[F.col(k).alias(_OLD + k) for k in keys],
        *[F.col(c).alias(_OLD + c) for c in shape.values],
        F.col(begin_column).alias(_OLD + begin_column),
        F.lit(True).alias(_OLD_HIT),
    )
    if broadcast:  # at most as many rows as the day's
        old = F.broadcast(old)
    return day.join(old, on=all_of([day[k] == F.col(_OLD + k) for k in keys]), how="left")


def _placed(rows: DataFrame, shape: MergeShape, value, keeps_begin: Column, slot: Column, kind: Column) -> DataFrame:
    """The small job's output: the columns (`value` of each non-key), the begin (the open
    version's where `keeps_begin`, else the date merged), the slot and the kind."""
    return rows.select(
        *[F.col(c) if c in shape.keys else value(c).alias(c) for c in shape.columns],
        F.when(keeps_begin, F.col(_OLD + shape.begin_column)).otherwise(F.lit(shape.ds)).alias(shape.begin_column),
        slot.alias(SLOT),
        kind.alias(KIND),
    )


def day_rows(touched: DataFrame, increment: DataFrame, shape: MergeShape, *, broadcast: bool = True) -> DataFrame:
    """What the day adds, from the few open rows whose keys the increment names (`touched`):
    one open successor per increment key (a changed or new key opens on ds; an unchanged or
    updated one keeps its begin), the closed old version of each changed or deleted key, and a
    row in slot `none` for each delete of a key that was not open (counted, not written).

    `shape.tombstone`: the deleted column of a table with tombstones (`hard_deletes: new_record`),
    one of the columns, not tracked; the increment's value of it is ignored. A deleted key's open
    version is closed and a tombstone opens on ds with its values and `deleted` true. A tombstone
    is not open: an upsert closes it and opens a new version (its `deleted` differs, whatever the
    values), a delete keeps it as it is.

    One pass over the increment, each row looking up its key's open version (`_met`).
    `shape.float_precision`: see `_FloatPrecision`. `shape.fill_nulls` (ignore_null_updates): a
    NULL of the day keeps the open version's value, where the key's changes go on from its open
    row (no delete that day: `changes.CONTINUES`, when the change set has it); the version rule
    then compares the filled values."""
    deleted, tracked, values = shape.tombstone, shape.tracked, shape.values
    joined = _met(touched, increment, shape, broadcast)
    was_open = F.col(_OLD_HIT).isNotNull()
    tombstoned = (was_open & F.col(_OLD + deleted)) if deleted else F.lit(False)
    delete = (F.col(OP) == DELETE) if OP in increment.columns else F.lit(False)
    if shape.fill_nulls:
        joined = _filled(joined, increment, values, was_open & ~tombstoned & ~delete)
    floats = _FloatPrecision(shape.float_precision, types_of(increment))
    changed = ~all_of([floats.equal(c) for c in tracked]) | tombstoned
    same_untracked = all_of([floats.equal_kept(c) for c in values if c not in tracked and c != deleted])
    refined = any_of([floats.refines(c) for c in tracked])
    kind = (
        F.when(~was_open & delete, F.lit(VANISHED))
        .when(~was_open, F.lit("new"))
        .when(tombstoned & delete, F.lit(STILL_DELETED))
        .when(delete, F.lit(DELETED))
        .when(changed, F.lit(CHANGED))
        .when(same_untracked & ~refined, F.lit(UNCHANGED))
        .otherwise(F.lit(UPDATED))
    )
    deleted_slots = F.array(F.lit(Slot.CLOSED), F.lit(Slot.OPEN)) if deleted else F.array(F.lit(Slot.CLOSED))
    slots = (
        F.when(F.col(KIND) == VANISHED, F.array(F.lit(Slot.NONE)))
        .when(F.col(KIND) == DELETED, deleted_slots)
        .when(F.col(KIND) == CHANGED, F.array(F.lit(Slot.OPEN), F.lit(Slot.CLOSED)))
        .otherwise(F.array(F.lit(Slot.OPEN)))
    )
    successor = (F.col(SLOT) == Slot.OPEN) | (F.col(SLOT) == Slot.NONE)
    opens_today = F.col(KIND).isin(CHANGED, "new", VANISHED)
    # a tombstone the day opens, and one kept: the old values as they were
    tombstone = (F.col(KIND) == DELETED) & (F.col(SLOT) == Slot.OPEN)
    as_it_was = tombstone | (F.col(KIND) == STILL_DELETED)
    value = _row_value(shape, floats, successor, opens_today, tombstone, as_it_was)
    begins_today = (successor & opens_today) | tombstone
    out_kind = (
        F.when(tombstone, F.lit(TOMBSTONE))
        .when(successor | (F.col(KIND) == DELETED), F.col(KIND))
        .otherwise(F.lit("closed"))
    )
    rows = joined.select("*", kind.alias(KIND)).select("*", F.explode(slots).alias(SLOT))
    return _placed(rows, shape, value, ~begins_today, F.col(SLOT), out_kind)


def _filled(joined: DataFrame, increment: DataFrame, values: list[str], may_go_on: Column) -> DataFrame:
    """ignore_null_updates: a NULL of the day takes the open version's value where the key's
    changes go on from its open row (`may_go_on`, and `changes.CONTINUES` when the change set has it)."""
    goes_on = may_go_on & (F.col(CONTINUES) if CONTINUES in increment.columns else F.lit(True))
    return joined.select(
        *[
            F.when(goes_on, F.coalesce(F.col(c), F.col(_OLD + c))).otherwise(F.col(c)).alias(c)
            if c in values
            else F.col(c)
            for c in joined.columns
        ]
    )


def _row_value(shape: MergeShape, floats, successor: Column, opens_today: Column, tombstone: Column, as_it_was: Column):
    """Each column's value in `day_rows`'s output. The open slot gets the increment's values, but a
    version that goes on (unchanged, updated) keeps its tracked values: they only compare equal
    (-0.0 and 0.0, NaNs, map entries in another order), and a rerun restores the version as it
    began. The closed slot: the old version as it was. At float precision a version that goes on
    takes the more precise of the two values."""
    deleted, tracked = shape.tombstone, shape.tracked

    def value(c: str) -> Column:
        if c == deleted:
            return F.when(tombstone, F.lit(True)).when(successor & opens_today, F.lit(False)).otherwise(F.col(_OLD + c))
        if c in tracked:
            takes_new = successor & (opens_today | floats.refines(c))
        else:
            takes_new = successor & (opens_today | ~floats.keeps_old(c))
        return F.when(takes_new & ~as_it_was, F.col(c)).otherwise(F.col(_OLD + c)).alias(c)

    return value


_OLD_ROW, _VERSION, _VANISHED = "old", "version", "vanished"
_ROLE = "zipper__role__"


def day_versions(touched: DataFrame, versions: DataFrame, shape: MergeShape, *, broadcast: bool = True) -> DataFrame:
    """`day_rows` for a table with `source.updated_at`: the day's versions of each key
    (`changes.versions_of_day`: several per key, in order, each with its validity) against the
    key's open version (`touched`).

    The first version meets the open one: with equal tracked values it continues it (its begin
    and valid_from kept), else the open version is closed, valid until the first version's
    valid_from. Every version but the key's last is closed on the run date with the day's closed
    versions: one the day opened (`intraday`) begins on the run date too. The last one is the
    key's open version. Kinds as `day_rows` gives them, per key: the open row's
    (new, changed, updated, unchanged), the closed open version's (closed, or deleted when the day
    ends with a delete), a delete of a key not open (vanished, slot none); plus `intraday`.

    `shape.tombstone` (`hard_deletes: new_record`): a delete of a live version is a version too,
    the key's tombstone: its last values with `deleted` true, valid from the delete's moment until
    the key's next version (or the open end). A delete that meets no live version (the key not
    open, tombstoned, or deleted before that day) makes nothing: a tombstone open before stays as
    it is (`still_deleted`), unless a later change of the day closes it. A key the day both
    opens and ends deleted opens as its tombstone, counted `new`."""
    deleted, tracked, validity = shape.tombstone, shape.tracked, shape.validity
    joined = _met(touched, versions, shape, broadcast)
    was_open = F.col(_OLD_HIT).isNotNull()
    deletes = OP in versions.columns
    upsert = (F.col(OP) != DELETE) if deletes else F.lit(True)
    ends_deleted = (F.col(FINAL) == DELETE) if deletes else F.lit(False)
    first, last = F.col(STEP) == 1, F.col(LAST)
    tombstoned, tomb, kept_tombstone, vanished = F.lit(False), F.lit(False), F.lit(False), last & ~was_open & ~upsert
    if deleted:
        joined = _live_versions(joined, shape.keys, validity, tombstoned=was_open & F.col(_OLD + deleted))
        tombstoned = was_open & F.col(_OLD + deleted)
        first, last = F.col(_FIRST_LIVE), F.col(_LAST_LIVE)
        nothing = ~F.col(_ANY_LIVE)  # every change of the day a delete that meets no live version
        tomb, kept_tombstone, vanished = ~upsert & ~nothing, nothing & was_open, nothing & ~was_open
    floats = _FloatPrecision(shape.float_precision, types_of(versions))
    data = [c for c in shape.values if c not in validity and c != deleted]
    continues = first & was_open & upsert & ~tombstoned & all_of([floats.equal(c) for c in tracked])
    same_untracked = all_of([floats.equal_kept(c) for c in data if c not in tracked])
    refined = any_of([floats.refines(c) for c in tracked])
    closed_kind = F.when(ends_deleted, F.lit(DELETED)).otherwise(F.lit("closed"))
    roles = F.array_compact(
        F.array(
            F.when(first & was_open & ~continues, F.lit(_OLD_ROW)),
            F.when(upsert | tomb, F.lit(_VERSION)),
            F.when(vanished, F.lit(_VANISHED)),
            F.when(kept_tombstone, F.lit(_KEPT)),
        )
    )
    exploded = joined.select("*", F.explode(roles).alias(_ROLE), continues.alias("zipper__continues__"))
    role, going_on = F.col(_ROLE), F.col("zipper__continues__")
    is_old, is_version, is_kept = role == _OLD_ROW, role == _VERSION, role == _KEPT
    slot = (
        F.when(is_old, F.lit(Slot.CLOSED))
        .when(role == _VANISHED, F.lit(Slot.NONE))
        .when(last | is_kept, F.lit(Slot.OPEN))
        .otherwise(F.lit(Slot.CLOSED))
    )
    kind = (
        F.when(is_old, closed_kind)
        .when(role == _VANISHED, F.lit(VANISHED))
        .when(is_kept, F.lit(STILL_DELETED))
        .when(going_on & ~last, closed_kind)
        .when(going_on & same_untracked & ~refined, F.lit(UNCHANGED))
        .when(going_on, F.lit(UPDATED))
        .when(~last, F.lit(INTRADAY))
        .when(tomb & was_open, F.lit(TOMBSTONE))
        .when(was_open, F.lit(CHANGED))
        .otherwise(F.lit("new"))
    )
    kept = is_old | is_kept | (is_version & going_on)  # the open version's own begin and valid_from
    roles_of = _Roles(is_old, is_kept, going_on, kept, first, tomb)
    return _placed(exploded, shape, _version_value(shape, floats, data, roles_of), kept, slot, kind)


@dataclass(frozen=True)
class _Roles:
    """What `day_versions` knows of an output row, for its values: the closed open version
    (`is_old`), a tombstone kept as it is (`is_kept`), a version that continues the open one
    (`going_on`), one that keeps the open version's begin and valid_from (`keeps_begin`), the
    key's first live change of the day (`first`), a tombstone (`tomb`)."""

    is_old: Column
    is_kept: Column
    going_on: Column
    keeps_begin: Column
    first: Column
    tomb: Column


def _version_value(shape: MergeShape, floats, data: list[str], roles: _Roles):
    """Each column's value in `day_versions`'s output."""
    valid_from, valid_to = shape.validity
    deleted, tracked = shape.tombstone, shape.tracked
    is_old, is_kept, going_on = roles.is_old, roles.is_kept, roles.going_on

    def value(c: str) -> Column:
        if c == valid_to:
            ends = F.col(_NEXT_FROM) if deleted else F.col(valid_to)
            return F.when(is_old, F.col(valid_from)).when(is_kept, F.col(_OLD + c)).otherwise(ends).alias(c)
        if c == valid_from:
            return F.when(roles.keeps_begin, F.col(_OLD + c)).otherwise(F.col(c)).alias(c)
        if c == deleted:
            return F.when(is_old | is_kept, F.col(_OLD + c)).otherwise(roles.tomb).alias(c)
        if deleted and c in data:  # a tombstone: the values of the live version it ends
            tombstone_value = F.when(roles.first, F.col(_OLD + c)).otherwise(F.col(_BEFORE + c))
            if c in tracked:
                takes_old = is_old | is_kept | (going_on & ~floats.refines(c))
            else:
                takes_old = is_old | is_kept | (going_on & floats.keeps_old(c))
            return F.when(takes_old, F.col(_OLD + c)).when(roles.tomb, tombstone_value).otherwise(F.col(c)).alias(c)
        if c in tracked:
            takes_old = is_old | (going_on & ~floats.refines(c))
        else:
            takes_old = is_old | (going_on & floats.keeps_old(c))
        return F.when(takes_old, F.col(_OLD + c)).otherwise(F.col(c)).alias(c)

    return value


_KEPT = "kept"
_LIVE, _FIRST_LIVE, _LAST_LIVE, _ANY_LIVE = "zipper__live__", "zipper__first__", "zipper__last__", "zipper__any__"
_NEXT_FROM, _BEFORE = "zipper__next_from__", "zipper__before__"


def _live_versions(joined: DataFrame, keys: list[str], validity: tuple[str, str], tombstoned: Column) -> DataFrame:
    """The day's versions of a table with tombstones, each joined to its key's open version,
    without the deletes that meet no live version (the key not open, tombstoned, or deleted by
    the change before): those make nothing. A key with nothing else keeps one of them. Adds the
    first and last of the rest (`_FIRST_LIVE`, `_LAST_LIVE`), whether there is any (`_ANY_LIVE`),
    the valid_from of the next one (`_NEXT_FROM`, else the open end) and the values of the one
    before (`_BEFORE` + column: a tombstone's values)."""
    valid_from, valid_to = validity
    by_step = Window.partitionBy(*keys).orderBy(STEP)
    before = by_step.rowsBetween(Window.unboundedPreceding, -1)
    after = by_step.rowsBetween(1, Window.unboundedFollowing)
    whole = by_step.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    was_open = F.col(_OLD_HIT).isNotNull()
    live_before = F.when(F.col(STEP) == 1, was_open & ~tombstoned).otherwise(F.lag(OP).over(by_step) != DELETE)
    marked = joined.select("*", ((F.col(OP) != DELETE) | live_before).alias(_LIVE))
    live = F.col(_LIVE)

    def live_count(frame) -> Column:
        return F.coalesce(F.sum(live.cast("int")).over(frame), F.lit(0))

    counted = marked.select(
        "*",
        (live & (live_count(before) == 0)).alias(_FIRST_LIVE),
        (live & (live_count(after) == 0)).alias(_LAST_LIVE),
        F.max(live).over(whole).alias(_ANY_LIVE),
        F.coalesce(
            F.first(F.when(live, F.col(valid_from)), ignorenulls=True).over(after), F.last(valid_to).over(whole)
        ).alias(_NEXT_FROM),
    )
    kept = counted.where(live | (F.col(LAST) & ~F.col(_ANY_LIVE)))
    data = [c for c in joined.columns if c not in keys and not c.startswith("zipper_")]  # not the marks
    return kept.select("*", *[F.lag(c).over(by_step).alias(_BEFORE + c) for c in data])


class _FloatPrecision:
    """How day_rows compares a column's open value with the day's: exactly (`same`), or, for a
    float-precision column, as floats (`equal_at_float_precision`). A value equal only at float
    precision is the same value less precisely: the float-exact one is the less precise."""

    def __init__(self, columns: frozenset[str], types: dict):
        self.columns = {c for c in columns if isinstance(types.get(c), DoubleType)}
        self.types = types

    def exact(self, c: str) -> Column:
        return same(F.col(_OLD + c), F.col(c), self.types[c])

    def equal(self, c: str) -> Column:
        """Equal as far as versions go."""
        if c not in self.columns:
            return self.exact(c)
        return equal_at_float_precision(F.col(_OLD + c), F.col(c))

    def _loosely(self, c: str, old_is_float: bool) -> Column:
        if c not in self.columns:
            return F.lit(False)
        old_exact = float_exact(F.col(_OLD + c))
        return F.coalesce(self.equal(c) & ~self.exact(c) & (old_exact if old_is_float else ~old_exact), F.lit(False))

    def refines(self, c: str) -> Column:
        """Equal at float precision, the open value the float: the version takes the day's value."""
        return self._loosely(c, old_is_float=True)

    def keeps_old(self, c: str) -> Column:
        """Equal at float precision, the day's value the float: the version keeps its value."""
        return self._loosely(c, old_is_float=False)

    def equal_kept(self, c: str) -> Column:
        """Equal, or equal enough that the open value stays as it is."""
        return self.exact(c) | self.keeps_old(c)


def classify(open_rows: DataFrame, increment: DataFrame, shape: MergeShape, *, broadcast: bool = True) -> DataFrame:
    """Every row of the new open slot and of the day's closed slot, tagged with both: the
    composition the merge runs as two jobs (it writes the routed rows in between).

    `open_rows` has the shape's columns + begin column; `increment` has its columns (and maybe
    `zipper_op`) with unique, non-null keys and the table's types. Output: columns, begin column,
    zipper_slot, zipper_kind."""
    routed = route_open(open_rows, increment, keys=list(shape.keys), broadcast_increment=broadcast)
    untouched = routed.where(F.col(SLOT) == Slot.OPEN).withColumn(KIND, F.lit("carried"))
    touched = routed.where(F.col(SLOT) == Slot.TOUCHED).drop(SLOT)
    return untouched.unionByName(day_rows(touched, increment, shape, broadcast=broadcast))


def kind_counts(kinds: tuple[str, ...]) -> list[Column]:
    """Rows of each kind, for DataFrame.observe on the small job's output."""
    return [F.sum(F.when(F.col(KIND) == kind, 1).otherwise(0)).alias(kind) for kind in kinds]


def with_validity(rows: DataFrame, *, updated_at: str, validity: tuple[str, str], open_end: str) -> DataFrame:
    """Rows each opening a version valid from its `updated_at` value until the open end (`open_end`
    at midnight in that column's type): a base's rows, valid as the source says."""
    kind = rows.schema[updated_at].dataType
    valid_from, valid_to = validity
    return rows.withColumn(valid_from, F.col(updated_at)).withColumn(valid_to, F.lit(open_end).cast(kind))


def opening(rows: DataFrame, columns: list[str], begin_column: str, ds: str) -> DataFrame:
    """A base snapshot as the first open partition: every row opens on ds, in table column order."""
    return rows.select(*columns, F.lit(ds).alias(begin_column))
