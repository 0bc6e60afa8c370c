"""The pure transforms of `zipper correct`: a value fix and the versions it makes one, erased keys
kept out of an input."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from zipper.transforms import corrections

SCHEMA = "id bigint, city string, note string, begin_dt string, end_dt string"


def fix(spark, rows, matched, city, inclusive=False, tracked=("city",)):
    versions = spark.createDataFrame(rows, SCHEMA)
    types = {f.name: f.dataType for f in versions.schema.fields}
    return corrections.fixed_versions(
        versions,
        matched,
        {"city": F.lit(city)},
        keys=["id"],
        begin_column="begin_dt",
        end_column="end_dt",
        tracked=list(tracked),
        types=types,
        inclusive=inclusive,
    )


def expected(spark, rows):
    return spark.createDataFrame(rows, SCHEMA + ", zipper_status string")


@pytest.mark.parametrize("inclusive", [False, True])
def test_a_fix_that_makes_a_run_of_versions_equal_makes_them_one_ending_where_the_last_ended(spark, inclusive):
    """Oslo, Paris, Oslo: Paris fixed to Oslo, the three are one version, in the last one's partition."""
    gap = "2024-01-01" if inclusive else "2024-01-02"  # the end value of a version closed by the run of 01-02
    gap2 = "2024-01-03" if inclusive else "2024-01-04"
    rows = [
        (1, "Oslo", "a", "2023-12-31", gap),
        (1, "Paris", "b", "2024-01-02", gap2),
        (1, "Oslo", "c", "2024-01-04", "9999-12-31"),
    ]
    got = fix(spark, rows, F.col("city") == "Paris", "Oslo", inclusive)
    assertDataFrameEqual(
        got,
        expected(
            spark,
            [
                (1, "Oslo", "a", "2023-12-31", gap, "absorbed"),
                (1, "Oslo", "b", "2023-12-31", gap2, "absorbed"),
                (1, "Oslo", "c", "2023-12-31", "9999-12-31", "changed"),
            ],
        ),
    )


def test_versions_with_a_gap_between_them_stay_apart_and_untouched_ones_are_same(spark):
    rows = [
        (1, "Oslo", "a", "2023-12-31", "2024-01-02"),
        (1, "Paris", "b", "2024-01-05", "2024-01-07"),  # a gap: deleted, then sent again on 01-05
        (1, "Rome", "c", "2024-01-07", "9999-12-31"),
        (2, "Paris", "d", "2023-12-31", "9999-12-31"),
    ]
    got = fix(spark, rows, (F.col("id") == 1) & (F.col("city") == "Paris"), "Oslo")
    assertDataFrameEqual(
        got,
        expected(
            spark,
            [
                (1, "Oslo", "a", "2023-12-31", "2024-01-02", "same"),
                (1, "Oslo", "b", "2024-01-05", "2024-01-07", "changed"),
                (1, "Rome", "c", "2024-01-07", "9999-12-31", "same"),
                (2, "Paris", "d", "2023-12-31", "9999-12-31", "same"),
            ],
        ),
    )


def test_a_fix_to_the_value_a_version_holds_already_changes_nothing(spark):
    rows = [(1, "Oslo", "a", "2023-12-31", "9999-12-31")]
    got = fix(spark, rows, F.col("id") == 1, "Oslo")
    assertDataFrameEqual(got, expected(spark, [(1, "Oslo", "a", "2023-12-31", "9999-12-31", "same")]))


def test_untracked_columns_do_not_keep_versions_apart(spark):
    """`note` is not tracked: equal in `city`, the two become one, with the later version's note."""
    rows = [(1, "Oslo", "a", "2023-12-31", "2024-01-02"), (1, "Paris", "b", "2024-01-02", "9999-12-31")]
    got = fix(spark, rows, F.col("city") == "Paris", "Oslo")
    assertDataFrameEqual(
        got,
        expected(
            spark,
            [
                (1, "Oslo", "a", "2023-12-31", "2024-01-02", "absorbed"),
                (1, "Oslo", "b", "2023-12-31", "9999-12-31", "changed"),
            ],
        ),
    )


def test_erased_keys_are_found_by_their_salted_hash_and_only_up_to_the_erasure(spark):
    keys = spark.createDataFrame([(2,), (5,)], "id bigint")
    hashes = keys.select(corrections.key_hash(["id"], "pepper").alias("key_hash"))
    rows = spark.createDataFrame(
        [(1, "2024-01-01"), (2, "2024-01-01"), (2, "2024-01-09"), (5, "2024-01-01")], "id bigint, ds string"
    )
    assertDataFrameEqual(
        corrections.without_keys(rows, hashes, ["id"], "pepper"),
        spark.createDataFrame([(1, "2024-01-01")], "id bigint, ds string"),
    )
    assertDataFrameEqual(
        corrections.without_keys(rows, hashes, ["id"], "pepper", until=F.col("ds") <= "2024-01-05"),
        spark.createDataFrame([(1, "2024-01-01"), (2, "2024-01-09")], "id bigint, ds string"),
    )
    # another salt: other hashes, nothing found
    assert corrections.without_keys(rows, hashes, ["id"], "salt").count() == 4
