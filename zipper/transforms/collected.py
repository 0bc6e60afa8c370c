"""Collected rows as Spark SQL shows them: values written as text (messages, history, slice's
CSV and JSON) must read as the same query shows them in Spark SQL."""

from __future__ import annotations

import base64
import math


def _collected_type(data_type, via_text: bool = False):
    """The type a value is collected as: a decimal as Spark's text of it (plain notation at the
    column's scale, where Python's `str` of a Decimal writes `1.23E-8` or `0E-10`), a timestamp as
    its wall clock in the session's time zone (PySpark renders timestamps in the local time zone
    of the Python process, whatever the session says), a float as the double of Spark's text of
    it (`via_text`: first the text), 0.1 rather than the float's exact 0.10000000149011612,
    inside arrays, maps and structs too."""
    from pyspark.sql import types as T  # the CLI imports this module before it needs Spark

    if isinstance(data_type, T.DecimalType):
        return T.StringType()
    if isinstance(data_type, T.TimestampType):
        return T.TimestampNTZType()
    if isinstance(data_type, T.FloatType):
        return T.StringType() if via_text else T.DoubleType()
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_collected_type(data_type.elementType, via_text), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        return T.MapType(
            _collected_type(data_type.keyType, via_text),
            _collected_type(data_type.valueType, via_text),
            data_type.valueContainsNull,
        )
    if isinstance(data_type, T.StructType):
        return T.StructType(
            [T.StructField(f.name, _collected_type(f.dataType, via_text), f.nullable) for f in data_type.fields]
        )
    return data_type


def as_written(value):
    """A collected value as Spark writes it in text and `history --key` takes it back, where
    Python's own form differs: binary as base64 (not `b'\\xff'`), NaN and infinities by Spark's
    names (JSON has none); any other value as it is."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def as_collected(df):
    """`df` with decimals, timestamps and floats cast as `_collected_type` says, so rows collected
    to be written as text show the values Spark SQL shows for the same query (slice and history
    in CSV, JSON or a table, check's examples; slice's Parquet output keeps the types)."""
    columns = []
    for field in df.schema.fields:
        column, current = df[field.name], field.dataType
        for target in (_collected_type(field.dataType, via_text=True), _collected_type(field.dataType)):
            if target != current:
                column, current = column.cast(target), target
        columns.append(column.alias(field.name))
    return df.select(*columns)
