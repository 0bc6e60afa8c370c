"""Say which column and row of a CSV file holds a value that does not parse.

Spark's FAILFAST CSV read stops at the first such value naming the file and, at best, the value
("For input string: \"abc\""): not the column or the row. Every typed CSV read is remembered
here (file -> schema and options); when a job fails, the failing file is read again, once, in
PERMISSIVE mode with the same schema and options, so Spark's own parser finds a bad record (the
first, unless the file is large enough to be read in several splits) and which of its fields it
could not read. Only on the failure path."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, DoubleType, FloatType, StringType, StructField, StructType, TimestampType

from zipper.core import fs
from zipper.core.errors import InputError, java_messages
from zipper.inputs.csv_header import csv_option

BAD_RECORD = "_zipper_bad_record"
MAX_READS = 10_000  # remembered files per process; a rerun of years of daily files stays well under
# Options of the file reader that `from_csv` (one record) has no use for.
_FILE_ONLY = {
    "header",
    "enforceschema",
    "inferschema",
    "mode",
    "columnnameofcorruptrecord",
    "multiline",
    "samplingratio",
    "pathglobfilter",
    "recursivefilelookup",
    "modifiedbefore",
    "modifiedafter",
    "encoding",
    "charset",
    "linesep",
}


@dataclass(frozen=True)
class CsvRead:
    description: str  # the input, as messages name it
    ds: str | None  # the date it was read for
    schema: object  # pyspark StructType
    options: tuple[tuple[str, str], ...]


_reads: dict[str, tuple[str, CsvRead]] = {}  # normalized path -> (path as listed, how it was read)


@dataclass(frozen=True)
class BadValue:
    ds: str | None  # the date whose input holds it
    detail: str


def remember(description: str, ds: str | None, paths: list[str], schema, options: dict[str, str]) -> None:
    if len(_reads) > MAX_READS:
        _reads.clear()
    read = CsvRead(description, ds, schema, tuple(sorted(options.items())))
    for path in paths:
        _reads[fs.spelled_alike(path)] = (path, read)


@contextlib.contextmanager
def explained(spark, table: str, keys, ds: str | None = None):
    """Turns a failure on a CSV value that does not parse into an InputError that says where;
    `ds` is the date named when the file's own date is not known."""
    try:
        yield
    except fs.spark_failures() as exc:  # Spark's parser failed; anything else is not a value's doing
        bad = explain(spark, exc, keys)
        if bad is None:
            raise
        raise InputError(bad.detail, table=table, ds=bad.ds or ds) from None


def failing_file(exc: BaseException) -> str | None:
    """The file a failed Spark job was reading, as Spark names it."""
    for text in [str(exc), *java_messages(exc)]:
        found = re.search(r"reading file (\S+?)\.?(?:\s|$)", text)
        if found:
            return found.group(1)
    return None


def explain(spark, exc: BaseException, keys: list[str] | tuple[str, ...] = ()) -> BadValue | None:
    """`<input>: file <name>: column 'c' (type) cannot hold 'v' (row with k=..)`, or None when
    `exc` is not a remembered CSV file's value that does not parse."""
    named = failing_file(exc)
    if named is None or fs.spelled_alike(named) not in _reads:
        return None
    path, read = _reads[fs.spelled_alike(named)]
    try:
        found = _bad_record(spark, path, read)
    except fs.spark_failures():  # the diagnosis must never hide the original failure (a bug is raised as itself)
        return None
    if found is None:
        return None
    typed, fields = found
    bad = [
        (f.name, f.dataType.simpleString(), fields[f.name])
        for f in read.schema.fields
        if fields.get(f.name) is not None and typed[f.name] is None
    ]
    if not bad:
        return None
    columns = "; ".join(f"column {name!r} ({kind}) cannot hold {value!r}" for name, kind, value in bad[:5])
    key_names = _key_names(read, keys)
    row = ", ".join(f"{k}={typed[k] if typed[k] is not None else fields.get(k)}" for k in key_names)
    where = f" (row with {row})" if row else f" (record {typed[BAD_RECORD][:200]!r})"
    return BadValue(read.ds, f"{read.description}: file {path.rsplit('/', 1)[-1]}: {columns}{where}")


def _key_names(read: CsvRead, keys) -> list[str]:
    """The file's names of the key columns (spelled as its header spells them)."""
    lowered = {k.lower() for k in keys}
    return [f.name for f in read.schema.fields if f.name.lower() in lowered]


