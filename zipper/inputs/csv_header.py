"""CSV headers Spark would misread, found from each file's first line.

Spark renames the columns a CSV header repeats (`id,name,name` reads as id, name1, name2, and
`Name,name` too), and reads one input's files with one header; such an input failed later as
columns the table lacks, or as a header that "does not conform to the schema", naming neither
the column nor, at times, the file."""

from __future__ import annotations

import codecs
import csv
import itertools
import re
from collections.abc import Iterator

from zipper.core import fs
from zipper.core.errors import InputError

# Two-character spellings Spark's CSV options accept for one character (`sep: '\\t'`).
_CSV_ESCAPES = {
    "\\t": "\t",
    "\\r": "\r",
    "\\b": "\b",
    "\\f": "\f",
    '\\"': '"',
    "\\'": "'",
    "\\\\": "\\",
    "\\u0000": "\0",
}

# Line ends inside one line (which `csv` would take for the line's end), as private-use characters.
_LINE_ENDS_AWAY = str.maketrans({"\r": "\ue000", "\n": "\ue001"})
_LINE_ENDS_BACK = str.maketrans({"\ue000": "\r", "\ue001": "\n"})


def csv_option(options: dict[str, str], *names: str, default: str) -> str:
    """A CSV reader option by any of its names (lower case), as given in any case (Spark's
    options ignore case)."""
    lowered = {k.lower(): v for k, v in options.items()}
    return next((lowered[n] for n in names if n in lowered), default)


def _csv_chars(value: str) -> str:
    """`sep`, `quote` or `escape` as the characters Spark takes it for."""
    return _CSV_ESCAPES.get(value, re.sub(r"\\[trbf\"'\\]", lambda m: _CSV_ESCAPES[m.group(0)], value))


def header_names(line: str, options: dict[str, str], more: Iterator[str] | None = None) -> list[str] | None:
    """The column names of a CSV header line, split and unquoted with the reader's `sep`,
    `quote` and `escape`; None when it does not parse. A byte order mark is not part of a name.
    `more` are the lines after it, which a quoted name may span (`multiLine: true`)."""
    line = line.removeprefix("\ufeff")
    if more is None and ("\r" in line or "\n" in line):  # a line ended by `lineSep`: line ends are data
        names = header_names(line.translate(_LINE_ENDS_AWAY), options)
        return None if names is None else [name.translate(_LINE_ENDS_BACK) for name in names]
    sep = _csv_chars(csv_option(options, "sep", "delimiter", default=","))
    quote = _csv_chars(csv_option(options, "quote", default='"'))
    quote = None if quote in ("", "\0") else quote  # Spark's way to turn quoting off
    escape = _csv_chars(csv_option(options, "escape", default="\\"))
    if len(sep) != 1:  # Spark takes a separator of several characters; csv does not
        return [f[1:-1] if quote and len(f) > 1 and f[0] == f[-1] == quote else f for f in line.split(sep)]
    lines = [line] if more is None else (text + "\n" for text in itertools.chain([line], more))
    try:
        return next(
            csv.reader(
                lines,
                delimiter=sep,
                quotechar=quote or '"',
                quoting=csv.QUOTE_NONE if quote is None else csv.QUOTE_MINIMAL,
                escapechar=escape if escape and escape != quote and len(escape) == 1 else None,
            ),
            [],
        )
    except (csv.Error, TypeError):
        return None


def repeated_names(names: list[str], null_value: str = "") -> list[list[str]]:
    """The names a header has more than once, compared in any case as zipper matches columns
    (each as its spellings, in header order); empty names and `nullValue` Spark names `_c<i>`."""
    seen: dict[str, list[str]] = {}
    for name in names:
        if name and name != null_value:
            seen.setdefault(name.lower(), []).append(name)
    return [spellings for spellings in seen.values() if len(spellings) > 1]


def check(spark, paths: list[str], options: dict[str, str], what: str) -> None:
    """Fail naming the first file whose header repeats a name, or whose columns are not the first
    file's in the same order (Spark then refuses the file as a header that "does not conform to
    the schema", naming another file at times). Reads each file's header line only."""
    if csv_option(options, "header", default="true").lower() != "true":
        return
    headers = _headers(spark, paths, options)
    _refuse_repeated(headers, csv_option(options, "nullvalue", default=""), what)
    _refuse_different(headers, what)


# The bytes of a file read for its header; a header that goes on past them (a long one, or a
# quoted name spanning lines) is read again from up to MAX_HEADER_BYTES.
HEAD_BYTES = 64 << 10
MAX_HEADER_BYTES = 1 << 20


def _headers(spark, paths: list[str], options: dict[str, str]) -> list[tuple[str, list[str]]]:
    """(file, its header's names) of each file whose header reads and parses."""
    charset = csv_option(options, "encoding", "charset", default="UTF-8")
    try:
        codecs.lookup(_python_charset(charset))
    except LookupError:  # a charset Python does not know: Spark's own read says why
        return []
    heads = fs.FileHeads()
    headers = []
    for path in paths:
        try:
            names = _header_of(spark, heads, path, charset, options)
        except fs.file_failures():  # unreadable: Spark's own read says why
            continue
        if names:
            headers.append((path, names))
    return headers


