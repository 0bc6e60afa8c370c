"""Whether the day's rows are broadcast to the open partition or joined by a shuffle.

A broadcast avoids shuffling the (large) open partition, but must fit the driver's heap."""

from __future__ import annotations

import math
import os

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
    return int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory()) // BROADCAST_HEAP_SHARE


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
    jvm_schema = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(estimated.json())
    variable = math.ceil(variable_bytes_per_row) + 7 * len(observed) if observed else 0
    return 8 + 8 * len(schema.fields) + int(jvm_schema.defaultSize()) + variable


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
