"""The --where grammar of `zipper correct`: what each text parses to, and the one line that says
why a text is refused. No Spark here: the CLI checks a predicate before it starts a JVM."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zipper.core.predicate import (
    MAX_CONDITIONS,
    MAX_NESTING,
    And,
    Comparison,
    InList,
    IsNull,
    Literal,
    Or,
    PredicateError,
    columns_of,
    parse,
    render_text,
)

COLUMNS = {
    "id": "bigint",
    "name": "string",
    "amount": "decimal(10,2)",
    "day": "date",
    "score": "double",
    "flag": "boolean",
    "odd name": "string",
    "a`b": "int",
    "and": "string",
    "Mixed": "int",
    "tags": "array<int>",
    "attrs": "map<string,string>",
    "point": "struct<x:int,y:int>",
}
SCALAR = [name for name, kind in COLUMNS.items() if "<" not in kind]


def num(text):
    return Literal(text, "number")


def text(value):
    return Literal(value, "string")


def eq(column, value):
    return Comparison(column, "=", value)


def refusal(predicate: str) -> str:
    with pytest.raises(PredicateError) as caught:
        parse(predicate, COLUMNS)
    message = str(caught.value)
    assert message.startswith("--where ") and len(message.splitlines()) == 1
    return message


@pytest.mark.parametrize(
    "predicate, tree",
    [
        ("id = 1", eq("id", num("1"))),
        ("id <> 1", Comparison("id", "<>", num("1"))),
        ("id != 1", Comparison("id", "<>", num("1"))),
        ("id < -12", Comparison("id", "<", num("-12"))),
        ("id<=3.5", Comparison("id", "<=", num("3.5"))),
        ("score > 1e3", Comparison("score", ">", num("1e3"))),
        ("score >= .5E-2", Comparison("score", ">=", num(".5E-2"))),
        ("name = 'x'", eq("name", text("x"))),
        ("id = '007'", eq("id", text("007"))),
        ("flag = TRUE", eq("flag", Literal("true", "boolean"))),
        ("flag = false", eq("flag", Literal("false", "boolean"))),
        ("id IN (1, '2', TRUE)", InList("id", (num("1"), text("2"), Literal("true", "boolean")), False)),
        ("id IN (1)", InList("id", (num("1"),), False)),
        ("name NOT IN ('a','b')", InList("name", (text("a"), text("b")), True)),
        ("name IS NULL", IsNull("name", False)),
        ("name IS NOT NULL", IsNull("name", True)),
        ("tags IS NULL", IsNull("tags", False)),  # a nested column cannot be compared, but can be NULL
        ("point IS NOT NULL", IsNull("point", True)),
    ],
)
def test_each_condition_parses_to_its_tree(predicate, tree):
    """`!=` is `<>`; numbers keep the text the user wrote (its column's type reads it later)."""
    assert parse(predicate, COLUMNS) == tree


def test_and_binds_tighter_than_or_and_both_group_from_the_left():
    a, b, c = eq("id", num("1")), eq("name", text("2")), eq("score", num("3"))
    assert parse("id = 1 OR name = '2' AND score = 3", COLUMNS) == Or(a, And(b, c))
    assert parse("id = 1 AND name = '2' OR score = 3", COLUMNS) == Or(And(a, b), c)
    assert parse("id = 1 OR name = '2' OR score = 3", COLUMNS) == Or(Or(a, b), c)
    assert parse("id = 1 AND name = '2' AND score = 3", COLUMNS) == And(And(a, b), c)


def test_parentheses_group_first():
    a, b, c = eq("id", num("1")), eq("name", text("2")), eq("score", num("3"))
    assert parse("(id = 1 OR name = '2') AND score = 3", COLUMNS) == And(Or(a, b), c)
    assert parse("id = 1 OR (name = '2' OR score = 3)", COLUMNS) == Or(a, Or(b, c))
    assert parse("((id = 1))", COLUMNS) == a


def test_keywords_and_column_names_match_in_any_case_and_the_tree_holds_the_tables_spelling():
    """Hive lowercases names, so `ID` is `id`; a table spelled `Mixed` stays `Mixed`."""
    assert parse("ID in (1) AnD Name iS nOt NuLl oR mixed = 2 or FLAG = True", COLUMNS) == Or(
        Or(And(InList("id", (num("1"),), False), IsNull("name", True)), eq("Mixed", num("2"))),
        eq("flag", Literal("true", "boolean")),
    )
    assert parse("name not in ('x')", COLUMNS) == InList("name", (text("x"),), True)


def test_backquoted_names_hold_spaces_keywords_and_doubled_backquotes():
    assert parse("`odd name` = 'x'", COLUMNS) == eq("odd name", text("x"))
    assert parse("`ODD NAME` is null", COLUMNS) == IsNull("odd name", False)
    assert parse("`a``b` = 1", COLUMNS) == eq("a`b", num("1"))
    assert parse("`and` = 'or'", COLUMNS) == eq("and", text("or"))
    assert parse("`id` = 1", COLUMNS) == eq("id", num("1"))


@pytest.mark.parametrize(
    "literal, value",
    [
        ("'it''s'", "it's"),
        ("''''", "'"),
        ("''", ""),
        ("'a AND b = 1) OR (`c`'", "a AND b = 1) OR (`c`"),
        ("'  spaced  '", "  spaced  "),
        ("'two\nlines'", "two\nlines"),
        ("'back\\slash'", "back\\slash"),  # no backslash escapes: a backslash is itself
    ],
)
def test_a_quoted_string_is_its_text_with_doubled_quotes_read_as_one(literal, value):
    assert parse(f"name = {literal}", COLUMNS) == eq("name", text(value))


def test_columns_of_names_every_column_read_in_the_tables_spelling():
    tree = parse("ID = 1 OR (`odd name` IS NULL AND mixed IN (1, 2)) OR id <> 3", COLUMNS)
    assert columns_of(tree) == {"id", "odd name", "Mixed"}


@pytest.mark.parametrize(
    "predicate, message",
    [
        ("id = ", "--where 'id = ': expected a value after '=' at character 6"),
        ("id = 1 AND", "--where 'id = 1 AND': expected a column name at character 11"),
        ("id", "--where 'id': expected an operator (=, <>, <, <=, >, >=, IN, NOT IN, IS NULL or IS NOT NULL)"),
        ("id == 1", "expected a value after '=' at character 5, found '='"),
        ("id = b", "expected a value after '=' at character 6, found 'b' (a value is a quoted string"),
        ("1 = id", "expected a column name at character 1, found '1' (a condition starts with its column"),
        ("NOT id = 1", "expected a column name at character 1, found 'NOT' (NOT only comes in NOT IN and IS NOT NULL)"),
        ("and = 'x'", "found 'and' (AND is a keyword: backquote a column so named)"),
        ("id IN ()", "expected a value in the list of IN at character 8, found ')'"),
        ("id IN 1", "expected '(' after IN at character 7, found '1'"),
        ("id NOT 1", "expected IN after NOT at character 8, found '1'"),
        ("id IN (1 2)", "expected ',' or ')' at character 10, found '2' (the list at character 7 is open)"),
        ("id IS NOT", "expected NULL after IS NOT at character 10"),
        ("id IS 1", "expected NULL or NOT NULL after IS at character 7, found '1'"),
        ("(id = 1", "expected AND, OR or ')' at character 8 (the '(' at character 1 is open)"),
        (
            "name = 'x",
            "expected a closing ' (a quote inside a string is written '') for the string opened at character 8",
        ),
        (
            "`odd name = 'x'",
            "expected a closing ` (a backquote inside a name is written ``) for the name opened at character 1",
        ),
        ('name = "x"', "unexpected character '\"' at character 8; strings take single quotes"),
        ("name = 'x'; DROP TABLE t", "unexpected character ';' at character 11"),
        ("id = 1abc", "'1abc' is not a number (at character 6)"),
        ("id = 1.2.3", "'1.2.3' is not a number (at character 6)"),
    ],
)
def test_a_syntax_error_says_what_was_expected_and_where(predicate, message):
    assert message in refusal(predicate)


def test_an_unknown_column_is_named_with_the_tables_columns():
    assert refusal("id = 1 OR nope = 1") == (
        "--where 'id = 1 OR nope = 1': no column `nope` in the table (at character 11); its columns: id, name,"
        " amount, day, score, flag, `odd name`, `a``b`, `and`, Mixed, tags, attrs, point"
    )


@pytest.mark.parametrize("column", ["tags", "attrs", "point"])
@pytest.mark.parametrize("condition", ["= 1", "<> 'x'", "IN (1)", "NOT IN ('a')"])
def test_an_array_map_or_struct_column_cannot_be_compared(column, condition):
    message = refusal(f"{column} {condition}")
    assert (
        f"column `{column}` is {COLUMNS[column]} (at character 1): an array, map or struct cannot be compared in --where"
        in message
    )


@pytest.mark.parametrize("predicate", ["", "   ", "\n\t"])
def test_an_empty_predicate_is_refused(predicate):
    assert "the predicate is empty" in refusal(predicate)


@pytest.mark.parametrize(
    "predicate, instead",
    [
        ("id = NULL", "write id IS NULL"),
        ("id != null", "write id IS NOT NULL"),
        ("id < NULL", "write id IS NULL or id IS NOT NULL"),
        ("`odd name` IN ('a', NULL)", "write `odd name` IS NULL"),
        ("id NOT IN (NULL)", "write id IS NOT NULL"),
    ],
)
def test_null_is_no_value_to_compare_with(predicate, instead):
    message = refusal(predicate)
    assert "NULL is not a value to compare with" in message and message.endswith(instead)


@pytest.mark.parametrize(
    "predicate, message",
    [
        (
            "id = 1 name = 'x'",
            "unexpected 'name' at character 8 after a complete condition (join conditions with AND or OR)",
        ),
        ("id = 1)", "unexpected ')' at character 7 with no '(' open"),
        ("id = 1 'x'", "unexpected 'x' at character 8 after a complete condition"),
    ],
)
def test_input_after_a_complete_predicate_is_refused(predicate, message):
    assert message in refusal(predicate)


def test_a_predicate_over_a_line_is_quoted_on_one_line():
    """A line break or another invisible character shows as its escape, so the refusal is one line."""
    assert refusal("name = 'a\nb' x").startswith("--where 'name = 'a\\nb' x': unexpected 'x' at character 14")
    assert refusal("`x\u2028y` = 1").startswith("--where '`x\\u2028y` = 1': no column `x\\u2028y` in the table")


def test_the_tree_stays_shallow_enough_to_render_and_compile():
    """Many values of one column go in one IN list; a chain of conditions or parentheses is bounded."""
    assert len(parse("id IN (" + ", ".join(map(str, range(5000))) + ")", COLUMNS).values) == 5000
    chain = " OR ".join(f"id = {i}" for i in range(MAX_CONDITIONS))
    assert len(render_text(parse(chain, COLUMNS))) > 0
    assert "more than 200 conditions" in refusal(chain + " OR id = 0")
    nested = "(" * MAX_NESTING + "id = 1" + ")" * MAX_NESTING
    assert parse(nested, COLUMNS) == eq("id", num("1"))
    assert f"more than {MAX_NESTING} parentheses open at character {MAX_NESTING + 1}" in refusal("(" + nested + ")")


def test_the_canonical_text_backquotes_names_and_upper_cases_keywords():
    tree = parse(
        "id != 1 or (name = 'it''s' or `odd name` is not null) and flag = true and `a``b` not in (-1, 2.5)", COLUMNS
    )
    assert render_text(tree) == (
        "`id` <> 1 OR (`name` = 'it''s' OR `odd name` IS NOT NULL) AND `flag` = TRUE AND `a``b` NOT IN (-1, 2.5)"
    )
    assert render_text(parse("id = 1 AND (name = 'a' AND score = 2)", COLUMNS)) == (
        "`id` = 1 AND (`name` = 'a' AND `score` = 2)"
    )


ROUND_TRIP = [
    "id = 1",
    "id = 1 OR name = 'x' AND score > 2",
    "(id = 1 OR name = 'x') AND score > 2",
    "id = 1 OR (name = 'x' OR score > 2)",
    "id = 1 AND (name = 'x' AND (score > 2 OR flag = FALSE))",
    "`odd name` NOT IN ('it''s', '`', '') OR `a``b` IS NULL",
    "mixed <= -1e-3 and day >= '2024-01-01' and day < '2024-02-01'",
    "amount IN (1.5, '2.25', -3) AND tags IS NOT NULL AND `and` <> 'OR 1=1 --'",
    "((id = 1 OR id = 2) AND (id = 3 OR id = 4)) OR (id = 5 AND id = 6)",
]


@pytest.mark.parametrize("predicate", ROUND_TRIP)
def test_the_canonical_text_reads_back_to_the_same_tree(predicate):
    tree = parse(predicate, COLUMNS)
    assert parse(render_text(tree), COLUMNS) == tree


# Trees of every shape the grammar can read, from generated parts.
literals = st.one_of(
    st.text().map(text),
    st.integers().map(lambda i: num(str(i))),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: num(repr(f))),
    st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: num(str(d))),
    st.sampled_from(["true", "false"]).map(lambda b: Literal(b, "boolean")),
)
conditions = st.one_of(
    st.builds(Comparison, st.sampled_from(SCALAR), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), literals),
    st.builds(InList, st.sampled_from(SCALAR), st.lists(literals, min_size=1, max_size=4).map(tuple), st.booleans()),
    st.builds(IsNull, st.sampled_from(list(COLUMNS)), st.booleans()),
)
trees = st.recursive(
    conditions, lambda inner: st.one_of(st.builds(And, inner, inner), st.builds(Or, inner, inner)), max_leaves=12
)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_any_tree_reads_back_from_its_canonical_text(tree):
    assert parse(render_text(tree), COLUMNS) == tree


