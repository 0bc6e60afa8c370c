"""How the tasks run their job, per connection rule: as Spark Connect clients (the default: the warehouse's
own server; real jobs below), or through spark-submit (a `spark` connection); report parsing; trigger params.

Connections come from AIRFLOW_CONN_* environment variables (no database). Given / When / Then."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pyspark
import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from tests.airflow.support import DATES, outlet_events, task_log, write_sample, write_spec
from tests.cli.helpers import write_parquet
from tests.jvm import QUICK_JIT, spark_env
from zipper.airflow.compat import AirflowException, AirflowFailException, make_asset
from zipper.airflow.hooks import ZipperSparkConnectHook, ZipperSparkSubmitHook, runs_on_spark_connect
from zipper.airflow.lineage import hive_namespace, run_datasets
from zipper.airflow.operators import (
    LABEL,
    ZipperAuditOperator,
    ZipperCorrectOperator,
    ZipperMergeOperator,
    ZipperRerunOperator,
)
from zipper.airflow.run_reports import describe
from zipper.airflow.sensors import next_logical_dates
from zipper.airflow.trigger_params import rerun_args
from zipper.core.reports import REPORT_PREFIX
from zipper.jobs.result import RunResult
from zipper.runtime import metastore, spark_server
from zipper.runtime.settings import LOG_CONFIG, LOG_FILE_ENV, SessionSettings, new_log_file
from zipper.tablespec.loader import load_spec_file

APP = "/repo/spark_jobs/zipper_job.py"
PYSPARK_HOME = str(Path(pyspark.__file__).parent)
ARGS = ["merge", "dim", "--ds", "2024-01-02", "--json-report"]


@pytest.fixture(autouse=True)
def spark_default_is_yarn(monkeypatch):
    """Airflow 2 creates `spark_default` pointing at yarn; zipper must never fall back to it."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "yarn"}))
    monkeypatch.delenv("AIRFLOW_CONN_ZIPPER_SPARK", raising=False)
    monkeypatch.delenv("ZIPPER_SPARK_MASTER", raising=False)
    for key in ("ZIPPER_SPARK_RUNNER", "ZIPPER_SPARK_REMOTE", "ZIPPER_METASTORE"):
        monkeypatch.delenv(key, raising=False)


def command(**hook_args) -> tuple[ZipperSparkSubmitHook, list[str]]:
    hook = ZipperSparkSubmitHook(
        conn_id="zipper_spark",
        conf={"spark.sql.session.timeZone": "UTC"},
        application_args=ARGS,
        name="zipper-merge-dim",
        **hook_args,
    )
    return hook, hook._build_spark_submit_command(APP)


def test_without_the_connection_the_job_runs_on_the_embedded_default():
    # Given no zipper_spark connection (only spark_default, at yarn)
    # When the command is built
    hook, argv = command()
    # Then: local[*], the spark-submit beside this Python, this Python for driver and workers
    assert argv == [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        "local[*]",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "--name",
        "zipper-merge-dim",
        APP,
        *ARGS,
    ]
    assert hook.embedded
    assert hook.local_environment() == {
        "SPARK_HOME": PYSPARK_HOME,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


def test_zipper_spark_master_overrides_the_embedded_master(monkeypatch):
    monkeypatch.setenv("ZIPPER_SPARK_MASTER", "local[2]")
    _, argv = command()
    assert argv[1:3] == ["--master", "local[2]"]


def test_a_standalone_connection_is_used_unchanged(monkeypatch):
    # Given a zipper_spark connection to a Spark standalone master, client mode
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", "spark://spark-master:7077?deploy-mode=client")
    hook, argv = command()
    # Then its master and deploy mode; executors' Python is the cluster's business
    assert argv[1:3] == ["--master", "spark://spark-master:7077"]
    assert argv[-len(ARGS) - 3 : -len(ARGS) - 1] == ["--deploy-mode", "client"]
    assert not hook.embedded and hook.local_environment() == {
        "SPARK_HOME": PYSPARK_HOME,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def test_a_yarn_cluster_connection_is_used_unchanged(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_ZIPPER_SPARK",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster", "queue": "etl"}}),
    )
    hook, argv = command(env_vars={"ZIPPER_SPECS": "/specs"})
    assert argv[1:3] == ["--master", "yarn"]
    assert "spark.yarn.appMasterEnv.ZIPPER_SPECS=/specs" in argv
    assert argv[argv.index("--queue") + 1] == "etl" and argv[argv.index("--deploy-mode") + 1] == "cluster"
    assert hook.local_environment() == {"SPARK_HOME": PYSPARK_HOME}  # the driver runs on the cluster


def test_an_external_metastore_in_client_mode_gives_the_driver_zippers_log_configuration(monkeypatch):
    # Given ZIPPER_METASTORE=external and the worker's own SPARK_SUBMIT_OPTS
    monkeypatch.setenv("ZIPPER_METASTORE", "external")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")
    # Then client mode (no connection, or a standalone one) starts the driver with zipper's log
    # configuration before the worker's options, and no --conf replaces Spark's driver options
    hook, argv = command()
    assert hook.submit_environment()["SPARK_SUBMIT_OPTS"] == f"-Dlog4j.configurationFile={LOG_CONFIG} -Xss4m"
    assert not [arg for arg in argv if arg.startswith("spark.driver.")]
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", "spark://spark-master:7077?deploy-mode=client")
    assert command()[0].submit_environment()["SPARK_SUBMIT_OPTS"].startswith("-Dlog4j.configurationFile=")
    # but cluster mode leaves the driver's logging, and the submitting JVM's, to the cluster
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", "spark://spark-master:7077?deploy-mode=cluster")
    assert "SPARK_SUBMIT_OPTS" not in command()[0].submit_environment()


