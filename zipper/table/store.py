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

from zipper.core import faults, fs, layout
from zipper.table import catalog, file_format


def write_slots(rows: DataFrame, run_root: str, append: bool = False) -> None:
    """Write `rows` under `run_root`, one `zipper_slot=<slot>/` directory per value of the slot
    column (a slot without a row gets no directory). `append`: the run's directory already holds
    files of this run (the daily merge writes its slots in two jobs)."""
    faults.stalled(rows).write.mode("append" if append else "error").partitionBy(layout.SLOT).parquet(run_root)


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


class TableRows:
    """The table's own rows and a run's scratch, as a day's inputs read and write them: the jobs
    hand one to the source modes with the day's request, so that the inputs name no directory of
    the table (they do not import the store; they are given this).

    `state`: the table's state before the date (`table.state.TableState`); `run_root`: the run's
    directory, where the change set is written."""

    def __init__(self, spark, spec, state, run_root: str):
        self._spark, self._spec, self._state, self._run_root = spark, spec, state, run_root

    @property
    def run_root(self) -> str:
        """The run's directory: where a mode keeps a copy of what it read (a landing zone's files)."""
        return self._run_root

    @property
    def has_open_partition(self) -> bool:
        return getattr(self._state, "open_partition", None) is not None

    @property
    def has_open_rows(self) -> bool:
        return self.has_open_partition and bool(self._state.open_rows)

    def open(self, schema) -> DataFrame:
        """The open partition's rows, as `schema`."""
        return read_rows(self._spark, schema, self._state.open_partition.location)

    def closed_reachable(self, schema, moment) -> DataFrame | None:
        """The rows of the closed partitions a change at `moment` can reach (`TableState.reachable_from`),
        as `schema`; None when there is none."""
        reachable = [p.location for p in self._state.reachable_from(self._spec, moment)]
        return read_rows(self._spark, schema, *reachable) if reachable else None

    def rows_in(self, directory: str) -> int:
        return rows_in(directory)

    def kept(self, rows: DataFrame, name: str) -> tuple[DataFrame, str]:
        """`rows` written under the run's directory (`name`) and read back: later steps read them
        several times. Returns the rows read back and their directory."""
        directory = f"{self._run_root}/{name}"
        schema = rows.schema
        write_rows(rows, directory)
        fs.mkdirs(directory)
        return read_rows(self._spark, schema, directory), directory


def rows_in(directory: str) -> int:
    """Rows in the files of a directory the table's runs wrote, from their Parquet footers (no
    Spark job); none for a directory that is not there."""
    return file_format.rows_in_files(directory)


def largest(spark, directory: str, column: str) -> str | None:
    """The largest value of a column in a directory's files: from the footers' statistics, else
    (files not local, or without statistics) a small Spark read."""
    found = file_format.largest_in_footers(directory, column)
    if found is not file_format.UNKNOWN:
        return found
    return spark.read.parquet(directory).agg(F.max(column)).first()[0]


def other_table(spark, name: str) -> DataFrame:
    """The rows of a table zipper did not make (the one `zipper adopt` takes over), as Spark reads
    it; only read."""
    return spark.table(name)


def read_written(spark, *directories: str) -> DataFrame:
    """The rows of Parquet files the table's runs wrote as side tables (an erasure's key hashes, a
    correction's removed versions, a dry run's keys), with the columns their files have."""
    return spark.read.parquet(*directories)


def whole_table(spark, spec) -> DataFrame:
    """The table as the metastore describes it: every partition, its end column among the columns."""
    return spark.table(spec.table)
