"""The table's rows as files: every Parquet write of a run, and the reads of a table's rows.

Jobs hand DataFrames here instead of spelling writers themselves, so that the table's file format
is one module. Every write goes to a run's own directory (`core/layout.py`), which no reader sees
until a publish points a partition into it; a write therefore never replaces files (Spark's
default mode, `error`, the spelling a Spark Connect client knows too), except where a run adds
rows to its own slots (`append`)."""

from __future__ import annotations

import secrets

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from zipper.core import layout
from zipper.table import catalog


def write_slots(rows: DataFrame, run_root: str, append: bool = False) -> None:
    """Write `rows` under `run_root`, one `zipper_slot=<slot>/` directory per value of the slot
    column (a slot without a row gets no directory). `append`: the run's directory already holds
    files of this run (the daily merge writes its slots in two jobs)."""
    rows.write.mode("append" if append else "error").partitionBy(layout.SLOT).parquet(run_root)


def write_rows(rows: DataFrame, directory: str, single_file: bool = False) -> None:
    """Write `rows` into a new `directory`. `single_file`: one file, for small side tables (a
    correction's removed versions' dates, an erasure's key hashes) that would otherwise be one
    tiny file per task."""
    (rows.coalesce(1) if single_file else rows).write.parquet(directory)


def write_by(rows: DataFrame, directory: str, column: str) -> None:
    """Write `rows` into a new `directory`, one `<column>=<value>/` directory per value (a value
    without a row gets none)."""
    rows.write.partitionBy(column).parquet(directory)


def write_counted(rows: DataFrame, directory: str, name: str) -> Observation:
    """Write `rows` into a new `directory`, counting them as they are written, in the same job.
    Returns the Observation whose `rows` metric is the count (`inputs.metrics.observed_metrics`
    reads it), so that an audit can compare the rows read with the footers' count of those
    written. `name`: what the observation is named after (with a random suffix)."""
    observation = Observation(f"zipper_{name}_{secrets.token_hex(6)}")
    write_rows(rows.observe(observation, F.count(F.lit(1)).alias("rows")), directory)
    return observation


def read_rows(spark, schema, *directories: str) -> DataFrame:
    """The rows of the Parquet files in `directories`, read with the table's `schema` (not the
    files' own, so that a directory with no file reads as no rows, with the columns it should
    have)."""
    return spark.read.schema(schema).parquet(*directories)


def table_rows(spark, spec, schema) -> DataFrame:
    """The table's rows as `schema`'s columns (a column the table lacks yet is NULL), with the end
    column: read through the metastore, so a filter on the end column reads only its partitions."""
    catalog.refresh(spark, spec)
    table = spark.table(spec.table)
    present = set(table.columns)
    columns = [
        (F.col(f.name) if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name) for f in schema.fields
    ]
    return table.select(*columns, F.col(spec.end_column))
