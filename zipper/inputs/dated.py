"""The inputs of a range of dates, for a rerun or a rebuild: all located (and fingerprinted)
before anything changes, read as the table's columns, their keys checked in one job."""

from __future__ import annotations

import datetime as dt
import re
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import functions as F

from zipper.core.errors import InputError, MissingInputError
from zipper.core.names import NO_BASE_FINGERPRINT
from zipper.inputs import conform, reader, sources
from zipper.inputs.changeset import evolved_columns
from zipper.inputs.dated_checks import check_dated_keys
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat
from zipper.transforms.timelines import DS, dated


def read_as_table(
    spark, spec: TableSpec, located: sources.Input, source, table_columns: list[tuple[str, str]], ds: dt.date, what: str
):
    """The input as the table's columns, in order, with the checks and safe widenings of a merge."""
    return conform.to_columns(read_checked(spark, spec, located, source, table_columns, ds, what), table_columns)


def read_checked(
    spark,
    spec: TableSpec,
    located: sources.Input,
    source,
    table_columns: list[tuple[str, str]],
    ds: dt.date,
    what: str,
    leave_out: tuple[str, ...] = (),
):
    """The input as read (its own columns), checked to fit the table's columns as they are: a
    merge of its date takes it so (`dayinput.prepare`). `leave_out`: its columns that are not the
    table's data (a cdc input's operation column)."""
    ds_text = ds.isoformat()
    what = f"{what} {located.description}"
    df = conform.read_input(spark, spec, located, source, table_columns, ds_text, what)
    # As the merge of that date saw it: a column added later is NULL, a column type change fails.
    have = [(f.name, f.dataType.simpleString()) for f in df.schema.fields if f.name not in leave_out]
    _, changes = conform.evolve(have, table_columns, spec, ds_text, what)
    if changes.added:
        raise InputError(
            f"{what} has columns not in the table {[name for name, _ in changes.added]}; merge its date first",
            table=spec.table,
            ds=ds_text,
        )
    if changes.widened:
        name, old, new = changes.widened[0]
        raise InputError(
            f"{what} column {name!r} has type {new}, the table has {old}; merge its date first",
            table=spec.table,
            ds=ds_text,
        )
    return df


def read_increments(
    spark, spec: TableSpec, table_columns: list[tuple[str, str]], located: dict[dt.date, sources.Input]
) -> tuple[dict[dt.date, object], list[tuple[str, str]]]:
    """Every located increment read once, by date, for a rerun that replays them through the
    daily merge, and the table's columns once they are all merged: each date's columns are
    checked against the table's as the dates before it leave them, as its merge will see them
    (`changeset.evolved_columns`, as for the other modes). So a date that adds a column or safely
    widens one replays (its merge alters the table; refusing it left no way to replay a re-sent
    day with a new column), and one that changes a column's type fails before anything changes."""
    read, columns = {}, list(table_columns)
    for day in sorted(located):
        what = f"increment {located[day].description}"
        df = conform.read_input(spark, spec, located[day], spec.source, table_columns, day.isoformat(), what)
        columns = evolved_columns(spec, day, _columns_of(df), columns, what)
        read[day] = df
    return read, columns


def _columns_of(df) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def locate_base(spark, spec: TableSpec, init_ds: dt.date) -> sources.Input | None:
    """The base as `zipper init` would load it now (None when the spec has none)."""
    if spec.base is None:
        return None
    located = sources.locate(spark, spec, spec.base, init_ds, "base")
    if located.empty and located.format != SourceFormat.TABLE:
        raise MissingInputError(f"base at {located.description} has no files", table=spec.table, ds=init_ds.isoformat())
    return located


def read_base(
    spark, spec: TableSpec, table_columns: list[tuple[str, str]], init_ds: dt.date, located: sources.Input | None
):
    """The base `locate_base` found, as the table's columns (None without one)."""
    if located is None:
        return None
    return read_as_table(spark, spec, located, spec.base, table_columns, init_ds, "base")


def base_fingerprint(located: sources.Input | None, recorded: str | None = None) -> str:
    """The fingerprint `zipper init` records for the base ("empty" without one); given the one it
    `recorded`, that one while the base still `matches` it (a table initialized before file filters
    counted only the files they keep recorded every file's)."""
    if located is None:
        return NO_BASE_FINGERPRINT
    return located.fingerprint_against(recorded)


def base_changed(located: sources.Input | None, recorded: str | None) -> bool:
    """Whether the base is not the one `zipper init` loaded (`recorded`; unknown: unchanged)."""
    return bool(recorded) and base_fingerprint(located, recorded) != recorded


