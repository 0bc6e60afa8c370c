"""The merge task's decision under spark-submit (a `spark` connection): a date already committed with the
same input ends with the no-op's report from a plain Python pre-check (`zipper merge ... --no-spark`, a real
subprocess), and spark-submit is never reached; otherwise spark-submit runs as before. (A Spark Connect
client's job makes that check itself: test_operators.) The table is committed in
the suite's Spark session, on its warehouse's metastore server. Given / When / Then."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from tests.airflow.support import outlet_events, task_log
from tests.support import TableFixture, day
from zipper.airflow.compat import make_asset
from zipper.airflow.operators import LABEL, ZipperMergeOperator
from zipper.core.reports import REPORT_PREFIX
from zipper.jobs import merge
from zipper.jobs.init import init_table


@pytest.fixture(autouse=True)
def spark_submit_connection(monkeypatch, warehouse):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "yarn"}))
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("ZIPPER_METASTORE", "local")


@pytest.fixture
def committed(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    t.write_increment(spark, day(1), [(1, "ann", "Bergen"), (2, "bob", None)])
    init_table(spark, t.spec, None)
    assert merge.merge_date(spark, t.spec, day(1)).action == "merge"
    return t


def merge_task(t: TableFixture, ds) -> tuple[ZipperMergeOperator, dict]:
    """The DAG's merge task for `ds`, its templates rendered as Airflow renders them before `execute`."""
    asset = make_asset(f"hive://dw/{t.name}", name=t.table)
    operator = ZipperMergeOperator(
        task_id="merge", table_name=t.name, table=t.table, specs_dir=str(t.specs), outlets=[asset]
    )
    operator.application_args = [arg.replace("{{ ds }}", ds.isoformat()) for arg in operator.application_args]
    context = {
        "dag": SimpleNamespace(dag_id=f"zipper_{t.name}"),
        "ds": ds.isoformat(),
        "params": {},
        "outlet_events": outlet_events(),
    }
    return operator, context


@pytest.fixture
def spark_submits(monkeypatch) -> list[list[str]]:
    """The spark-submit runs the task reached (none are started: the hook is where one would be)."""
    reached = []

    def spark_submit(self, context):  # the provider's execute: builds the hook, which runs spark-submit
        reached.append(list(self.application_args))
        self._hook = self._get_hook()

    def no_hook(self):
        raise AssertionError("the spark-submit hook was built")

    monkeypatch.setattr(SparkSubmitOperator, "execute", spark_submit)
    monkeypatch.setattr(ZipperMergeOperator, "_get_hook", no_hook)
    return reached


def test_a_committed_date_ends_with_the_no_op_report_and_no_spark_submit(spark, committed, spark_submits):
    # Given day 1 committed with the input it has now
    expected = merge.merge_date(spark, committed.spec, day(1))
    assert expected.action == "noop"
    # When the merge task of day 1 runs
    operator, context = merge_task(committed, day(1))
    assert operator.noop_check_command()[-7:] == [
        "zipper.cli.main", "merge", committed.name, "--ds", day(1).isoformat(), "--json-report", "--no-spark"
    ]  # fmt: skip
    with task_log() as logged:
        reports = operator.execute(context)
    # Then its XCom is the no-op's report, for the audit task, and spark-submit was never reached
    assert spark_submits == [] and operator._hook is None
    assert [r["action"] for r in reports] == ["noop"]
    assert reports[0]["summary"] == expected.summary() and reports[0]["table"] == committed.table
    # the table did not change: no asset event (Airflow emits one per outlet of the task: there is none left)
    assert operator.outlets == [] and list(context["outlet_events"]) == []
    assert context[LABEL] == f"{day(1)}: no-op (already committed with the same input)"
    # the pre-check's summary line is in the task log once, its report line not at all
    messages = [message for _, message in logged]
    assert sum(expected.summary().split(";")[0] in m for m in messages) == 1, messages
    assert not [m for m in messages if REPORT_PREFIX in m]


def test_a_date_to_merge_goes_to_spark_submit(committed, spark_submits, monkeypatch):
    # Given day 2 not committed yet (its input is not even there: spark-submit's merge says so)
    operator, context = merge_task(committed, day(2))
    job = SimpleNamespace(reports=[{"action": "merge"}])  # the hook, with what the job would report
    monkeypatch.setattr(ZipperMergeOperator, "_get_hook", lambda self: job)
    # When the task runs, the pre-check answers "not a no-op" and spark-submit runs the job
    assert operator.execute(context) == [{"action": "merge"}]
    assert spark_submits == [["merge", committed.name, "--ds", day(2).isoformat(), "--json-report"]]


def test_on_the_retired_embedded_metastore_there_is_no_pre_check(committed, spark_submits, monkeypatch):
    """The job refuses ZIPPER_METASTORE=embedded in its one line; the pre-check leaves that to it."""
    monkeypatch.setenv("ZIPPER_METASTORE", "embedded")
    operator, context = merge_task(committed, day(1))
    assert operator.committed_noop() is None


def test_with_the_check_turned_off_a_committed_date_goes_to_spark_submit(committed, spark_submits, monkeypatch):
    # Given day 1 committed with the input it has now (the pre-check would end its task), and the check turned off
    monkeypatch.setenv("ZIPPER_NOOP_CHECK", "off")
    pre_checks, real_run = [], subprocess.run

    def run(command, *args, **kwargs):
        if "--no-spark" in command:
            pre_checks.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    operator, context = merge_task(committed, day(1))
    job = SimpleNamespace(reports=[{"action": "noop"}])  # the hook, with what the job would report
    monkeypatch.setattr(ZipperMergeOperator, "_get_hook", lambda self: job)
    # When the merge task of day 1 runs
    reports = operator.execute(context)
    # Then no pre-check subprocess ran, and spark-submit ran the job, as before the check
    assert pre_checks == []
    assert spark_submits == [["merge", committed.name, "--ds", day(1).isoformat(), "--json-report"]]
    assert reports == [{"action": "noop"}]
