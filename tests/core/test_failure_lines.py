"""How a Java failure becomes one line: the messages Spark 4 gives, as they arrive in the chain."""

from __future__ import annotations

import pytest

from zipper.core import errors

FOOTER = (
    "org.apache.spark.SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while reading"
    " file file:/data/in%20put/ds=2024-01-03/part-0.parquet. Could not read footer. Please ensure that the file"
    " is in either ORC or Parquet format."
)
NOT_PARQUET = (
    "java.lang.RuntimeException: file:/data/in put/ds=2024-01-03/part-0.parquet is not a Parquet file."
    " Expected magic number at tail, but found [98, 97, 103, 101]"
)
NO_HINT = (
    "org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file"
    " file:///data/inc/ds=2024-01-04/part-0.csv.  SQLSTATE: KD001"
)
JOB_ABORTED = (
    "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, most"
    " recent failure: Lost task 0.0 in stage 3.0 (TID 4) (192.0.2.2 executor driver):"
    " org.apache.spark.SparkException: Exception thrown in awaitResult: \n\tat org.apache.spark.util."
    "SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:70)"
)
AWAIT = "org.apache.spark.SparkException: Exception thrown in awaitResult: "
CHECKSUM = (
    "org.apache.hadoop.fs.ChecksumException: Checksum error: file:/data/inc/ds=2024-01-04/part-1.orc at 0"
    " exp: 158879734 got: -130971610"
)
ORC_FOOTER = (
    "org.apache.spark.SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while"
    " reading file file:/data/inc/ds=2024-01-04/part-1.orc. Could not read footer."
)
NOT_ORC = (
    "org.apache.orc.FileFormatException: Malformed ORC file file:/data/inc/ds=2024-01-04/part-1.orc."
    " Invalid postscript length 0"
)
MALFORMED = "org.apache.spark.SparkRuntimeException: [MALFORMED_RECORD_IN_PARSING] Malformed CSV record: 7,n7,27,extra SQLSTATE: 22023"


@pytest.fixture
def chain(monkeypatch):
    def with_messages(*messages):
        monkeypatch.setattr(errors, "java_messages", lambda exc: list(messages))
        return RuntimeError("py4j")

    return with_messages


def test_a_file_spark_cannot_read_is_its_local_path_and_the_root_cause_without_repeating_it(chain):
    exc = chain(FOOTER, NOT_PARQUET)
    assert errors.summarize_failure(exc) == (
        "cannot read file /data/in put/ds=2024-01-03/part-0.parquet: it is not a"
        " Parquet file. Expected magic number at tail, but found [98, 97, 103, 101]"
    )
    assert errors.failed_file(exc) == "file:/data/in put/ds=2024-01-03/part-0.parquet"
    assert errors.summarize_failure(chain(NO_HINT, MALFORMED)) == (
        "cannot read file /data/inc/ds=2024-01-04/part-0.csv: Malformed CSV record: 7,n7,27,extra"
    )


def test_other_failures_are_the_message_and_its_root_cause():
    exc = RuntimeError("first line\nsecond line")
    assert errors.summarize_failure(exc) == "first line"
    assert errors.read_failure(exc) == (None, "first line")


def test_a_long_line_is_cut_at_a_word_and_says_so():
    assert errors.clip("one two three four", 12) == "one two ..."
    assert errors.clip("one two", 12) == "one two"
    assert len(errors.clip("x" * 50, 12)) == 12


def test_a_job_abort_is_left_out_for_the_failure_under_it(chain):
    """ORC reads several files' schemas in a job: the failure arrives wrapped in its abort."""
    assert errors.read_failure(chain(JOB_ABORTED, AWAIT, CHECKSUM)) == (
        None,
        "ChecksumException: Checksum error: file:/data/inc/ds=2024-01-04/part-1.orc at 0 exp: 158879734 got:"
        " -130971610",
    )
    assert errors.summarize_failure(chain(JOB_ABORTED, AWAIT, ORC_FOOTER, NOT_ORC)) == (
        "cannot read file /data/inc/ds=2024-01-04/part-1.orc: FileFormatException: Malformed ORC file"
        " part-1.orc. Invalid postscript length 0"
    )  # the path the line names already, as the file's name
    assert errors.summarize_failure(chain(JOB_ABORTED)).startswith("SparkException: Job aborted")  # nothing under it
