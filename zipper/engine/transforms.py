"""The merge as pure DataFrame -> DataFrame functions.

One pass over the open partition: it is left-joined to the (usually broadcast) increment and
every open row leaves as itself (kept open or closed), or as itself plus its successor (a
changed key). Keys seen only in the increment come from a key-only anti join. Each output row
carries its destination (`zipper_slot`: open | closed) and why it is there (`zipper_kind`)."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SLOT = "zipper_slot"
KIND = "zipper_kind"
OPEN, CLOSED = "open", "closed"
# carried: open row whose key is not in the increment; unchanged: re-sent with equal tracked
# values; updated: equal tracked values, other columns updated in place; changed: the new
# version of a changed key; closed: the old version it replaces; new: a key not open before.
KINDS = ("carried", "unchanged", "updated", "changed", "closed", "new")
_INC = "zipper__inc__"
_HIT = _INC + "hit"


def _all(conditions: list[Column]) -> Column:
    return reduce(lambda a, b: a & b, conditions, F.lit(True))


def _any(conditions: list[Column]) -> Column:
    return reduce(lambda a, b: a | b, conditions, F.lit(False))


def key_offenders(increment: DataFrame, keys: list[str]) -> DataFrame:
    """Keys that are NULL or appear more than once, with their copies, in one aggregation."""
    return (
        increment.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("copies"))
        .where(_any([F.col(k).isNull() for k in keys]) | (F.col("copies") > 1))
        .orderBy(*keys)
    )


def classify(
    open_rows: DataFrame,
    increment: DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    tracked: list[str],
    begin_column: str,
    ds: str,
    broadcast_increment: bool = True,
) -> DataFrame:
    """Every row of the new open partition and of the day's closed partition, tagged.

    `open_rows` has `columns` + begin_column; `increment` has `columns` with unique, non-null keys
    and the table's types. Output: columns, begin_column, zipper_slot, zipper_kind."""
    renamed = increment.select(*[F.col(c).alias(_INC + c) for c in columns], F.lit(True).alias(_HIT))
    if broadcast_increment:
        renamed = F.broadcast(renamed)
    joined = open_rows.join(renamed, on=_all([open_rows[k] == F.col(_INC + k) for k in keys]), how="left")

    hit = F.col(_HIT).isNotNull()
    same_tracked = _all([F.col(c).eqNullSafe(F.col(_INC + c)) for c in tracked])
    untracked = [c for c in columns if c not in tracked and c not in keys]
    same_untracked = _all([F.col(c).eqNullSafe(F.col(_INC + c)) for c in untracked])

    def version(source_prefix: str, begin: Column, slot: str, kind: Column | str) -> Column:
        return F.struct(
            *[F.col(source_prefix + c).alias(c) for c in columns],
            begin.alias(begin_column),
            F.lit(slot).alias(SLOT),
            (kind if isinstance(kind, Column) else F.lit(kind)).alias(KIND),
        )

    old_begin = F.col(begin_column)
    versions = (
        F.when(~hit, F.array(version("", old_begin, OPEN, "carried")))
        .when(
            ~same_tracked,
            F.array(version("", old_begin, CLOSED, "closed"), version(_INC, F.lit(ds), OPEN, "changed")),
        )
        .otherwise(
            F.array(
                version(_INC, old_begin, OPEN, F.when(same_untracked, F.lit("unchanged")).otherwise(F.lit("updated")))
            )
        )
    )
    from_open = joined.select(F.explode(versions).alias("v")).select("v.*")

    increment_keys = increment.select(*keys)
    if broadcast_increment:
        increment_keys = F.broadcast(increment_keys)
    # A key-only scan of the open partition: cheap with Parquet, and it keeps the main pass to one read.
    open_keys_in_increment = open_rows.select(*keys).join(increment_keys, on=keys, how="left_semi")
    if broadcast_increment:  # at most as many keys as the increment: broadcast, no shuffle
        open_keys_in_increment = F.broadcast(open_keys_in_increment)
    new_keys = increment.join(open_keys_in_increment, on=keys, how="left_anti").select(
        *columns, F.lit(ds).alias(begin_column), F.lit(OPEN).alias(SLOT), F.lit("new").alias(KIND)
    )
    return from_open.unionByName(new_keys)


def kind_metrics() -> list[Column]:
    """Aggregates for DataFrame.observe: counted while the write runs, no extra pass."""
    return [F.sum(F.when(F.col(KIND) == kind, 1).otherwise(0)).alias(kind) for kind in KINDS]


def closed_begin_metric(begin_column: str) -> Column:
    return F.max(F.when(F.col(KIND) == "closed", F.col(begin_column))).alias("max_closed_begin")


def opening(rows: DataFrame, columns: list[str], begin_column: str, ds: str) -> DataFrame:
    """A base snapshot as the first open partition: every row opens on ds, in table column order."""
    return rows.select(*columns, F.lit(ds).alias(begin_column))
