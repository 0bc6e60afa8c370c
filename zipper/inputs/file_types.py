"""Each file's column types against the types the input is read with: Spark and ORC convert or
fail on a file that holds a column in another type, naming neither the file nor the column."""

from __future__ import annotations

import contextlib

from pyspark.sql.types import StructType

from zipper.core import fs
from zipper.core.errors import (
    ColumnTypeMismatch,
    InputError,
    column_type_mismatch,
    failed_file,
    java_messages,
    summarize_failure,
)
from zipper.inputs import csv_values
from zipper.inputs.column_types import loss_of, lossy_conversion, mistyped_column
from zipper.inputs.footers import FileSchemas, OrcFileSchemas
from zipper.inputs.sources import Input, merges_schemas
from zipper.tablespec.model import BaseSpec, SourceSpec, TableSpec
from zipper.tablespec.modes import SourceFormat


@contextlib.contextmanager
def explained_column_types(spark, spec: TableSpec, ds: str, located, suffix: str = ""):
    """Turns Spark's failure on a file of the input whose column has another type than the one
    the input is read as into an InputError naming the file, the column and both types. Spark
    names its reader's class (SchemaColumnConvertNotSupportedException) and Parquet's physical
    type; the same file fails the same way on every try. Happens where Spark does not merge the
    files' schemas: the reader option mergeSchema off, or a source table's partition. Likewise a
    file whose record Spark's parser cannot parse (a CSV quote never closed) is named, not traced."""
    with explained_column_types_of(spark, spec, {ds: located}, suffix):
        yield


@contextlib.contextmanager
def explained_column_types_of(spark, spec: TableSpec, located: dict, suffix: str = ""):
    """`explained_column_types` for the inputs of several dates read together (a rerun's check,
    a rebuild): `located` maps a date (or its ISO text) to its input; the error names the date
    whose input holds the file. `suffix` ends the message (`; nothing was changed`)."""
    try:
        yield
    except fs.spark_failures() as exc:  # a Spark failure; anything else is not a file's doing
        mismatch = column_type_mismatch(exc)
        if mismatch is None:
            malformed = _malformed_file(spark, spec, located, exc, suffix)
            if malformed is not None:
                raise malformed from None
            raise  # not a file of an input that cannot be read as it is: not the input's doing
        holder = _input_holding(located, mismatch.file)
        if holder is None:
            raise  # in one of the table's own files: not the input's doing
        ds, inp = holder
        reason = mismatch.reason(_type_in_file(spark, mismatch.file, mismatch.column))
        raise mistyped_file(spec, ds, inp, mismatch.file, reason, suffix) from None


# Spark's parsers on a record they cannot parse (a CSV field's quote never closed, a JSON line cut
# short): the file's content, which fails the same way on every try.
_MALFORMED = ("MALFORMED_CSV_RECORD", "MALFORMED_RECORD_IN_PARSING", "MalformedInputException")


def _malformed_file(spark, spec: TableSpec, located: dict, exc: BaseException, suffix: str) -> InputError | None:
    """The error of a file of one of the inputs that Spark's parser cannot read (a malformed
    record), named with its date, final (the same file fails the same way); None for any other
    failure (an I/O failure may pass)."""
    path = failed_file(exc)
    holder = _input_holding(located, path)
    if holder is None or not any(marker in " ".join(java_messages(exc)) for marker in _MALFORMED):
        return None
    if csv_values.explain(spark, exc, spec.keys) is not None:
        return None  # a CSV value that does not parse: `csv_values.explained` names its column and row
    # as a rerun's check says any file it cannot read: `cannot read file <path>: <root cause>`
    return InputError(f"{summarize_failure(exc)}{suffix}", table=spec.table, ds=holder[0])


def mistyped_file(spec: TableSpec, ds: str, inp, path: str, reason: str, suffix: str = "") -> InputError:
    """The error of a file of the input `inp` of `ds` holding a column in another type than the
    input is read as: `reason` names the column and both types."""
    if inp.format == SourceFormat.TABLE:
        read_as = f"the type the table {inp.table} declares"
    else:
        read_as = "its type in another file of the input; every file must give a column one type"
    return InputError(
        f"cannot read file {fs.name_of(path)} of {inp.description}: {reason}, {read_as}{suffix}",
        table=spec.table,
        ds=ds,
    )


def refuse_mistyped_files(spark, spec: TableSpec, read: dict, suffix: str = "") -> None:
    """Each Parquet file Spark reads with a schema not its own (`files_read_as_another`) holds
    every column it shares with that schema in a type Spark reads as the column's: checked from the
    files' footers, without reading their data. A rerun's check reads only the keys of its dates'
    inputs, so a file holding another column as a string where the input is read as int failed
    only at its date's merge, after the restore. `read` maps a date to (its input, the schema its
    input is read with, as `read_input` gives it)."""
    footers = None
    for day in sorted(read):
        inp, schema = read[day]
        for path in files_read_as_another(spark, inp, spec.source):
            footers = footers or FileSchemas(spark)
            try:
                held = footers.schema_of(path, inp.description)
            except InputError as exc:
                raise exc.reworded(exc.detail + suffix, table=spec.table, ds=str(day)) from None
            found = mistyped_column(held, schema) if held is not None else None
            if found is not None:
                column, in_file, read_as = found
                reason = ColumnTypeMismatch(path, column, "", read_as).reason(in_file)
                raise mistyped_file(spec, str(day), inp, path, reason, suffix)


