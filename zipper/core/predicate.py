"""The grammar of `zipper correct NAME --where PREDICATE`: which rows of a table's versions a
correction touches.

A small language on purpose: comparisons of one column with a literal, IN lists, IS NULL, AND,
OR and parentheses. The text is parsed here into a tree and never handed to Spark as SQL: the
Spark side (`zipper.transforms.predicates`) builds Column objects from the tree, so nothing a
user types is ever spliced into a query. Only the standard library here: the CLI checks a
predicate before it starts a JVM.

The characters become tokens in `predicate_tokens`; this module reads the grammar over them,
checks the columns, and renders a tree back to text.

    predicate  := disjunct (OR disjunct)*
    disjunct   := atom (AND atom)*              AND binds tighter than OR
    atom       := '(' predicate ')' | condition
    condition  := column op literal
                | column [NOT] IN '(' literal (',' literal)* ')'
                | column IS [NOT] NULL
    op         := '=' | '<>' | '!=' | '<' | '<=' | '>' | '>='
    column     := [A-Za-z_][A-Za-z0-9_]* | `any name` (`` inside is one backquote)
    literal    := 'text' ('' inside is one quote) | number | TRUE | FALSE
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from zipper.core.predicate_tokens import BARE_NAME, KEYWORDS, Token, backquoted, read_tokens, refusal
from zipper.core.predicate_tokens import PredicateError as PredicateError


class ValueKind(StrEnum):
    """How a literal was written: 'quoted text', a number, or TRUE / FALSE."""

    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"


@dataclass(frozen=True)
class Literal:
    """A value as the user wrote it. Its type is its column's: the Spark side casts `text` to it,
    so `'007'` on a bigint column is 7. Booleans hold `true` or `false`."""

    text: str
    kind: ValueKind


@dataclass(frozen=True)
class Comparison:
    """`column op value`; `op` is one of = <> < <= > >= (`!=` is read as `<>`)."""

    column: str
    op: str
    value: Literal


@dataclass(frozen=True)
class InList:
    """`column IN (values)`, or NOT IN when `negated`."""

    column: str
    values: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class IsNull:
    """`column IS NULL`, or IS NOT NULL when `negated`: the only test a NULL passes."""

    column: str
    negated: bool


@dataclass(frozen=True)
class And:
    """Both sides; AND and OR group from the left, so `a AND b AND c` is And(And(a, b), c)."""

    left: Node
    right: Node


@dataclass(frozen=True)
class Or:
    left: Node
    right: Node


Node = Comparison | InList | IsNull | And | Or

# Hive's types that hold other values: Spark cannot order them and a literal cannot be one.
NESTED = re.compile(r"\s*(array|map|struct|uniontype)\s*<", re.IGNORECASE)
# Bounds that keep the tree shallow enough for the recursion that reads, renders and compiles it;
# many values of one column belong in one IN list.
MAX_CONDITIONS = 200
MAX_NESTING = 50
VALUE_HINT = "a quoted string, a number, TRUE or FALSE"
OPERATOR_HINT = "=, <>, <, <=, >, >=, IN, NOT IN, IS NULL or IS NOT NULL"


# -- the grammar ----------------------------------------------------------------------------------


class _Reader:
    """Tokens and a recursive descent over them; every error names the predicate and a place."""

    def __init__(self, text: str, columns: Mapping[str, str]):
        self.text = text
        self.columns = columns
        self.by_lower = {name.lower(): name for name in columns}
        self.tokens = list(read_tokens(text))
        self.at = 0
        self.conditions = 0
        self.nesting = 0

    # errors

    def error(self, what: str) -> PredicateError:
        return refusal(self.text, what)

    def shown(self, token: Token) -> str:
        if token.kind == "end":
            return "the end"
        source = self.text[token.start : token.end]
        if len(source) > 40:
            source = source[:37] + "..."
        return f"'{source}'" if token.kind != "string" else source

    def place(self, token: Token) -> str:
        return f"at character {token.start + 1}"

    def expected(self, what: str, token: Token, hint: str = "") -> PredicateError:
        found = "" if token.kind == "end" else f", found {self.shown(token)}"
        return self.error(f"expected {what} {self.place(token)}{found}{hint}")

    # grammar

    @property
    def token(self) -> Token:
        return self.tokens[self.at]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def is_keyword(self, word: str) -> bool:
        return self.token.kind == "keyword" and self.token.value == word

    def predicate(self) -> Node:
        node = self.disjunct()
        while self.is_keyword("OR"):
            self.take()
            node = Or(node, self.disjunct())
        return node

    def disjunct(self) -> Node:
        node = self.atom()
        while self.is_keyword("AND"):
            self.take()
            node = And(node, self.atom())
        return node

    def atom(self) -> Node:
        if self.token.kind == "(":
            opened = self.take()
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise self.error(f"more than {MAX_NESTING} parentheses open at character {opened.start + 1}")
            node = self.predicate()
            self.nesting -= 1
            if self.token.kind != ")":
                raise self.expected("AND, OR or ')'", self.token, f" (the '(' at character {opened.start + 1} is open)")
            self.take()
            return node
        return self.condition()

    def condition(self) -> Node:
        token = self.token
        if token.kind != "name":
            hint = ""
            if token.kind == "keyword" and token.value == "NOT":
                hint = " (NOT only comes in NOT IN and IS NOT NULL)"
            elif token.kind == "keyword":
                hint = f" ({token.value} is a keyword: backquote a column so named)"
            elif token.kind in ("string", "number"):
                hint = " (a condition starts with its column: id = 1, not 1 = id)"
            raise self.expected("a column name", token, hint)
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise self.error(
                f"more than {MAX_CONDITIONS} conditions ({self.place(token)}); put many values of one column"
                " in one IN (...) list"
            )
        self.take()
        column = self.column(token)
        after = self.token
        if after.kind == "op":
            self.take()
            self.comparable(column, token)
            return Comparison(
                column,
                after.value,
                self.literal(
                    f"a value after '{self.text[after.start : after.end]}'", self.instead(column, after.value)
                ),
            )
        if self.is_keyword("IS"):
            self.take()
            negated = self.is_keyword("NOT")
            if negated:
                self.take()
            if not self.is_keyword("NULL"):
                raise self.expected("NULL after IS NOT" if negated else "NULL or NOT NULL after IS", self.token)
            self.take()
            return IsNull(column, negated)
        if self.is_keyword("NOT") or self.is_keyword("IN"):
            negated = self.is_keyword("NOT")
            if negated:
                self.take()
                if not self.is_keyword("IN"):
                    raise self.expected("IN after NOT", self.token)
            self.take()
            self.comparable(column, token)
            word = "NOT IN" if negated else "IN"
            if self.token.kind != "(":
                raise self.expected(f"'(' after {word}", self.token)
            opened = self.take()
            values = [self.literal(f"a value in the list of {word}", self.instead(column, word))]
            while self.token.kind == ",":
                self.take()
                values.append(self.literal("a value after ','", self.instead(column, word)))
            if self.token.kind != ")":
                raise self.expected("',' or ')'", self.token, f" (the list at character {opened.start + 1} is open)")
            self.take()
            return InList(column, tuple(values), negated)
        raise self.expected(f"an operator ({OPERATOR_HINT}) after {self.shown(token)}", after)

    def column(self, token: Token) -> str:
        """The table's own spelling of the name: Hive lowercases names, so case does not matter."""
        name = self.by_lower.get(token.value.lower())
        if name is None:
            known = ", ".join(render_name(c) for c in self.columns) or "none"
            raise self.error(
                f"no column {backquoted(token.value)} in the table ({self.place(token)}); its columns: {known}"
            )
        return name

    def comparable(self, column: str, token: Token) -> None:
        kind = self.columns[column]
        if NESTED.match(kind):
            raise self.error(
                f"column {backquoted(column)} is {kind.strip()} ({self.place(token)}): an array, map or struct"
                " cannot be compared in --where (IS NULL and IS NOT NULL can test it)"
            )

    def instead(self, column: str, op: str) -> str:
        name = render_name(column)
        if op in ("=", "IN"):
            return f"{name} IS NULL"
        if op in ("<>", "NOT IN"):
            return f"{name} IS NOT NULL"
        return f"{name} IS NULL or {name} IS NOT NULL"

    def literal(self, what: str, instead: str) -> Literal:
        """The value at the current token; `instead` is the condition a NULL here should have been."""
        token = self.token
        if token.kind == "string":
            self.take()
            return Literal(token.value, ValueKind.STRING)
        if token.kind == "number":
            self.take()
            return Literal(token.value, ValueKind.NUMBER)
        if token.kind == "keyword" and token.value in ("TRUE", "FALSE"):
            self.take()
            return Literal(token.value.lower(), ValueKind.BOOLEAN)
        if token.kind == "keyword" and token.value == "NULL":
            raise self.error(
                f"NULL is not a value to compare with ({self.place(token)}): a comparison with NULL matches"
                f" no row; write {instead}"
            )
        hint = f" ({VALUE_HINT})"
        if token.kind == "name":
            hint = f" (a value is {VALUE_HINT}; a column is not a value)"
        raise self.expected(what, token, hint)


