"""Read a located input as Spark does, refusing what Spark would read wrong without a word:
files it leaves out, files typed otherwise, files it cannot read (named)."""

from __future__ import annotations

import re

from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError, UnreadableInputError, java_messages, read_failure
from zipper.core.input_names import COPYING
from zipper.inputs import csv_header, csv_values, file_types
from zipper.inputs.column_types import data_type
from zipper.inputs.footers import nanosecond_columns
from zipper.inputs.sources import Input, files_to_read, merges_schemas
from zipper.tablespec.model import BaseSpec, SourceSpec
from zipper.tablespec.modes import SourceFormat

# The CSV reader's column for malformed rows: a name no input column can have (`zipper_` is reserved).
CORRUPT_RECORD = "zipper_corrupt_record"


def read(spark, located: Input, source: SourceSpec | BaseSpec, schema=None, ds: str | None = None):
    """The input as a DataFrame with lower-case column names. An empty input needs `schema`;
    `ds` is the date it is read for, named if one of its CSV values does not parse. A missing
    input a spec skips (`located.missing`) reads as an empty one."""
    if located.missing:
        return None if schema is None else spark.createDataFrame([], schema)
    if located.format == SourceFormat.TABLE:
        df = spark.table(located.table)
        for column, value in (located.partition or {}).items():
            df = df.where(F.col(column) == F.lit(value)).drop(column)
        if file_types.stored_as(spark, located.table, "orc"):
            file_types.refuse_lossy_orc_files(spark, located, df.schema)
        return df
    if located.empty:
        if schema is None:
            return None
        return spark.createDataFrame([], schema)
    reader = spark.read.format(located.format)
    options = _spelled_as_zipper_does(source.options)
    files = files_to_read(spark, located, options)
    what = f"{'base' if isinstance(source, BaseSpec) else 'increment'} {located.description}"
    if located.format == SourceFormat.PARQUET:
        refuse_empty_parquet(files, what)
    if located.format == SourceFormat.CSV:
        # Spark takes a column `_corrupt_record` (its default) for the text of malformed rows, not data
        options.setdefault("columnNameOfCorruptRecord", CORRUPT_RECORD)
        csv_header.check(spark, [f.path for f in files], options, what)
        csv_schema = _csv_schema(spark, located, options, getattr(source, "csv_schema", {}), schema)
        if csv_schema is not None:
            reader = reader.schema(csv_schema)
            csv_values.remember(what, ds, [f.path for f in located.files], csv_schema, options)
        else:
            options.setdefault("inferSchema", "true")
    if located.format in (SourceFormat.PARQUET, SourceFormat.ORC) and len(files) > 1:
        # a column only some files have is read (Spark otherwise takes one file's schema and drops
        # it silently), and files that disagree on a column's type fail here, naming the input
        options.setdefault("mergeSchema", "true")
    reader = reader.options(**options)
    try:
        df = reader.load(located.paths)
        df.schema  # noqa: B018 - resolve now, so a bad file fails here with its name
    except fs.spark_failures() as exc:  # AnalysisException, SparkException: unreadable or inconsistent files
        if options.get("mergeSchema") == "true" and "MERGE" in str(exc):
            conflict = _type_conflicts(spark, located, files)
            if conflict:
                raise InputError(f"files of {located.description} disagree on column types: {conflict}") from None
        raise _unreadable(located, exc, _first_unreadable(spark, located, files, options)) from None
    if located.format == SourceFormat.CSV and csv_schema is None:  # typed by Spark's inference: checked as typed
        csv_values.remember(what, ds, [f.path for f in located.files], df.schema, options)
    if located.format == SourceFormat.ORC and len(files) > 1 and not merges_schemas(options):
        file_types.refuse_converted_orc_files(spark, located, files, df.schema)
    _refuse_unread_files(spark, located, files, df, options)
    return df


def read_together(spark, located: list[Input], source: SourceSpec, schema: StructType):
    """Several Parquet inputs of one source in one scan: their paths with the reader options
    `read` gives each, their common schema (as `read` found it for each) given, not inferred
    again. For one-pass reads of many dates, each input checked by `read` first."""
    options = _spelled_as_zipper_does(source.options)
    return (
        spark.read.format(SourceFormat.PARQUET)
        .schema(schema)
        .options(**options)
        .load([path for each in located for path in each.paths])
    )


# The reader options zipper sets a default for or reads, as it spells them.
_ZIPPER_SPELLING = {
    name.lower(): name
    for name in ("columnNameOfCorruptRecord", "inferSchema", "mergeSchema", "header", "mode", "enforceSchema")
}