# Run by spark-submit: asks the driver's JVM which log configuration it loaded (no Spark application).
LOG_CONFIG_JOB = f"""import json
from pyspark import SparkContext
SparkContext._ensure_initialized()
context = SparkContext._jvm.org.apache.logging.log4j.LogManager.getContext(False)
source = context.getConfiguration().getConfigurationSource()
print({REPORT_PREFIX!r} + json.dumps({{"log_config": source.getLocation()}}))
"""


def test_a_log_configuration_in_the_spark_conf_wins_over_zippers(monkeypatch, tmp_path):
    """Through Spark's launcher and log4j: a user's log configuration in spark.driver.extraJavaOptions,
    by either of log4j's names, is the one the driver loads; without one, zipper's."""
    job = tmp_path / "log_config.py"
    job.write_text(LOG_CONFIG_JOB)
    own = tmp_path / "own-log4j2.properties"
    own.write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
    )
    monkeypatch.setenv("ZIPPER_METASTORE", "external")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", QUICK_JIT)
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP"):
        monkeypatch.delenv(key, raising=False)  # the hook sets them in this process; restored afterwards

    def loaded(conf: dict[str, str]) -> str:
        hook = ZipperSparkSubmitHook(conn_id="zipper_spark", conf=conf, name="log-config")
        hook.submit(str(job))
        return hook.reports[-1]["log_config"]

    assert loaded({}) == str(LOG_CONFIG)
    for name in ("log4j.configurationFile", "log4j2.configurationFile"):
        assert loaded({"spark.driver.extraJavaOptions": f"-D{name}=file:{own}"}) == str(own)


def test_report_lines_are_collected_and_not_logged_again():
    """The task log showed each result twice: the job's summary line, then the report line carrying it."""
    hook, _ = command()
    report = {"table": "dw.dim", "ds": "2024-01-02", "action": "merge", "counts": {"new": 1}, "summary": "s"}
    lines = ["some spark output\n", "s\n", REPORT_PREFIX + json.dumps(report) + "\n", f"{REPORT_PREFIX}{{not json\n"]
    with task_log() as logged:
        hook._process_spark_submit_log(iter(lines))
    assert hook.reports == [report]
    assert [message for level, message in logged if level == "info"] == ["some spark output", "s"]
    assert [level for level, message in logged if REPORT_PREFIX in message] == ["warning"]  # the unreadable one
    assert describe(report) == "s | run - | counts: new=1"


def test_the_error_line_is_logged_as_an_error():
    hook, _ = command()
    with task_log() as logged:
        hook._process_spark_submit_log(iter(["25/01/01 INFO Spark\n", f"zipper: error: {REASON}\n"]))
    assert ("error", f"zipper: error: {REASON}") in logged
    assert ("info", f"zipper: error: {REASON}") not in logged and hook.failure == REASON


def counts(open_after: int) -> dict:
    """A date's counts, as the daily merge reports them."""
    return {"new": 1, "changed": 1, "unchanged": 0, "closed": 1, "open_after": open_after}


def replay_report(first_open: int = 4) -> dict:
    """What `zipper merge` of a past date whose input changed reports (jobs.result), with its replayed dates."""
    dates = [
        RunResult("dw.dim", day, "merge", counts=counts(n))
        for day, n in (("2024-01-02", first_open), ("2024-01-03", first_open + 1))
    ]
    own = {**counts(first_open), "dates_replayed": 2}
    result = RunResult(
        "dw.dim", "2024-01-02", "replay", "replayed 2024-01-02..2024-01-03", own, run_id="r1", replayed=dates
    )
    return result.report()


def test_a_replay_gives_one_report_per_replayed_date_then_its_own():
    hook, _ = command()
    report = replay_report()
    hook._process_spark_submit_log(iter([REPORT_PREFIX + json.dumps(report) + "\n"]))
    assert [(r["ds"], r["action"]) for r in hook.reports] == [
        ("2024-01-02", "merge"),
        ("2024-01-03", "merge"),
        ("2024-01-02", "replay"),
    ]
    assert "replayed" not in hook.reports[-1] and hook.reports[1]["counts"]["open_after"] == 5


def test_the_line_a_failed_job_ends_with_is_kept_for_the_task_failure():
    hook, _ = command()
    assert hook.failure is None
    reason = "dw.dim 2024-01-02: the same key twice in the increment: user_id=1"
    lines = [
        "zipper: no class data sharing archive; Spark drivers start without it\n",
        "25/01/01 ERROR Executor: Exception in task 0.0\n",
        "\tat org.apache.spark.Foo(Foo.scala:1)\n",
        f"zipper: error: {reason}\n",
        "25/01/01 INFO ShutdownHookManager: Shutdown hook called\n",
    ]
    hook._process_spark_submit_log(iter(lines))
    assert hook.failure == reason and hook.reports == []
    assert not hook.final_failure  # no report line: a Spark failure, say; retried as before


REASON = "dw.dim 2024-01-02: increment /data/ds=2024-01-02 has keys ['id'] more than once: 1"


def failed_job_lines(final: bool) -> list[str]:
    """What a job run with --json-report prints when it fails: its failure report, then the error line."""
    report = {"failed": True, "final": final, "error": REASON}
    return [
        "25/01/01 INFO SparkContext: Running Spark version 4.2.0\n",
        REPORT_PREFIX + json.dumps(report) + "\n",
        f"zipper: error: {REASON}\n",
        "25/01/01 INFO ShutdownHookManager: Shutdown hook called\n",
    ]