def _bad_record(spark, path: str, read: CsvRead):
    """(typed row, its fields as text) of a record Spark's parser cannot type, or None."""
    options = dict(read.options)
    options.update(mode="PERMISSIVE", columnNameOfCorruptRecord=BAD_RECORD)
    schema = StructType([*read.schema.fields, StructField(BAD_RECORD, StringType(), True)])
    rows = (
        spark.read.options(**options).schema(schema).csv(path).where(F.col(BAD_RECORD).isNotNull()).limit(1).collect()
    )
    if not rows:
        return None
    typed = rows[0]
    as_text = ", ".join("`" + f.name.replace("`", "``") + "` STRING" for f in read.schema.fields)
    record_options = {k: v for k, v in read.options if k.lower() not in _FILE_ONLY}
    parsed = (
        spark.createDataFrame([(typed[BAD_RECORD],)], "record string")
        # no options rather than empty ones: a Spark Connect client sends {} as a map Spark refuses
        .select(F.from_csv("record", as_text, record_options or None).alias("r"))
        .select("r.*")
        .collect()
    )
    return typed, parsed[0].asDict() if parsed else {}


def refuse_rounding(spark, paths: list[str], keys, table: str, ds: str | None) -> None:
    """Spark's CSV parser rounds a decimal with more places than its column's scale (`1.239`
    into decimal(7,2) reads 1.24) and cuts a timestamp's fractional seconds to microseconds
    (datetime2's `08:00:00.1234567`), without a word: a change in a cut digit would be missed. The
    decimal and timestamp columns of the remembered CSV files among `paths` are read again as
    text, and the first value with more significant places than its column holds fails the run,
    named as a value that does not parse is. A decimal's places count in exponent form too
    (`1.239e0`), and past the grouping marks Spark's parser drops (`1,234.567`); a grouping mark
    that does not group thousands (`1,5`, which it reads 15) fails too. A float or double written
    as a finite number its type cannot hold (`1e400`, `1e-400`) fails likewise, where the parser
    reads infinity or 0. One small job per CSV input that has such columns; none otherwise."""
    by_read: dict[CsvRead, list[str]] = {}
    for path in paths:
        found = _reads.get(fs.spelled_alike(path))
        if found is not None:
            by_read.setdefault(found[1], []).append(found[0])
    for read, files in by_read.items():
        marks = number_marks(spark, dict(read.options))
        checked = [(f, lossy, loss) for f in read.schema.fields for lossy, loss in _losses(f, marks, read.options)]
        if not checked:
            continue
        as_text = StructType([StructField(f.name, StringType(), True) for f in read.schema.fields])
        rows = spark.read.options(**dict(read.options)).schema(as_text).csv(files)
        bad = (
            rows.where(reduce(lambda a, b: a | b, [lossy for _, lossy, _ in checked]))
            .select(
                "*",
                F.input_file_name().alias("zipper_file"),
                *[lossy.alias(f"zipper_lossy_{i}") for i, (_, lossy, _) in enumerate(checked)],
            )
            .limit(1)
            .collect()
        )
        if not bad:
            continue
        row = bad[0]
        columns = "; ".join(
            f"column {f.name!r} ({f.dataType.simpleString()}) cannot hold {row[f.name]!r} without {loss}"
            for i, (f, _, loss) in enumerate(checked)
            if row[f"zipper_lossy_{i}"]
        )
        key_names = _key_names(read, keys)
        where = f" (row with {', '.join(f'{k}={row[k]}' for k in key_names)})" if key_names else ""
        name = fs.name_of(fs.spelled_alike(row["zipper_file"]))
        raise InputError(f"{read.description}: file {name}: {columns}{where}", table=table, ds=read.ds or ds)


def number_marks(spark, options: dict[str, str]) -> tuple[str, str]:
    """The decimal and grouping marks of the CSV reader's `locale`, as Spark's parser reads a
    decimal with them: for its default (en-US) a point, and commas it drops; for another
    locale, the marks with which Spark's own parser reads `1<grouping>000<decimal>5` as 1000.5
    (de-DE reads `1.234,5`), found in one small query."""
    tag = csv_option(options, "locale", default="en-US")
    if tag.lower() == "en-us":
        return ".", ","
    candidates = [(d, g) for d in _DECIMAL_MARKS for g in _GROUPING_MARKS if d != g]
    texts = [f"1{g}000{d}5" for d, g in candidates]
    parsed = (
        spark.createDataFrame([(t,) for t in texts], "t string")
        .select(F.from_csv("t", "v decimal(10,1)", {"locale": tag, "sep": "\t", "quote": "\u0000"}).v.alias("v"))
        .collect()
    )
    found = [
        marks for marks, row in zip(candidates, parsed, strict=True) if row.v is not None and float(row.v) == 1000.5
    ]
    return found[0] if found else (".", ",")


# The decimal and grouping marks locales use, in the order they are tried.
_DECIMAL_MARKS = (".", ",", "\u066b")
_GROUPING_MARKS = (",", ".", "\u00a0", "\u202f", " ", "'", "\u2019", "\u066c")


