"""A --where predicate as a Spark Column: which rows it matches, under SQL's NULL rules, with
each literal read as its column's type, and the literals that do not read refused before a
correction runs."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from zipper.core.predicate import parse
from zipper.transforms.predicates import bad_literals, literal_checks, to_column

TYPES = {
    "id": "bigint",
    "name": "string",
    "amount": "decimal(10,2)",
    "day": "date",
    "score": "double",
    "flag": "boolean",
    "odd name": "string",
    "a`b": "int",
}
SCHEMA = ", ".join(f"`{name.replace('`', '``')}` {kind}" for name, kind in TYPES.items())
INJECTION = "x' OR 1=1 --"
ROWS = [
    (1, "a", Decimal("1.50"), datetime.date(2024, 1, 1), 0.5, True, "x", 10),
    (2, None, Decimal("2.25"), datetime.date(2024, 1, 5), None, False, INJECTION, None),
    (7, "b", None, None, 1000.0, None, None, 7),
    (9, "it's", Decimal("-3.00"), datetime.date(2024, 2, 1), -1.5, True, "y", 0),
]


@pytest.fixture(scope="module")
def table(spark):
    return spark.createDataFrame(ROWS, SCHEMA)


def matched(table, predicate: str) -> list[int]:
    """The ids of the rows a correction touches: the predicate's Column, a NULL read as no match."""
    where = F.coalesce(to_column(parse(predicate, TYPES), TYPES), F.lit(False))
    return sorted(row.id for row in table.where(where).select("id").collect())


@pytest.mark.parametrize(
    "predicate, ids",
    [
        ("id = 7", [7]),
        ("id = '007'", [7]),  # a string literal reads as the bigint 7
        ("id IN (1, '2', 9.0e0)", [1, 2]),  # 9.0e0 is not a bigint's text: it matches nothing
        ("id NOT IN (1, 2)", [7, 9]),
        ("id >= 2 AND id < 9", [2, 7]),
        ("name = 'it''s'", [9]),
        ("name NOT IN ('a')", [7, 9]),  # NOT IN does not match a NULL name
        ("name IS NULL", [2]),
        ("name IS NOT NULL", [1, 7, 9]),
        ("amount = 1.5", [1]),
        ("amount >= '2.25'", [2]),
        ("amount < 0", [9]),
        ("amount IN (2.250, -3)", [2, 9]),
        ("day = '2024-01-05'", [2]),
        ("day > '2024-01-01'", [2, 9]),  # compared as dates
        ("score = 1e3", [7]),
        ("score <= 0.5", [1, 9]),
        ("flag = TRUE", [1, 9]),
        ("flag != false", [1, 9]),
        ("flag = 'false'", [2]),
        ("`odd name` = 'x'", [1]),
        ("`ODD NAME` IN ('x', 'y')", [1, 9]),
        ("`a``b` = 0", [9]),
        ("`a``b` IS NULL", [2]),
        ("id = 1 OR id = 2 AND name IS NULL", [1, 2]),
        ("(id = 1 OR id = 2) AND name IS NULL", [2]),
        ("id = 1 OR id = 7 AND name = 'a'", [1]),
        ("(id = 1 OR id = 7) AND (name = 'b' OR flag = TRUE)", [1, 7]),
    ],
)
def test_a_predicate_matches_exactly_its_rows(table, predicate, ids):
    """Each literal is read as its column's type; a NULL compared with anything is no match."""
    assert matched(table, predicate) == ids


def test_a_comparison_with_a_null_value_is_null_as_in_sql(table, spark):
    """`name <> 'a'` is neither true nor false where name is NULL: the caller decides, with
    coalesce, that NULL is no match."""
    node = parse("name <> 'a' OR score > 100", TYPES)
    result = table.select("id", to_column(node, TYPES).alias("matched"))
    expected = spark.createDataFrame([(1, False), (2, None), (7, True), (9, True)], "id bigint, matched boolean")
    assertDataFrameEqual(result, expected, checkRowOrder=False)
    assert matched(table, "name <> 'a'") == [7, 9]
    assert matched(table, "score <> 0.5") == [7, 9]


def test_a_quote_in_a_literal_is_part_of_the_value_not_of_a_query(table):
    """The text is never SQL: the literal `x' OR 1=1 --` matches the one row holding exactly that."""
    assert matched(table, "`odd name` = 'x'' OR 1=1 --'") == [2]
    assert matched(table, "name = 'a'' OR ''1''=''1'") == []


def test_bad_literals_names_each_literal_that_does_not_read_as_its_columns_type(spark):
    node = parse(
        "id = 'abc' OR day = '2024-13-01' OR amount = 1.234 OR id IN (1, 3.5, 2) OR amount < 123456789"
        " OR flag = 'maybe' OR id = TRUE OR day = '2024-13-01'",
        TYPES,
    )
    assert bad_literals(spark, node, TYPES) == [
        "id = 'abc' (bigint)",
        "day = '2024-13-01' (date)",
        "amount = 1.234 (decimal(10,2))",  # rounded to 1.23: another value
        "id IN (1, 3.5, 2): 3.5 (bigint)",
        "amount < 123456789 (decimal(10,2))",  # more digits than decimal(10,2) holds
        "flag = 'maybe' (boolean)",
        "id = TRUE (bigint)",
    ]


def test_bad_literals_is_empty_when_every_literal_reads(spark):
    node = parse(
        "id = '007' AND amount IN (1.50, '2.25', -3, 12345678.99) AND day = '2024-01-05' AND flag = TRUE"
        " AND flag <> 'false' AND score = 1e3 AND name = 'TRUE' AND `odd name` = 12 AND `a``b` >= -2"
        " AND name IS NULL",
        TYPES,
    )
    assert bad_literals(spark, node, TYPES) == []
    assert bad_literals(spark, parse("name IS NOT NULL", TYPES), TYPES) == []


def test_literal_checks_are_null_exactly_for_the_literals_that_do_not_read(spark):
    """One check per literal, in order, evaluated together in one query by the caller."""
    checks = literal_checks(parse("id IN ('1', 'x') AND amount = 0.125 AND amount = 0.12", TYPES), TYPES)
    assert [label for label, _ in checks] == [
        "id IN ('1', 'x'): '1' (bigint)",
        "id IN ('1', 'x'): 'x' (bigint)",
        "amount = 0.125 (decimal(10,2))",
        "amount = 0.12 (decimal(10,2))",
    ]
    row = spark.range(1).select(*[check.cast("string").alias(f"c{i}") for i, (_, check) in enumerate(checks)]).first()
    assert list(row) == ["1", None, None, "0.12"]