def dated_rows(
    spark,
    spec: TableSpec,
    table_columns: list[tuple[str, str]],
    located: dict[dt.date, sources.Input],
    base=None,
    base_ds: dt.date | None = None,
    read: dict[dt.date, object] | None = None,
):
    """The base (tagged with its date) and every located increment (tagged with its run date), as
    one DataFrame of `table_columns`; `read`: the increments as `read_increments` already read them
    for a rerun (with the columns it gives, those the replayed dates leave); else each must fit the
    table's columns as they are."""
    if read is None:
        read = _read_all(spark, spec, table_columns, located)
    names = [c for c, _ in table_columns]
    parts = [dated(base, names, base_ds.isoformat())] if base is not None else []
    scanned, in_scan = _in_one_scan(spark, spec, located, read)
    if scanned is not None:
        parts.append(conform.to_columns(scanned, table_columns, keep=(DS,)))
    for day in sorted(set(located) - in_scan):
        parts.append(dated(conform.to_columns(read[day], table_columns), names, day.isoformat()))
    if not parts:
        return dated(spark.createDataFrame([], conform.struct_type(table_columns)), names, "")
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows


# the dates' inputs read and checked at once: each check is a few round trips to the Spark server,
# whose answers take longer than their requests, for every date
READERS = 4


def _read_all(spark, spec: TableSpec, table_columns, located: dict[dt.date, sources.Input]) -> dict:
    """Every date's input read and checked (`read_checked`), several at once; the earliest bad
    date's refusal is the one raised, as when they were read one by one."""

    def read_one(day: dt.date):
        return read_checked(spark, spec, located[day], spec.source, table_columns, day, "increment")

    days = sorted(located)
    with ThreadPoolExecutor(READERS) as pool:
        return dict(zip(days, pool.map(read_one, days), strict=True))


_FILE = "zipper__file"
_SCHEME = r"^([A-Za-z][A-Za-z0-9+.-]*)"
# a URI without authority as Spark's scans name their files (file:/a), not as its listings (file:///a)
_NO_AUTHORITY, _SCANS_SPELLING = _SCHEME + ":///", _SCHEME + ":/(?!/)"


def _as_scans_name(path: str) -> str:
    """A file of Spark's listing (`inputFiles()`) as its scans name it (`_metadata.file_path`)."""
    return re.sub(_NO_AUTHORITY, r"\1:/", path)


def _spellings(scans_name: str) -> list[str]:
    """A file as a scan may name it: without authority as `file:/a` and as `file:///a`. The
    rows' file names are looked up as they come, not rewritten (a regular expression per row)."""
    with_authority = re.sub(_SCANS_SPELLING, r"\1:///", scans_name)
    return sorted({scans_name, with_authority})


def _in_one_scan(spark, spec: TableSpec, located: dict[dt.date, sources.Input], read: dict[dt.date, object]):
    """The dates' Parquet inputs that share one schema (as read and checked, each on its own) in one
    scan, each row tagged with its date (DS) by the file it comes from; and those dates. A scan
    per date costs its analysis and its tasks: a year of daily snapshots took a rebuild ~40 s
    longer so. (None, no dates) when fewer than two can be read so, or a file would be read for
    two dates, or the one scan would not read exactly the files the dates' own scans read."""
    days = [d for d in sorted(located) if not located[d].missing and not located[d].empty]
    days = [d for d in days if located[d].format == SourceFormat.PARQUET]
    schemas = {read[d].schema.json() for d in days}
    if len(days) < 2 or len(schemas) != 1:
        return None, set()
    schema = read[days[0]].schema
    files: dict[str, str] = {}
    for day in days:
        for path in map(_as_scans_name, read[day].inputFiles()):
            if path in files:
                return None, set()
            files[path] = day.isoformat()
    together = reader.read_together(spark, [located[d] for d in days], spec.source, schema)
    scanned = set(map(_as_scans_name, together.inputFiles()))
    if together.schema != schema or scanned != set(files):
        return None, set()
    by_name = sorted((name, ds) for path, ds in files.items() for name in _spellings(path))
    by_file = spark.createDataFrame(by_name, f"{_FILE} string, {DS} string")
    tagged = together.select("*", F.col("_metadata.file_path").alias(_FILE))
    joined = tagged.join(F.broadcast(by_file), on=_FILE, how="left")
    # a file no date read cannot be here (the file sets are equal): should one be, fail, not lose it
    unknown = F.raise_error(F.concat(F.lit("zipper: a row of a file no date read: "), F.col(_FILE)))
    return joined.select(*schema.names, F.coalesce(F.col(DS), unknown).alias(DS)), set(days)


def check_keys(rows, spec: TableSpec, descriptions: dict[str, str], roots: dict[str, list[str]] | None = None) -> None:
    """Fail as the merge of the earliest offending date would, naming all its NULL and repeated
    keys at once. CSV inputs are read whole (every value typed), so that a bad value fails here too.

    `rows`: dated rows (columns + DS); `descriptions`: date -> what the input is, for the message;
    `roots`: date -> the input's paths, that name its files (`input_roots`)."""
    check_dated_keys(rows, spec, descriptions, read_all_columns=spec.source.format == SourceFormat.CSV, roots=roots)


def descriptions(located: dict[dt.date, sources.Input]) -> dict[str, str]:
    return {day.isoformat(): f"increment {inp.description}" for day, inp in located.items()}


def input_roots(located: dict[dt.date, sources.Input | None]) -> dict[str, list[str]]:
    """Date -> the paths of its input, from which a refusal names the input's files."""
    return {day.isoformat(): list(inp.paths) for day, inp in located.items() if inp is not None}
