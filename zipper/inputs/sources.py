"""Find and fingerprint a day's increment (or the base snapshot): what is there, and which of
its files the reader options keep."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, replace
from typing import Any

from zipper.core import fs
from zipper.core.errors import InputError, InputNotFoundError, MissingInputError
from zipper.core.input_names import is_being_copied
from zipper.core.paths import local_path, user_path
from zipper.tablespec.model import BaseSpec, SourceSpec, TableSpec
from zipper.tablespec.modes import SourceFormat
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
    # Nothing was there, and the spec skips such a date (`on_missing_input: skip`): read as no rows.
    missing: bool = False

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


# The fingerprint of a date whose input was missing and skipped: never a real input's (those are
# `<n>f-<bytes>b-<hash>`), so the input appearing later changes the date's fingerprint, and replays it.
NO_INPUT = "no input"


def not_found(description: str, format: str) -> Input:
    """A missing input of a table that skips such dates: no files, the fingerprint `NO_INPUT`."""
    return Input(description, format, [], [], NO_INPUT, missing=True)


# Seeds the fingerprint of the files file filters keep: never that of the same files unfiltered.
_KEPT_BY_FILTERS = "kept by the source's file filters\n"


def fingerprint(files: list[fs.FileInfo], extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for f in files:
        digest.update(f"{f.path}\t{f.size}\t{f.modified_ms}\n".encode())
    return f"{len(files)}f-{sum(f.size for f in files)}b-{digest.hexdigest()[:24]}"


def locate(spark, spec: TableSpec, source: SourceSpec | BaseSpec, ds: dt.date, what: str) -> Input:
    if source.format == SourceFormat.TABLE:
        return _locate_table(spark, spec, source, ds, what)
    rendered = resolve_path(render(source.path, ds, f"{spec_key(source)}.path", spec), spec)
    local = local_path(rendered)
    if local is not None and ":" in local:
        raise InputError(
            f"{what} path {rendered}: Hadoop's file system cannot name a local folder or file with a"
            " ':' in it; rename it",
            table=spec.table,
            ds=ds.isoformat(),
        )
    matches = fs.glob(rendered)
    if not matches:
        raise InputNotFoundError(f"{what} not found: {rendered}", table=spec.table, ds=ds.isoformat(), missing=rendered)
    unfinished = fs.unfinished_writes(matches)
    if unfinished:
        shown = user_path(unfinished[0])
        if is_being_copied(shown):
            raise MissingInputError(
                f"{what} {rendered} is still being written: {fs.name_of(shown)} is being copied"
                " in; merge it once the copy has finished",
                table=spec.table,
                ds=ds.isoformat(),
            )
        raise MissingInputError(
            f"{what} {rendered} is still being written: it holds {fs.name_of(shown)}, the"
            " uncommitted output of a Spark or Hadoop job; merge it once that job has finished (if"
            f" the job died, delete {shown})",
            table=spec.table,
            ds=ds.isoformat(),
        )
    files = fs.list_data_files(matches)
    broken = fs.broken_links(matches)
    if broken:
        raise MissingInputError(
            f"{what} {rendered}: file {broken[0]} cannot be read: a link to a missing file"
            + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
            table=spec.table,
            ds=ds.isoformat(),
        )
    located = Input(rendered, source.format, matches, files, fingerprint(files))
    return _fingerprinted_as_read(spark, located, source.options)


def _fingerprinted_as_read(spark, located: Input, options: dict[str, str]) -> Input:
    """`located` fingerprinted by the files its file filters keep, which are all the read
    takes: a file they leave out (a `notes.txt` beside the data) changes no date's input."""
    if located.empty or not filters_files(options):
        return located
    kept = kept_by_filters(spark, located, options)
    return replace(
        located, kept=kept, fingerprint=fingerprint(kept, _KEPT_BY_FILTERS), every_file_fingerprint=located.fingerprint
    )


def _locate_table(spark, spec: TableSpec, source, ds: dt.date, what: str) -> Input:
    partition = (
        parse_partition(render(source.partition, ds, f"{spec_key(source)}.partition", spec))
        if getattr(source, "partition", None)
        else {}
    )
    db, name = source.table.split(".")
    if not (spark.catalog.databaseExists(db) and spark.catalog.tableExists(f"{db}.{name}")):
        raise MissingInputError(f"{what} table {source.table} does not exist", table=spec.table, ds=ds.isoformat())
    description = source.table + (f" partition {partition}" if partition else "")
    if partition:
        columns = [c.name.lower() for c in spark.catalog.listColumns(f"{db}.{name}") if c.isPartition]
        if sorted(partition) != sorted(columns):
            raise InputError(
                f"{spec_key(source)}.partition names {sorted(partition)}, but {source.table} is"
                + (f" partitioned by {columns}: name each of them" if columns else " not partitioned"),
                table=spec.table,
                ds=ds.isoformat(),
            )
        found = _location(spark, db, name, partition)
        if found is None:
            raise InputNotFoundError(
                f"{what} not found: {description}", table=spec.table, ds=ds.isoformat(), missing=description
            )
        paths = [found]
    else:
        paths = [_location(spark, db, name)]
    files = fs.list_data_files(paths)
    return Input(description, "table", paths, files, fingerprint(files, description), source.table, partition)


def _location(spark, db: str, name: str, partition: dict[str, str] | None = None) -> str | None:
    """Where the metastore keeps a table's or a partition's files, as Hadoop spells the path
    (`DESCRIBE FORMATTED` says it so); None for a partition it does not have."""
    from pyspark.errors import AnalysisException

    spec = ", ".join(f"`{k.replace('`', '``')}` = {_sql_text(v)}" for k, v in (partition or {}).items())
    statement = f"DESCRIBE FORMATTED `{db}`.`{name}`" + (f" PARTITION ({spec})" if spec else "")
    try:
        rows = spark.sql(statement).collect()
    except AnalysisException as exc:
        if partition and "PARTITIONS_NOT_FOUND" in str(exc):
            return None
        raise
    return next(row.data_type for row in rows if row.col_name == "Location")  # a partition's comes before its table's


def _sql_text(value: str) -> str:
    """A SQL string literal of `value`."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Reader options that leave files out on purpose.
FILE_FILTERS = {"pathglobfilter", "modifiedbefore", "modifiedafter"}


def filters_files(options: dict[str, str]) -> bool:
    return any(k.lower() in FILE_FILTERS for k in options)  # Spark's options ignore case


def files_to_read(spark, located: Input, options: dict[str, str]) -> list[fs.FileInfo]:
    """The input's files the reader options keep: all of them, or those its file filters
    (`pathGlobFilter`, `modifiedBefore`, `modifiedAfter`) keep. The files a filter leaves out are
    left out on purpose: not checked."""
    if not filters_files(options):
        return located.files
    return located.kept if located.kept is not None else kept_by_filters(spark, located, options)


def kept_by_filters(spark, located: Input, options: dict[str, str]) -> list[fs.FileInfo]:
    """The input's files its file filters keep, in any subfolder, as Spark's own listing applies them."""
    every_folder = {k: v for k, v in options.items() if k.lower() != "recursivefilelookup"}
    listing = spark.read.format("text").options(**every_folder, recursiveFileLookup="true").load(located.paths)
    kept = {fs.spelled_alike(p) for p in listing.inputFiles()}
    return [f for f in located.files if fs.spelled_alike(f.path) in kept]


def merges_schemas(options: dict[str, str]) -> bool:
    """Whether the reader options leave Spark's mergeSchema on (its keys ignore case)."""
    return all(str(v).lower() != "false" for k, v in options.items() if k.lower() == "mergeschema")
