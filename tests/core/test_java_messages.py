"""The Java cause chain of a Spark failure, read from the stack trace text its exception carries."""

from __future__ import annotations

from zipper.core.errors import java_messages, read_failure

TRACE = (
    "org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file"
    " file:///d/a%20b.parquet.  SQLSTATE: KD001\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:1)\n"
    "Caused by: java.lang.RuntimeException: file:/d/a b.parquet is not a Parquet file\n"
    "second line\n"
    "\tat org.apache.parquet.hadoop.ParquetFileReader.readFooter(ParquetFileReader.java:1)\n"
    "\t... 12 more\n"
)


class Captured(Exception):  # as a classic session's PySpark error keeps the trace
    _stackTrace = TRACE


class FromConnect(Exception):  # as a Spark Connect client's: the first line names the class alone
    _stacktrace = "org.apache.spark.SparkException\n\tat x.y(z.java:1)\nCaused by: java.io.IOException: gone\n"

    def getMessage(self):
        return "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:/d/c. SQLSTATE: KD001"


def test_the_cause_chain_is_read_from_the_trace_text():
    assert java_messages(Captured()) == [
        TRACE.split("\n")[0],
        "java.lang.RuntimeException: file:/d/a b.parquet is not a Parquet file\nsecond line",
    ]
    assert read_failure(Captured()) == ("/d/a b.parquet", "it is not a Parquet file")
    assert java_messages(FromConnect()) == [
        "org.apache.spark.SparkException: " + FromConnect().getMessage(),
        "java.io.IOException: gone",
    ]
    assert java_messages(ValueError("plain")) == []
