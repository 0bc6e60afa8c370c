"""The tokens of a `--where` text: names, quoted strings, numbers, keywords, operators.

Reading characters is one job and reading the grammar over them another; `predicate` does the
second. A refusal here reads as the grammar's: one line naming the text and the character."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


class PredicateError(ValueError):
    """A --where text zipper cannot read; the message is one line that says why and where."""


# Words that are the grammar's own: a column so named must be backquoted.
KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE"})
BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Token:
    kind: str  # name, string, number, keyword, op, (, ), ",", end
    value: str  # a name unquoted, a string's text, a keyword in upper case, an operator
    start: int  # index in the predicate's text
    end: int


def backquoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def one_line(text: str) -> str:
    """The message stays one line whatever the predicate holds: a line break, a tab or another
    invisible character shows as its Python escape (`\\n`, `\\u2028`)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def refusal(text: str, what: str) -> PredicateError:
    """The error for `text`, saying `what` is wrong with it."""
    return PredicateError(one_line(f"--where '{text}': {what}"))


def read_tokens(text: str) -> Iterator[Token]:
    """The tokens of `text`, then one of kind `end`; a character no token starts with is refused."""
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "'":
            value, end = _quoted(text, i, "'", "string", "a closing ' (a quote inside a string is written '')")
            yield Token("string", value, i, end)
            i = end
        elif c == "`":
            value, end = _quoted(text, i, "`", "name", "a closing ` (a backquote inside a name is written ``)")
            if not value:
                raise refusal(text, f"an empty column name `` at character {i + 1}")
            yield Token("name", value, i, end)
            i = end
        elif number := NUMBER.match(text, i):
            end = number.end()
            if end < len(text) and (text[end].isalnum() or text[end] in "_."):
                tail = re.match(r"[\w.]*", text[end:]).group()
                raise refusal(text, f"'{text[i : end + len(tail)]}' is not a number (at character {i + 1})")
            yield Token("number", number.group(), i, end)
            i = end
        elif name := BARE_NAME.match(text, i):
            word = name.group()
            if word.upper() in KEYWORDS:
                yield Token("keyword", word.upper(), i, name.end())
            else:
                yield Token("name", word, i, name.end())
            i = name.end()
        elif text.startswith(("<=", ">=", "<>", "!="), i):
            op = text[i : i + 2]
            yield Token("op", "<>" if op == "!=" else op, i, i + 2)
            i += 2
        elif c in "=<>":
            yield Token("op", c, i, i + 1)
            i += 1
        elif c in "(),":
            yield Token(c, c, i, i + 1)
            i += 1
        else:
            hint = ""
            if c == '"':
                hint = "; strings take single quotes, names with other characters backquotes"
            elif c.isalpha():
                hint = "; backquote a name with other characters than A-Z, 0-9 and _"
            raise refusal(text, f"unexpected character '{c}' at character {i + 1}{hint}")
    yield Token("end", "", len(text), len(text))


def _quoted(text: str, start: int, quote: str, what: str, closing: str) -> tuple[str, int]:
    """The text between `quote`s from `start`, a doubled quote read as one, and the index after."""
    i, parts = start + 1, []
    while True:
        j = text.find(quote, i)
        if j < 0:
            raise refusal(text, f"expected {closing} for the {what} opened at character {start + 1}")
        parts.append(text[i:j])
        if text.startswith(quote * 2, j):
            parts.append(quote)
            i = j + 2
        else:
            return "".join(parts), j + 1
