"""A --where predicate (`zipper.core.predicate`) as a Spark Column.

The tree becomes Column objects, never SQL text: a name is one backquoted column reference and a
literal is `F.lit(text)`, so no quote or keyword a user types reaches Spark's parser. Each literal
takes its column's type through `try_cast`, as Hive would read it: `id = '007'` on a bigint is
`id = 7`. A literal that does not read as its type would match nothing; `bad_literals` finds
those in one query, so the caller refuses the predicate instead of correcting no row.

Pure: no reads, writes or metastore calls; the caller passes the table's column types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from zipper.core.predicate import (
    And,
    Comparison,
    InList,
    IsNull,
    Literal,
    Node,
    Or,
    ValueKind,
    literals_of,
    render_condition,
    render_literal,
)

# Wide enough to hold a literal's places beyond a decimal column's scale (up to 18), so a
# literal the column would round is seen as such.
EXACT_DECIMAL = "decimal(38,18)"
DECIMAL = re.compile(r"\s*decimal\b", re.IGNORECASE)
BOOLEAN = re.compile(r"\s*boolean\s*$", re.IGNORECASE)


def column_ref(name: str) -> Column:
    """The column `name`, backquoted so that a dot or a space in it stays part of the name."""
    return F.col("`" + name.replace("`", "``") + "`")


def typed(value: Literal, column_type: str) -> Column:
    """The literal read as its column's type; NULL when it does not read as one. A boolean on a
    boolean column is itself; elsewhere it is the text `true` or `false`, read like any other."""
    if value.kind == ValueKind.BOOLEAN and BOOLEAN.match(column_type):
        return F.lit(value.text == "true")
    return F.lit(value.text).try_cast(column_type)


def to_column(node: Node, types: Mapping[str, str]) -> Column:
    """The predicate over a DataFrame with the columns of `types` (name -> Hive type text).

    The Column is SQL's three-valued logic: NULL where a compared value is NULL (a NULL `city`
    matches neither `city = 'x'` nor `city <> 'x'`). Callers mean "matched" by
    `F.coalesce(to_column(node, types), F.lit(False))`."""
    if isinstance(node, And):
        return to_column(node.left, types) & to_column(node.right, types)
    if isinstance(node, Or):
        return to_column(node.left, types) | to_column(node.right, types)
    column = column_ref(node.column)
    if isinstance(node, IsNull):
        return column.isNotNull() if node.negated else column.isNull()
    if isinstance(node, InList):
        within = column.isin(*[typed(v, types[node.column]) for v in node.values])
        return ~within if node.negated else within
    value = typed(node.value, types[node.column])
    if node.op == "=":
        return column == value
    if node.op == "<>":
        return column != value
    if node.op == "<":
        return column < value
    if node.op == "<=":
        return column <= value
    if node.op == ">":
        return column > value
    if node.op == ">=":
        return column >= value
    raise ValueError(f"unknown comparison operator {node.op!r}")


def label(condition: Comparison | InList, value: Literal, column_type: str) -> str:
    """How a refusal names one literal: its condition and its column's type."""
    kind = column_type.strip()
    if isinstance(condition, Comparison) or len(condition.values) == 1:
        return f"{render_condition(condition)} ({kind})"
    return f"{render_condition(condition)}: {render_literal(value)} ({kind})"


def literal_checks(node: Node, types: Mapping[str, str]) -> list[tuple[str, Column]]:
    """For every literal, left to right, its label and a Column that is NULL when the literal
    does not read as its column's type, or when a decimal column would round it (`1.234` in a
    decimal(10,2) is 1.23, another value than the user wrote). All of them evaluate in one
    `spark.range(1).select(...)`."""
    checks = []
    for condition, value in literals_of(node):
        column_type = types[condition.column]
        read = typed(value, column_type)
        if DECIMAL.match(column_type):
            exact = F.lit(value.text).try_cast(EXACT_DECIMAL)
            # NULL `exact`: too wide for the check's type, which the column read, so nothing rounded
            kept = F.coalesce(exact == read.try_cast(EXACT_DECIMAL), F.lit(True))
            read = F.when(kept, read)
        checks.append((label(condition, value, column_type), read))
    return checks


def bad_literals(spark: SparkSession, node: Node, types: Mapping[str, str]) -> list[str]:
    """The labels of the literals that do not read as their columns' types (or would be rounded),
    each once, in the predicate's order; [] when every literal reads. One Spark query."""
    checks = literal_checks(node, types)
    if not checks:
        return []
    row = spark.range(1).select(*[check.alias(f"literal_{i}") for i, (_, check) in enumerate(checks)]).first()
    bad = [name for (name, _), read in zip(checks, row) if read is None]
    return list(dict.fromkeys(bad))
