"""The one-line refusal of a day's key problems: every problem at once, each with its count, its
files and its first keys, in a fixed order."""

from __future__ import annotations

from pyspark.sql import Row

from zipper.inputs.refusals import file_name, files_text, key_problems_text
from zipper.transforms import keychecks

FOLDER = "file:/data/in/ds=2024-01-02"


def problem(kind: str, keys: int, rows: int, examples: list[dict], files: list[str]) -> Row:
    """A collected row of `keychecks.key_problems`."""
    listed = [
        Row(**{**e, keychecks.VALUE: e.get(keychecks.VALUE), keychecks.ROWS: e.get(keychecks.ROWS, 2)})
        for e in examples
    ]
    return Row(
        **{
            keychecks.KEY_PROBLEM: kind,
            keychecks.KEY_COUNT: keys,
            keychecks.ROWS: rows,
            keychecks.EXAMPLES: listed,
            keychecks.FILES: [f"file:///data/in/ds=2024-01-02/{f}" for f in files],
        }
    )


def test_null_and_repeated_keys_are_one_refusal_nulls_first_whatever_order_they_come_in():
    repeated = problem(
        keychecks.REPEATED_KEY, 3, 7, [{"id": 1}, {"id": 4}, {"id": 9}], ["part-0.parquet", "part-1.parquet"]
    )
    nulls = problem(keychecks.NULL_KEY, 1, 2, [{"id": None}], ["part-1.parquet"])
    assert key_problems_text("increment /data/in/ds=2024-01-02", [repeated, nulls], ["id"], [FOLDER]) == (
        "increment /data/in/ds=2024-01-02 has 2 rows with NULL in key column 'id' in part-1.parquet;"
        " 3 keys ['id'] more than once (7 rows) in part-0.parquet and part-1.parquet: 1, 4, 9"
    )


def test_a_null_single_key_is_counted_not_listed():
    nulls = problem(keychecks.NULL_KEY, 1, 1, [{"id": None}], ["part-0.parquet"])
    assert key_problems_text("increment /in", [nulls], ["id"], [FOLDER]) == (
        "increment /in has 1 row with NULL in key column 'id' in part-0.parquet"
    )


def test_null_composite_keys_are_listed_with_their_rows():
    examples = [{"a": None, "b": "x", keychecks.ROWS: 2}, {"a": 1, "b": None, keychecks.ROWS: 1}]
    nulls = problem(keychecks.NULL_KEY, 2, 3, examples, ["part-0.parquet"])
    assert key_problems_text("changes /in", [nulls], ["a", "b"], [FOLDER]) == (
        "changes /in has 3 rows with NULL in key columns ['a', 'b'] in part-0.parquet: (NULL, x) (2 rows),"
        " (1, NULL) (1 row)"
    )


def test_past_the_listed_keys_the_message_says_how_many_it_lists():
    repeated = problem(keychecks.REPEATED_KEY, 25, 50, [{"id": n} for n in range(20)], ["part-0.parquet"])
    text = key_problems_text("increment /in", [repeated], ["id"], [FOLDER])
    assert text == (
        "increment /in has 25 keys ['id'] more than once (50 rows) in part-0.parquet, the first 20: "
        + ", ".join(str(n) for n in range(20))
    )


def test_ordered_changes_name_their_sequence_column_and_the_repeated_value_after_null_keys():
    null_order = problem(keychecks.NULL_ORDER, 1, 1, [{"id": 2, keychecks.ROWS: 1}], ["part-0.parquet"])
    repeated = problem(
        keychecks.REPEATED_ORDER, 2, 4, [{"id": 3, keychecks.VALUE: 5}, {"id": 7, keychecks.VALUE: 1}], []
    )
    nulls = problem(keychecks.NULL_KEY, 1, 1, [{"id": None}], ["part-1.parquet"])
    assert key_problems_text("changes /in", [repeated, null_order, nulls], ["id"], [FOLDER], "seq") == (
        "changes /in has 1 row with NULL in key column 'id' in part-1.parquet;"
        " 1 key ['id'] with NULL in sequence_by column 'seq' (1 row) in part-0.parquet: 2;"
        " 2 keys ['id'] with a repeated value in sequence_by column 'seq' (4 rows): 3 (seq 5), 7 (seq 1)"
    )


def test_files_are_named_from_the_inputs_folder_and_listed_up_to_five():
    assert file_name("file:///data/in/ds=2024-01-02/sub/part-1.parquet", [FOLDER]) == "sub/part-1.parquet"
    assert file_name("file:///data/in/a%20b/part-1.parquet", ["file:/data/in/a b"]) == "part-1.parquet"
    # a root that is the file itself (a landing zone's files), and a file under no root
    assert file_name("file:///z/00000000000000000005.parquet", ["file:/z/00000000000000000005.parquet"]) == (
        "00000000000000000005.parquet"
    )
    assert file_name("hdfs://nn:8020/elsewhere/part-0.parquet", [FOLDER]) == "hdfs://nn:8020/elsewhere/part-0.parquet"
    files = [f"file:///data/in/ds=2024-01-02/part-{n}.parquet" for n in range(7)]
    assert files_text(files[:3], [FOLDER]) == "part-0.parquet, part-1.parquet and part-2.parquet"
    assert files_text(files, [FOLDER]) == (
        "part-0.parquet, part-1.parquet, part-2.parquet, part-3.parquet, part-4.parquet and 2 more files"
    )
    assert files_text(["", files[0]], [FOLDER]) == "part-0.parquet"  # a row not read from a file has no name
