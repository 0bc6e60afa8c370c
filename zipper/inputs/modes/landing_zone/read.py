"""The consumed files read as one DataFrame: each file's columns from its footer, their types
reconciled, and each row's marker, file and position in it.

Row order: each row's position comes from Parquet itself (Spark's `_metadata.row_index`, the
row's index in its file, exact however the file is split into tasks), so rows apply in file
order, then row order, with no assumption about how Spark partitions the read."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow.parquet as pq
from pyspark.sql import functions as F

from zipper.core import fs
from zipper.core.errors import InputError, UnreadableInputError, summarize_failure
from zipper.core.paths import local_path
from zipper.inputs import sources
from zipper.inputs.column_checks import refuse_bad_names, refuse_unstorable_types
from zipper.inputs.column_types import float_and_double, reads_as
from zipper.inputs.reader import refuse_empty_parquet
from zipper.tablespec.model import TableSpec

MARKER = "__rowmarker__"  # `__rowMarker__`, as every input column, in lower case
MARKER_TEXT = "zipper__marker_text"  # the marker as written, for the message when it is no operation
HELPERS = (MARKER, MARKER_TEXT)  # with FILE and ROW: the columns read() adds to the data columns
FILE, ROW = "zipper_file", "zipper_row"


def read(spark, spec: TableSpec, located: sources.Input, ds: dt.date):
    """The consumed files as one DataFrame: every column any file has (types reconciled by safe
    widening), MARKER (0 for a file without one), FILE (its name) and ROW (its position in the
    file). Returns (rows, {file name: its columns}) so that callers can check what each file lacks."""
    where = {"table": spec.table, "ds": ds.isoformat()}
    # the zone, not the run's kept copy, names a file for the user
    origin = getattr(located.landing, "folder", None) or located.description
    refuse_empty_parquet(located.files, f"landing zone {origin}", numbered=True, **where)
    schemas, by_signature, spark_schemas = {}, {}, {}
    for f, signature in _signatures(located.files, where, origin).items():
        if signature not in by_signature:  # one Spark schema read per distinct file schema
            spark_schema = _spark_schema(spark, f.path, where, origin)
            by_signature[signature] = _fields(spark_schema, f.path, where)
            spark_schemas[json.dumps(by_signature[signature])] = spark_schema
        schemas[f.path] = by_signature[signature]
    union = _union_types(schemas, where, [k.lower() for k in spec.keys])
    refuse_bad_names(list(union), spec, ds.isoformat(), f"landing zone {origin}")
    parts = []
    for paths, fields in _groups(schemas).items():
        df = spark.read.schema(spark_schemas[json.dumps(fields)]).parquet(*paths)
        have = {lower: original for original, lower, _ in fields}
        selected = [
            (F.col(f"`{have[name]}`").cast(kind) if name in have else F.lit(None).cast(kind)).alias(name)
            for name, kind in union.items()
            if name != MARKER
        ]
        written = F.col(f"`{have[MARKER]}`") if MARKER in have else F.lit(0)
        # Spark's file metadata by its logical name: a data column `_metadata` hides `F.col("_metadata")`
        metadata = df.metadataColumn("_metadata")
        # try_cast: a marker written as text ('X') is reported as a bad marker, not a failed cast
        parts.append(
            df.select(
                *selected,
                written.try_cast("int").alias(MARKER),
                written.cast("string").alias(MARKER_TEXT),
                metadata["file_name"].alias(FILE),
                metadata["row_index"].alias(ROW),
            )
        )
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    refuse_unstorable_types(rows, spec, ds.isoformat(), f"landing zone {origin}")
    columns = {fs.name_of(path): [lower for _, lower, _ in fields] for path, fields in schemas.items()}
    return rows, columns


def _signatures(files: list[fs.FileInfo], where: dict, origin: str) -> dict:
    """Each file's schema as a comparable string, from its footer (pyarrow) when the files are
    local; remote files are each their own signature (Spark reads each one's schema)."""
    local = [local_path(f.path) for f in files]
    if not all(local):
        return {f: f.path for f in files}
    signatures = {}
    for f, path in zip(files, local):
        try:
            signatures[f] = pq.read_schema(path).remove_metadata().to_string(show_field_metadata=False)
        except Exception as exc:
            raise UnreadableInputError(
                f"cannot read landing-zone file {fs.name_of(f.path)} of {origin}:"
                f" {str(exc).strip().splitlines()[0][:300]}",
                **where,
            ) from None
    return signatures


def _spark_schema(spark, path: str, where: dict, origin: str):
    try:
        return spark.read.parquet(path).schema
    except Exception as exc:
        raise UnreadableInputError(
            f"cannot read landing-zone file {fs.name_of(path)} of {origin}: {summarize_failure(exc, 300)}", **where
        ) from None


def _fields(schema, path: str, where: dict) -> list[tuple[str, str, str]]:
    """(name, lower-case name, Spark type) of a Parquet file's columns, as Spark reads them."""
    names = [field.name.lower() for field in schema.fields]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise InputError(f"landing-zone file {path} has columns that differ only in case: {clashes}", **where)
    return [(field.name, field.name.lower(), field.dataType.simpleString()) for field in schema.fields]


def columns_of(spark, spec: TableSpec, located: sources.Input, ds: dt.date) -> list[tuple[str, str]]:
    """The data columns the consumed files hold (without the marker), for a table created from them."""
    if not located.files:
        return []
    rows, _ = read(spark, spec, located, ds)
    return [(f.name, f.dataType.simpleString()) for f in rows.schema.fields if f.name not in (*HELPERS, FILE, ROW)]


def _groups(schemas: dict[str, list]) -> dict[tuple[str, ...], list]:
    """Files with the same columns, read together."""
    groups: dict[str, list[str]] = {}
    fields_of = {}
    for path, fields in schemas.items():
        signature = json.dumps(fields)
        groups.setdefault(signature, []).append(path)
        fields_of[signature] = fields
    return {tuple(paths): fields_of[signature] for signature, paths in groups.items()}


def _union_types(schemas: dict[str, list], where: dict, keys: list[str]) -> dict[str, str]:
    """One type per column over the files, by safe widening; a key never mixes float and double
    (0.1 as a float and 0.1 as a double are different keys)."""
    union: dict[str, str] = {}
    seen_in: dict[str, str] = {}
    for path, fields in schemas.items():
        for _, name, kind in fields:
            if name in keys and float_and_double(union.get(name), kind):
                raise InputError(
                    f"landing-zone key column {name!r} has type {union[name]} in"
                    f" {fs.name_of(seen_in[name])} and {kind} in {fs.name_of(path)}; a float key and a"
                    " double key are different values",
                    **where,
                )
            if name not in union or union[name] == kind or reads_as(kind, union[name]):
                union.setdefault(name, kind)
                seen_in.setdefault(name, path)
            elif reads_as(union[name], kind) or union[name] == "void":
                union[name] = kind
            elif kind != "void":
                raise InputError(
                    f"landing-zone column {name!r} has type {union[name]} in {fs.name_of(seen_in[name])}"
                    f" and {kind} in {fs.name_of(path)}",
                    **where,
                )
    return union
