"""The inputs of a range of dates, for a rerun or a rebuild: all located (and fingerprinted)
before anything changes, read as the table's columns, their keys checked in one job."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import InputError, MissingInputError
from zipper.core.names import NO_BASE_FINGERPRINT
from zipper.inputs import conform, sources
from zipper.inputs.changeset import evolved_columns
from zipper.inputs.dated_checks import check_dated_keys
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat
from zipper.transforms.timelines import dated


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
        read = {
            day: read_checked(spark, spec, located[day], spec.source, table_columns, day, "increment")
            for day in sorted(located)
        }
    names = [c for c, _ in table_columns]
    parts = [dated(base, names, base_ds.isoformat())] if base is not None else []
    for day in sorted(located):
        parts.append(dated(conform.to_columns(read[day], table_columns), names, day.isoformat()))
    if not parts:
        return dated(spark.createDataFrame([], conform.struct_type(table_columns)), names, "")
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows


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
