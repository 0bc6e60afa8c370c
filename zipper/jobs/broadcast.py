"""Whether the day's rows are broadcast to the open partition or joined by a shuffle.

A broadcast avoids shuffling the (large) open partition, but must fit the driver's heap."""

from __future__ import annotations

import math
import os
import re

from zipper.inputs import conform, metrics


def broadcast_max_rows() -> int:
    return int(os.environ.get("ZIPPER_BROADCAST_MAX_ROWS", "2000000"))


# Share of the driver's heap the day's rows may take, as Spark lays them out, to be broadcast.
# Building a broadcast holds them several times over (collected rows, hash table, serialized
# blocks); with 1 GB, an increment of 1.8M seven-column rows (about 270 MB so estimated) failed
# with "Not enough memory to build and broadcast the table" while 600,000 rows (90 MB) passed.
BROADCAST_HEAP_SHARE = 8


def broadcast_max_bytes(spark) -> int:
    configured = os.environ.get("ZIPPER_BROADCAST_MAX_BYTES")
    if configured:
        return int(configured)
    return driver_memory_bytes(spark) // BROADCAST_HEAP_SHARE


_SIZE_UNITS = {"": 1 << 20, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def driver_memory_bytes(spark) -> int:
    """The driver's heap as the session's conf sets it (`spark.driver.memory`, Spark's default
    1g): a size in Spark's spelling, `512m`, `2g`, a bare number in MiB. Read from the conf,
    not the JVM, so a Spark Connect client can ask it."""
    text = str(spark.conf.get("spark.driver.memory", "1g")).strip().lower()
    number, unit = re.fullmatch(r"(\d+)\s*([bkmgtp]?)b?", text).groups()
    return int(number) * _SIZE_UNITS[unit]


def estimated_row_bytes(
    spark, columns: list[tuple[str, str]], begin_column: str, variable_bytes_per_row: float | None = None
) -> int:
    """Bytes a row of the open partition takes in Spark's row format, counted generously: an
    8-byte slot per column plus variable-length data. Strings and binaries count as observed
    (`variable_bytes_per_row`, plus up to 7 bytes of padding each) when the input pass measured
    them, else as Spark's own estimate (20 bytes, far too little for long texts)."""
    schema = conform.struct_type(columns, begin_column)
    observed = set()
    if variable_bytes_per_row is not None:
        observed = set(metrics.variable_columns(schema, [c for c, _ in columns]))
    estimated = type(schema)([f for f in schema.fields if f.name not in observed])
    variable = math.ceil(variable_bytes_per_row) + 7 * len(observed) if observed else 0
    return 8 + 8 * len(schema.fields) + default_size(estimated) + variable


def default_size(kind) -> int:
    """Spark's own estimate of a value's bytes (`DataType.defaultSize`), in Python."""
    from pyspark.sql import types as T

    if isinstance(kind, T.StructType):
        return sum(default_size(f.dataType) for f in kind.fields)
    if isinstance(kind, T.ArrayType):
        return default_size(kind.elementType)
    if isinstance(kind, T.MapType):
        return default_size(kind.keyType) + default_size(kind.valueType)
    if isinstance(kind, T.DecimalType):
        return 8 if kind.precision <= 18 else 16
    if isinstance(kind, (T.CharType, T.VarcharType)):
        return kind.length
    sizes = {
        T.BooleanType: 1,
        T.ByteType: 1,
        T.ShortType: 2,
        T.IntegerType: 4,
        T.LongType: 8,
        T.FloatType: 4,
        T.DoubleType: 8,
        T.DateType: 4,
        T.TimestampType: 8,
        T.TimestampNTZType: 8,
        T.StringType: 20,
        T.BinaryType: 100,
        T.NullType: 1,
        T.CalendarIntervalType: 16,
        T.DayTimeIntervalType: 8,
        T.YearMonthIntervalType: 4,
        T.VariantType: 2048,
    }
    return next((size for cls, size in sizes.items() if isinstance(kind, cls)), 8)


def broadcasts(
    spark, rows: int, columns: list[tuple[str, str]], begin_column: str, variable_bytes_per_row: float | None = None
) -> bool:
    """Whether the day's rows are broadcast (a lookup per open row) rather than joined by a
    shuffle of the open partition: up to ZIPPER_BROADCAST_MAX_ROWS rows, and only while they
    fit the driver's heap (ZIPPER_BROADCAST_MAX_BYTES, default an eighth of it)."""
    if rows > broadcast_max_rows():
        return False
    row_bytes = estimated_row_bytes(spark, columns, begin_column, variable_bytes_per_row)
    return rows * row_bytes <= broadcast_max_bytes(spark)
