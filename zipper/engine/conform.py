"""Make an input match the table's columns, or say exactly which columns do not."""

from __future__ import annotations

from zipper.errors import InputError
from zipper.spec.model import TableSpec

# (from, to) pairs that never lose information.
SAFE_WIDENINGS = {
    ("tinyint", "smallint"), ("tinyint", "int"), ("tinyint", "bigint"),
    ("smallint", "int"), ("smallint", "bigint"),
    ("int", "bigint"),
    ("float", "double"),
    ("tinyint", "double"), ("smallint", "double"), ("int", "double"),
}


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
    reserved = sorted({spec.begin_column, spec.end_column} & set(df.columns))
    if reserved:
        raise InputError(f"{what} must not contain the table's own columns {reserved}", table=spec.table, ds=ds)
    missing_keys = [k for k in spec.keys if k not in df.columns]
    if missing_keys:
        raise InputError(f"{what} lacks key columns {missing_keys}", table=spec.table, ds=ds)
    if isinstance(spec.track_columns, list):
        missing = [c for c in spec.track_columns if c not in df.columns]
        if missing:
            raise InputError(f"{what} lacks track_columns {missing}", table=spec.table, ds=ds)


def to_table_columns(df, table_columns: list[tuple[str, str]], spec: TableSpec, ds: str, what: str):
    """Select the table's columns in order, widening types safely; anything else is an error."""
    from pyspark.sql import functions as F

    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    want = dict(table_columns)
    extra = sorted(set(have) - set(want))
    missing = sorted(set(want) - set(have))
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"columns not in the table {extra}")
        if missing:
            parts.append(f"table columns missing {missing}")
        raise InputError(f"{what} does not match the table: " + "; ".join(parts), table=spec.table, ds=ds)
    selected = []
    for name, table_type in table_columns:
        input_type = have[name]
        if input_type == table_type:
            selected.append(F.col(name))
        elif (input_type, table_type) in SAFE_WIDENINGS or input_type == "void":
            selected.append(F.col(name).cast(table_type).alias(name))
        else:
            raise InputError(
                f"{what} column {name!r} has type {input_type}, the table has {table_type}",
                table=spec.table,
                ds=ds,
            )
    return df.select(*selected)


def tracked_columns(spec: TableSpec, columns: list[str]) -> list[str]:
    if spec.track_columns == "all":
        return [c for c in columns if c not in spec.keys]
    return list(spec.track_columns)
