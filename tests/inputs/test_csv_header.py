"""A CSV header's column names as Spark's reader options split them, and the ones it repeats."""

from __future__ import annotations

import pytest

from zipper.inputs.csv_header import header_names, header_record, repeated_names


@pytest.mark.parametrize(
    "line, options, names",
    [
        ("id,name,name", {}, ["id", "name", "name"]),
        ("\ufeffid,name", {}, ["id", "name"]),  # a byte order mark (Excel's UTF-8 export) before the first name
        ('id;"na;me";x', {"sep": ";"}, ["id", "na;me", "x"]),
        ("id\tName", {"Sep": "\\t"}, ["id", "Name"]),  # Spark's spelling of a tab; options in any case
        ("id\tName", {"delimiter": "\t"}, ["id", "Name"]),
        ("a||b||a", {"sep": "||"}, ["a", "b", "a"]),  # a separator of several characters
        ('"a",b', {"quote": ""}, ['"a"', "b"]),  # quoting off
        ("'a,b',c", {"quote": "'"}, ["a,b", "c"]),
        ('"a\\"b",c', {}, ['a"b', "c"]),
    ],
)
def test_header_names_follow_the_reader_options(line, options, names):
    assert header_names(line, options) == names


def test_repeated_names_are_compared_in_any_case_and_empty_names_are_not_names():
    assert repeated_names(["id", "name", "city"]) == []
    assert repeated_names(["id", "Name", "name", "city", "CITY", "", ""]) == [["Name", "name"], ["city", "CITY"]]
    assert repeated_names(["id", "NA", "NA"], null_value="NA") == []  # Spark names them _c1, _c2


def test_a_header_record_spans_the_lines_of_a_quoted_name_under_multiline_only():
    lines = iter(["# exported", "", 'id,"first', 'name",x', "1,ann,2"])
    assert header_record(lines, {"comment": "#", "multiLine": "true"}) == ["id", "first\nname", "x"]
    assert next(lines) == "1,ann,2"  # no line past the header is read
    lines = iter(['id,"first', 'name",x'])
    assert header_record(lines, {}) == ["id", "first"]  # without multiLine, Spark's header is one line too
    lines = iter(["id,name", "1,ann"])
    assert header_record(lines, {"multiLine": "true"}) == ["id", "name"]
    assert next(lines) == "1,ann"
    assert header_record(iter(["", "  "]), {}) is None
