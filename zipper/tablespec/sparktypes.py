"""Spark SQL type names as a spec writes them (`columns:`, `source.schema`), checked at load.

Spark parses a type only with a JVM, and DAG files must not start one; so the grammar Spark 4
accepts for one column's type is checked here in Python, and a typo (`integr`, `decimal(40,2)`,
`array<int`) fails when the spec loads, naming the file and key, instead of at the first merge.
Types Spark parses but zipper cannot use are refused too, saying why: time, variant, void,
intervals and timestamp_ntz (a Hive table cannot store them), char and varchar (Spark's readers
refuse them; declare string), an empty struct and struct field names that are not identifiers
(Hive's table definition).

Deliberately stricter than Spark in one way: Spark reads `a int, b string` as a struct
without `struct<>`; a column's type here is one type."""

from __future__ import annotations

import re

# name -> how many integer arguments it takes in parentheses, at most
_PRIMITIVES: dict[str, int] = {
    **dict.fromkeys(
        [
            "boolean",
            "tinyint",
            "byte",
            "smallint",
            "short",
            "int",
            "integer",
            "bigint",
            "long",
            "float",
            "real",
            "double",
            "date",
            "timestamp",
            "timestamp_ltz",
            "string",
            "binary",
        ],
        0,
    ),
    **dict.fromkeys(["decimal", "dec", "numeric"], 2),
}
# Spark parses these, a Hive table cannot hold them.
_NOT_IN_HIVE = ("time", "timestamp_ntz", "variant", "void", "interval")
# Spark parses these, its readers refuse them (UNSUPPORTED_CHAR_OR_VARCHAR_AS_STRING).
_AS_STRING = ("char", "character", "varchar")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_DECIMAL_PRECISION = 38
EXAMPLES = "e.g. bigint, double, string, decimal(18,2), date, timestamp, array<string>, struct<a:int,b:string>"

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^'\\]|\\.)*')|(.))")


class _Tokens:
    def __init__(self, text: str):
        self.items: list[tuple[str, str]] = []  # (kind, value): ident, int, str, punct
        for match in _TOKEN.finditer(text):
            quoted, word, number, literal, other = match.groups()
            if quoted is not None:
                self.items.append(("ident", quoted[1:-1].replace("``", "`")))
            elif word is not None:
                self.items.append(("word", word.lower()))
            elif number is not None:
                self.items.append(("int", number))
            elif literal is not None:
                self.items.append(("str", literal))
            elif other is not None and not other.isspace():
                self.items.append(("punct", other))
        self.at = 0

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise ValueError("ends too early")
        self.at += 1
        return token

    def punct(self, symbol: str) -> None:
        token = self.take()
        if token != ("punct", symbol):
            raise ValueError(f"expected {symbol!r}, found {token[1]!r}")

    def accept(self, kind: str, value: str) -> bool:
        if self.peek() == (kind, value):
            self.at += 1
            return True
        return False


def check_type(text: str) -> str:
    """`text` unchanged if Spark parses it as one column type a Hive table can store; else a
    ValueError saying what is wrong."""
    tokens = _Tokens(text)
    try:
        _type(tokens)
        if tokens.peek() is not None:
            raise ValueError(f"unexpected {tokens.peek()[1]!r}")
    except _Refused as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a Spark SQL type: {exc} ({EXAMPLES})") from None
    return text


class _Refused(ValueError):
    """A type Spark parses and zipper cannot use; the message says why."""


def _type(tokens: _Tokens) -> None:
    kind, name = tokens.take()
    if kind != "word":
        raise ValueError(f"expected a type name, found {name!r}")
    if name == "array":
        tokens.punct("<")
        _type(tokens)
        tokens.punct(">")
    elif name == "map":
        tokens.punct("<")
        _type(tokens)
        tokens.punct(",")
        _type(tokens)
        tokens.punct(">")
    elif name == "struct":
        tokens.punct("<")
        if tokens.accept("punct", ">"):
            raise _Refused("a struct needs at least one field")
        else:
            _field(tokens)
            while tokens.accept("punct", ","):
                _field(tokens)
            tokens.punct(">")
    elif name in _NOT_IN_HIVE:
        raise _Refused(f"Spark has the type {name} but a Hive table cannot store it")
    elif name in _AS_STRING:
        raise _Refused(f"declare string: Spark's readers do not take {name} columns")
    elif name in _PRIMITIVES:
        _arguments(tokens, name)
        if name == "string" and tokens.accept("word", "collate"):
            if tokens.take()[0] not in ("word", "ident"):
                raise ValueError("COLLATE needs a collation name")
    else:
        raise ValueError(f"unknown type {name!r}")


def _arguments(tokens: _Tokens, name: str) -> None:
    most = _PRIMITIVES[name]
    values: list[int] = []
    if most and tokens.accept("punct", "("):
        while True:
            kind, value = tokens.take()
            if kind != "int":
                raise ValueError(f"{name}(...) takes whole numbers, found {value!r}")
            values.append(int(value))
            if tokens.accept("punct", ")"):
                break
            tokens.punct(",")
    if len(values) > most:
        raise ValueError(f"too many numbers for {name}: {name}(precision, scale)")
    if name in ("decimal", "dec", "numeric") and values:
        precision, scale = values[0], (values[1] if len(values) > 1 else 0)
        if precision > MAX_DECIMAL_PRECISION:
            raise ValueError(f"decimal precision is 1 to {MAX_DECIMAL_PRECISION}, got {precision}")
        if precision == 0:  # Spark's parser takes it, Hive's table definition does not
            raise _Refused(f"decimal precision is 1 to {MAX_DECIMAL_PRECISION}, got 0")
        if scale > precision:
            raise ValueError(f"decimal scale {scale} is larger than its precision {precision}")


def _field(tokens: _Tokens) -> None:
    kind, name = tokens.take()
    if kind not in ("word", "ident"):
        raise ValueError(f"expected a field name, found {name!r}")
    if not _FIELD_NAME.match(name):
        raise _Refused(f"struct field {name!r}: field names are letters, digits and _ (Hive's table definition)")
    tokens.accept("punct", ":")
    _type(tokens)
    if tokens.accept("word", "not"):
        if not tokens.accept("word", "null"):
            raise ValueError("NOT must be followed by NULL")
    if tokens.accept("word", "comment"):
        if tokens.take()[0] != "str":
            raise ValueError("COMMENT needs a quoted text")


def check_atomic_type(text: str) -> str:
    """`check_type`, for a CSV input's column: CSV holds no arrays, maps or structs."""
    check_type(text)
    first = _Tokens(text).peek()
    if first is not None and first[1] in ("array", "map", "struct"):
        raise ValueError(f"{text!r}: a CSV column holds one value; read it as string and parse it later")
    return text
