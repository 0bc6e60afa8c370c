"""`zipper merge` of a date already committed with the same input: a no-op told without Spark.

The table is committed in the suite's Spark session (its warehouse's metastore server); the
second merge runs in a fresh interpreter, which must say the no-op exactly as the Spark path does
and load neither pyspark nor py4j. A changed input still goes the Spark way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.jvm import spark_env
from tests.support import TableFixture, day
from zipper.core.reports import EXIT_NOT_NOOP, REPORT_PREFIX
from zipper.jobs import merge
from zipper.jobs.init import init_table

# The CLI's own entry point in a fresh interpreter; then which of Spark's modules it loaded.
MAIN = """
import sys
from zipper.cli.main import main
code = main(sys.argv[1:])
print("LOADED", [m for m in ("pyspark", "py4j") if m in sys.modules], flush=True)
sys.exit(code)
"""


@pytest.fixture
def committed(spark, tmp_path, unique_name):
    """A table with day 1 and day 2 committed."""
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    t.write_increment(spark, day(1), [(2, "bob", "Paris"), (3, "cid", None)])
    t.write_increment(spark, day(2), [(1, "ann", "Bergen")])
    init_table(spark, t.spec, None)
    for ds in (day(1), day(2)):
        assert merge.merge_date(spark, t.spec, ds).action == "merge"
    return t


def zipper_merge(t: TableFixture, warehouse, ds, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZIPPER_")}
    env.update(spark_env())
    env.update(ZIPPER_SPECS=str(t.specs), ZIPPER_WAREHOUSE=str(warehouse), ZIPPER_METASTORE="local")
    argv = ["merge", t.name, "--ds", ds.isoformat(), "--json-report", *flags]
    return subprocess.run(
        [sys.executable, "-c", MAIN, *argv], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def lines(result: subprocess.CompletedProcess) -> tuple[list[str], dict | None, str]:
    """(the printed lines but the report, the report, what it loaded)."""
    out = result.stdout.splitlines()
    loaded = next(line for line in out if line.startswith("LOADED"))
    reports = [json.loads(line[len(REPORT_PREFIX) :]) for line in out if line.startswith(REPORT_PREFIX)]
    rest = [line for line in out if not line.startswith((REPORT_PREFIX, "LOADED"))]
    return rest, (reports[0] if reports else None), loaded


def without_seconds(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "seconds"}


@pytest.mark.parametrize("flags", [(), ("--no-spark",)])
def test_a_committed_date_is_a_no_op_without_pyspark_or_py4j(spark, warehouse, committed, flags):
    # What the Spark path says of the same no-op (the merge's own plan, in the suite's session)
    for ds in (day(1), day(2)):
        spark_noop = merge.merge_date(spark, committed.spec, ds)
        assert spark_noop.action == "noop"
        # When the date is merged again, in a fresh interpreter
        result = zipper_merge(committed, warehouse, ds, *flags)
        # Then it exits 0 and prints the summary and report line the Spark path prints for it
        assert result.returncode == 0, result.stderr
        printed, report, loaded = lines(result)
        assert printed == [spark_noop.summary()]
        assert without_seconds(report) == without_seconds(spark_noop.report())
        # without Spark: neither pyspark nor py4j was ever imported
        assert loaded == "LOADED []"


def test_a_changed_input_still_goes_the_spark_way(spark, warehouse, committed):
    # Given day 1's input changed since it was committed
    committed.write_increment(spark, day(1), [(2, "bob", "Paris"), (3, "cid", "Lima")])
    # Then --no-spark does nothing and says so, with its own exit code
    told = zipper_merge(committed, warehouse, day(1), "--no-spark")
    assert told.returncode == EXIT_NOT_NOOP, told.stderr
    printed, report, loaded = lines(told)
    assert printed == [] and report is None and loaded == "LOADED []"
    assert "not a no-op told without Spark" in told.stderr
    # and the merge goes the Spark way: it replays the changed dates, as it always did
    result = zipper_merge(committed, warehouse, day(1))
    assert result.returncode == 0, result.stderr
    printed, report, loaded = lines(result)
    assert report["action"] == "replay" and "pyspark" in loaded
    assert "differs from what was committed" in report["message"]
    # A date after the last committed one is not a no-op either: it is merged (here, nothing to merge yet)
    assert zipper_merge(committed, warehouse, day(3), "--no-spark").returncode == EXIT_NOT_NOOP
