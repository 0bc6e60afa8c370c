"""Row-level corrections as pure DataFrame -> DataFrame functions (`zipper correct`).

The job decides which versions match; these say what the versions of the keys it touches
become. A value fix rewrites the matched versions in place (it never opens a version) and then
makes consecutive versions of a key that the fix made equal in every tracked column one
version spanning both, as the daily merges would have made them. An erasure or a row delete
only removes rows, so it needs no function here beyond the key hashes."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zipper.transforms.equality import same
from zipper.transforms.predicates import column_ref

FIXED = "zipper_fixed"  # the version matched the correction's predicate
STATUS = "zipper_status"  # what the correction does to a version
SAME, CHANGED, ABSORBED = "same", "changed", "absorbed"  # absorbed: merged into the next version of its run
_RUN = "zipper_run"
_STARTS = "zipper_starts"
_DIFFERS = "zipper_differs"
_KEY_HASH, _ERASED = "zipper_key_hash", "zipper_erased"  # a fixed version's new values differ from its old ones


def key_hash(keys: list[str], salt: str) -> Column:
    """A key's salted hash: SHA-256 of the salt and the key's columns as JSON. Computed the same
    way over the table, over a keys file and over a rerun's inputs, so an erased key is found
    again by its hash alone (the key itself is never recorded)."""
    return F.sha2(F.concat(F.lit(salt), F.to_json(F.struct(*[column_ref(k).alias(k) for k in keys]))), 256)


def previous_end(begin: Column, inclusive: bool) -> Column:
    """The end value of the version that the version beginning on `begin` followed without a gap:
    closed by the run of `begin`, it ends on `begin` (exclusive) or the day before (inclusive)."""
    if not inclusive:
        return begin
    return F.date_format(F.date_sub(F.to_date(begin), 1), "yyyy-MM-dd")


def fixed_versions(
    versions: DataFrame,
    matched: Column,
    assignments: dict[str, Column],
    *,
    keys: list[str],
    begin_column: str,
    end_column: str,
    tracked: list[str],
    types: dict[str, DataType],
    inclusive: bool,
) -> DataFrame:
    """Every version of the touched keys after a value fix, each with its STATUS.

    `versions`: all versions of the keys holding a matched version (with the end column);
    `matched`: which of them the fix applies to; `assignments`: column -> its new value. A fixed
    version takes the new values (CHANGED where one differs). Then, per key in begin order, a run of consecutive versions
    (each ending where the next begins) that are equal in every `tracked` column, holding at
    least one fixed version, becomes its last version with the run's first begin; the others are
    ABSORBED. A version the fix or a merge changed is CHANGED; the rest are SAME (their
    partitions need not be written again). Columns and their order are kept, plus STATUS."""
    names = versions.columns
    differs = F.lit(False)
    for name, value in assignments.items():
        differs = differs | ~same(column_ref(name), value, types[name])
    with_fix = versions.withColumn(FIXED, F.coalesce(matched, F.lit(False))).withColumn(_DIFFERS, differs)
    with_fix = with_fix.select(
        *[
            F.when(F.col(FIXED), assignments[n]).otherwise(column_ref(n)).alias(n)
            if n in assignments
            else column_ref(n)
            for n in names
        ],
        FIXED,
        _DIFFERS,
    )
    order = Window.partitionBy(*[column_ref(k) for k in keys]).orderBy(column_ref(begin_column))
    follows = F.lag(column_ref(end_column)).over(order) == previous_end(column_ref(begin_column), inclusive)
    for name in tracked:
        follows = follows & same(F.lag(column_ref(name)).over(order), column_ref(name), types[name])
    starts = (~F.coalesce(follows, F.lit(False))).cast("int")
    numbered = with_fix.withColumn(_STARTS, starts).withColumn(
        _RUN, F.sum(_STARTS).over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    run = Window.partitionBy(*[column_ref(k) for k in keys], F.col(_RUN))
    merged_run = F.max(F.col(FIXED).cast("int")).over(run) == 1
    merged_run = merged_run & (F.count(F.lit(1)).over(run) > 1)
    last_in_run = column_ref(begin_column) == F.max(column_ref(begin_column)).over(run)
    run_begin = F.min(column_ref(begin_column)).over(run)
    status = (
        F.when(merged_run & ~last_in_run, F.lit(ABSORBED))
        .when((F.col(FIXED) & F.col(_DIFFERS)) | (merged_run & (run_begin != column_ref(begin_column))), F.lit(CHANGED))
        .otherwise(F.lit(SAME))
    )
    return numbered.select(
        *[
            F.when(merged_run, run_begin).otherwise(column_ref(n)).alias(n) if n == begin_column else column_ref(n)
            for n in names
        ],
        status.alias(STATUS),
    )


def without_keys(
    rows: DataFrame, hashes: DataFrame, keys: list[str], salt: str, until: Column | None = None
) -> DataFrame:
    """`rows` less those whose key's salted hash is in `hashes` (a column `key_hash`): an erased
    key kept out of an input a rerun or rebuild replays. `until`: only the rows it holds true for
    (the dates up to the erasure); a key arriving later is new data."""
    hashed = rows.withColumn(_KEY_HASH, key_hash(keys, salt))
    found = hashed.join(
        F.broadcast(hashes.select(F.col("key_hash").alias(_ERASED))), F.col(_KEY_HASH) == F.col(_ERASED), "left"
    )
    gone = F.col(_ERASED).isNotNull()
    if until is not None:
        gone = gone & until
    return found.where(~gone).drop(_KEY_HASH, _ERASED)