def _input_holding(located: dict, path: str | None):
    """(date as ISO text, input) of the earliest input among `located` that holds `path`, or None."""
    if path is None:
        return None
    wanted = fs.spelled_alike(path)
    for ds, inp in sorted(located.items(), key=lambda item: str(item[0])):
        if inp is not None and wanted in {fs.spelled_alike(f.path) for f in inp.files}:
            return str(ds), inp
    return None


def _type_in_file(spark, path: str, column: str) -> str | None:
    """The column's type as Spark reads the file alone (`string` where Parquet says BINARY), or None
    (unreadable; or inside an array or a map, which Spark names by Parquet's own levels)."""
    try:  # the explanation must never hide the failure it explains
        kind = FileSchemas(spark).schema_of(path, "")
    except InputError:
        return None
    for part in column.split("."):
        fields = {f.name.lower(): f.dataType for f in kind.fields} if isinstance(kind, StructType) else {}
        if part.lower() not in fields:
            return None
        kind = fields[part.lower()]
    return kind.simpleString()


def refuse_converted_orc_files(spark, located: Input, files: list[fs.FileInfo], schema) -> None:
    """Without mergeSchema Spark reads every ORC file of an input with one file's schema, and ORC
    converts a column another file holds in another type without a word (a string '3.5' to the
    double 3.5, 'x' to NULL): each file's types, from its footer (a few JVM calls, no Spark job),
    must be ones Spark reads as the input's (`column_types.mistyped_column`)."""
    mismatch = _first_orc_mismatch(spark, located, files, schema, mistyped_column)
    if mismatch is not None:
        path, (column, in_file, read_as) = mismatch
        reason = ColumnTypeMismatch(path, column, "", read_as).reason(in_file)
        raise InputError(
            f"cannot read file {fs.name_of(path)} of {located.description}: {reason}, its type in"
            " another file of the input; every file must give a column one type"
        )


def _first_orc_mismatch(spark, located: Input, files: list[fs.FileInfo], schema, compare):
    """(path, what `compare(file's schema, schema)` found) of the first non-empty ORC file for which
    it finds something, reading footers only (no Spark job); None if none."""
    footers = None
    for f in files:
        if f.size == 0:  # skipped by Spark's reader, as an empty input
            continue
        footers = footers or OrcFileSchemas(spark)
        found = compare(footers.schema_of(f.path, located.description), schema)
        if found is not None:
            return f.path, found
    return None


def refuse_lossy_orc_files(spark, located: Input, schema) -> None:
    """An ORC table's files are read with the table's types, and ORC converts a column a file holds
    in another type without a word. Hive's schema evolution (ALTER TABLE ... CHANGE) relies on it,
    so a conversion that keeps every value (int to bigint, a number to a string) is taken; one that
    can lose values is refused naming the file: text to any other type (a value that does not
    parse became NULL: 'x3.5' read as a double) and a fraction to an integer (3.7 read as 3)."""
    mismatch = _first_orc_mismatch(spark, located, located.files, schema, lossy_conversion)
    if mismatch is not None:
        path, (column, in_file, read_as) = mismatch
        raise InputError(
            f"cannot read file {fs.name_of(path)} of {located.description}: column {column!r} is"
            f" {in_file} in the file, but the table reads it as {read_as}, which ORC converts"
            f" without a word, losing the values that {loss_of(in_file)}; rewrite the file with the"
            " table's types"
        )


def files_read_as_another(spark, located: Input, source: SourceSpec | BaseSpec) -> list[str]:
    """The Parquet files Spark reads with a schema other than their own, so that one may hold a
    column in a type Spark cannot read it as: those of a Parquet table's partition (read as the
    table declares), and of a Parquet input of several files read without merging their schemas
    (the reader option mergeSchema off: read as one file's). Any other input's are read with their
    own schema, or with one merged from all of them (which fails on a conflict)."""
    if located.format == SourceFormat.TABLE:
        return [f.path for f in located.files if f.size > 0] if _stored_as_parquet(spark, located.table) else []
    files = located.kept if located.kept is not None else located.files
    if located.format != SourceFormat.PARQUET or len(files) < 2 or merges_schemas(source.options):
        return []
    return [f.path for f in files if f.size > 0]


def _stored_as_parquet(spark, table: str) -> bool:
    """Whether the metastore says `table`'s files are Parquet (a Spark or a Hive table)."""
    return stored_as(spark, table, "parquet")


def stored_as(spark, table: str, file_format: str) -> bool:
    """Whether the metastore says `table`'s files are of `file_format` (a Spark or a Hive table)."""
    db, name = table.split(".")
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED `{db}`.`{name}`").collect()
    named = [row.data_type or "" for row in rows if row.col_name in ("Provider", "Serde Library")]
    return any(file_format in text.lower() for text in named)
