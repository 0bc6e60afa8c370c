"""The hooks that run a zipper job, chosen by the task's connection (default `zipper_spark`):

- a `spark_connect` connection: the job runs as a plain Python process, a Spark Connect client of
  the server the connection names (ZipperSparkConnectHook, on the provider's SparkConnectHook);
- no such connection (the default): the same, a client of the warehouse's own Spark Connect
  server, which the job starts or joins itself (its port is known only when it runs); unless the
  worker's commands run classic drivers (`ZIPPER_SPARK_RUNNER=driver`, an external metastore),
  which keeps the embedded spark-submit below;
- a `spark` connection: spark-submit with its master and deploy mode unchanged (yarn,
  k8s://..., spark://...) (ZipperSparkSubmitHook). Without one, the embedded spark-submit runs on
  `local[*]` (or ZIPPER_SPARK_MASTER), with this Python and its pyspark. The provider's own
  fallback (yarn, or Airflow 2's `spark_default`, which points at yarn) is never used.

Both read the job's output the same way (JobOutput)."""

from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Any

from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from airflow.providers.apache.spark.hooks.spark_submit import DEFAULT_SPARK_BINARY, SparkSubmitHook

from zipper.airflow.compat import AirflowException, AirflowNotFoundException, BaseHook
from zipper.airflow.environment import EMBEDDED_MASTER, REPO, python_bin
from zipper.core.reports import ERROR_PREFIX, INTERRUPTED, REPORT_PREFIX
from zipper.runtime.jvm import spark_home
from zipper.runtime.session import REMOTE_ENV
from zipper.runtime.settings import SessionSettings, spark_submit_env


class DeployMode(StrEnum):
    """spark-submit's --deploy-mode, as a `spark` connection gives it (none: client). In cluster mode
    the driver runs on the cluster, with the cluster's Python."""

    CLIENT = "client"
    CLUSTER = "cluster"


def runs_on_spark_connect(conn_id: str, settings: SessionSettings) -> bool:
    """Whether the job of a task with this connection runs as a Spark Connect client (ZipperSparkConnectHook):
    a `spark_connect` connection, or none and the worker's commands are clients of the warehouse's server."""
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return settings.uses_server
    return connection.conn_type == SparkConnectHook.conn_type


class JobOutput:
    """What a zipper job's output tells its task: its `zipper-report:` lines (`reports`), the line a failed job
    ends with (`failure`) and whether the job called its failure final.

    A report line is read, not logged: the job's summary line just above it says the same for
    people. The error line is logged at ERROR level (the other output of the job at INFO)."""

    log: Any

    def _init_output(self) -> None:
        self.reports: list[dict] = []
        self.failure: str | None = None
        self.final_failure = False  # another try would fail the same way (bad input or spec)

    def _collect_reports(self, lines: Iterable[Any]) -> Iterator[Any]:
        """The job's output for the caller to log, but its report lines (collected) and its error line
        (logged here, as an error)."""
        for line in lines:
            text = line.strip()
            if text.startswith(REPORT_PREFIX):
                self._collect_report(text)
            elif text.startswith(ERROR_PREFIX) or text == INTERRUPTED:
                self.failure = text.removeprefix(ERROR_PREFIX)
                self.log.error("%s", text)
            else:
                yield line

    def _collect_report(self, text: str) -> None:
        """A run's report goes to `reports` (the audit task's XCom), after one report per date it replayed;
        a failure's says whether it is final."""
        try:
            report = json.loads(text[len(REPORT_PREFIX) :])
        except ValueError:
            self.log.warning("Unreadable zipper report line: %s", text)
            return
        if not isinstance(report, dict):
            self.log.warning("Unreadable zipper report line: %s", text)
        elif report.get("failed"):
            self.final_failure = report.get("final") is True
        else:
            self.reports.extend(report.pop("replayed", None) or [])
            self.reports.append(report)


PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent dies
try:  # resolved here, in the task process: a forked child should call, not load
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def ends_with_its_task(task_pid: int) -> None:
    """Run in the job's process before it starts (Popen's preexec_fn): Linux sends it SIGTERM when
    the task process that started it dies. A task process killed outright (an out-of-memory kill,
    a lost worker) otherwise left its job running and holding the table's lock, so the task's
    retries were refused ("another run is writing this table now") until the orphan ended."""
    if _prctl is None:
        return
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != task_pid:  # the task died before the call: nothing would send the signal now
        os.kill(os.getpid(), signal.SIGTERM)