# -- the public functions -------------------------------------------------------------------------


def parse(text: str, columns: Mapping[str, str]) -> Node:
    """The tree of a --where text over a table whose `columns` map each name to its Hive type
    text (`bigint`, `decimal(10,2)`, `array<int>`). Raises PredicateError, one line, on anything
    it cannot read: the correction must touch exactly the rows the user means or none."""
    reader = _Reader(text, columns)
    if reader.token.kind == "end":
        raise reader.error("the predicate is empty; give a condition such as id = 1")
    node = reader.predicate()
    if reader.token.kind != "end":
        extra = reader.token
        what = (
            "with no '(' open" if extra.kind == ")" else "after a complete condition (join conditions with AND or OR)"
        )
        raise reader.error(f"unexpected {reader.shown(extra)} {reader.place(extra)} {what}")
    return node


def columns_of(node: Node) -> set[str]:
    """The columns a predicate reads, as the table spells them."""
    if isinstance(node, (And, Or)):
        return columns_of(node.left) | columns_of(node.right)
    return {node.column}


def literals_of(node: Node) -> Iterator[tuple[Comparison | InList, Literal]]:
    """Every literal with the condition that holds it, left to right."""
    if isinstance(node, (And, Or)):
        yield from literals_of(node.left)
        yield from literals_of(node.right)
    elif isinstance(node, Comparison):
        yield node, node.value
    elif isinstance(node, InList):
        for value in node.values:
            yield node, value


