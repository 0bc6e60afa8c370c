"""spark-submit for zipper jobs: the provider's hook with zipper's connection rule.

Rule: if the connection (default `zipper_spark`) exists, its master and deploy mode are used
unchanged (yarn, k8s://..., spark://...). If it does not, the job runs on the embedded default,
`local[*]` (or ZIPPER_SPARK_MASTER), with this Python and its pyspark. The provider's own
fallback (yarn, or Airflow 2's `spark_default`, which points at yarn) is never used."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import DEFAULT_SPARK_BINARY, SparkSubmitHook

from zipper.airflow.compat import AirflowNotFoundException
from zipper.airflow.environment import EMBEDDED_MASTER, python_bin
from zipper.core.reports import ERROR_PREFIX, INTERRUPTED, REPORT_PREFIX
from zipper.runtime.jvm import spark_home
from zipper.runtime.settings import SessionSettings, spark_submit_env


class ZipperSparkSubmitHook(SparkSubmitHook):
    """Runs an argv list through spark-submit and collects the job's `zipper-report:` lines, the
    line a failed job ends with (`failure`) and whether the job called its failure final.

    A report line is read, not logged: the job's summary line just above it says the same for
    people. The error line is logged at ERROR level (the other output of the job at INFO)."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.embedded = False
        self.reports: list[dict] = []
        self.failure: str | None = None
        self.final_failure = False  # another try would fail the same way (bad input or spec)
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
        if self._connection["deploy_mode"] != "cluster":
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

    def _collect_reports(self, lines: Iterator[Any]) -> Iterator[Any]:
        """The job's output for the provider to log, but its report lines (collected) and its error line
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
