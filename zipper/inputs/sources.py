"""Find, fingerprint and read a day's increment (or the base snapshot)."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any

from zipper.core import fs
from zipper.inputs import csv_header, csv_values
from zipper.core.errors import InputError, MissingInputError, SpecError, UnreadableInputError, java_messages, read_failure
from zipper.core.input_names import is_being_copied
from zipper.core.paths import hadoop_path, user_path
from zipper.tablespec.model import BaseSpec, SourceSpec, TableSpec
from zipper.tablespec.paths import parse_partition, render, resolve_path, spec_key


@dataclass(frozen=True)
class Input:
    """A located input: what to read and the fingerprint of what is there now."""

    description: str  # the rendered path or table partition, for messages
    format: str
    paths: list[str]
    files: list[fs.FileInfo]
    fingerprint: str
    table: str | None = None
    partition: dict[str, str] | None = None
    landing: Any = None  # landing.Consumed: the numbered change files of a landing-zone date
    kept: list[fs.FileInfo] | None = None  # the files the reader options' file filters keep; None: no filter
    # With file filters, the fingerprint of every file, left out or not, as dates committed before
    # only the kept files counted carry it.
    every_file_fingerprint: str | None = None

    @property
    def empty(self) -> bool:
        return not self.files

    def matches(self, recorded: str | None) -> bool:
        """Whether `recorded`, a commit's fingerprint, is this input's: a date committed before
        only the files a filter keeps counted has the fingerprint of every file, and is
        unchanged while they all are (else every such date would look changed, and replay)."""
        return recorded is not None and recorded in (self.fingerprint, self.every_file_fingerprint)

    def fingerprint_against(self, recorded: str | None) -> str:
        """The fingerprint to compare with a commit's `recorded` one: `recorded` itself when this
        input `matches` it (in whichever formula it was made), else this input's own."""
        return recorded if self.matches(recorded) else self.fingerprint


# Seeds the fingerprint of the files file filters keep: never that of the same files unfiltered.
_KEPT_BY_FILTERS = "kept by the source's file filters\n"


