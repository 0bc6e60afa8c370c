"""Checks of a day's keys as one query each: NULL keys, keys more than once, and with an order
column (a day's ordered changes) NULL or repeated order values, with their first keys and files.

They live apart from the merge (`daily`): the inputs run them before anything is written, and the
merge's small job runs the same rule as it reads (`inputs.refusals.checked_as_read`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from zipper.transforms.equality import any_of


def null_key(keys: list[str]) -> Column:
    """A row whose key has a NULL in any of its columns."""
    return any_of([F.col(k).isNull() for k in keys])


def key_offenders(increment: DataFrame, keys: list[str], read_all_columns: bool = False) -> DataFrame:
    """Keys that are NULL or appear more than once, with their copies, in one aggregation.

    `read_all_columns`: also hash every other column, so that Spark reads and types them all (a
    CSV value that does not parse fails here, not in a later job that reads that column)."""
    readers = (
        [F.max(F.xxhash64(*[c for c in increment.columns if c not in keys])).alias("_read")]
        if read_all_columns and len(increment.columns) > len(keys)
        else []
    )
    return (
        increment.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("copies"), *readers)
        .where(null_key(keys) | (F.col("copies") > 1))
        .orderBy(*keys)
    )


# The problems of a day's keys (`key_problems`), in the order a refusal names them.
NULL_KEY, REPEATED_KEY, NULL_ORDER, REPEATED_ORDER = "null_key", "repeated_key", "null_order", "repeated_order"
KEY_PROBLEMS = (NULL_KEY, REPEATED_KEY, NULL_ORDER, REPEATED_ORDER)
KEY_PROBLEM = "zipper_key_problem"
KEY_COUNT = "zipper_keys"  # how many keys have the problem
ROWS = "zipper_rows"  # how many rows they have
EXAMPLES = "zipper_examples"  # the first keys, each a struct of the key columns, VALUE and ROWS
VALUE = "zipper_value"  # the smallest order value a key has more than once (REPEATED_ORDER), else NULL
FILES = "zipper_files"  # the files that hold them, as Spark names them
_FILE = "zipper__file__"


def key_problems(
    rows: DataFrame, keys: list[str], *, order: str | None = None, by: tuple[str, ...] = (), examples: int = 20
) -> DataFrame:
    """Every problem of the keys of `rows` that fails a day, one row per problem (and per value of
    the `by` columns: a rerun's dates): NULL keys, and keys more than once or, with an `order`
    column (a day's ordered changes), keys whose order is NULL or the same in several rows. Each
    with how many keys and rows have it, its first `examples` keys in key order, and the files
    that hold them (none when `rows` do not come straight from a file scan).

    One query. The file is grouped on first: Spark takes no file name into an aggregate function,
    and knows it only in the stage that scans the files."""
    group = [*by, *keys, *([order] if order else [])]
    null_key = any_of([F.col(k).isNull() for k in keys])
    problem = F.when(null_key, F.lit(NULL_KEY))
    if order:
        problem = problem.when(F.col(order).isNull(), F.lit(NULL_ORDER)).when(F.col(ROWS) > 1, F.lit(REPEATED_ORDER))
    else:
        problem = problem.when(F.col(ROWS) > 1, F.lit(REPEATED_KEY))
    repeated_value = F.when(problem == REPEATED_ORDER, F.col(order)) if order else F.lit(None).cast("string")
    per_value = (
        rows.select(*group, F.input_file_name().alias(_FILE))
        .groupBy(*group, _FILE)
        .agg(F.count(F.lit(1)).alias(ROWS))
        .groupBy(*group)
        .agg(F.sum(ROWS).alias(ROWS), F.collect_set(_FILE).alias(FILES))
    )
    per_key = (
        per_value.select(*by, *keys, repeated_value.alias(VALUE), ROWS, FILES, problem.alias(KEY_PROBLEM))
        .where(F.col(KEY_PROBLEM).isNotNull())
        .groupBy(*by, KEY_PROBLEM, *keys)
        .agg(F.min(VALUE).alias(VALUE), F.sum(ROWS).alias(ROWS), _files_of(F.col(FILES)).alias(FILES))
    )
    return per_key.groupBy(*by, KEY_PROBLEM).agg(
        F.count(F.lit(1)).alias(KEY_COUNT),
        F.sum(ROWS).alias(ROWS),
        F.min_by(F.struct(*keys, VALUE, ROWS), F.struct(*keys), examples).alias(EXAMPLES),
        _files_of(F.col(FILES)).alias(FILES),
    )


def _files_of(file_sets: Column) -> Column:
    """The files of several sets of them, once each, in order: the distinct sets gathered first,
    so that many keys held by the same few files gather no more than those files. Rows not read
    from a file have none (Spark names their file "")."""
    files = F.array_sort(F.array_distinct(F.flatten(F.collect_set(F.array_sort(file_sets)))))
    return F.array_remove(files, "")
