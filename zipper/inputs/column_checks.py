"""Refusals of an input's columns that a Hive table cannot take, or that the merge would take
for its own: their names, their types, and the keys."""

from __future__ import annotations

from pyspark.sql import types as spark_types

from zipper.core import fs
from zipper.core.errors import InputError
from zipper.tablespec.model import INTERNAL_PREFIX, TableSpec
from zipper.transforms.equality import holds_map, nested_types


def refuse_internal_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """The merge tags rows with columns of its own (`zipper_op`, `zipper_slot`, ...): an input
    column of that name would be taken for one (a `zipper_op` value 'delete' deleted its key)."""
    internal = sorted(c for c in columns if c.lower().startswith(INTERNAL_PREFIX))
    if internal:
        raise InputError(
            f"{what} has columns {internal}: names starting with {INTERNAL_PREFIX!r} are reserved for"
            " zipper's own columns; rename them in the source",
            table=spec.table,
            ds=ds,
        )


# The metastore keeps a column's name in a VARCHAR(767) (COLUMNS_V2.COLUMN_NAME): a longer one
# fails the ALTER TABLE that adds it, which runs after the day's publish.
MAX_COLUMN_NAME = 767
# Characters of a column name Hive's Parquet reader (ParquetHiveSerDe) cannot parse, besides white
# space: Spark writes and reads the table, Hive fails on all of it.
HIVE_PARQUET_UNPARSED = ",;{}()="


def refuse_unstorable_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """Names the table cannot take, refused before anything is written: Hive reads a dot as a
    struct field, a backtick ends a quoted name, its Parquet reader cannot parse white space and
    a few more characters, and the metastore holds at most 767 characters."""

    def why(name: str) -> str | None:
        if len(name) > MAX_COLUMN_NAME:
            return f"{len(name)} characters, more than the metastore's {MAX_COLUMN_NAME}"
        if "." in name:
            return "a dot"
        if "`" in name:
            return "a backtick"
        unparsed = next((c for c in name if c.isspace() or c in HIVE_PARQUET_UNPARSED), None)
        if unparsed is not None:
            shown = "white space" if unparsed.isspace() else repr(unparsed)
            return f"{shown}, which Hive's Parquet reader cannot parse"
        return None

    bad = [(name, reason) for name in columns if (reason := why(name))]
    if bad:
        shown = ", ".join(f"{name if len(name) <= 40 else name[:40] + '...'!r} ({reason})" for name, reason in bad[:5])
        raise InputError(
            f"{what} has columns a Hive table cannot take: {shown}; rename them in the source", table=spec.table, ds=ds
        )


def refuse_padded_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """White space at either end of a name is a typo far more often than a name (a CSV header
    `id, name`): such a column was added beside `name`, which went NULL in the day's versions."""
    padded = [name for name in columns if name != name.strip()]
    if padded:
        raise InputError(
            f"{what} has columns with white space before or after their names: {padded[:5]}; rename"
            " them in the source (a CSV header is read as written: 'id, name' names ' name')",
            table=spec.table,
            ds=ds,
        )


def refuse_bad_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """The checks of an input's column names, for every reader (check_shape, the landing zone's)."""
    refuse_internal_names(columns, spec, ds, what)
    refuse_padded_names(columns, spec, ds, what)
    refuse_unstorable_names(columns, spec, ds, what)


def refuse_unwritable_types(df, spec: TableSpec, ds: str, what: str) -> None:
    """A nested type whose field names Spark cannot write back as a type name (`struct<f g:int>`):
    the table's columns are kept as type names, so such a column failed later with an empty
    ParseException."""
    for field in df.schema.fields:
        kind = field.dataType.simpleString()
        if "struct<" not in kind:
            continue
        try:
            spark_types._parse_datatype_string(kind)
        except fs.spark_failures():  # Spark's parser refuses it (a ParseException)
            raise InputError(
                f"{what} column {field.name!r} has type {kind}, whose nested field names a Hive table"
                " cannot take (a space, a dot, ...); rename them in the source",
                table=spec.table,
                ds=ds,
            ) from None


# Spark types a Hive table cannot store (the spec refuses them by name: zipper.tablespec.sparktypes),
# by the class name of their Spark type.
_NOT_IN_HIVE = {
    "TimestampNTZType": "timestamp_ntz",
    "DayTimeIntervalType": "interval",
    "YearMonthIntervalType": "interval",
    "CalendarIntervalType": "interval",
    "VariantType": "variant",
    "TimeType": "time",
}
NTZ_HINT = " (a Parquet timestamp without a time zone, such as pandas' naive datetimes): write it adjusted to UTC"


def _unstorable(data_type) -> str | None:
    """The first type inside `data_type` that a Hive table cannot store, by name; else None."""
    return next(filter(None, (_NOT_IN_HIVE.get(type(t).__name__) for t in nested_types(data_type))), None)


def refuse_unstorable_types(df, spec: TableSpec, ds: str, what: str) -> None:
    """A type Spark reads and a Hive table cannot store: the table's creation (or the column's
    addition) failed with Hive's 'type expected at the position 7 of ...'."""
    for field in df.schema.fields:
        bad = _unstorable(field.dataType)
        if bad:
            hint = NTZ_HINT if bad == "timestamp_ntz" else ""
            raise InputError(
                f"{what} column {field.name!r} has type {field.dataType.simpleString()}, which a Hive"
                f" table cannot store{hint}",
                table=spec.table,
                ds=ds,
            )


def refuse_map_keys(df, spec: TableSpec, ds: str, what: str) -> None:
    """Spark can neither group nor join on a map (at any depth), so a map cannot be a key."""
    types = {f.name: f.dataType for f in df.schema.fields}
    for key in spec.keys:
        if key in types and holds_map(types[key]):
            raise InputError(
                f"{what} key column {key!r} has type {types[key].simpleString()}: a key cannot hold a"
                " map (Spark cannot compare maps)",
                table=spec.table,
                ds=ds,
            )


def lower_case_columns(df, spec: TableSpec, ds: str, what: str):
    names = df.columns
    lowered = [n.lower() for n in names]
    clashes = sorted({n for n in lowered if lowered.count(n) > 1})
    if clashes:
        raise InputError(f"{what} has columns that differ only in case: {clashes}", table=spec.table, ds=ds)
    if names == lowered:
        return df
    return df.select(*[df[f"`{n}`"].alias(n.lower()) for n in names])


def check_shape(df, spec: TableSpec, ds: str, what: str) -> None:
    reserved = sorted({spec.begin_column, spec.end_column, *spec.own_columns} & set(df.columns))
    if reserved:
        raise InputError(f"{what} must not contain the table's own columns {reserved}", table=spec.table, ds=ds)
    refuse_bad_names(df.columns, spec, ds, what)
    refuse_unwritable_types(df, spec, ds, what)
    refuse_unstorable_types(df, spec, ds, what)
    refuse_map_keys(df, spec, ds, what)
    missing_keys = [k for k in spec.keys if k not in df.columns]
    if missing_keys:
        found = df.columns
        shown = (
            f"its columns: {found[:10]}{' ...' if len(found) > 10 else ''}"
            if found
            else "it has no columns: an empty file?"
        )
        raise InputError(f"{what} lacks key columns {missing_keys} ({shown})", table=spec.table, ds=ds)
