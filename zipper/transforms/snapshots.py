"""A full snapshot as a day change set: diffed against the open rows (`snapshot_changes`), as the
day's versions with `source.updated_at` (`snapshot_versions`), and the rows that would rewrite
history (`snapshot_history`).

A snapshot holds one row per key and says nothing of the keys it lacks but that they are gone: its
change set is a join with the open partition, not a fold of events as cdc and landing-zone changes
are (`changes`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from zipper.transforms.changes import FIRST
from zipper.transforms.equality import all_of, any_of, equal_at_float_precision, float_exact, same, types_of
from zipper.transforms.vocabulary import DELETE, FINAL, LAST, OP, STEP, UPSERT

_OPEN = "zipper__open__"
_SNAP = "zipper__snapshot__"


def _keeps_open_value(old: Column, new: Column, data_type, float_precision: bool) -> Column:
    """Whether the open value stays as it is: equal, or (`float_precision`) equal at float
    precision with the snapshot's value the float (the open value is the more precise)."""
    if not (float_precision and isinstance(data_type, DoubleType)):
        return same(old, new, data_type)
    return same(old, new, data_type) | F.coalesce(equal_at_float_precision(old, new) & ~float_exact(old), F.lit(False))


def snapshot_changes(
    open_rows: DataFrame,
    snapshot: DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    invalidate: bool,
    float_precision: frozenset[str] = frozenset(),
    deleted: str | None = None,
) -> DataFrame:
    """A full snapshot as a change set against the open rows: new keys and keys whose values
    differ (NULL-safe, every column) upsert; open keys missing from the snapshot are deleted
    (`invalidate`) or left alone; equal keys are not in the change set at all. A
    `float_precision` column's value equal to the open one at float precision differs only
    where the open value is the float (the version takes the snapshot's, `transforms.day_rows`).

    `deleted`: the deleted column (`hard_deletes: new_record`), not compared. An open row with it
    true is a tombstone, so not open: its key back in the snapshot upserts (even with equal values),
    and still missing is no change."""
    values = [c for c in columns if c not in keys and c != deleted]
    live = ~F.col(deleted) if deleted else F.lit(True)
    opened = open_rows.select(*keys, *[F.col(c).alias(_OPEN + c) for c in values], live.alias(_OPEN))
    joined = snapshot.select(*columns, F.lit(True).alias(_SNAP)).join(opened, on=keys, how="full")
    in_snapshot, was_open = F.col(_SNAP).isNotNull(), F.coalesce(F.col(_OPEN), F.lit(False))
    types = types_of(snapshot)
    differs = any_of([~_keeps_open_value(F.col(_OPEN + c), F.col(c), types[c], c in float_precision) for c in values])
    wanted = in_snapshot & (~was_open | differs)
    if invalidate:
        wanted = wanted | (~in_snapshot & was_open)
    op = F.when(in_snapshot, F.lit(UPSERT)).otherwise(F.lit(DELETE))
    return joined.where(wanted).select(*columns, op.alias(OP))


def snapshot_versions(
    diff: DataFrame, *, columns: list[str], updated_at: str, validity: tuple[str, str], day_end: str, open_end: str
) -> DataFrame:
    """A snapshot's change set (`snapshot_changes`, of the data columns) as `versions_of_day` gives a
    day's versions (`source.updated_at`): one per key. A new or changed key's version is valid from
    its row's `updated_at`; a key missing from the snapshot is deleted at `day_end` (the midnight
    after the day the snapshot describes: reruns give the same moment). Both valid until `open_end`,
    in the updated_at column's type."""
    valid_from, valid_to = validity
    kind = types_of(diff)[updated_at]
    deleting = F.col(OP) == DELETE

    def column(c: str) -> Column:
        if c == valid_from:
            return F.when(deleting, F.lit(day_end).cast(kind)).otherwise(F.col(updated_at)).alias(c)
        if c == valid_to:
            return F.lit(open_end).cast(kind).alias(c)
        return F.col(c)

    return diff.select(
        *[column(c) for c in columns],
        F.lit(1).alias(STEP),
        F.lit(True).alias(LAST),
        F.col(OP),
        F.col(OP).alias(FIRST),
        F.col(OP).alias(FINAL),
    )


def snapshot_history(
    open_rows: DataFrame,
    snapshot: DataFrame,
    *,
    keys: list[str],
    tracked: list[str],
    updated_at: str,
    valid_from: str,
    deleted: str | None = None,
) -> DataFrame:
    """The snapshot's rows (its change set's will do: a row equal to its open version is as new as
    it) that would rewrite history (`source.updated_at`): updated_at NULL, older
    than the key's open version's valid_from, or as old with other tracked values (one moment, two
    versions). A snapshot holds one row per key, so it cannot carry a version before its open one.
    A tombstone's key may come back as early as the tombstone's own moment. Keys, the open valid_from
    (`zipper_open_from`) and the row's updated_at (`zipper_from`), in key order."""
    live = ~F.col(deleted) if deleted else F.lit(True)
    # the open rows of the snapshot's keys: the snapshot's side is the change set, the smaller one
    opened = open_rows.join(snapshot.select(*keys), on=keys, how="left_semi").select(
        *keys,
        F.col(valid_from).alias("zipper_open_from"),
        live.alias(_OPEN),
        *[F.col(c).alias(_OPEN + c) for c in tracked],
    )
    joined = snapshot.join(opened, on=keys, how="left")
    types = types_of(snapshot)
    at, since = F.col(updated_at), F.col("zipper_open_from")
    other_values = ~all_of([same(F.col(_OPEN + c), F.col(c), types[c]) for c in tracked])
    older = F.coalesce(at < since, F.lit(False))
    as_old = F.coalesce((at == since) & F.col(_OPEN) & other_values, F.lit(False))
    return joined.where(at.isNull() | older | as_old).select(*keys, since, at.alias("zipper_from")).orderBy(*keys)