def _spelled_as_zipper_does(options: dict[str, str]) -> dict[str, str]:
    """The source's options with the names zipper defaults spelled its way: Spark ignores case,
    so a user's `mergeschema: false` beside zipper's default `mergeSchema: true` would lose to it."""
    return {_ZIPPER_SPELLING.get(name.lower(), name): value for name, value in options.items()}


def refuse_empty_parquet(
    files: list[fs.FileInfo], what: str, table: str | None = None, ds: str | None = None, numbered: bool = False
) -> None:
    """A Parquet file is never empty (it starts and ends with its magic bytes): one of 0 bytes is
    most likely being written, or its writer died. Spark refuses it as "not a Parquet file";
    another try, once the writer has finished, may pass (skipping it could lose its rows).
    `numbered`: a landing zone's change files, which may not be deleted: that leaves a gap in
    their numbering, which the next merge refuses."""
    empty = [f.path for f in files if f.size == 0]
    if empty:
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        fix = (
            "write it again; deleting it leaves a gap in the numbering, which the merge refuses"
            if numbered
            else "delete it or write it again"
        )
        raise MissingInputError(
            f"{what}: file {fs.name_of(empty[0])} is empty (0 bytes){more}, which no Parquet file"
            " is: it is likely still being written, or its writer died; merge once it is"
            f" complete (if its writer died, {fix})",
            table=table,
            ds=ds,
        )


def _files_spark_reads(spark, df, roots: list[str] = (), options: dict[str, str] | None = None) -> set[str]:
    """The files (spelled alike) a scan of `df` reads: every file its file index lists
    (`inputFiles()`), but of a folder holding partition folders only those inside them (the
    index lists the others too; the scan leaves them out). `roots` and `options` are the paths
    and reader options `df` was read with, which say where partition discovery starts."""
    listed = {fs.spelled_alike(p) for p in df.inputFiles()}
    partitions = _partition_folders(listed, roots, options or {})
    if partitions is None:
        return listed
    return {p for p in listed if p.rsplit("/", 1)[0] in partitions}


def _partition_folders(listed: set[str], roots, options: dict[str, str]) -> set[str] | None:
    """The partition folders (`name=value`, spelled alike) Spark's partition discovery finds
    among the folders of the `listed` files, or None when it finds none: by Spark's rule, a
    folder whose path below its root (the `basePath` option, else a root read) is all
    `name=value` parts; none with `recursiveFileLookup`."""
    lowered = {k.lower(): v for k, v in options.items()}
    if str(lowered.get("recursivefilelookup", "false")).lower() == "true":
        return None
    bases = [lowered["basepath"]] if "basepath" in lowered else list(roots)
    bases = {fs.spelled_alike(b).rstrip("/") for b in bases}
    found = set()
    for folder in {p.rsplit("/", 1)[0] for p in listed}:
        base = next((b for b in bases if folder.startswith(b + "/")), None)
        below = folder[len(base) + 1 :].split("/") if base is not None else [folder.rsplit("/", 1)[-1]]
        if folder not in bases and all(_is_partition_part(part) for part in below):
            found.add(folder)
    return found or None


def _is_partition_part(name: str) -> bool:
    return "=" in name and not name.startswith("=")


def _refuse_unread_files(spark, located: Input, files: list[fs.FileInfo], df, options: dict[str, str]) -> None:
    """Every file to read (`files`: all the input's, or those its file filters keep) is one
    Spark reads. It is not when a folder also holds partition folders (`name=value`): Spark then
    reads only the files inside those; nor the files of other subfolders; nor a file still being
    copied in (`._COPYING_`). Each would be left out without a word."""
    read = _files_spark_reads(spark, df, located.paths, options)
    # empty files are left out by design (no rows to lose)
    left_out = [f.path for f in files if f.size > 0 and fs.spelled_alike(f.path) not in read]
    if not left_out:
        return
    copying = [p for p in left_out if p.endswith(COPYING)]
    if copying:
        raise MissingInputError(
            f"{located.description} is still being written: {fs.name_of(copying[0])} is being"
            " copied in; merge it once the copy has finished"
        )
    roots = sorted((fs.spelled_alike(p).rstrip("/") for p in located.paths), key=len, reverse=True)
    first = fs.spelled_alike(left_out[0])
    shown = next((first[len(root) + 1 :] for root in roots if first.startswith(root + "/")), fs.name_of(first))
    more = f" and {len(left_out) - 1} more" if len(left_out) > 1 else ""
    partitions = sorted(
        {
            folder.rsplit("/", 1)[-1]
            for folder in (p.rsplit("/", 1)[0] for p in read)
            if folder not in roots and "=" in folder.rsplit("/", 1)[-1]
        }
    )
    if partitions:
        raise InputError(
            f"{located.description} holds partition folders ({', '.join(partitions[:3])}) beside other"
            f" files, which Spark would leave out without a word: {shown}{more}; move the stray files"
            " or folders away"
        )
    raise InputError(
        f"{located.description} has files in subfolders, which Spark would leave out without a word:"
        f" {shown}{more}; move them away, or set the source option recursiveFileLookup: 'true' to read"
        " them too"
    )