# Pieces of predicates, right and wrong, so that generated texts get past the first token.
PIECES = ["id", "name", "`odd name`", "tags", "nope", "=", "<>", "!=", "<", ">=", "IN", "NOT", "IS", "NULL", "TRUE"]
PIECES += ["AND", "OR", "(", ")", ",", "'x'", "'it''s'", "1", "-2.5e3", "'", "`", "\n", "1e", ";"]


@st.composite
def edited(draw):
    """A predicate's canonical text with one piece put in (the empty piece keeps it valid), cut short or not."""
    predicate = render_text(draw(trees))
    at = draw(st.integers(0, len(predicate)))
    predicate = predicate[:at] + draw(st.sampled_from(["", *PIECES])) + predicate[at:]
    return predicate[: draw(st.integers(0, len(predicate)))] if draw(st.booleans()) else predicate


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join), edited()))
@example("`\n` = 1")  # a line break in a name the table does not have
def test_any_text_parses_or_is_refused_with_one_line(predicate):
    """Never another exception: the CLI prints the refusal as it is."""
    try:
        tree = parse(predicate, COLUMNS)
    except PredicateError as refused:
        assert str(refused).startswith("--where '") and len(str(refused).splitlines()) == 1
    else:
        assert parse(render_text(tree), COLUMNS) == tree
