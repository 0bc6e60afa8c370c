"""`zipper alter` as pure DataFrame -> DataFrame functions: a column renamed or dropped in every
version of the table.

A rename changes a name and nothing else. A drop can leave two consecutive versions of a key
equal in every tracked column: they were two versions only because the dropped column changed.
Those become one version spanning both, as the daily merges would have made them had the
column never been there: the earlier begin, the later end (so the merged version stays in the
partition of its end)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zipper.transforms import corrections
from zipper.transforms.predicates import column_ref

STATUS = corrections.STATUS  # what the drop does to a version
SAME, CHANGED, ABSORBED = corrections.SAME, corrections.CHANGED, corrections.ABSORBED


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
) -> DataFrame:
    """Every version without `column`, each with its STATUS: per key in begin order, a run of
    consecutive versions (each ending where the next begins) equal in every `tracked` column
    (the columns left, never the dropped one) becomes its last version with the run's first
    begin (CHANGED), the others ABSORBED; a version on its own is SAME. The other columns are
    the last version's (an untracked column's change updates a version in place)."""
    rest = versions.drop(column)
    return corrections.fixed_versions(
        rest,
        F.lit(True),
        {},
        keys=keys,
        begin_column=begin_column,
        end_column=end_column,
        tracked=[c for c in tracked if c != column],
        types=types,
        inclusive=inclusive,
    )


def merged_away(versions: DataFrame) -> DataFrame:
    """The versions a drop keeps (`dropped` less the ABSORBED ones), without STATUS."""
    return versions.where(F.col(STATUS) != ABSORBED).drop(STATUS)