def _first_unreadable(spark, located: Input, files: list[fs.FileInfo], options: dict[str, str]) -> str | None:
    """The first of several files whose schema Spark cannot read (its error often names none):
    each is read alone, on failure only."""
    if len(files) < 2:
        return None
    single = {k: v for k, v in options.items() if k != "mergeSchema"}
    for f in files:
        try:
            spark.read.format(located.format).options(**single).load(f.path).schema  # noqa: B018
        except fs.spark_failures():  # the file cannot be read (anything else is a bug)
            return f.path
    return None


def _type_conflicts(spark, located: Input, files: list[fs.FileInfo], shown: int = 3) -> str:
    """Which columns the files type differently, with one file for each type: Spark's refusal to
    merge their schemas names the two types but neither the column nor the files."""
    seen: dict[str, dict[str, str]] = {}
    for f in files:
        try:
            fields = spark.read.format(located.format).load(f.path).schema.fields
        except fs.spark_failures():  # an unreadable file: reported by the caller's message
            continue
        for field in fields:
            seen.setdefault(field.name.lower(), {}).setdefault(field.dataType.simpleString(), f.path.rsplit("/", 1)[-1])
    conflicts = [
        f"{name} is " + ", ".join(f"{kind} in {file}" for kind, file in types.items())
        for name, types in seen.items()
        if len(types) > 1
    ]
    return "; ".join(conflicts[:shown])


def _csv_schema(spark, located: Input, options: dict[str, str], declared: dict[str, str], table_schema):
    """The schema to read CSV files with: the header's columns, in the header's order, typed by
    the spec's `schema:`, else by the table's column of that name, else string. None (infer the
    types) when neither the spec nor an existing table gives any. Sets the reader options that
    make Spark check each file's header against it and fail on a value that does not parse."""
    options.setdefault("header", "true")
    options.setdefault("mode", "FAILFAST")
    known = {f.name.lower(): f.dataType for f in table_schema.fields} if table_schema is not None else {}
    known.update({name.lower(): data_type(kind) for name, kind in declared.items()})
    if not known:
        return None
    if options["header"].lower() != "true":  # no names: the columns are the declared ones, in order
        return StructType([StructField(name, kind, True) for name, kind in known.items()])
    try:
        header = (
            spark.read.options(**{k: v for k, v in options.items() if k != "inferSchema"}).csv(located.paths).columns
        )
    except fs.spark_failures() as exc:  # an unreadable file (anything else is a bug)
        raise _unreadable(located, exc) from None
    options.setdefault("enforceSchema", "false")
    return StructType([StructField(name, known.get(name.lower(), StringType()), True) for name in header])


def _unreadable(located: Input, exc: Exception, bad_file: str | None = None) -> InputError:
    """Columns that differ only in case are the files' content; any other failure to read may
    be an I/O failure that passes."""
    path, reason = read_failure(exc, 300)  # the CLI's wording of a Java failure: message and root cause
    if "COLUMN_ALREADY_EXISTS" in str(exc) or "COLUMN_ALREADY_EXISTS" in " ".join(java_messages(exc)):
        column = re.search(r"`([^`]+)`", reason)
        return InputError(
            f"{located.description} has columns that differ only in case: {column.group(1) if column else reason}"
        )
    named = bad_file or path or (located.files[0].path if len(located.files) == 1 else None)
    if named and "TIMESTAMP(NANOS" in reason:
        columns = nanosecond_columns(named)
        if columns:
            return InputError(
                f"cannot read file {fs.name_of(named)} of {located.description}: column"
                f" {columns[0]!r} holds timestamps in nanoseconds, which Spark cannot read ({reason});"
                " write them in microseconds (pyarrow: coerce_timestamps='us')"
            )
    if named:
        return UnreadableInputError(f"cannot read file {fs.name_of(named)} of {located.description}: {reason}")
    return UnreadableInputError(f"cannot read {located.description}: {reason}")