def _header_of(spark, heads: fs.FileHeads, path: str, charset: str, options: dict[str, str]) -> list[str] | None:
    """The names of a file's header, from its first bytes: HEAD_BYTES, else, when the header goes
    on past them, MAX_HEADER_BYTES (its last line taken as it is, cut or not)."""
    for size in (HEAD_BYTES, MAX_HEADER_BYTES):
        data = heads.read(path, size)
        whole = len(data) < size or size == MAX_HEADER_BYTES
        lines = split_lines(decoded(spark, data, charset), options)
        read = _Lines(lines if whole else lines[:-1])  # a line the bytes cut is no line yet
        names = header_record(read, options)
        if whole or not read.ran_out:
            return names
    return None


class _Lines:
    """The lines of a file's first bytes, saying whether a reader asked for one past them."""

    def __init__(self, lines: list[str]):
        self._lines = iter(lines)
        self.ran_out = False

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            return next(self._lines)
        except StopIteration:
            self.ran_out = True
            raise


def decoded(spark, data: bytes, charset: str) -> str:
    """Bytes as Java's reader decodes them with `charset`, in Python: a byte that does not decode
    is replaced, as Java replaces it; UTF-16 without a byte-order mark is big-endian, as in Java.
    A charset Python does not know raises LookupError (Spark's own read then says why)."""
    name = codecs.lookup(_python_charset(charset)).name
    if name == "utf-16" and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        name = "utf-16-be"
    elif name == "utf-32" and not data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        name = "utf-32-be"
    return data.decode(name, errors="replace")


def _python_charset(charset: str) -> str:
    """Python's name of a charset Java names `charset`."""
    return _JAVA_CHARSETS.get(charset.lower(), charset)


# Java's names of charsets that Python spells otherwise.
_JAVA_CHARSETS = {"utf-16": "utf-16", "x-utf-16le-bom": "utf-16", "windows-31j": "cp932", "x-sjis": "shift_jis"}


def split_lines(text: str, options: dict[str, str]) -> list[str]:
    """Text split into lines as Spark's CSV reader splits a file: at the `lineSep` option, else at
    any line end (`\r\n`, `\r`, `\n`)."""
    line_sep = csv_option(options, "linesep", default="")
    return text.split(line_sep) if line_sep else re.split(r"\r\n|\r|\n", text)


def header_record(lines: Iterator[str], options: dict[str, str]) -> list[str] | None:
    """The names of a CSV file's header, from its lines (`split_lines`): Spark's header is the
    first line neither blank nor a comment, with the lines a quoted name spans when `multiLine`
    is on and lines end at line ends (Spark then reads `"first<newline>name"` as one name);
    None when there is none."""
    comment = csv_option(options, "comment", default="")
    line = next((text for text in lines if text.strip() and not (comment and text.startswith(comment))), None)
    if line is None:
        return None
    multi_line = csv_option(options, "multiline", default="false").lower() == "true"
    spans = multi_line and not csv_option(options, "linesep", default="")
    return header_names(line, options, lines if spans else None)


def _refuse_repeated(headers: list[tuple[str, list[str]]], null_value: str, what: str) -> None:
    offending = [(path, repeated) for path, names in headers if (repeated := repeated_names(names, null_value))]
    if not offending:
        return
    path, repeated = offending[0]
    shown = ", ".join(repr(spellings[0]) for spellings in repeated[:5]) + (" ..." if len(repeated) > 5 else "")
    cases = [list(dict.fromkeys(spellings)) for spellings in repeated if len(set(spellings)) > 1]
    in_case = (
        f" ({'; '.join(', '.join(map(repr, c)) for c in cases[:3])}: column names are matched in any case)"
        if cases
        else ""
    )
    others = len(offending) - 1
    more = f" (and {others} more file{'s' if others > 1 else ''})" if others else ""
    raise InputError(
        f"{what}: file {fs.name_of(path)} has column{'s' if len(repeated) > 1 else ''} {shown} more than"
        f" once in its header{in_case}{more}"
    )


def _refuse_different(headers: list[tuple[str, list[str]]], what: str) -> None:
    if not headers:
        return
    first_path, first = headers[0]
    for path, names in headers[1:]:
        if [n.lower() for n in names] != [n.lower() for n in first]:
            raise InputError(
                f"{what}: file {fs.name_of(path)} has the header {_shown(names)}, file"
                f" {fs.name_of(first_path)} {_shown(first)}: the CSV files of one input are read"
                " with one header, so each must list the same columns in the same order"
            )


def _shown(names: list[str]) -> str:
    """A header's names on one line: a line end inside a quoted name (`multiLine`) shown as `\\n`."""
    return ",".join(names).replace("\r", "\\r").replace("\n", "\\n")
