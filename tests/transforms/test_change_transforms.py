"""The change-set transforms (zipper.transforms.changes) and the merge transform's deletes, row by row."""

from __future__ import annotations

from pyspark.testing import assertDataFrameEqual

from zipper.transforms import changes, daily, snapshots
from zipper.transforms.shape import MergeShape

COLUMNS = ["id", "name", "city"]
EVENTS = "id bigint, name string, city string, zipper_action string, zipper_order int"
CHANGES = "id bigint, name string, city string, zipper_op string, zipper_first string"
OUT = "id bigint, name string, city string, begin_dt string, zipper_slot string, zipper_kind string"


def events(spark, rows):
    return spark.createDataFrame(rows, EVENTS)


def test_collapse_keeps_each_keys_state_at_the_end_of_the_day(spark):
    flagged = changes.flag_events(
        events(
            spark,
            [
                (1, "a", "x", "insert", 2),
                (1, "a", "y", "update", 3),
                (1, "a", "w", "insert", 1),  # out of order: order decides
                (2, "b", None, "delete", 1),
                (2, "b", "z", "insert", 2),
                (3, "c", "x", "upsert", 1),
                (3, None, None, "delete", 2),
            ],
        ),
        keys=["id"],
        columns=COLUMNS,
        match=None,
    )
    collapsed = changes.collapse(flagged, columns=COLUMNS, deletes=True)
    assertDataFrameEqual(
        collapsed,
        spark.createDataFrame(
            [
                (1, "a", "y", "upsert", "insert"),
                (2, "b", "z", "upsert", "delete"),
                (3, None, None, "delete", "upsert"),
            ],
            CHANGES,
        ),
        checkRowOrder=False,
    )


def test_problems_within_the_day_are_flagged_against_the_previous_change(spark):
    flagged = changes.flag_events(
        events(
            spark,
            [
                (1, "a", "x", "insert", 1),
                (1, "a", "x", "insert", 2),  # insert of a key the day made present
                (2, "b", "x", "delete", 1),
                (2, "b", "x", "update", 2),  # update after a delete
                (3, "c", "x", "delete", 1),
                (3, "c", "x", "delete", 2),  # delete after a delete
                (4, "d", "x", "upsert", 1),
                (4, "d", "y", "delete", 2),  # delete carrying other values
                (5, "e", None, "upsert", 1),
                (5, "e", None, "delete", 2),  # delete carrying the same values (NULL = NULL)
            ],
        ),
        keys=["id"],
        columns=COLUMNS,
        match=["name", "city"],
    )
    found = flagged.where("zipper_problem IS NOT NULL").select("id", "zipper_problem", "zipper_diff")
    assertDataFrameEqual(
        found,
        spark.createDataFrame(
            [
                (1, "insert_open", None),
                (2, "update_absent", None),
                (3, "delete_absent", None),
                (4, "delete_mismatch", ["city"]),
            ],
            "id bigint, zipper_problem string, zipper_diff array<string>",
        ),
        checkRowOrder=False,
    )


def test_first_actions_are_checked_against_the_open_rows(spark):
    touched = spark.createDataFrame(
        [(1, "a", "x"), (2, "b", "x"), (3, "c", None)], "id bigint, name string, city string"
    )
    change_set = changes.single_changes(
        events(
            spark,
            [
                (1, "a", "x", "insert", 1),  # insert of an open key
                (2, "b", "y", "delete", 1),  # delete whose values differ
                (3, "c", None, "delete", 1),  # delete that matches (NULL = NULL)
                (7, "g", "x", "update", 1),  # update of a key that is not open
                (8, "h", "x", "delete", 1),  # delete of a key that is not open
            ],
        ).drop("zipper_order"),
        columns=COLUMNS,
        match=["name", "city"],
    )
    problems = changes.open_problems(touched, change_set, keys=["id"], columns=COLUMNS)
    assertDataFrameEqual(
        problems,
        spark.createDataFrame(
            [
                (1, "insert_open", None),
                (2, "delete_mismatch", ["city"]),
                (7, "update_absent", None),
                (8, "delete_absent", None),
            ],
            "id bigint, zipper_problem string, zipper_diff array<string>",
        ),
        checkRowOrder=False,
    )


def test_snapshot_diff_gives_new_changed_and_missing_keys(spark):
    open_rows = spark.createDataFrame(
        [(1, "a", "x"), (2, "b", None), (3, "c", "x")], "id bigint, name string, city string"
    )
    snapshot = spark.createDataFrame(
        [(1, "a", "x"), (2, "b", "y"), (4, "d", None)], "id bigint, name string, city string"
    )
    result = snapshots.snapshot_changes(open_rows, snapshot, keys=["id"], columns=COLUMNS, invalidate=True)
    expected = [(2, "b", "y", "upsert"), (3, None, None, "delete"), (4, "d", None, "upsert")]
    schema = "id bigint, name string, city string, zipper_op string"
    assertDataFrameEqual(result, spark.createDataFrame(expected, schema), checkRowOrder=False)
    kept = snapshots.snapshot_changes(open_rows, snapshot, keys=["id"], columns=COLUMNS, invalidate=False)
    assertDataFrameEqual(kept, spark.createDataFrame([expected[0], expected[2]], schema), checkRowOrder=False)


def test_merge_closes_deleted_keys_without_a_successor(spark):
    open_rows = spark.createDataFrame(
        [(1, "a", "x", "2024-01-01"), (2, "b", "y", "2024-01-02"), (3, "c", "z", "2024-01-01")],
        "id bigint, name string, city string, begin_dt string",
    )
    change_set = spark.createDataFrame(
        [(2, None, None, "delete"), (3, "c", "w", "upsert"), (9, None, None, "delete"), (8, "n", "q", "upsert")],
        "id bigint, name string, city string, zipper_op string",
    )
    result = daily.classify(
        open_rows,
        change_set,
        MergeShape(
            keys=["id"],
            columns=COLUMNS,
            tracked=["name", "city"],
            begin_column="begin_dt",
            ds="2024-01-05",
        ),
    )
    assertDataFrameEqual(
        result,
        spark.createDataFrame(
            [
                (1, "a", "x", "2024-01-01", "open", "carried"),
                (2, "b", "y", "2024-01-02", "closed", "deleted"),
                (3, "c", "z", "2024-01-01", "closed", "closed"),
                (3, "c", "w", "2024-01-05", "open", "changed"),
                (8, "n", "q", "2024-01-05", "open", "new"),
                (9, None, None, "2024-01-05", "none", "vanished"),
            ],
            OUT,
        ),
        checkRowOrder=False,
    )


def test_a_snapshot_compares_map_columns_by_their_entries(spark):
    schema = "id bigint, tags map<string,int>"
    open_rows = spark.createDataFrame(
        [(1, {"a": 1, "b": 2}, "2024-01-01"), (2, {"a": 1}, "2024-01-01")], schema + ", begin_dt string"
    )
    snapshot = spark.createDataFrame([(1, {"b": 2, "a": 1}), (2, {"a": 3})], schema)
    result = snapshots.snapshot_changes(open_rows, snapshot, keys=["id"], columns=["id", "tags"], invalidate=True)
    assert [(r.id, r.zipper_op) for r in result.collect()] == [(2, "upsert")]
