"""A zipper table computed in one pass from the base and a run of daily increments, as pure
DataFrame -> DataFrame functions (`zipper rebuild`, and the restore of untracked columns).

Independent of the daily merge on purpose, so that the two can check each other: every input
row carries its date; per key, in date order, a row whose tracked columns equal the previous
row's (NULL-safe) continues that row's version, any other row starts a new one. A version
begins on the date of its first row, holds the columns of its last row (untracked columns are
updated in place, as the merge does), and ends where the next version of its key begins (the
day before, with inclusive ends), or is open."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zipper.core.layout import CLOSED_PREFIX, SLOT, Slot
from zipper.tablespec.modes import EndStyle
from zipper.transforms.equality import all_of, same, types_of
from zipper.transforms.vocabulary import KIND

DS = "zipper_ds"  # the date a row was loaded: the base date or an increment's run date
VERSION = "zipper_version"
# new: first row of its key; changed: tracked columns differ from the previous row's;
# unchanged: every column equal; updated: only untracked columns differ (updated in place).
KINDS = ("new", "changed", "unchanged", "updated")
_LAST = "zipper__last"
_FIRST = "zipper__first"


def dated(rows: DataFrame, columns: list[str], ds: str) -> DataFrame:
    """An input in table column order, tagged with the date it belongs to."""
    return rows.select(*columns, F.lit(ds).alias(DS))


def marked(
    rows: DataFrame, *, keys: list[str], columns: list[str], tracked: list[str], fill_nulls: bool = False
) -> DataFrame:
    """Each dated row with what it does to its key's open version (one of KINDS).

    `rows`: columns + DS, at most one row per key and date. `fill_nulls` (ignore_null_updates):
    a row's NULL keeps its key's last non-NULL value of the dates before, as the daily merge fills
    an update from the open version (the one-pass modes have no deletes to start afresh from)."""
    by_key = Window.partitionBy(*keys).orderBy(DS)
    if fill_nulls:
        so_far = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        rows = rows.select(
            *[F.col(c) if c in keys else F.last(c, ignorenulls=True).over(so_far).alias(c) for c in columns], DS
        )
    types = types_of(rows)

    def same_as_before(names: list[str]) -> Column:
        return all_of([same(F.col(c), F.lag(c).over(by_key), types[c]) for c in names])

    # each column is compared once: the tracked ones tell changed rows; of the others (their
    # tracked columns equal), the untracked ones tell unchanged from updated
    untracked = [c for c in columns if c not in keys and c not in tracked]
    kind = (
        F.when(F.lag(DS).over(by_key).isNull(), F.lit("new"))
        .when(~same_as_before(tracked), F.lit("changed"))
        .when(same_as_before(untracked), F.lit("unchanged"))
        .otherwise(F.lit("updated"))
    )
    return rows.select(*columns, DS, kind.alias(KIND))


def _closed_end(next_begin: Column, end_style: EndStyle) -> Column:
    if end_style == EndStyle.EXCLUSIVE:
        return next_begin
    return F.date_format(F.date_sub(F.to_date(next_begin), 1), "yyyy-MM-dd")


def versions(
    marked_rows: DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    tracked: list[str],
    begin_column: str,
    end_column: str,
    end_style: EndStyle,
    open_end: str,
) -> DataFrame:
    """Every version of every key: columns, begin_column, end_column. A version holds its first
    row's tracked columns (later rows of the version only equal them, as Spark compares: -0.0 and
    0.0, NaNs, map entries in another order) and its last row's untracked ones (updated in place),
    as the daily merge keeps them."""
    running = Window.partitionBy(*keys).orderBy(DS).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    starts = F.when(F.col(KIND).isin("new", "changed"), 1).otherwise(0)
    numbered = marked_rows.select(*columns, DS, F.sum(starts).over(running).alias(VERSION))
    firsts = [c for c in columns if c in tracked and c not in keys]
    lasts = [c for c in columns if c not in tracked and c not in keys]
    first_row = [F.min_by(F.struct(*firsts), F.col(DS)).alias(_FIRST)] if firsts else []
    last_row = [F.max_by(F.struct(*lasts), F.col(DS)).alias(_LAST)] if lasts else []
    grouped = numbered.groupBy(*keys, VERSION).agg(F.min(DS).alias(begin_column), *first_row, *last_row)
    next_begin = F.lead(begin_column).over(Window.partitionBy(*keys).orderBy(begin_column))
    end = F.when(next_begin.isNull(), F.lit(open_end)).otherwise(_closed_end(next_begin, end_style))
    return grouped.select(
        *[F.col(c) if c in keys else F.col(f"{_FIRST if c in firsts else _LAST}.{c}").alias(c) for c in columns],
        F.col(begin_column),
        end.alias(end_column),
    )


def with_slot(versions_df: DataFrame, end_column: str, open_end: str) -> DataFrame:
    """Versions without the end column, tagged with the directory they are written to:
    `open`, or `closed-<end>` (one per history partition)."""
    slot = F.when(F.col(end_column) == open_end, F.lit(Slot.OPEN)).otherwise(
        F.concat(F.lit(CLOSED_PREFIX), F.col(end_column))
    )
    return versions_df.select(*[c for c in versions_df.columns if c != end_column], slot.alias(SLOT))


def daily_counts(marked_rows: DataFrame) -> DataFrame:
    """Rows of each kind per date: DS, then one column per kind."""
    return marked_rows.groupBy(DS).agg(
        *[F.sum(F.when(F.col(KIND) == kind, 1).otherwise(0)).alias(kind) for kind in KINDS]
    )