class ZipperSparkConnectHook(JobOutput, SparkConnectHook):
    """Runs a zipper job (`python -m zipper.cli.main VERB NAME ...`, the CLI spark_jobs/zipper_job.py runs
    under spark-submit) as a plain Python process: a Spark Connect client, no JVM in the task.

    With the connection, ZIPPER_SPARK_REMOTE is its URL (`get_connection_url()`); without it the job
    is a client of the warehouse's own server, which it starts if none runs."""

    def __init__(self, conn_id: str, application_args: list[str], env_vars: dict[str, str] | None = None):
        super().__init__(conn_id=conn_id)
        self._init_output()
        self.application_args = list(application_args)
        self.env_vars = dict(env_vars or {})
        self._process: subprocess.Popen | None = None

    def remote_url(self) -> str | None:
        """The server the connection names; None when there is no connection: the warehouse's own."""
        try:
            return self.get_connection_url()
        except AirflowNotFoundException:
            return None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "zipper.cli.main", *self.application_args]

    def job_environment(self, remote: str | None) -> dict[str, str]:
        env = {**os.environ, **self.env_vars}
        if remote:
            env[REMOTE_ENV] = remote  # it holds the token: never logged
        return env

    def submit(self) -> None:
        """Runs the job, logging its output as it comes; raises AirflowException when it fails."""
        command = self.command()
        remote = self.remote_url()
        server = (
            f"the Spark Connect server of connection {self._conn_id!r}"
            if remote
            else "the warehouse's Spark Connect server"
        )
        self.log.info("The job runs as a client of %s: %s", server, " ".join(command))
        self._process = subprocess.Popen(
            command,
            env=self.job_environment(remote),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            # one system call in the child, its function resolved before the fork
            preexec_fn=functools.partial(ends_with_its_task, os.getpid()),  # noqa: PLW1509
        )
        assert self._process.stdout is not None
        for line in self._collect_reports(self._process.stdout):
            self.log.info("%s", line.rstrip("\n"))
        returncode = self._process.wait()
        if returncode:
            raise AirflowException(f"Cannot execute: {' '.join(command)}. Error code is: {returncode}.")

    def on_kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self.log.info("Stopping the zipper job (pid %s)", self._process.pid)
            self._process.terminate()


class ZipperSparkSubmitHook(JobOutput, SparkSubmitHook):
    """Runs an argv list through spark-submit and reads the job's output (JobOutput)."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.embedded = False
        self._init_output()
        super().__init__(*args, **kwargs)

    def _connection_exists(self) -> bool:
        try:
            self.get_connection(self._conn_id)
        except AirflowNotFoundException:
            return False
        return True

    def _resolve_connection(self) -> dict[str, Any]:
        if self._connection_exists():
            return super()._resolve_connection()
        self.embedded = True
        self.log.info("No connection %r: running on the embedded default (%s)", self._conn_id, self._embedded_master())
        return {
            "master": self._embedded_master(),
            "queue": None,
            "deploy_mode": None,
            "spark_binary": self.spark_binary or DEFAULT_SPARK_BINARY,
            "namespace": None,
            "principal": self._principal,
            "keytab": self._keytab,
            "rest_scheme": "http",
            "rest_port": 6066,
            "rest_endpoint": None,
        }

    @staticmethod
    def _embedded_master() -> str:
        return os.environ.get("ZIPPER_SPARK_MASTER") or EMBEDDED_MASTER

    def _get_spark_binary_path(self) -> list[str]:
        """spark-submit of the pyspark installed with Airflow, so job and jars match; else from PATH."""
        beside = self._spark_binary_beside()
        return [str(beside)] if beside else [self._connection["spark_binary"]]

    def _spark_binary_beside(self):
        beside = python_bin() / self._connection["spark_binary"]
        return beside if beside.is_file() else None

    def local_environment(self) -> dict[str, str]:
        """What spark-submit on this machine needs to run the job with this Python.

        The driver runs here unless the deploy mode is cluster; executors run here only on the
        embedded default. A cluster's Python is the cluster's business (its Spark config)."""
        env = {}
        if self._spark_binary_beside():
            # pyspark's spark-submit looks for its home with `$PYSPARK_DRIVER_PYTHON script` unquoted,
            # which a path with a space splits ("/tmp/my: No such file"): told where it is, it does not look
            env["SPARK_HOME"] = str(spark_home())
        if self._connection["deploy_mode"] != DeployMode.CLUSTER:
            env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        if self.embedded:
            env["PYSPARK_PYTHON"] = sys.executable
            env["SPARK_LOCAL_IP"] = "127.0.0.1"  # a local[*] driver has no reason to listen elsewhere
        return env

    def submit_environment(self) -> dict[str, str]:
        """The variables `submit` sets in the task's own process for spark-submit: those of
        local_environment the worker has not set itself (its value wins), and, with an external
        metastore in client mode, zipper's driver log configuration ahead of the worker's own
        SPARK_SUBMIT_OPTS (session.spark_submit_env: a log configuration of the Spark conf wins)."""
        env = {key: value for key, value in self.local_environment().items() if key not in os.environ}
        env.update(spark_submit_env(SessionSettings.from_env(), self._connection["deploy_mode"]))
        return env

    def submit(self, application: str = "", **kwargs: Any) -> str | None:
        os.environ.update(self.submit_environment())
        return super().submit(application, **kwargs)

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._collect_reports(itr))
