"""The pure merge transform, row by row."""

from __future__ import annotations

import pyarrow.parquet as pq
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


def written(spark, folder, files: dict[str, list[tuple]], schema: str):
    """`files` (name -> rows) written as Parquet files of those names in `folder`, read back as one
    input, and the URI Spark names each file by."""
    folder.mkdir(parents=True)
    for name, rows in files.items():
        pq.write_table(spark.createDataFrame(rows, schema).toArrow(), folder / name)
    return spark.read.parquet(str(folder)), {name: (folder / name).as_uri() for name in files}


PROBLEMS = (
    "zipper_key_problem string, zipper_keys bigint, zipper_rows bigint,"
    " zipper_examples array<struct<id:bigint, zipper_value:{value}, zipper_rows:bigint>>, zipper_files array<string>"
)


def test_key_problems_counts_every_problem_with_its_first_keys_and_the_files_that_hold_them(spark, tmp_path):
    """NULL and repeated keys in one query: a NULL key spread over two files, key 1 in both files
    (three rows), key 2 twice in one; key 3 once is no problem."""
    rows, uri = written(
        spark,
        tmp_path / "in",
        {
            "part-0.parquet": [(1, "a", "x"), (1, "b", "y"), (None, "c", "z"), (3, "d", "w")],
            "part-1.parquet": [(1, "e", "v"), (2, "f", "u"), (2, "g", "t"), (None, "h", "s"), (None, "i", "r")],
        },
        SCHEMA_INC,
    )
    both = sorted(uri.values())
    expected = spark.createDataFrame(
        [
            ("null_key", 1, 3, [(None, None, 3)], both),
            ("repeated_key", 2, 5, [(1, None, 3), (2, None, 2)], both),
        ],
        PROBLEMS.format(value="string"),
    )
    assertDataFrameEqual(daily.key_problems(rows, ["id"]), expected, checkRowOrder=False)
    # two examples asked for: the first keys in key order, the counts still of all of them
    first = daily.key_problems(rows.where("id IS NOT NULL"), ["id"], examples=1)
    assert [(r.zipper_keys, [e.id for e in r.zipper_examples]) for r in first.collect()] == [(2, [1])]


def test_key_problems_of_ordered_changes_by_date(spark, tmp_path):
    """With an order column, a key may come several times, not with the same order twice nor a NULL
    one; `by` (a rerun's dates) keeps each date's problems apart. Rows not read from files have none."""
    events = spark.createDataFrame(
        [
            ("d1", 1, 5),
            ("d1", 1, 5),
            ("d1", 1, 6),
            ("d1", 1, 6),
            ("d1", 2, 1),
            ("d1", 2, 2),  # key 2: two orders, no problem
            ("d1", 3, None),
            ("d2", None, 1),
            ("d2", 4, 1),
            ("d2", 4, 1),
        ],
        "ds string, id bigint, seq int",
    )
    found = daily.key_problems(events, ["id"], order="seq", by=("ds",))
    expected = spark.createDataFrame(
        [
            ("d1", "repeated_order", 1, 4, [(1, 5, 4)], []),
            ("d1", "null_order", 1, 1, [(3, None, 1)], []),
            ("d2", "null_key", 1, 1, [(None, None, 1)], []),
            ("d2", "repeated_order", 1, 2, [(4, 1, 2)], []),
        ],
        "ds string, " + PROBLEMS.format(value="int"),
    )
    assertDataFrameEqual(found, expected, checkRowOrder=False)


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
