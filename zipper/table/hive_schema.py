"""Spark's schema of a Hive table, as it keeps it in the table's parameters (HiveExternalCatalog).

Spark reads a Hive table's types from these parameters, not from the Hive columns, so a change
of columns writes both. Kept apart from the metastore calls (zipper.table.hive_catalog): this is
the format of the values, read and written the way Spark's own catalog does."""

from __future__ import annotations

import json

# Spark keeps a Hive table's Spark schema in these table properties, split into parts above the
# threshold, as the metastore's parameter values are limited in length.
SCHEMA_PARAM = "spark.sql.sources.schema"
SCHEMA_THRESHOLD_CONF = "spark.sql.sources.schemaStringLengthThreshold"
SCHEMA_THRESHOLD_DEFAULT = 4000
# Spark's schema keeps a char or varchar column as a string, its declared type in this metadata.
CHAR_VARCHAR_METADATA = "__CHAR_VARCHAR_TYPE_STRING"


def data_type(kind: str):
    from pyspark.sql import types as T  # on use: the thrift reader of the committed state loads no pyspark

    return T._parse_datatype_string(kind)


def stored_schema(params: dict[str, str]) -> dict | None:
    if SCHEMA_PARAM in params:
        return json.loads(params[SCHEMA_PARAM])
    parts = params.get(f"{SCHEMA_PARAM}.numParts")
    if parts is None:
        return None
    return json.loads("".join(params[f"{SCHEMA_PARAM}.part.{i}"] for i in range(int(parts))))


def schema_params(table, fields: list, threshold: int) -> dict[str, str]:
    """The table's parameters with Spark's schema made `fields` ((name, Spark DataType)) and the
    table's partition columns, as Spark's `alterTableDataSchema` writes them."""
    schema = {
        "type": "struct",
        "fields": [_schema_field(name, kind) for name, kind in fields] + _partition_fields(table),
    }
    params = {k: v for k, v in (table.parameters or {}).items() if not _is_schema_param(k)}
    params.update(_split_schema(json.dumps(schema, separators=(",", ":"), ensure_ascii=False), threshold))
    params[f"{SCHEMA_PARAM}.numPartCols"] = str(len(table.partitionKeys or []))
    for index, column in enumerate(table.partitionKeys or []):
        params[f"{SCHEMA_PARAM}.partCol.{index}"] = column.name
    return params


def hive_columns(fields: list, existing: list) -> list:
    """The Hive columns of `fields` ((name, Spark DataType)), each existing one's comment kept."""
    from pymetastore.hive_metastore.ttypes import FieldSchema  # on use: as zipper.core.hms

    comments = {column.name.lower(): column.comment for column in existing}
    return [FieldSchema(name, kind.simpleString(), comments.get(name.lower())) for name, kind in fields]


def places_kept(old: list, new: list) -> int:
    """How many leading places two Hive column lists give the same type (the metastore's positional
    type check compares the places both have)."""
    for place, (was, now) in enumerate(zip(old, new)):
        if was.type != now.type:
            return place
    return min(len(old), len(new))


def stored_columns(stored: dict, partition_names: set[str], existing: list) -> list:
    """The Hive columns of Spark's stored schema (`stored_schema`), partition columns left out, each
    existing one's comment kept."""
    from pyspark.sql.types import StructType  # on use: as data_type

    fields = [(f.name, f.dataType) for f in StructType.fromJson(stored).fields if f.name not in partition_names]
    return hive_columns(fields, existing)


def edited_columns(columns: list, edits: dict[str, str | None]) -> list:
    """Hive columns (FieldSchema) with `edits` applied: renamed in place, dropped ones left out."""
    kept = []
    for column in columns:
        name = edits.get(column.name, column.name)
        if name is not None:
            column.name = name
            kept.append(column)
    return kept


def _schema_field(name: str, kind) -> dict:
    from pyspark.sql import types as T  # on use: as data_type

    metadata = {}
    if isinstance(kind, (T.CharType, T.VarcharType)):  # as Spark writes them, for Spark 2 to read
        metadata, kind = {CHAR_VARCHAR_METADATA: kind.simpleString()}, T.StringType()
    return {"name": name, "type": kind.jsonValue(), "nullable": True, "metadata": metadata}


def _partition_fields(table) -> list[dict]:
    """The partition columns' fields of Spark's schema as the table holds it (else their types as
    Hive declares them)."""
    stored = stored_schema(table.parameters or {})
    by_name = {f["name"]: f for f in stored.get("fields", [])} if stored else {}
    return [
        by_name.get(column.name) or _schema_field(column.name, data_type(column.type))
        for column in table.partitionKeys or []
    ]


def _is_schema_param(key: str) -> bool:
    """Spark's CatalogTable.isLargeTableProp for the schema: its whole value, or a count and parts."""
    return key in (SCHEMA_PARAM, f"{SCHEMA_PARAM}.numParts") or key.startswith(f"{SCHEMA_PARAM}.part.")


def _split_schema(schema_json: str, threshold: int) -> dict[str, str]:
    """Spark's CatalogTable.splitLargeTableProp: one value up to `threshold` characters, else parts."""
    if len(schema_json) <= threshold:
        return {SCHEMA_PARAM: schema_json}
    parts = [schema_json[i : i + threshold] for i in range(0, len(schema_json), threshold)]
    return {f"{SCHEMA_PARAM}.numParts": str(len(parts))} | {
        f"{SCHEMA_PARAM}.part.{i}": part for i, part in enumerate(parts)
    }