def test_a_failure_the_job_calls_final_is_marked_and_kept_out_of_the_reports():
    hook, _ = command()
    hook._process_spark_submit_log(iter(failed_job_lines(final=True)))
    assert hook.final_failure and hook.failure == REASON and hook.reports == []


def test_a_failure_the_job_calls_retryable_is_not_marked_final():
    hook, _ = command()
    hook._process_spark_submit_log(iter(failed_job_lines(final=False)))
    assert not hook.final_failure and hook.failure == REASON and hook.reports == []


def spark_submit_printing(monkeypatch, lines: list[str], fails: bool, driver_log: bool = True) -> None:
    """spark-submit (the provider's execute) stands in for a job that prints `lines` through the real hook:
    with `driver_log`, its driver writes the log file the task named (runtime.settings.new_log_file does).
    The worker runs classic drivers (ZIPPER_SPARK_RUNNER=driver), so a task without a connection submits."""

    def spark_submit(self, context):
        self._hook = self._get_hook()
        if driver_log:
            Path(self.env_vars[LOG_FILE_ENV]).parent.mkdir(parents=True, exist_ok=True)
            Path(self.env_vars[LOG_FILE_ENV]).write_text("25/01/01 WARN Spark's own line\n")
        self._hook._process_spark_submit_log(iter(lines))
        if fails:
            raise AirflowException("Cannot execute: spark-submit ...")

    monkeypatch.setenv("ZIPPER_SPARK_RUNNER", "driver")
    monkeypatch.setattr(SparkSubmitOperator, "execute", spark_submit)


def connect_job_printing(monkeypatch, lines: list[str], fails: bool) -> None:
    """The Spark Connect client's job (the default) stands in for one that prints `lines` and exits 1 if it
    `fails`: a real Python process, read by the real hook."""
    script = f"import sys; sys.stdout.write({''.join(lines)!r}); sys.exit({int(fails)})"
    monkeypatch.setattr(ZipperSparkConnectHook, "command", lambda self: [sys.executable, "-c", script])


def task_context(**more) -> dict:
    return {
        "dag": SimpleNamespace(dag_id="zipper_dim"),
        "ds": "2024-01-02",
        "params": {"from_date": "2024-01-02"},
    } | more


def failed_task(monkeypatch, operator, lines: list[str], driver_log: bool = False) -> AirflowException:
    """The exception `operator.execute` ends with when spark-submit prints `lines` and fails."""
    spark_submit_printing(monkeypatch, lines, fails=True, driver_log=driver_log)
    return execute_failing(operator)


def execute_failing(operator) -> AirflowException:
    context = task_context()
    with pytest.raises(AirflowException) as raised:
        operator.execute(context)
    assert context[LABEL].endswith("failed")  # what the task instance shows (its rendered map index)
    return raised.value


