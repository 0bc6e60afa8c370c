"""Operators of the zipper DAGs. They hold arguments; the hooks run the job (a Spark Connect client, or
spark-submit, as the task's connection says).

Everything that depends on the worker (warehouse, metastore settings, connection) is resolved
in `execute`, never when the DAG file is parsed. A triggered run's params become the job's
arguments in `trigger_params`; the reports become labels and log lines in `run_reports`; the merge's
no-op pre-check under spark-submit is `noop_precheck`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from zipper.airflow import environment, noop_precheck
from zipper.airflow.compat import AIRFLOW_3, AirflowException, AirflowFailException, BaseOperator
from zipper.airflow.docs import is_backfill_run, resume_command
from zipper.airflow.hooks import ZipperSparkConnectHook, ZipperSparkSubmitHook, runs_on_spark_connect
from zipper.airflow.lineage import hive_namespace, operator_lineage, run_datasets
from zipper.airflow.run_reports import (
    DRY_RUN_XCOM,
    FAILURE_XCOM,
    asset_extra,
    describe,
    dry_run_record,
    final_state,
    outcome,
)
from zipper.airflow.sensors import next_date_merged
from zipper.airflow.trigger_params import correct_args, correct_label, rerun_args
from zipper.core.errors import StateError
from zipper.core.reports import RunAction, dry_run_lines
from zipper.runtime import metastore
from zipper.runtime.settings import LOG_FILE_ENV, SessionSettings, log_dir, spark_submit_conf
from zipper.runtime.spark_server import SparkServerService
from zipper.tablespec.loader import find_spec

NOT_RETRIED = "Not retried: another try would fail the same way."
# What a task instance shows in the UI's "Map Index" column (its rendered map_index_template): the date
# its run merges, which neither the run's id nor its "Run After" is (both are the end of its interval).
# A zipper task sets LABEL in its context once it knows more ("2024-01-05: merged"); Airflow renders
# the template again when the task ends.
LABEL = "zipper_label"
DATE_LABEL = "{{ zipper_label | default(ds | default('')) }}"
RERUN_LABEL = "{{ zipper_label | default('from ' ~ params.from_date) }}"
# "dry run: erase" until the task has ended; only an explicit false dry_run writes (see correct_args)
CORRECT_LABEL = "{{ zipper_label | default(('' if params.dry_run == false else 'dry run: ') ~ (params.kind or '?')) }}"


class ZipperSparkJobOperator(SparkSubmitOperator):
    """Runs the `zipper` CLI's `VERB NAME ...`: as a Spark Connect client in a plain Python process (a
    `spark_connect` connection, or none: the warehouse's own server), or `spark_jobs/zipper_job.py` under
    spark-submit (a `spark` connection; hooks says which).

    The job gets ZIPPER_SPECS (the folder the DAG was built from) and ZIPPER_WAREHOUSE; under spark-submit, with
    the warehouse's own metastore, also the `--conf` pairs of `spark_submit_conf()`, since JVM options
    must be on the command line (with an external one in client mode, the hook gives the driver
    zipper's log configuration: `spark_submit_env()`). Returns the job's report lines (XCom) for
    the audit task."""

    ui_color = "#f0c75e"
    verb = ""
    name_suffix = ""  # templated end of the Spark application name

    def __init__(
        self,
        *,
        table_name: str,
        specs_dir: str,
        table: str = "",
        conn_id: str = environment.DEFAULT_CONN_ID,
        **kwargs: Any,
    ):
        kwargs.setdefault("application", str(environment.SPARK_JOB))
        kwargs.setdefault("name", f"zipper-{self.verb}-{table_name}{self.name_suffix}")
        super().__init__(conn_id=conn_id, **kwargs)
        self.table_name = table_name
        self.table = table or table_name  # the Hive table, as zipper's messages name it
        self.specs_dir = specs_dir
        self.application_args = self.job_args(table_name)
        self.spark_log: Path | None = None  # the file this run's Spark driver writes its console to

    def job_args(self, table_name: str) -> list[str]:
        """The job's arguments after spark_jobs/zipper_job.py (templated)."""
        return [self.verb, table_name]

    def job_environment(self) -> dict[str, str]:
        env = {"ZIPPER_SPECS": self.specs_dir, "ZIPPER_WAREHOUSE": str(environment.warehouse())}
        env.update({k: os.environ[k] for k in environment.PASSED_THROUGH if os.environ.get(k)})
        return env

    def execute(self, context: Any) -> list[dict]:
        try:
            reports = self.run_job(context)
        except Exception:
            context[LABEL] = self.label(context, None)
            raise
        context[LABEL] = self.label(context, reports)
        self.record_asset_event(context, reports)
        self.reports = reports
        return reports

    def get_openlineage_facets_on_complete(self, task_instance: Any):
        """The run's OpenLineage datasets (Airflow's OpenLineage provider calls this after `execute`, in the
        task's process): the input of the dates it wrote and the Hive table, with its columns and the rows
        it wrote (zipper.airflow.lineage). Only the provider calls it, so only it imports the provider."""
        reports = getattr(self, "reports", None) or []
        _, spec = find_spec(self.table_name, self.specs_dir)
        inputs, outputs = run_datasets(self.verb, spec, self.table, reports, hive_namespace(self.metastore_uri()))
        return operator_lineage(inputs, outputs)

    def metastore_uri(self) -> str | None:
        """The metastore the job wrote to: the warehouse's own server as recorded (not started for this),
        or an external one's `hive.metastore.uris` in the task's Spark conf; None when neither says."""
        try:
            if metastore.mode() == metastore.MetastoreMode.LOCAL:
                server = metastore.MetastoreService(environment.warehouse()).recorded()
                return server.uri if server is not None else None
        except StateError:
            return None
        conf = self.conf or {}
        return conf.get("spark.hadoop.hive.metastore.uris") or conf.get("spark.hive.metastore.uris")

    def run_job(self, context: Any) -> list[dict]:
        """The job, as a Spark Connect client or through spark-submit, as the task's connection says (hooks);
        its report lines, one per replayed date first (the hook collects them)."""
        settings = SessionSettings.from_env(str(environment.warehouse()))
        self.env_vars = {**self.job_environment(), **(self.env_vars or {})}
        self._hook = None
        try:
            if runs_on_spark_connect(self._conn_id, settings):
                return self.run_on_spark_connect(settings)
            return self.spark_submit(context, settings)
        except AirflowException:
            failure = self._hook.failure if self._hook is not None else None
            if not failure:
                raise
            # the job's own reason, not "Cannot execute: <command>": what the UI and alerts show
            self.record_failure(context, failure)
            reason = f"{failure} (the zipper job failed; its log is above{self._spark_log_said()})"
            if self._hook.final_failure:  # bad input or spec: a retry would only page later
                raise AirflowFailException(f"{reason}. {NOT_RETRIED} {self.after_fixing(context)}") from None
            raise AirflowException(reason) from None

    def record_failure(self, context: Any, failure: str) -> None:
        """Leave the job's one-line reason in an XCom of this try, for the Zipper view (a page cannot
        read the task's log). A failure to record it must not hide the job's own."""
        ti = context.get("ti")
        if ti is None:
            return
        try:
            ti.xcom_push(key=FAILURE_XCOM, value=failure)
        except Exception as exc:  # noqa: BLE001 - the job's failure is what the task must report
            self.log.warning("Could not record the failure for the Zipper view: %s", exc)

    def run_on_spark_connect(self, settings: SessionSettings) -> list[dict]:
        """The job in a plain Python process, a client of the connection's Spark Connect server or of the
        warehouse's own; Spark's log is that server's (the warehouse's: `spark_log`)."""
        self._hook = ZipperSparkConnectHook(
            conn_id=self._conn_id, application_args=self.application_args, env_vars=self.env_vars
        )
        remote = self._hook.remote_url() is not None
        self.spark_log = None if remote else SparkServerService(settings).log_path
        self._hook.submit()
        return self._hook.reports

    def spark_submit(self, context: Any, settings: SessionSettings) -> list[dict]:
        """spark-submit of spark_jobs/zipper_job.py, its driver's console in a file of this try (`spark_log`)."""
        self.conf = {**spark_submit_conf(settings), **(self.conf or {})}
        self.spark_log = spark_log_file(settings, context["dag"].dag_id, self.log_tag(context), context.get("ti"))
        self.env_vars = {LOG_FILE_ENV: str(self.spark_log), **self.env_vars}
        super().execute(context)  # the provider's: builds the hook (_get_hook) after adding its own conf
        if self._spark_log_said():
            self.log.info("Spark's log of this run: %s", self.spark_log)
        return self._hook.reports

    def _spark_log_said(self) -> str:
        """`, Spark's is <file>` when this run's driver wrote it here, or it ran on the warehouse's Spark server
        (not when the job failed before Spark started, or the driver ran elsewhere: cluster deploy mode, a
        Kubernetes driver, a remote Spark Connect server)."""
        return f", Spark's is {self.spark_log}" if self.spark_log is not None and self.spark_log.is_file() else ""

    def on_kill(self) -> None:
        if isinstance(self._hook, ZipperSparkConnectHook):
            self._hook.on_kill()
        else:
            super().on_kill()

    def log_tag(self, context: Any) -> str:
        """What names this run in its Spark log file's name: its date."""
        return context.get("ds") or "run"

    def label(self, context: Any, reports: list[dict] | None) -> str:
        """What the task instance shows in the UI's Map Index column once it has ended."""
        ds = context.get("ds")
        return f"{ds}: {outcome(reports)}" if ds else outcome(reports)

    def record_asset_event(self, context: Any, reports: list[dict]) -> None:
        """The outlet's event carries what the run did (`asset_extra`). A no-op or a dry run changed nothing:
        it emits none (Airflow emits one per outlet of the task that ran, so the run drops its outlets)."""
        if reports and (reports[-1].get("counts") or {}).get("dry_run"):
            self.outlets = []
            self.log.info("No asset event: a dry run writes nothing to %s", self.table)
            return
        if not self.outlets:
            return
        if reports and reports[-1].get("action") == RunAction.NOOP:
            self.outlets = []
            self.log.info("No asset event: %s did not change (a no-op)", self.table)
            return
        extra = asset_extra(reports, self.table, context.get("ds") or "")
        outlet_events = context.get("outlet_events")
        if outlet_events is None:  # an execute outside a task runner
            return
        for outlet in self.outlets:
            outlet_events[outlet].extra = extra
        self.log.info("Asset event of %s: %s", self.table, json.dumps(extra, sort_keys=True))

    def after_fixing(self, context: Any) -> str:
        """What to do about a failure that is not retried."""
        return (
            "Fix the cause (the input, the spec, or what the message asks for), then clear this task, or trigger"
            f" {context['dag'].dag_id} again with the same params"
        )

    def _get_hook(self) -> ZipperSparkSubmitHook:
        # The provider's arguments, with zipper's hook class (same provider version on 2.11 and 3).
        return ZipperSparkSubmitHook(
            conf=self.conf,
            conn_id=self._conn_id,
            files=self.files,
            py_files=self.py_files,
            archives=self._archives,
            driver_class_path=self.driver_class_path,
            jars=self.jars,
            java_class=self._java_class,
            packages=self.packages,
            exclude_packages=self.exclude_packages,
            repositories=self._repositories,
            total_executor_cores=self._total_executor_cores,
            executor_cores=self._executor_cores,
            executor_memory=self._executor_memory,
            driver_memory=self._driver_memory,
            keytab=self.keytab,
            principal=self.principal,
            proxy_user=self.proxy_user,
            name=self.name,
            num_executors=self._num_executors,
            status_poll_interval=self._status_poll_interval,
            application_args=self.application_args,
            env_vars=self.env_vars,
            verbose=self._verbose,
            spark_binary=self._spark_binary,
            properties_file=self.properties_file,
            yarn_queue=self._yarn_queue,
            deploy_mode=self._deploy_mode,
            use_krb5ccache=self._use_krb5ccache,
            post_submit_commands=self.post_submit_commands,
            track_driver_via_k8s_api=self._track_driver_via_k8s_api,
            yarn_track_via_rm_api=self._yarn_track_via_rm_api,
            yarn_rm_auth=self._yarn_rm_auth,
        )


class ZipperMergeOperator(ZipperSparkJobOperator):
    """`zipper merge NAME --ds {{ ds }}`: one date; a cleared past date replays as `merge` specifies.

    Before a spark-submit, on the warehouse's metastore server (ZIPPER_METASTORE=local), it first asks, in a
    plain Python subprocess (`zipper merge ... --no-spark`: no JVM, no Spark), whether the date is already
    committed with the same input; then the task ends with that no-op's report, and spark-submit
    runs only when there is something to merge (or the check cannot tell). ZIPPER_NOOP_CHECK=off
    turns the check off. A Spark Connect client needs no such check: the job makes it before it connects."""

    verb = "merge"
    name_suffix = "-{{ ds }}"

    def job_args(self, table_name: str) -> list[str]:
        return ["merge", table_name, "--ds", "{{ ds }}", "--json-report"]

    def spark_submit(self, context: Any, settings: SessionSettings) -> list[dict]:
        """As a Spark Connect client the job tells a no-op itself before it connects; spark-submit would
        start a JVM first, so the task asks without Spark before it."""
        reports = self.committed_noop()
        if reports is not None:
            return reports
        return super().spark_submit(context, settings)

    def noop_check_command(self) -> list[str]:
        """The pre-check's argv: the job's own arguments (rendered), through the CLI, with --no-spark."""
        return noop_precheck.check_command(self.application_args)

    def committed_noop(self) -> list[dict] | None:
        """The no-op's report lines when the pre-check says the date is committed with the same input;
        None when spark-submit must run (noop_precheck.committed_noop says when)."""
        env = {**os.environ, **self.job_environment(), **(self.env_vars or {})}
        return noop_precheck.committed_noop(self.noop_check_command(), env, self.log)

    def after_fixing(self, context: Any) -> str:
        """What resumes after a failure that is not retried.

        A past date whose later dates have merged (a cleared date whose replay was refused: the job says
        that nothing was changed): the table is as it was, its later dates committed; only this merge runs
        again, or the rerun DAG replays. Otherwise the later runs fail at their gate while this date has
        not merged: they are cleared with it."""
        dag_id, ds = context["dag"].dag_id, context["ds"]
        if next_date_merged(context, self.task_id):
            return self._past_date_refused(dag_id, ds, is_backfill_run(context))
        resume = resume_command(
            dag_id, ds, is_backfill_run(context), ui="UI: clear this merge task with Upstream and Future"
        )
        return (
            f"Fix the cause (the input, the spec, or what the message asks for), then clear this run and every"
            f" later one (they stop at their first task until this date has merged): {resume}"
        )

    def _past_date_refused(self, dag_id: str, ds: str, backfill: bool) -> str:
        failure = (self._hook.failure if self._hook is not None else None) or ""
        rerun = f"{dag_id}_rerun"
        if REFUSED_BY_SPEC in failure:  # a replay must be explicit: clearing again is refused the same way
            return (
                f"The table is unchanged: its later dates stay committed, and their runs need nothing. Replay"
                f" through the rerun DAG: trigger {rerun} with the from_date the message names"
            )
        again = f"airflow tasks clear {dag_id} -t {self.task_id} -d -s {ds} -e {ds} -y"
        if backfill and not AIRFLOW_3:
            again += f", then airflow dags backfill -s {ds} -e {ds} {dag_id}"
        where = (
            "The replay stopped part way (the message says where the table is); the later dates' runs need nothing."
            if REPLAY_PENDING in failure
            else "The table is unchanged: its later dates stay committed, and their runs need nothing."
        )
        return (
            f"{where} Fix the input, then clear only this merge: {again} (UI: clear this merge task, without"
            f" Future); or trigger {rerun} with from_date {ds}"
        )


# Words of the job's messages (zipper.jobs.plan and replay) that the advice after a refused past date follows.
REFUSED_BY_SPEC = "on_past_date: error"
REPLAY_PENDING = " pending: "


class ZipperRerunOperator(ZipperSparkJobOperator):
    """`zipper rerun NAME --from D [--to E] [--uncommit-later] [--undo-corrections] [--dry-run] --json-report`
    with the run's params (the trigger form). `table` (the Hive table) names it in the form's refusals. A dry
    run publishes nothing: its dates' counts and sample go to the task log and to an XCom the Zipper view
    shows (DRY_RUN_XCOM), and it emits no asset event."""

    verb = "rerun"

    def run_job(self, context: Any) -> list[dict]:
        self.application_args = rerun_args(self.table_name, context["params"], table=self.table)
        return super().run_job(context)

    def execute(self, context: Any) -> list[dict]:
        reports = super().execute(context)
        final = reports[-1] if reports else {}
        counts = final.get("counts") or {}
        if counts.get("dry_run"):
            lines = dry_run_lines(self.table, final.get("ds", ""), counts.get("sample") or [], counts.get("guard"))
            for line in lines:
                self.log.info("%s", line)
            ti = context.get("ti")
            if ti is not None:
                ti.xcom_push(key=DRY_RUN_XCOM, value=dry_run_record(reports))
        return reports

    def log_tag(self, context: Any) -> str:
        return f"from-{self.application_args[3]}"  # a triggered run has no date of its own (Airflow 3's CLI)

    def label(self, context: Any, reports: list[dict] | None) -> str:
        return outcome(reports)


class ZipperCorrectOperator(ZipperSparkJobOperator):
    """`zipper correct NAME ... --reason TEXT [--dry-run] --json-report` with the run's params (the trigger
    form; correct_args). A dry run writes nothing: its report is the job's output in the task log, and it
    emits no asset event. `table` (the Hive table) names it in the form's refusals."""

    verb = "correct"

    def run_job(self, context: Any) -> list[dict]:
        self.application_args = correct_args(self.table_name, context["params"], table=self.table)
        return super().run_job(context)

    def log_tag(self, context: Any) -> str:
        """`dry-run-erase`, `delete`: a triggered run has no date of its own."""
        return correct_label(context["params"]).replace(": ", "-").replace(" ", "-")

    def label(self, context: Any, reports: list[dict] | None) -> str:
        what = correct_label(context["params"])
        if reports is None:
            return f"{what}: failed"
        counts = (reports[-1].get("counts") or {}) if reports else {}
        if "matched" not in counts:
            return f"{what}: done"
        matched = counts["matched"]
        return f"{what}: {matched} version{'s' if matched != 1 else ''} matched"


def spark_log_file(settings: SessionSettings, dag_id: str, tag: str, ti: Any = None) -> Path:
    """The file this try's Spark driver writes its console to (zipper.runtime.settings.LOG_FILE_ENV): one per
    task try, named after the DAG and the date, so that the task's log and failure can name it."""
    try_number = getattr(ti, "try_number", None) or 1
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return log_dir(settings) / f"spark-{stamp}-{dag_id}-{tag}-try{try_number}.log"


class ZipperAuditOperator(BaseOperator):
    """Logs the counts of the day's commit, as reported by the merge job (no second Spark JVM to
    read them again): after a replay, every replayed date's, then the table's state at the end.
    The committed state itself is in the metastore."""

    ui_color = "#b6e3b6"

    def __init__(self, *, merge_task_id: str, table: str, table_name: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.merge_task_id = merge_task_id
        self.table = table
        self.table_name = table_name  # the spec name, for the `zipper status` the log names

    def execute(self, context: Any) -> dict | None:
        reports = context["ti"].xcom_pull(task_ids=self.merge_task_id) or []
        if not reports:
            self.log.warning(
                "%s %s: the merge job printed no report: it did not run (a merge marked success by hand), or"
                " ran in cluster deploy mode, which keeps the driver's output on the cluster; `zipper status %s`"
                " shows whether %s is committed",
                self.table,
                context["ds"],
                self.table_name,
                context["ds"],
            )
            return None
        for report in reports:
            self.log.info("%s", describe(report))
        if len(reports) > 1:
            self.log.info("%s", final_state(reports))
        return reports[-1]