def fingerprint(files: list[fs.FileInfo], extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for f in files:
        digest.update(f"{f.path}\t{f.size}\t{f.modified_ms}\n".encode())
    return f"{len(files)}f-{sum(f.size for f in files)}b-{digest.hexdigest()[:24]}"


def locate_increment(spark, spec: TableSpec, st, ds: dt.date) -> Input:
    """The increment of `ds` for the table in state `st`: a landing zone's depends on what the
    table consumed before (and a committed date's is the copy kept at its commit)."""
    if spec.source.mode == "landing_zone":
        from zipper.inputs import landing

        return landing.locate(spark, spec, st, ds)
    return locate(spark, spec, spec.source, ds, "increment")


def locate(spark, spec: TableSpec, source: SourceSpec | BaseSpec, ds: dt.date, what: str) -> Input:
    if source.format == "table":
        return _locate_table(spark, spec, source, ds, what)
    rendered = resolve_path(render(source.path, ds, f"{spec_key(source)}.path", spec), spec)
    local = fs.local_path(rendered)
    if local is not None and ":" in local:
        raise InputError(f"{what} path {rendered}: Hadoop's file system cannot name a local folder or file with a"
                         " ':' in it; rename it", table=spec.table, ds=ds.isoformat())
    matches = fs.glob(spark, rendered)
    if not matches:
        raise MissingInputError(f"{what} not found: {rendered}", table=spec.table, ds=ds.isoformat())
    unfinished = fs.unfinished_writes(spark, matches)
    if unfinished:
        shown = user_path(unfinished[0])
        if is_being_copied(shown):
            raise MissingInputError(f"{what} {rendered} is still being written: {fs.name_of(shown)} is being copied"
                                    " in; merge it once the copy has finished", table=spec.table, ds=ds.isoformat())
        raise MissingInputError(f"{what} {rendered} is still being written: it holds {fs.name_of(shown)}, the"
                                " uncommitted output of a Spark or Hadoop job; merge it once that job has finished (if"
                                f" the job died, delete {shown})", table=spec.table, ds=ds.isoformat())
    files = fs.list_data_files(spark, matches)
    broken = fs.broken_links(matches)
    if broken:
        raise MissingInputError(f"{what} {rendered}: file {broken[0]} cannot be read: a link to a missing file"
                                + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
                                table=spec.table, ds=ds.isoformat())
    located = Input(rendered, source.format, matches, files, fingerprint(files))
    return _fingerprinted_as_read(spark, located, source.options)


def _fingerprinted_as_read(spark, located: Input, options: dict[str, str]) -> Input:
    """`located` fingerprinted by the files its file filters keep, which are all the read
    takes: a file they leave out (a `notes.txt` beside the data) changes no date's input."""
    if located.empty or not _filters_files(options):
        return located
    kept = _kept_by_filters(spark, located, options)
    return replace(located, kept=kept, fingerprint=fingerprint(kept, _KEPT_BY_FILTERS),
                   every_file_fingerprint=located.fingerprint)


def _locate_table(spark, spec: TableSpec, source, ds: dt.date, what: str) -> Input:
    partition = parse_partition(render(source.partition, ds, f"{spec_key(source)}.partition", spec)) if getattr(source, "partition", None) else {}
    db, name = source.table.split(".")
    jcat = spark._jsparkSession.sessionState().catalog().externalCatalog()
    if not (jcat.databaseExists(db) and jcat.tableExists(db, name)):
        raise MissingInputError(f"{what} table {source.table} does not exist", table=spec.table, ds=ds.isoformat())
    description = source.table + (f" partition {partition}" if partition else "")
    if partition:
        columns = [c.lower() for c in jcat.getTable(db, name).partitionSchema().fieldNames()]
        if sorted(partition) != sorted(columns):
            raise InputError(f"{spec_key(source)}.partition names {sorted(partition)}, but {source.table} is"
                             + (f" partitioned by {columns}: name each of them" if columns else " not partitioned"),
                             table=spec.table, ds=ds.isoformat())
        spec_map = spark._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(partition)
        found = jcat.getPartitionOption(db, name, spec_map)
        if not found.isDefined():
            raise MissingInputError(f"{what} not found: {description}", table=spec.table, ds=ds.isoformat())
        paths = [hadoop_path(found.get().location().toString())]
    else:
        paths = [hadoop_path(jcat.getTable(db, name).location().toString())]
    files = fs.list_data_files(spark, paths)
    return Input(description, "table", paths, files, fingerprint(files, description), source.table, partition)


def read(spark, located: Input, source: SourceSpec | BaseSpec, schema=None, ds: str | None = None):
    """The input as a DataFrame with lower-case column names. An empty input needs `schema`;
    `ds` is the date it is read for, named if one of its CSV values does not parse."""
    from pyspark.sql import functions as F

    if located.format == "table":
        df = spark.table(located.table)
        for column, value in (located.partition or {}).items():
            df = df.where(F.col(column) == F.lit(value)).drop(column)
        if _stored_as(spark, located.table, "orc"):
            _refuse_lossy_orc_files(spark, located, df.schema)
        return df
    if located.empty:
        if schema is None:
            return None
        return spark.createDataFrame([], schema)
    reader = spark.read.format(located.format)
    options = _spelled_as_zipper_does(source.options)
    files = _files_to_read(spark, located, options)
    what = f"{'base' if isinstance(source, BaseSpec) else 'increment'} {located.description}"
    if located.format == "parquet":
        refuse_empty_parquet(files, what)
    if located.format == "csv":
        # Spark takes a column `_corrupt_record` (its default) for the text of malformed rows, not data
        options.setdefault("columnNameOfCorruptRecord", CORRUPT_RECORD)
        csv_header.check(spark, [f.path for f in files], options, what)
        csv_schema = _csv_schema(spark, located, options, getattr(source, "csv_schema", {}), schema)
        if csv_schema is not None:
            reader = reader.schema(csv_schema)
            csv_values.remember(what, ds, [f.path for f in located.files], csv_schema, options)
        else:
            options.setdefault("inferSchema", "true")
    if located.format in ("parquet", "orc") and len(files) > 1:
        # a column only some files have is read (Spark otherwise takes one file's schema and drops
        # it silently), and files that disagree on a column's type fail here, naming the input
        options.setdefault("mergeSchema", "true")
    reader = reader.options(**options)
    try:
        df = reader.load(located.paths)
        df.schema  # noqa: B018 - resolve now, so a bad file fails here with its name
    except fs.jvm_failures() as exc:  # AnalysisException, SparkException: unreadable or inconsistent files
        if options.get("mergeSchema") == "true" and "MERGE" in str(exc):
            conflict = _type_conflicts(spark, located, files)
            if conflict:
                raise InputError(f"files of {located.description} disagree on column types: {conflict}") from None
        raise _unreadable(located, exc, _first_unreadable(spark, located, files, options)) from None
    if located.format == "csv" and csv_schema is None:  # typed by Spark's inference: checked as typed
        csv_values.remember(what, ds, [f.path for f in located.files], df.schema, options)
    if located.format == "orc" and len(files) > 1 and not _merges_schemas(options):
        _refuse_converted_orc_files(spark, located, files, df.schema)
    _refuse_unread_files(spark, located, files, df)
    return df


# The reader options zipper sets a default for or reads, as it spells them.
_ZIPPER_SPELLING = {name.lower(): name for name in (
    "columnNameOfCorruptRecord", "inferSchema", "mergeSchema", "header", "mode", "enforceSchema")}


def _spelled_as_zipper_does(options: dict[str, str]) -> dict[str, str]:
    """The source's options with the names zipper defaults spelled its way: Spark ignores case,
    so a user's `mergeschema: false` beside zipper's default `mergeSchema: true` would lose to it."""
    return {_ZIPPER_SPELLING.get(name.lower(), name): value for name, value in options.items()}


def _merges_schemas(options: dict[str, str]) -> bool:
    """Whether the reader options leave Spark's mergeSchema on (its keys ignore case)."""
    return all(str(v).lower() != "false" for k, v in options.items() if k.lower() == "mergeschema")


def _refuse_converted_orc_files(spark, located: Input, files: list[fs.FileInfo], schema) -> None:
    """Without mergeSchema Spark reads every ORC file of an input with one file's schema, and ORC
    converts a column another file holds in another type without a word (a string '3.5' to the
    double 3.5, 'x' to NULL): each file's types, from its footer (a few JVM calls, no Spark job),
    must be ones Spark reads as the input's (`conform.mistyped_column`)."""
    from zipper.inputs.conform import mistyped_column
    from zipper.core.errors import ColumnTypeMismatch

    mismatch = _first_orc_mismatch(spark, located, files, schema, mistyped_column)
    if mismatch is not None:
        path, (column, in_file, read_as) = mismatch
        reason = ColumnTypeMismatch(path, column, "", read_as).reason(in_file)
        raise InputError(f"cannot read file {fs.name_of(path)} of {located.description}: {reason}, its type in"
                         " another file of the input; every file must give a column one type")


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


def _refuse_lossy_orc_files(spark, located: Input, schema) -> None:
    """An ORC table's files are read with the table's types, and ORC converts a column a file holds
    in another type without a word. Hive's schema evolution (ALTER TABLE ... CHANGE) relies on it,
    so a conversion that keeps every value (int to bigint, a number to a string) is taken; one that
    can lose values is refused naming the file: text to any other type (a value that does not
    parse became NULL: 'x3.5' read as a double) and a fraction to an integer (3.7 read as 3)."""
    from zipper.inputs.conform import loss_of, lossy_conversion

    mismatch = _first_orc_mismatch(spark, located, located.files, schema, lossy_conversion)
    if mismatch is not None:
        path, (column, in_file, read_as) = mismatch
        raise InputError(f"cannot read file {fs.name_of(path)} of {located.description}: column {column!r} is"
                         f" {in_file} in the file, but the table reads it as {read_as}, which ORC converts"
                         f" without a word, losing the values that {loss_of(in_file)}; rewrite the file with the"
                         " table's types")


class OrcFileSchemas:
    """ORC files' columns as Spark reads each file alone, from its footer (ORC's reader, Spark's
    conversion of its types)."""

    def __init__(self, spark):
        self._path_class = fs.java_class(spark, "org.apache.hadoop.fs.Path")
        self._orc = fs.java_class(spark, "org.apache.orc.OrcFile")
        self._utils = fs.java_class(spark, "org.apache.spark.sql.execution.datasources.orc.OrcUtils")
        self._conf = spark._jsc.hadoopConfiguration()

    def schema_of(self, path: str, what: str):
        """The file's StructType; a footer that cannot be read fails as reading the input `what`
        would (`UnreadableInputError`)."""
        import json

        from pyspark.sql.types import StructType

        try:
            # options of its own: ORC's reader keeps the file's tail in them, which another file's would take
            reader = self._orc.createReader(self._path_class(path), self._orc.readerOptions(self._conf))
            try:
                kind = self._utils.toCatalystSchema(reader.getSchema())
            finally:
                reader.close()
        except fs.jvm_failures() as exc:  # not ORC, gone, unreadable
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None
        return StructType.fromJson(json.loads(kind.json()))


# The CSV reader's column for malformed rows: a name no input column can have (`zipper_` is reserved).
CORRUPT_RECORD = "zipper_corrupt_record"
# Reader options that leave files out on purpose.
_FILE_FILTERS = {"pathglobfilter", "modifiedbefore", "modifiedafter"}


def refuse_empty_parquet(files: list[fs.FileInfo], what: str, table: str | None = None,
                         ds: str | None = None, numbered: bool = False) -> None:
    """A Parquet file is never empty (it starts and ends with its magic bytes): one of 0 bytes is
    most likely being written, or its writer died. Spark refuses it as "not a Parquet file";
    another try, once the writer has finished, may pass (skipping it could lose its rows).
    `numbered`: a landing zone's change files, which may not be deleted: that leaves a gap in
    their numbering, which the next merge refuses."""
    empty = [f.path for f in files if f.size == 0]
    if empty:
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        fix = ("write it again; deleting it leaves a gap in the numbering, which the merge refuses" if numbered
               else "delete it or write it again")
        raise MissingInputError(f"{what}: file {fs.name_of(empty[0])} is empty (0 bytes){more}, which no Parquet file"
                                " is: it is likely still being written, or its writer died; merge once it is"
                                f" complete (if its writer died, {fix})", table=table, ds=ds)


def _filters_files(options: dict[str, str]) -> bool:
    return any(k.lower() in _FILE_FILTERS for k in options)  # Spark's options ignore case


def _files_to_read(spark, located: Input, options: dict[str, str]) -> list[fs.FileInfo]:
    """The input's files the reader options keep: all of them, or those its file filters
    (`pathGlobFilter`, `modifiedBefore`, `modifiedAfter`) keep. The files a filter leaves out are
    left out on purpose: not checked."""
    if not _filters_files(options):
        return located.files
    return located.kept if located.kept is not None else _kept_by_filters(spark, located, options)


def _kept_by_filters(spark, located: Input, options: dict[str, str]) -> list[fs.FileInfo]:
    """The input's files its file filters keep, in any subfolder, as Spark's own listing applies them."""
    every_folder = {k: v for k, v in options.items() if k.lower() != "recursivefilelookup"}
    listing = spark.read.format("text").options(**every_folder, recursiveFileLookup="true").load(located.paths)
    kept = {fs.spelled_alike(p) for p in _joined(spark, listing._jdf.inputFiles())}
    return [f for f in located.files if fs.spelled_alike(f.path) in kept]


def _joined(spark, paths) -> list[str]:
    """A Java String[] of paths in one JVM call (py4j asks for each item of an array alone)."""
    text = spark._jvm.org.apache.hadoop.util.StringUtils.join("\0", paths)
    return text.split("\0") if text else []


def _files_spark_reads(spark, df) -> set[str]:
    """The files (spelled alike) a scan of `df` reads, in a few JVM calls however many they are:
    every file its file index lists (`inputFiles()`), but of a folder holding partition folders
    only those inside them (the index lists the others too; the scan leaves them out)."""
    listed = {fs.spelled_alike(p) for p in _joined(spark, df._jdf.inputFiles())}
    partitions = _partition_folders(df)
    if partitions is None:
        return listed
    return {p for p in listed if p.rsplit("/", 1)[0] in partitions}


def _partition_folders(df) -> set[str] | None:
    """The partition folders (`name=value`, spelled alike) `df`'s file index found, or None when
    it found none: a few JVM calls for each such folder."""
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    for i in range(leaves.length()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() != "LogicalRelation":
            continue
        location = leaf.relation().location()
        if location.partitionSchema().isEmpty():
            continue
        partitions = location.partitionSpec().partitions()
        return {fs.spelled_alike(partitions.apply(j).path().toString()) for j in range(partitions.length())}
    return None


def _refuse_unread_files(spark, located: Input, files: list[fs.FileInfo], df) -> None:
    """Every file to read (`files`: all the input's, or those its file filters keep) is one
    Spark reads. It is not when a folder also holds partition folders (`name=value`): Spark then
    reads only the files inside those; nor the files of other subfolders; nor a file still being
    copied in (`._COPYING_`). Each would be left out without a word."""
    read = _files_spark_reads(spark, df)
    # empty files are left out by design (no rows to lose)
    left_out = [f.path for f in files if f.size > 0 and fs.spelled_alike(f.path) not in read]
    if not left_out:
        return
    copying = [p for p in left_out if p.endswith(fs.COPYING)]
    if copying:
        raise MissingInputError(f"{located.description} is still being written: {fs.name_of(copying[0])} is being"
                                " copied in; merge it once the copy has finished")
    roots = sorted((fs.spelled_alike(p).rstrip("/") for p in located.paths), key=len, reverse=True)
    first = fs.spelled_alike(left_out[0])
    shown = next((first[len(root) + 1:] for root in roots if first.startswith(root + "/")), fs.name_of(first))
    more = f" and {len(left_out) - 1} more" if len(left_out) > 1 else ""
    partitions = sorted({folder.rsplit("/", 1)[-1] for folder in (p.rsplit("/", 1)[0] for p in read)
                         if folder not in roots and "=" in folder.rsplit("/", 1)[-1]})
    if partitions:
        raise InputError(f"{located.description} holds partition folders ({', '.join(partitions[:3])}) beside other"
                         f" files, which Spark would leave out without a word: {shown}{more}; move the stray files"
                         " or folders away")
    raise InputError(f"{located.description} has files in subfolders, which Spark would leave out without a word:"
                     f" {shown}{more}; move them away, or set the source option recursiveFileLookup: 'true' to read"
                     " them too")


def _first_unreadable(spark, located: Input, files: list[fs.FileInfo], options: dict[str, str]) -> str | None:
    """The first of several files whose schema Spark cannot read (its error often names none):
    each is read alone, on failure only."""
    if len(files) < 2:
        return None
    single = {k: v for k, v in options.items() if k != "mergeSchema"}
    for f in files:
        try:
            spark.read.format(located.format).options(**single).load(f.path).schema  # noqa: B018
        except fs.jvm_failures():  # the file cannot be read (anything else is a bug)
            return f.path
    return None


def _type_conflicts(spark, located: Input, files: list[fs.FileInfo], shown: int = 3) -> str:
    """Which columns the files type differently, with one file for each type: Spark's refusal to
    merge their schemas names the two types but neither the column nor the files."""
    seen: dict[str, dict[str, str]] = {}
    for f in files:
        try:
            fields = spark.read.format(located.format).load(f.path).schema.fields
        except fs.jvm_failures():  # an unreadable file: reported by the caller's message
            continue
        for field in fields:
            seen.setdefault(field.name.lower(), {}).setdefault(field.dataType.simpleString(), f.path.rsplit("/", 1)[-1])
    conflicts = [f"{name} is " + ", ".join(f"{kind} in {file}" for kind, file in types.items())
                 for name, types in seen.items() if len(types) > 1]
    return "; ".join(conflicts[:shown])


def _csv_schema(spark, located: Input, options: dict[str, str], declared: dict[str, str], table_schema):
    """The schema to read CSV files with: the header's columns, in the header's order, typed by
    the spec's `schema:`, else by the table's column of that name, else string. None (infer the
    types) when neither the spec nor an existing table gives any. Sets the reader options that
    make Spark check each file's header against it and fail on a value that does not parse."""
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    options.setdefault("header", "true")
    options.setdefault("mode", "FAILFAST")
    known = {f.name.lower(): f.dataType for f in table_schema.fields} if table_schema is not None else {}
    known.update({name.lower(): _parse_datatype_string(kind) for name, kind in declared.items()})
    if not known:
        return None
    if options["header"].lower() != "true":  # no names: the columns are the declared ones, in order
        return StructType([StructField(name, kind, True) for name, kind in known.items()])
    try:
        header = spark.read.options(**{k: v for k, v in options.items() if k != "inferSchema"}).csv(located.paths).columns
    except fs.jvm_failures() as exc:  # an unreadable file (anything else is a bug)
        raise _unreadable(located, exc) from None
    options.setdefault("enforceSchema", "false")
    return StructType([StructField(name, known.get(name.lower(), StringType()), True) for name in header])


def files_read_as_another(spark, located: Input, source: SourceSpec | BaseSpec) -> list[str]:
    """The Parquet files Spark reads with a schema other than their own, so that one may hold a
    column in a type Spark cannot read it as: those of a Parquet table's partition (read as the
    table declares), and of a Parquet input of several files read without merging their schemas
    (the reader option mergeSchema off: read as one file's). Any other input's are read with their
    own schema, or with one merged from all of them (which fails on a conflict)."""
    if located.format == "table":
        return [f.path for f in located.files if f.size > 0] if _stored_as_parquet(spark, located.table) else []
    files = located.kept if located.kept is not None else located.files
    if located.format != "parquet" or len(files) < 2 or _merges_schemas(source.options):
        return []
    return [f.path for f in files if f.size > 0]


def _stored_as_parquet(spark, table: str) -> bool:
    """Whether the metastore says `table`'s files are Parquet (a Spark or a Hive table)."""
    return _stored_as(spark, table, "parquet")


def _stored_as(spark, table: str, file_format: str) -> bool:
    """Whether the metastore says `table`'s files are of `file_format` (a Spark or a Hive table)."""
    db, name = table.split(".")
    stored = spark._jsparkSession.sessionState().catalog().externalCatalog().getTable(db, name)
    serde = stored.storage().serde()
    named = [stored.provider().get() if stored.provider().isDefined() else "",
             serde.get() if serde.isDefined() else ""]
    return any(file_format in text.lower() for text in named)


# Where Spark keeps a Parquet file's schema as Spark wrote it, which its reader takes over the
# Parquet types (ParquetFileFormat.readSchemaFromFooter).
SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"


class FileSchemas:
    """Parquet files' columns as Spark reads each file alone, from its footer: a few JVM calls a
    file and no Spark job (Spark's own reading of a file's schema runs one, a tenth of a second).
    As Spark does, the schema Spark wrote in the footer, else the Parquet types converted."""

    def __init__(self, spark):
        self._path_class = fs.java_class(spark, "org.apache.hadoop.fs.Path")
        self._reader = fs.java_class(spark, "org.apache.parquet.hadoop.ParquetFileReader")
        self._no_row_groups = fs.java_class(
            spark, "org.apache.parquet.format.converter.ParquetMetadataConverter").SKIP_ROW_GROUPS
        self._conf = spark._jsc.hadoopConfiguration()
        self._converter = fs.java_class(
            spark, "org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter"
        )(spark._jsparkSession.sessionState().conf())

    def schema_of(self, path: str, what: str):
        """The file's StructType; None when Spark has no type for one of its columns (nanosecond
        timestamps, ...), which fails a read only if it reads that column, as it says then. A
        footer that cannot be read fails as reading the input `what` would (`UnreadableInputError`)."""
        import json

        from pyspark.sql.types import StructType

        try:
            footer = self._reader.readFooter(self._conf, self._path_class(path), self._no_row_groups)
        except fs.jvm_failures() as exc:  # not Parquet, gone, unreadable
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None
        metadata = footer.getFileMetaData()
        written = metadata.getKeyValueMetaData().get(SPARK_SCHEMA_KEY)
        if written:
            try:
                return StructType.fromJson(json.loads(written))
            except (ValueError, KeyError, TypeError):  # an older Spark's own notation: the Parquet types
                pass
        try:
            converted = self._converter.convert(metadata.getSchema())
        except fs.jvm_failures():  # a Parquet type Spark does not read
            return None
        return StructType.fromJson(json.loads(converted.json()))


def _nanosecond_columns(path: str) -> list[str]:
    """The top-level columns of a local Parquet file whose timestamps are in nanoseconds (pyarrow's
    default for pandas' timestamps), from its footer; empty when remote or unreadable."""
    local = fs.local_path(path)
    if local is None:
        return []
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(local)
    except (OSError, pa.ArrowException):  # gone, not readable, or not Parquet (anything else is a bug)
        return []
    return [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]


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
        columns = _nanosecond_columns(named)
        if columns:
            return InputError(f"cannot read file {fs.name_of(named)} of {located.description}: column"
                              f" {columns[0]!r} holds timestamps in nanoseconds, which Spark cannot read ({reason});"
                              " write them in microseconds (pyarrow: coerce_timestamps='us')")
    if named:
        return UnreadableInputError(f"cannot read file {fs.name_of(named)} of {located.description}: {reason}")
    return UnreadableInputError(f"cannot read {located.description}: {reason}")
