"""Parquet and ORC files' columns as Spark reads each file alone: from their footers, or Spark's
read of the one file's schema."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType

from zipper.core import fs
from zipper.core.errors import UnreadableInputError, read_failure
from zipper.core.paths import local_path


class OrcFileSchemas:
    """ORC files' columns as Spark reads each file alone: Spark's reading of the one file's
    schema (ORC's footer, Spark's conversion of its types), through the DataFrame API."""

    def __init__(self, spark):
        self._spark = spark

    def schema_of(self, path: str, what: str):
        """The file's StructType; a footer that cannot be read fails as reading the input `what`
        would (`UnreadableInputError`)."""
        try:
            return self._spark.read.orc(path).schema
        except fs.spark_failures() as exc:  # not ORC, gone, unreadable
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None


# Where Spark keeps a Parquet file's schema as Spark wrote it, which its reader takes over the
# Parquet types (ParquetFileFormat.readSchemaFromFooter).
SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"


class FileSchemas:
    """Parquet files' columns as Spark reads each file alone. As Spark does, the schema Spark
    wrote in the footer (read with pyarrow, no Spark job), else the Parquet types as Spark
    converts them (Spark's read of the one file's schema)."""

    def __init__(self, spark):
        self._spark = spark

    def schema_of(self, path: str, what: str):
        """The file's StructType; None when Spark has no type for one of its columns (nanosecond
        timestamps, ...), which fails a read only if it reads that column, as it says then. A
        footer that cannot be read fails as reading the input `what` would (`UnreadableInputError`)."""
        try:
            metadata = _footer(path)
        except fs.file_failures():  # not Parquet, gone, unreadable: Spark's read says why
            return self._spark_schema(path, what, unreadable=True)
        written = (metadata.metadata or {}).get(SPARK_SCHEMA_KEY.encode())
        if written:
            try:
                return StructType.fromJson(json.loads(written))
            except (ValueError, KeyError, TypeError):  # an older Spark's own notation: the Parquet types
                pass
        return self._spark_schema(path, what, unreadable=False)

    def _spark_schema(self, path: str, what: str, unreadable: bool):
        """The file's schema as Spark reads it; for a file whose footer reads (`unreadable`
        False), None when Spark fails on it (a Parquet type Spark does not read)."""
        try:
            return self._spark.read.parquet(path).schema
        except fs.spark_failures() as exc:
            if not unreadable:
                return None
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None


def _footer(path: str):
    """A Parquet file's footer (its metadata), through pyarrow's file systems."""
    import pyarrow.fs as pafs

    local = local_path(path)
    if local is not None:
        return pq.read_metadata(local)
    filesystem, inner = pafs.FileSystem.from_uri(path)
    with filesystem.open_input_file(inner) as handle:
        return pq.read_metadata(handle)


def nanosecond_columns(path: str) -> list[str]:
    """The top-level columns of a local Parquet file whose timestamps are in nanoseconds (pyarrow's
    default for pandas' timestamps), from its footer; empty when remote or unreadable."""
    local = local_path(path)
    if local is None:
        return []
    try:
        schema = pq.read_schema(local)
    except (OSError, pa.ArrowException):  # gone, not readable, or not Parquet (anything else is a bug)
        return []
    return [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]