def render_name(name: str) -> str:
    """A column's name as the grammar reads it, backquoted only when it must be."""
    if BARE_NAME.fullmatch(name) and name.upper() not in KEYWORDS:
        return name
    return backquoted(name)


def render_literal(value: Literal) -> str:
    match value.kind:
        case ValueKind.STRING:
            return "'" + value.text.replace("'", "''") + "'"
        case ValueKind.BOOLEAN:
            return value.text.upper()
    return value.text


def render_condition(node: Comparison | InList | IsNull, quote=render_name) -> str:
    """One condition; `quote` spells the column."""
    if isinstance(node, Comparison):
        return f"{quote(node.column)} {node.op} {render_literal(node.value)}"
    if isinstance(node, InList):
        values = ", ".join(render_literal(v) for v in node.values)
        return f"{quote(node.column)} {'NOT IN' if node.negated else 'IN'} ({values})"
    return f"{quote(node.column)} IS {'NOT NULL' if node.negated else 'NULL'}"


def render_text(node: Node) -> str:
    """The predicate's canonical text, which `parse` reads back to an equal tree: every name
    backquoted, keywords in upper case, parentheses only where the tree's shape needs them (an OR
    under an AND, and a right operand of its own kind, since AND and OR group from the left)."""
    if isinstance(node, (And, Or)):
        word = "AND" if isinstance(node, And) else "OR"
        left = render_text(node.left)
        right = render_text(node.right)
        if isinstance(node, And) and isinstance(node.left, Or):
            left = f"({left})"
        if isinstance(node.right, (And, Or)) and (isinstance(node, And) or isinstance(node.right, Or)):
            right = f"({right})"
        return f"{left} {word} {right}"
    return render_condition(node, backquoted)