# Microseconds: the finest a Spark timestamp holds.
TIMESTAMP_PLACES = 6
# A number as Java's BigDecimal reads it, once grouping marks are gone and the decimal mark is a
# point: integer digits, fraction digits, the exponent's sign and digits (past leading zeros; an
# exponent of ten digits or more fails Spark's parser anyway).
_NUMBER = r"^[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)0*([0-9]{1,9}))?$"


def _losses(field, marks: tuple[str, str] = (".", ","), options: tuple[tuple[str, str], ...] = ()) -> list:
    """(condition on the field's text, what Spark's parser would do) for each way the field's
    type can change its text's value without a word. `marks` are the decimal and grouping marks
    of the reader's locale; `options` the reader's (its words for infinity and NaN)."""
    text = F.trim(F.col(field.name))
    if isinstance(field.dataType, (FloatType, DoubleType)):
        return _out_of_range(field, dict(options))
    if isinstance(field.dataType, DecimalType):
        return [
            (decimal_places(text, marks) > F.lit(field.dataType.scale), "rounding it"),
            (misplaced_grouping(text, marks), f"dropping its {marks[1]!r} (read as a thousands mark)"),
        ]
    if isinstance(field.dataType, TimestampType):  # the seconds' fraction, before any zone
        places = F.length(F.regexp_extract(text, r"[0-9]:[0-9]{2}\.([0-9]*?)0*(?:[^0-9].*)?$", 1))
        return [(places > F.lit(TIMESTAMP_PLACES), "truncating it to microseconds")]
    return []


def _out_of_range(field, options: dict[str, str]) -> list:
    """A finite number too large for a float or double (`1e400`; `1e39` for a float) reads as
    infinity, and a nonzero one too small (`1e-400`) as 0, as Java parses it. A value written as
    infinity (`Infinity`, the reader's `positiveInf`, ...) or NaN is one, and kept. The text is
    parsed as Spark's cast does, which is Java's parse too: only where it gives infinity or 0 is
    the text looked at further."""
    raw = F.col(field.name)
    text = F.trim(raw)
    parsed = text.try_cast(field.dataType)
    # the reader's own words for the special values, matched before any parse (Spark's defaults)
    special = [
        csv_option(options, "nanvalue", default="NaN"),
        csv_option(options, "positiveinf", default="Inf"),
        csv_option(options, "negativeinf", default="-Inf"),
    ]
    finite_text = ~F.lower(text).contains("inf") & ~raw.isin(special)
    nonzero_digits = F.regexp_extract(text, r"^[+-]?([0-9.]*)", 1).rlike("[1-9]")
    return [
        ((F.abs(parsed) == F.lit(float("inf"))) & finite_text, "overflowing it to infinity"),
        ((parsed == F.lit(0)) & nonzero_digits, "underflowing it to 0"),
    ]


def misplaced_grouping(text, marks: tuple[str, str] = (".", ",")):
    """Whether a decimal's text has a grouping mark that does not group thousands: Spark's parser
    drops them wherever they stand, so `1,5` (a decimal comma) reads 15 and `1,2,3` 123."""
    decimal_mark, grouping_mark = (re.escape(m) for m in marks)
    grouped = rf"^[+-]?[0-9]{{1,3}}({grouping_mark}[0-9]{{3}})+({decimal_mark}[0-9]*)?([eE][+-]?[0-9]+)?$"
    return (F.instr(text, marks[1]) > 0) & ~text.rlike(grouped)


def decimal_places(text, marks: tuple[str, str] = (".", ",")):
    """The significant places of a decimal's text, as a column: digits after the point less the
    exponent, trailing zeros left out (`1.50` has 1, `1.239e0` 3, `12391E-4` 4, `1.5E+1` none);
    NULL when the text is not a number. Spark's parser drops the grouping mark (`1,234.567`)."""
    decimal_mark, grouping_mark = marks
    plain = F.translate(text, decimal_mark + grouping_mark, ".")  # the grouping mark dropped
    integer, fraction = F.regexp_extract(plain, _NUMBER, 1), F.regexp_extract(plain, _NUMBER, 2)
    exponent = F.concat(F.regexp_extract(plain, _NUMBER, 3), F.lit("0"), F.regexp_extract(plain, _NUMBER, 4)).cast(
        "int"
    )
    digits = F.concat(integer, fraction)
    trailing_zeros = F.length(F.regexp_extract(digits, "(0*)$", 1))
    return (
        F.when(~plain.rlike(_NUMBER) | (F.length(digits) == 0), F.lit(None))
        .when(~digits.rlike("[1-9]"), F.lit(0))  # zero, in any spelling (0.000e-5), loses nothing
        .otherwise(F.length(fraction) - exponent - trailing_zeros)
    )
