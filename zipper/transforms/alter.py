"""`zipper alter` as pure DataFrame -> DataFrame functions: a column renamed or dropped in every
version of the table.

A rename changes a name and nothing else. A drop can leave two consecutive versions of a key
equal in every tracked column: they were two versions only because the dropped column changed.
Those become one version spanning both, as the daily merges would have made them had the
column never been there: the earlier begin, the later end (so the merged version stays in the
partition of its end)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zipper.transforms import corrections
from zipper.transforms.equality import same
from zipper.transforms.predicates import column_ref

STATUS = corrections.STATUS  # what the drop does to a version
SAME, CHANGED, ABSORBED = corrections.SAME, corrections.CHANGED, corrections.ABSORBED
_STARTS, _RUN, _AT = "zipper_starts", "zipper_run", "zipper_at"  # a version starts a run; its run; its place


def renamed(rows: DataFrame, old: str, new: str) -> DataFrame:
    """`rows` with column `old` named `new`, in its place; every value as it was."""
    return rows.select(*[column_ref(c).alias(new) if c == old else column_ref(c) for c in rows.columns])


def dropped(
    versions: DataFrame,
    column: str,
    *,
    keys: list[str],
    begin_column: str,
    end_column: str,
    tracked: list[str],
    types: dict[str, DataType],
    inclusive: bool,
    validity: tuple[str, str] | None = None,
) -> DataFrame:
    """Every version without `column`, each with its STATUS: per key in time order, a run of
    consecutive versions (each ending where the next begins) equal in every `tracked` column
    (the columns left, never the dropped one) becomes its last version with the run's first
    begin (CHANGED), the others ABSORBED; a version on its own is SAME. The other columns are
    the last version's (an untracked column's change updates a version in place).

    `validity`: the (valid from, valid to) columns of a table with `source.updated_at`: versions
    are ordered by their begin, then their valid from (a day may hold several), follow each other
    when one's valid to is the next's valid from too, and a merged version takes the run's first
    valid from."""
    rest = versions.drop(column)
    names = rest.columns
    key_columns = [column_ref(k) for k in keys]
    begin = column_ref(begin_column)
    order = Window.partitionBy(*key_columns).orderBy(
        begin, *([column_ref(validity[0])] if validity else []), column_ref(end_column)
    )
    follows = F.lag(column_ref(end_column)).over(order) == corrections.previous_end(begin, inclusive)
    if validity:
        follows = follows & (F.lag(column_ref(validity[1])).over(order) == column_ref(validity[0]))
    for name in tracked:
        if name != column:
            follows = follows & same(F.lag(column_ref(name)).over(order), column_ref(name), types[name])
    starts = (~F.coalesce(follows, F.lit(False))).cast("int")
    numbered = (
        rest.withColumn(_STARTS, starts)
        .withColumn(_RUN, F.sum(_STARTS).over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
        .withColumn(_AT, F.row_number().over(order))
    )
    run = Window.partitionBy(*key_columns, F.col(_RUN))
    merged = F.count(F.lit(1)).over(run) > 1
    firsts = {begin_column: F.min(begin).over(run)}  # the run's first begin (and valid from): by time order
    if validity:
        first_at = F.min(F.col(_AT)).over(run)
        firsts[validity[0]] = F.max(F.when(F.col(_AT) == first_at, column_ref(validity[0]))).over(run)
    status = (
        F.when(merged & (F.col(_AT) != F.max(F.col(_AT)).over(run)), F.lit(ABSORBED))
        .when(merged, F.lit(CHANGED))
        .otherwise(F.lit(SAME))
    )
    return numbered.select(
        *[F.when(merged, firsts[n]).otherwise(column_ref(n)).alias(n) if n in firsts else column_ref(n) for n in names],
        status.alias(STATUS),
    )


def merged_away(versions: DataFrame) -> DataFrame:
    """The versions a drop keeps (`dropped` less the ABSORBED ones), without STATUS."""
    return versions.where(F.col(STATUS) != ABSORBED).drop(STATUS)
