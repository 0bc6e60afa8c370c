"""The one-line refusals of keys that hold a NULL."""

from __future__ import annotations

from pyspark.sql import Row

from zipper.inputs.refusals import null_keys_text


def test_a_null_single_key_is_counted_not_listed():
    assert null_keys_text("increment /in", [Row(id=None, copies=3)], ["id"]) == (
        "increment /in has 3 rows with NULL in key column 'id'"
    )
    assert null_keys_text("increment /in", [Row(id=None, copies=1)], ["id"]) == (
        "increment /in has 1 row with NULL in key column 'id'"
    )


def test_null_composite_keys_are_listed_with_their_rows():
    rows = [Row(a=None, b="x", copies=2), Row(a=1, b=None, copies=1)]
    assert null_keys_text("changes /in", rows, ["a", "b"]) == (
        "changes /in has NULL in key columns ['a', 'b']: (NULL, x) (2 rows), (1, NULL) (1 row)"
    )


def test_rows_of_a_check_that_does_not_count_them_are_listed_without_counts():
    assert null_keys_text("changes /in", [Row(a=None, b=2)], ["a", "b"]) == (
        "changes /in has NULL in key columns ['a', 'b']: (NULL, 2)"
    )
    assert null_keys_text("changes /in", [Row(id=None)], ["id"]) == "changes /in has NULL in key column 'id'"
