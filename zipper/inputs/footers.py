"""Parquet and ORC files' columns as Spark reads each file alone, from their footers: a few JVM
calls a file and no Spark job."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType

from zipper.core import fs
from zipper.core.errors import UnreadableInputError, read_failure
from zipper.core.paths import local_path


class OrcFileSchemas:
    """ORC files' columns as Spark reads each file alone, from its footer (ORC's reader, Spark's
    conversion of its types)."""

    def __init__(self, spark):
        self._path_class = fs.java_class(spark, "org.apache.hadoop.fs.Path")
        self._orc = fs.java_class(spark, "org.apache.orc.OrcFile")
        self._utils = fs.java_class(spark, "org.apache.spark.sql.execution.datasources.orc.OrcUtils")
        self._conf = spark._jsc.hadoopConfiguration()

    def schema_of(self, path: str, what: str):
        """The file's StructType; a footer that cannot be read fails as reading the input `what`
        would (`UnreadableInputError`)."""
        try:
            # options of its own: ORC's reader keeps the file's tail in them, which another file's would take
            reader = self._orc.createReader(self._path_class(path), self._orc.readerOptions(self._conf))
            try:
                kind = self._utils.toCatalystSchema(reader.getSchema())
            finally:
                reader.close()
        except fs.jvm_failures() as exc:  # not ORC, gone, unreadable
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None
        return StructType.fromJson(json.loads(kind.json()))


# Where Spark keeps a Parquet file's schema as Spark wrote it, which its reader takes over the
# Parquet types (ParquetFileFormat.readSchemaFromFooter).
SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"


class FileSchemas:
    """Parquet files' columns as Spark reads each file alone, from its footer: a few JVM calls a
    file and no Spark job (Spark's own reading of a file's schema runs one, a tenth of a second).
    As Spark does, the schema Spark wrote in the footer, else the Parquet types converted."""

    def __init__(self, spark):
        self._path_class = fs.java_class(spark, "org.apache.hadoop.fs.Path")
        self._reader = fs.java_class(spark, "org.apache.parquet.hadoop.ParquetFileReader")
        self._no_row_groups = fs.java_class(
            spark, "org.apache.parquet.format.converter.ParquetMetadataConverter"
        ).SKIP_ROW_GROUPS
        self._conf = spark._jsc.hadoopConfiguration()
        self._converter = fs.java_class(
            spark, "org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter"
        )(spark._jsparkSession.sessionState().conf())

    def schema_of(self, path: str, what: str):
        """The file's StructType; None when Spark has no type for one of its columns (nanosecond
        timestamps, ...), which fails a read only if it reads that column, as it says then. A
        footer that cannot be read fails as reading the input `what` would (`UnreadableInputError`)."""
        try:
            footer = self._reader.readFooter(self._conf, self._path_class(path), self._no_row_groups)
        except fs.jvm_failures() as exc:  # not Parquet, gone, unreadable
            reason = read_failure(exc, 300)[1]
            raise UnreadableInputError(f"cannot read file {fs.name_of(path)} of {what}: {reason}") from None
        metadata = footer.getFileMetaData()
        written = metadata.getKeyValueMetaData().get(SPARK_SCHEMA_KEY)
        if written:
            try:
                return StructType.fromJson(json.loads(written))
            except (ValueError, KeyError, TypeError):  # an older Spark's own notation: the Parquet types
                pass
        try:
            converted = self._converter.convert(metadata.getSchema())
        except fs.jvm_failures():  # a Parquet type Spark does not read
            return None
        return StructType.fromJson(json.loads(converted.json()))


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
