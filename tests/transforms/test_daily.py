"""The pure merge transform, row by row."""

from __future__ import annotations

from pyspark.testing import assertDataFrameEqual

from zipper.transforms import daily

SCHEMA_OPEN = "id bigint, name string, city string, begin_dt string"
SCHEMA_INC = "id bigint, name string, city string"
OUT = "id bigint, name string, city string, begin_dt string, zipper_slot string, zipper_kind string"


def classify(spark, open_rows, increment, tracked=("name", "city"), broadcast=True):
    return daily.classify(
        spark.createDataFrame(open_rows, SCHEMA_OPEN),
        spark.createDataFrame(increment, SCHEMA_INC),
        keys=["id"],
        columns=["id", "name", "city"],
        tracked=list(tracked),
        begin_column="begin_dt",
        ds="2024-01-05",
        broadcast_increment=broadcast,
    )


OPEN = [
    (1, "a", "x", "2024-01-01"),  # absent from the increment
    (2, "b", "y", "2024-01-02"),  # changes city
    (3, "c", None, "2024-01-03"),  # re-sent with the same NULL city
    (4, "d", "z", "2024-01-01"),  # NULL appears in city: a change
]
INCREMENT = [(2, "b", "w"), (3, "c", None), (4, "d", None), (9, "n", "q")]


def test_each_row_goes_to_its_slot_with_its_kind(spark):
    expected = spark.createDataFrame(
        [
            (1, "a", "x", "2024-01-01", "open", "carried"),
            (2, "b", "y", "2024-01-02", "closed", "closed"),
            (2, "b", "w", "2024-01-05", "open", "changed"),
            (3, "c", None, "2024-01-03", "open", "unchanged"),
            (4, "d", "z", "2024-01-01", "closed", "closed"),
            (4, "d", None, "2024-01-05", "open", "changed"),
            (9, "n", "q", "2024-01-05", "open", "new"),
        ],
        OUT,
    )
    assertDataFrameEqual(classify(spark, OPEN, INCREMENT), expected, checkRowOrder=False)


def test_same_result_without_broadcast(spark):
    assertDataFrameEqual(
        classify(spark, OPEN, INCREMENT, broadcast=False), classify(spark, OPEN, INCREMENT), checkRowOrder=False
    )


def test_untracked_change_updates_in_place_without_a_new_version(spark):
    result = classify(spark, [(1, "a", "x", "2024-01-01")], [(1, "a", "moved")], tracked=["name"])
    expected = spark.createDataFrame([(1, "a", "moved", "2024-01-01", "open", "updated")], OUT)
    assertDataFrameEqual(result, expected)


def test_empty_open_partition_makes_every_row_new(spark):
    result = classify(spark, [], [(1, "a", "x")])
    assertDataFrameEqual(result, spark.createDataFrame([(1, "a", "x", "2024-01-05", "open", "new")], OUT))


def test_key_problems_are_found(spark):
    df = spark.createDataFrame([(1, "a", "x"), (1, "b", "y"), (None, "c", "z"), (2, "d", "w")], SCHEMA_INC)
    assert [tuple(r) for r in daily.key_offenders(df, ["id"]).collect()] == [(None, 1), (1, 2)]


def test_big_pass_only_routes_rows_and_keeps_their_values(spark):
    routed = daily.route_open(
        spark.createDataFrame(OPEN, SCHEMA_OPEN), spark.createDataFrame(INCREMENT, SCHEMA_INC), keys=["id"]
    )
    expected = spark.createDataFrame(
        [row + (slot,) for row, slot in zip(OPEN, ["open", "touched", "touched", "touched"])],
        SCHEMA_OPEN + ", zipper_slot string",
    )
    assertDataFrameEqual(routed, expected, checkRowOrder=False)


def test_map_columns_compare_by_their_entries_at_any_depth(spark):
    """Spark's <=> refuses maps; equal entries in another order are the same value."""
    schema = "id bigint, tags map<string,int>, info struct<n:int, m:map<string,string>>, lists array<map<int,int>>"
    open_rows = spark.createDataFrame(
        [
            (1, {"a": 1, "b": 2}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # re-sent, entries in another order
            (2, {"a": 1}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # a map value changes
            (3, {}, None, None, "2024-01-01"),  # an empty map becomes NULL
            (4, {"a": 1}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # a map nested in a struct changes
            (5, {"a": 1}, (1, {"x": "1"}), [{1: 1}, {2: 2}], "2024-01-01"),  # a map nested in an array changes
        ],
        schema + ", begin_dt string",
    )
    increment = spark.createDataFrame(
        [
            (1, {"b": 2, "a": 1}, (1, {"x": "1"}), [{1: 1}]),
            (2, {"a": 2}, (1, {"x": "1"}), [{1: 1}]),
            (3, None, None, None),
            (4, {"a": 1}, (1, {"x": "2"}), [{1: 1}]),
            (5, {"a": 1}, (1, {"x": "1"}), [{1: 1}, {2: 3}]),
        ],
        schema,
    )
    columns = ["id", "tags", "info", "lists"]
    result = daily.classify(
        open_rows,
        increment,
        keys=["id"],
        columns=columns,
        tracked=columns[1:],
        begin_column="begin_dt",
        ds="2024-01-05",
    )
    kinds = {(r.id, r.zipper_kind) for r in result.where("zipper_slot = 'open'").collect()}
    assert kinds == {(1, "unchanged"), (2, "changed"), (3, "changed"), (4, "changed"), (5, "changed")}