def test_a_final_failure_fails_the_merge_without_retry_and_says_what_clears_it(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    merge = ZipperMergeOperator(task_id="merge", table_name="dim", specs_dir=str(tmp_path))
    connect_job_printing(monkeypatch, failed_job_lines(final=True), fails=True)  # a client of the default server
    error = execute_failing(merge)
    assert isinstance(error, AirflowFailException)  # Airflow fails it at once, whatever its retries
    assert str(error) == (
        f"{REASON} (the zipper job failed; its log is above). Not retried:"
        " another try would fail the same way. Fix the cause (the input, the spec, or what the message asks for), then"
        " clear this run and every later one (they stop at their first task until this date has merged):"
        " airflow tasks clear zipper_dim -s 2024-01-02 -y (UI: clear this merge task with Upstream and Future)"
    )


def test_a_retryable_failure_keeps_the_tasks_retries_and_names_this_runs_spark_log(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    merge = ZipperMergeOperator(task_id="merge", table_name="dim", specs_dir=str(tmp_path))
    error = failed_task(monkeypatch, merge, failed_job_lines(final=False), driver_log=True)
    assert type(error) is AirflowException
    # the file of this very try, which its driver wrote, not a glob over every run's
    spark_log = merge.spark_log
    assert spark_log.parent == tmp_path / "logs" and spark_log.name.startswith("spark-")
    assert spark_log.name.endswith("-zipper_dim-2024-01-02-try1.log") and spark_log.is_file()
    assert str(error) == f"{REASON} (the zipper job failed; its log is above, Spark's is {spark_log})"


def test_the_driver_writes_its_console_to_the_file_the_task_names(monkeypatch, tmp_path):
    """runtime.settings: the file every driver of a zipper job opens for Spark's console output."""
    named = tmp_path / "logs" / "spark-x-zipper_dim-2024-01-02-try1.log"
    monkeypatch.setenv(LOG_FILE_ENV, str(named))
    assert new_log_file(SessionSettings.from_env(str(tmp_path / "warehouse"))) == named and named.parent.is_dir()
    monkeypatch.delenv(LOG_FILE_ENV)
    assert new_log_file(SessionSettings.from_env(str(tmp_path / "warehouse"))).name.startswith("spark-2")


def refused_replay(reason: str) -> ZipperMergeOperator:
    """A merge whose job failed with `reason` (its hook read the job's output)."""
    merge = ZipperMergeOperator(task_id="merge", table_name="dim", specs_dir="/specs")
    merge._hook, _ = command()
    merge._hook._process_spark_submit_log(iter([f"zipper: error: {reason}\n"]))
    return merge


def test_a_refused_past_date_says_the_table_is_unchanged_and_to_clear_only_that_merge():
    """A cleared past date whose replay is refused (its later dates' runs succeeded): clearing every later run,
    as the message said, re-ran dates that needed nothing."""
    bad_input = refused_replay(f"{REASON}; nothing was changed")
    assert bad_input._past_date_refused("zipper_dim", "2024-01-02", backfill=False) == (
        "The table is unchanged: its later dates stay committed, and their runs need nothing. Fix the input, then"
        " clear only this merge: airflow tasks clear zipper_dim -t merge -d -s 2024-01-02 -e 2024-01-02 -y"
        " (UI: clear this merge task, without Future); or trigger zipper_dim_rerun with from_date 2024-01-02"
    )
    by_spec = refused_replay(
        "dw.dim 2024-01-02: table is at 2024-01-05 and the input of 2024-01-03 differs from what was committed; the"
        " spec says on_past_date: error, so replay it explicitly: `zipper rerun dim --from 2024-01-03`"
    )
    assert by_spec._past_date_refused("zipper_dim", "2024-01-02", backfill=False) == (
        "The table is unchanged: its later dates stay committed, and their runs need nothing. Replay through the"
        " rerun DAG: trigger zipper_dim_rerun with the from_date the message names"
    )
    part_way = refused_replay(
        "dw.dim 2024-01-03: bad keys; the table is at 2024-01-02, the replay of 2024-01-02..2024-01-05 pending: fix"
        " the input, then `zipper rerun dim --from 2024-01-02` (or the next merge) resumes it"
    )
    assert part_way._past_date_refused("zipper_dim", "2024-01-02", backfill=False).startswith(
        "The replay stopped part way (the message says where the table is); the later dates' runs need nothing."
        " Fix the input, then clear only this merge"
    )


def test_the_next_date_is_read_from_a_scheduled_and_from_a_manual_runs_interval():
    """A scheduled (or backfill) run of D covers D..D+1; a manual one (`airflow dags test D`) D-1..D."""
    day = datetime.timedelta(days=1)
    d = datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)
    scheduled = {"logical_date": d, "data_interval_start": d, "data_interval_end": d + day}
    manual = {"logical_date": d, "data_interval_start": d - day, "data_interval_end": d}
    assert next_logical_dates(scheduled) == next_logical_dates(manual) == [d + day]
    assert next_logical_dates({}) == []  # a run without a logical date (Airflow 3's `airflow dags trigger`)


ASSET = make_asset("hive://dw/dim", name="dw.dim")


def test_a_merge_labels_its_task_and_puts_its_report_in_the_asset_event(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    report = RunResult("dw.dim", "2024-01-02", "merge", counts=counts(3), run_id="r2").report()
    spark_submit_printing(monkeypatch, ["dw.dim 2024-01-02: 1 new\n", REPORT_PREFIX + json.dumps(report)], False)
    merge = ZipperMergeOperator(task_id="merge", table_name="dim", table="dw.dim", specs_dir="/s", outlets=[ASSET])
    context = task_context(outlet_events=outlet_events())
    with task_log() as logged:
        assert merge.execute(context) == [report]
    assert context[LABEL] == "2024-01-02: merged"
    assert context["outlet_events"][ASSET].extra == {
        "table": "dw.dim",
        "date": "2024-01-02",
        "action": "merge",
        "counts": counts(3),
        "run_id": "r2",
        "dates": ["2024-01-02"],
    }
    assert merge.outlets == [ASSET]
    assert ("info", f"Spark's log of this run: {merge.spark_log}") in logged


def test_a_replay_labels_its_task_with_the_replayed_dates_and_lists_them_in_the_asset_event(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    connect_job_printing(monkeypatch, [REPORT_PREFIX + json.dumps(replay_report())], fails=False)
    merge = ZipperMergeOperator(task_id="merge", table_name="dim", table="dw.dim", specs_dir="/s", outlets=[ASSET])
    context = task_context(outlet_events=outlet_events())
    reports = merge.execute(context)
    assert context[LABEL] == "2024-01-02: replayed 2024-01-02..2024-01-03"
    extra = context["outlet_events"][ASSET].extra
    assert (extra["action"], extra["dates"], extra["run_id"]) == ("replay", ["2024-01-02", "2024-01-03"], "r1")
    assert len(reports) == 3  # the audit task's XCom: each replayed date, then the run's own report


def test_a_rerun_labels_its_task_with_the_dates_it_replayed(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    dates = [RunResult("dw.dim", d, "merge", counts=counts(4)) for d in ("2024-01-02", "2024-01-03")]
    report = RunResult("dw.dim", "2024-01-02..2024-01-03", "rerun", replayed=dates).report()
    connect_job_printing(monkeypatch, [REPORT_PREFIX + json.dumps(report)], fails=False)
    rerun = ZipperRerunOperator(task_id="rerun", table="dw.dim", table_name="dim", specs_dir="/s", outlets=[ASSET])
    context = task_context(outlet_events=outlet_events())
    del context["ds"]  # Airflow 3's `airflow dags trigger` makes a run without a logical date
    rerun.execute(context)
    assert context[LABEL] == "replayed 2024-01-02..2024-01-03"
    extra = context["outlet_events"][ASSET].extra
    assert (extra["date"], extra["dates"]) == ("2024-01-02..2024-01-03", ["2024-01-02", "2024-01-03"])
    assert rerun.log_tag(context) == "from-2024-01-02"  # a spark-submit's driver log would be named so


def test_a_final_failure_of_a_rerun_is_not_retried_either(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    rerun = ZipperRerunOperator(task_id="rerun", table="dw.dim", table_name="dim", specs_dir=str(tmp_path))
    connect_job_printing(monkeypatch, failed_job_lines(final=True), fails=True)
    error = execute_failing(rerun)
    assert isinstance(error, AirflowFailException)
    assert str(error).endswith(
        "Not retried: another try would fail the same way. Fix the cause (the input, the spec,"
        " or what the message asks for), then clear this task, or trigger zipper_dim again"
        " with the same params"
    )
    assert rerun.application_args[-1] == "--json-report"  # the job reports whether its failure is final


def test_a_rerun_names_each_replayed_dates_input_and_a_correction_the_table_it_rewrote(tmp_path):
    # Given a spec whose input is a folder per date, a rerun's reports and a correction's
    spec = load_spec_file(write_spec(tmp_path / "specs", "dim", tmp_path / "data"))
    dates = [RunResult("dw.dim", d, "merge", counts=counts(4)) for d in ("2024-01-02", "2024-01-03")]
    rerun = RunResult("dw.dim", "2024-01-02..2024-01-03", "rerun", replayed=dates).report()
    fixed = {"table": "dw.dim", "ds": "2024-01-03", "action": "correct", "counts": {"matched": 1, "rows_after": 9}}
    dry = {**fixed, "counts": {"matched": 1, "dry_run": True}}
    # When their datasets are named
    inputs, [output] = run_datasets("rerun", spec, "dw.dim", [*rerun.pop("replayed"), rerun], "hive://h:9083")
    corrected_inputs, [corrected] = run_datasets("correct", spec, "dw.dim", [fixed], "hive://h:9083")
    # Then a rerun read each date's folder and wrote both dates' partitions; a correction read and wrote the table
    incr = tmp_path / "data" / "incr"
    assert [(d.namespace, d.name) for d in inputs] == [
        ("file", f"{incr}/ds=2024-01-02"),
        ("file", f"{incr}/ds=2024-01-03"),
    ]
    assert (output.namespace, output.name, output.row_count) == ("hive://h:9083", "dw.dim", 2 * (4 + 1))
    assert [d.name for d in corrected_inputs] == ["dw.dim"] and corrected.row_count == 9
    assert run_datasets("correct", spec, "dw.dim", [dry], "hive") == ([], [])  # a dry run wrote nothing
    assert hive_namespace("thrift://meta.example:9083,thrift://other:9083") == "hive://meta.example:9083"


def test_rerun_arguments_come_from_the_trigger_form():
    assert rerun_args("dim", {"from_date": "2024-01-02", "to_date": None}, table="dw.dim") == [
        "rerun",
        "dim",
        "--from",
        "2024-01-02",
        "--json-report",
    ]
    assert rerun_args(
        "dim", {"from_date": "2024-01-02", "to_date": "2024-01-05", "uncommit_later": False}, table="dw.dim"
    ) == ["rerun", "dim", "--from", "2024-01-02", "--to", "2024-01-05", "--json-report"]
    assert rerun_args(
        "dim", {"from_date": "2024-01-02", "to_date": "2024-01-03", "uncommit_later": True}, table="dw.dim"
    ) == ["rerun", "dim", "--from", "2024-01-02", "--to", "2024-01-03", "--uncommit-later", "--json-report"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"from_date": "", "to_date": None}, "rerun param 'from_date' is required (YYYY-MM-DD)"),
        ({}, "rerun param 'from_date' is required (YYYY-MM-DD)"),
        (
            {"from_date": "2024-01-02", "to_date": "2024-02-30"},
            "rerun param 'to_date': '2024-02-30' is not a date (YYYY-MM-DD)",
        ),
        ({"from_date": "20240102"}, "rerun param 'from_date': '20240102' is not a date (YYYY-MM-DD)"),
    ],
)
def test_a_bad_trigger_param_is_refused_naming_the_table_before_any_spark_starts(
    monkeypatch, tmp_path, params, message
):
    """On call sees the rerun task's error in an alert: like every zipper error it names the table, in one line,
    and says that nothing was changed (no spark-submit ran)."""
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    submitted = []
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.append(self))
    rerun = ZipperRerunOperator(task_id="rerun", table="dw.dim", table_name="dim", specs_dir=str(tmp_path))
    with pytest.raises(AirflowException) as raised:
        rerun.execute({"dag": SimpleNamespace(dag_id="zipper_dim_rerun"), "params": params})
    assert str(raised.value) == f"dw.dim: {message}; nothing was changed"
    assert submitted == []


def correct_operator() -> ZipperCorrectOperator:
    return ZipperCorrectOperator(task_id="correct", table="dw.dim", table_name="dim", specs_dir="/s", outlets=[ASSET])


ERASE = {"kind": "erase", "erase_keys": "id=7", "reason": "erasure request 118"}


def test_a_dry_run_correction_labels_its_task_and_emits_no_asset_event(monkeypatch, tmp_path):
    """A dry run writes nothing: its report is the job's output in the task log, and the table did not change."""
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    counts = {"matched": 3, "partitions": 2, "dry_run": True}
    report = RunResult("dw.dim", "2024-01-03", "correct", "dry run: 3 versions matched", counts).report()
    connect_job_printing(monkeypatch, [REPORT_PREFIX + json.dumps(report)], fails=False)
    correct = correct_operator()
    context = task_context(params={**ERASE, "dry_run": True}, outlet_events=outlet_events())
    del context["ds"]  # a triggered run: no date of its own
    correct.execute(context)
    assert correct.application_args == [
        "correct", "dim", "--erase-key", "id=7", "--reason", "erasure request 118", "--dry-run", "--json-report"
    ]  # fmt: skip
    assert context[LABEL] == "dry run: erase: 3 versions matched"
    assert correct.outlets == [] and correct.log_tag(context) == "dry-run-erase"


def test_a_correction_puts_its_report_in_the_asset_event(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    counts = {"matched": 1, "partitions": 1, "removed": 1, "rows_before": 4, "rows_after": 3}
    report = RunResult("dw.dim", "2024-01-03", "correct", "erased", counts, run_id="c1").report()
    connect_job_printing(monkeypatch, [REPORT_PREFIX + json.dumps(report)], fails=False)
    correct = correct_operator()
    context = task_context(params={**ERASE, "dry_run": False}, outlet_events=outlet_events())
    correct.execute(context)
    assert "--dry-run" not in correct.application_args
    assert context[LABEL] == "erase: 1 version matched"
    extra = context["outlet_events"][ASSET].extra
    assert (extra["action"], extra["run_id"], extra["counts"], extra["dates"]) == ("correct", "c1", counts, [])


def test_a_bad_correct_param_is_refused_naming_the_table_before_any_spark_starts(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    submitted = []
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.append(self))
    context = {"dag": SimpleNamespace(dag_id="zipper_dim_correct"), "params": {**ERASE, "kind": "set"}}
    with pytest.raises(AirflowException) as raised:
        correct_operator().execute(context)
    assert str(raised.value) == "dw.dim: correct param 'erase_keys' is for kind erase, not set; nothing was changed"
    assert submitted == [] and context[LABEL] == "dry run: set: failed"


def test_the_spark_submit_beside_a_python_whose_path_has_a_space_starts(monkeypatch, tmp_path):
    """pyspark's spark-submit looked for its home by running `$PYSPARK_DRIVER_PYTHON script`
    unquoted: with the virtualenv in a folder with a space, no merge task ever started a driver
    (`find-spark-home: line 40: /tmp/my: No such file or directory`, exit 127)."""
    import os
    import subprocess

    import zipper.airflow.hooks as hooks

    venv = tmp_path / "my venv"
    venv.symlink_to(Path(sys.prefix), target_is_directory=True)
    monkeypatch.setattr(hooks, "python_bin", lambda: venv / "bin")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    hook, argv = command()
    assert argv[0] == str(venv / "bin" / "spark-submit")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"} | hook.local_environment()
    started = subprocess.run([argv[0], "--version"], env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr[-2000:]
    assert f"version {pyspark.__version__}" in started.stderr + started.stdout


def test_after_a_replay_the_audit_logs_every_replayed_date_and_where_the_table_ended():
    audit = ZipperAuditOperator(task_id="audit", merge_task_id="merge", table="dw.dim", table_name="dim")
    hook, _ = command()  # the merge task's XCom: what its hook collected from the job's report line
    hook._process_spark_submit_log(iter([REPORT_PREFIX + json.dumps(replay_report())]))
    context = {"ds": "2024-01-02", "ti": SimpleNamespace(xcom_pull=lambda task_ids: hook.reports)}
    with task_log() as logged:
        assert audit.execute(context)["action"] == "replay"
    lines = [message for level, message in logged if level == "info"]
    assert [line.split(":")[0] for line in lines[:2]] == ["dw.dim 2024-01-02", "dw.dim 2024-01-03"]
    assert "open_after=4" in lines[0] and "open_after=5" in lines[1]
    assert lines[-1] == "dw.dim: replayed 2024-01-02..2024-01-03 (2 dates); the table is at 2024-01-03, 5 open rows"


def test_an_audit_without_a_report_names_the_table_the_date_and_the_status_command(monkeypatch):
    """The warning said `zipper status <name>` and `the date`: on call had to work out both."""
    audit = ZipperAuditOperator(task_id="audit", merge_task_id="merge", table="dw.dim_user", table_name="dim_user")
    context = {"ds": "2024-01-02", "ti": SimpleNamespace(xcom_pull=lambda task_ids: None)}
    warnings = []
    task_log = SimpleNamespace(warning=lambda message, *args: warnings.append(message % args))
    monkeypatch.setattr(ZipperAuditOperator, "log", task_log)
    assert audit.execute(context) is None
    assert warnings[-1:] == [  # (Airflow's own warning first: execute called outside a task runner)
        "dw.dim_user 2024-01-02: the merge job printed no report: it did not run (a merge marked success by hand),"
        " or ran in cluster deploy mode, which keeps the driver's output on the cluster; `zipper status dim_user`"
        " shows whether 2024-01-02 is committed"
    ]


# -- the job as a Spark Connect client --------------------------------------------------------------------


def test_the_connection_type_says_how_the_job_runs(monkeypatch, tmp_path):
    """No connection: a client of the warehouse's own server (the job finds its port); a `spark_connect`
    connection: a client of its server, whose URL the job gets; a `spark` connection: spark-submit, as before."""
    settings = SessionSettings.from_env(str(tmp_path))
    assert runs_on_spark_connect("zipper_spark", settings)
    hook = ZipperSparkConnectHook(conn_id="zipper_spark", application_args=ARGS, env_vars={"ZIPPER_SPECS": "/s"})
    assert hook.remote_url() is None and "ZIPPER_SPARK_REMOTE" not in hook.job_environment(hook.remote_url())
    assert hook.command() == [sys.executable, "-m", "zipper.cli.main", *ARGS]  # no spark-submit, no JVM here
    # a worker whose commands run classic drivers keeps the embedded spark-submit
    assert not runs_on_spark_connect("zipper_spark", SessionSettings(str(tmp_path), runner="driver"))
    assert not runs_on_spark_connect("zipper_spark", SessionSettings(str(tmp_path), metastore="external"))
    monkeypatch.setenv(
        "AIRFLOW_CONN_ZIPPER_SPARK",
        json.dumps(
            {"conn_type": "spark_connect", "host": "spark-connect.example", "port": 15002, "password": "sc-token-42"}
        ),
    )
    assert runs_on_spark_connect("zipper_spark", settings)
    # a password Airflow masks in this process from now on: not a letter other tests print
    remote = "sc://spark-connect.example:15002/;token=sc-token-42"
    assert hook.remote_url() == remote and hook.job_environment(remote)["ZIPPER_SPARK_REMOTE"] == remote
    assert hook.job_environment(remote)["ZIPPER_SPECS"] == "/s"
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", json.dumps({"conn_type": "spark", "host": "yarn"}))
    assert not runs_on_spark_connect("zipper_spark", settings)


def test_a_spark_connection_runs_the_job_through_spark_submit(monkeypatch, tmp_path):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(tmp_path))
    monkeypatch.setenv("ZIPPER_METASTORE", "external")  # a cluster's: no local metastore server to start
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", json.dumps({"conn_type": "spark", "host": "yarn"}))
    submitted = []

    def spark_submit(self, context):  # the provider's execute, which builds the hook that runs spark-submit
        self._hook = self._get_hook()
        submitted.append(self._hook)

    monkeypatch.setattr(SparkSubmitOperator, "execute", spark_submit)
    monkeypatch.setattr(ZipperSparkConnectHook, "submit", lambda self: pytest.fail("ran as a Spark Connect client"))
    rerun = ZipperRerunOperator(task_id="rerun", table="dw.dim", table_name="dim", specs_dir=str(tmp_path))
    assert rerun.execute(task_context()) == []
    assert [hook._connection["master"] for hook in submitted] == ["yarn"]


@pytest.fixture(scope="module")
def connect_table(tmp_path_factory):
    """A table `dim` in a warehouse of its own, its first date's increment good, its second's repeating a key."""
    root = tmp_path_factory.mktemp("connect")
    data = write_sample(root)
    write_parquet(data / "incr" / f"ds={DATES[1]}", [(1, "ann", "Bergen"), (1, "ann", "Lima")])
    write_spec(root / "specs", "dim", data, airflow={"owner": "data-eng", "retries": 2})
    return {"specs": root / "specs", "warehouse": root / "warehouse"}


def connect_merge(connect_table, ds: str) -> tuple[ZipperMergeOperator, dict]:
    """The DAG's merge task of `ds`, its templates rendered as Airflow renders them before `execute`."""
    merge = ZipperMergeOperator(
        task_id="merge", table_name="dim", table="dw.dim", specs_dir=str(connect_table["specs"]), outlets=[ASSET]
    )
    merge.application_args = [arg.replace("{{ ds }}", ds) for arg in merge.application_args]
    return merge, task_context(ds=ds, dag=SimpleNamespace(dag_id="zipper_dim"), outlet_events=outlet_events())


@pytest.fixture(scope="module")
def merged_first_date(connect_table):
    """The first date's merge task, run with no connection: a client of the warehouse's own server, which
    the job starts. Run once for the module: the later tests build on the table it commits."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ZIPPER_WAREHOUSE", str(connect_table["warehouse"]))
        env.delenv("AIRFLOW_CONN_ZIPPER_SPARK", raising=False)
        for key, value in spark_env().items():  # the server's JVM, as every test driver's
            env.setenv(key, value)
        merge, context = connect_merge(connect_table, DATES[0])
        with task_log() as logged:
            reports = merge.execute(context)
    return {"merge": merge, "context": context, "reports": reports, "logged": logged}


@pytest.fixture
def connect_warehouse(monkeypatch, connect_table):
    monkeypatch.setenv("ZIPPER_WAREHOUSE", str(connect_table["warehouse"]))
    for key, value in spark_env().items():
        monkeypatch.setenv(key, value)
    return SessionSettings.from_env(str(connect_table["warehouse"]))


def test_a_merge_through_spark_connect_commits_and_logs_its_counts_and_asset_event(merged_first_date):
    merge, context, reports, logged = (merged_first_date[k] for k in ("merge", "context", "reports", "logged"))
    # Then the job committed the date, a client of the warehouse's server: no spark-submit, no pre-check
    assert isinstance(merge._hook, ZipperSparkConnectHook) and merge._hook.remote_url() is None
    assert [r["action"] for r in reports] == ["merge"] and reports[0]["counts"]["open_after"] == 3
    assert context[LABEL] == f"{DATES[0]}: merged"
    extra = context["outlet_events"][ASSET].extra
    assert (extra["table"], extra["date"], extra["action"], extra["dates"]) == ("dw.dim", DATES[0], "merge", [DATES[0]])
    assert extra["counts"] == reports[0]["counts"] and extra["run_id"]
    # the task log has the job's summary line once, not its report line, and the audit logs the counts
    messages = [message for _, message in logged]
    assert sum(m.startswith(f"dw.dim {DATES[0]}: ") for m in messages) == 1, messages
    assert not [m for m in messages if REPORT_PREFIX in m]
    assert any(m.startswith("The job runs as a client of the warehouse's Spark Connect server") for m in messages)
    assert "open_after=3" in describe(reports[-1])


def emitted_lineage(monkeypatch, tmp_path, operator, job_name: str) -> dict:
    """The COMPLETE event the OpenLineage provider emits for `operator`'s finished run, through its
    file transport configured as a worker would be (env): the provider collects the task's lineage
    as its listener does on success, and emits it."""
    from airflow.providers.openlineage.extractors.manager import ExtractorManager
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
    from airflow.utils.state import TaskInstanceState

    events = tmp_path / f"{job_name}.jsonl"
    transport = {"type": "file", "log_file_path": str(events), "append": True}
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps(transport))
    dag_run = SimpleNamespace(run_id=f"scheduled__{DATES[0]}")
    lineage = ExtractorManager().extract_metadata(
        dag_run, operator, TaskInstanceState.SUCCESS, task_instance=SimpleNamespace()
    )
    OpenLineageAdapter().complete_task(
        run_id="019ad5f0-0000-7000-8000-000000000001",
        job_name=job_name,
        end_time="2026-01-01T00:00:00+00:00",
        task=lineage,
        nominal_start_time=None,
        nominal_end_time=None,
        owners=None,
        tags=None,
        job_description=None,
    )
    event = json.loads(events.read_text().splitlines()[-1])
    assert event["eventType"] == "COMPLETE"
    return event


def test_the_merge_reports_its_openlineage_datasets_through_the_providers_file_transport(
    merged_first_date, connect_table, connect_warehouse, monkeypatch, tmp_path
):
    merge, reports = merged_first_date["merge"], merged_first_date["reports"]
    event = emitted_lineage(monkeypatch, tmp_path, merge, "zipper_dim.merge")
    # Then the COMPLETE event names the day's input folder and the Hive table, its columns and rows written
    data = Path(connect_table["specs"]).parent / "data"
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [("file", str(data / "incr" / f"ds={DATES[0]}"))]
    [output] = event["outputs"]
    server = metastore.MetastoreService(connect_warehouse.warehouse_path).recorded()
    assert output["name"] == "dw.dim" and output["namespace"] == f"hive://127.0.0.1:{server.port}"
    fields = {f["name"]: f["type"] for f in output["facets"]["schema"]["fields"]}
    assert fields["id"] in ("bigint", "int") and {"begin_dt", "end_dt"} <= set(fields)
    counts = reports[-1]["counts"]
    rows = output["outputFacets"]["outputStatistics"]["rowCount"]
    assert rows == counts["open_after"] + counts["closed"] == 3 + counts["closed"]


def test_a_committed_date_through_spark_connect_is_a_no_op_without_an_asset_event(
    merged_first_date, connect_table, connect_warehouse
):
    merge, context = connect_merge(connect_table, DATES[0])
    assert [r["action"] for r in merge.execute(context)] == ["noop"]
    assert merge.outlets == [] and context[LABEL] == f"{DATES[0]}: no-op (already committed with the same input)"


def test_a_bad_input_fails_the_merge_on_a_connections_server_with_the_jobs_one_line_error(
    merged_first_date, connect_table, connect_warehouse, monkeypatch
):
    # Given a spark_connect connection naming the warehouse's server by its URL (as a remote server would be)
    server = spark_server.ensure_running(connect_warehouse)
    token = spark_server.SparkServerService(connect_warehouse).token()
    connection = {"conn_type": "spark_connect", "host": "localhost", "port": server.port, "password": token}
    monkeypatch.setenv("AIRFLOW_CONN_ZIPPER_SPARK", json.dumps(connection))
    # When the second date's merge runs: its increment repeats a key
    merge, context = connect_merge(connect_table, DATES[1])
    with task_log() as logged, pytest.raises(AirflowFailException) as raised:
        merge.execute(context)
    # Then the task fails at once with the job's one line, logged as an error
    assert merge._hook.remote_url() == spark_server.remote_url(server, token)
    error = str(raised.value)
    first_line = error.split(" (the zipper job failed")[0]
    assert first_line.startswith(f"dw.dim {DATES[1]}: ") and "more than once" in first_line, error
    assert "(the zipper job failed; its log is above). Not retried" in error  # the server's log is elsewhere
    assert ("error", f"zipper: error: {first_line}") in logged
    assert "Cannot execute" not in error and context[LABEL] == f"{DATES[1]}: failed"
    assert token not in " ".join(message for _, message in logged)


def test_a_rerun_and_a_correction_report_their_openlineage_datasets_through_the_providers_file_transport(
    merged_first_date, connect_table, connect_warehouse, monkeypatch, tmp_path
):
    """Real runs of the rerun and correct tasks (clients of the warehouse's server), their lineage
    emitted as the merge's is: a rerun read each replayed date's folder and wrote the table; a
    correction read and wrote the table. Last in the module: the correction erases a key."""
    specs = str(connect_table["specs"])
    server = metastore.MetastoreService(connect_warehouse.warehouse_path).recorded()
    rerun = ZipperRerunOperator(task_id="rerun", table="dw.dim", table_name="dim", specs_dir=specs, outlets=[ASSET])
    reports = rerun.execute(task_context(params={"from_date": DATES[0]}, outlet_events=outlet_events()))
    assert reports[-1]["action"] == "rerun"
    event = emitted_lineage(monkeypatch, tmp_path, rerun, "zipper_dim.rerun")
    data = Path(specs).parent / "data"
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [("file", str(data / "incr" / f"ds={DATES[0]}"))]
    assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [(f"hive://127.0.0.1:{server.port}", "dw.dim")]

    correct = ZipperCorrectOperator(
        task_id="correct", table="dw.dim", table_name="dim", specs_dir=specs, outlets=[ASSET]
    )
    params = {"kind": "erase", "erase_keys": "id=2", "reason": "erasure request 7", "dry_run": False}
    reports = correct.execute(task_context(params=params, outlet_events=outlet_events()))
    counts = reports[-1]["counts"]
    assert counts["matched"] >= 1
    event = emitted_lineage(monkeypatch, tmp_path, correct, "zipper_dim.correct")
    table = (f"hive://127.0.0.1:{server.port}", "dw.dim")
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [table]
    [output] = event["outputs"]
    assert (output["namespace"], output["name"]) == table
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == counts["rows_after"]
