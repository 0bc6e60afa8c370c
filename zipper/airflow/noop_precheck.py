"""The merge task's pre-check under spark-submit: is the date already committed with the same input?

spark-submit starts a JVM before the job can tell a no-op; a plain Python subprocess of the CLI
(`zipper merge ... --no-spark`) tells it in seconds. The check has its own switch, exits and report
lines, so it lives apart from the operators, which only ask it (`ZipperMergeOperator.committed_noop`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from zipper.airflow import environment
from zipper.core.errors import StateError
from zipper.core.reports import EXIT_NOT_NOOP, REPORT_PREFIX
from zipper.runtime import metastore
from zipper.runtime.settings import SessionSettings

NOOP_CHECK_TIMEOUT_S = 900  # it may start the warehouse's metastore server (metastore.START_TIMEOUT_S)
# `off` in the worker's environment: no pre-check, every merge task runs spark-submit (as before the check)
NOOP_CHECK_ENV = "ZIPPER_NOOP_CHECK"
NOOP_CHECK_OFF = "off"


def check_command(application_args: list[str]) -> list[str]:
    """The pre-check's argv: the job's own arguments (rendered), through the CLI, with --no-spark."""
    return [sys.executable, "-m", "zipper.cli.main", *application_args, "--no-spark"]


def turned_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the worker's environment (default: this process's) turns the check off."""
    environ = os.environ if environ is None else environ
    return environ.get(NOOP_CHECK_ENV, "").strip().lower() == NOOP_CHECK_OFF


def answers_here() -> bool:
    """Whether the check can tell here: on the warehouse's own metastore server, once something was
    committed in it. A bad ZIPPER_METASTORE is the job's to report."""
    try:
        local = metastore.mode() == metastore.MetastoreMode.LOCAL
    except StateError:
        return False
    return local and SessionSettings.from_env(str(environment.warehouse())).has_metastore()


def committed_noop(command: list[str], env: Mapping[str, str], log: Any) -> list[dict] | None:
    """Runs `command` with `env`, its output in the task's `log`. The no-op's report lines when the
    pre-check says the date is committed with the same input; None when spark-submit must run: not
    a no-op (exit EXIT_NOT_NOOP), the check failed (spark-submit then meets the same cause and
    reports it), not on the local server, or the check turned off (ZIPPER_NOOP_CHECK=off)."""
    if turned_off():
        log.info("%s=off: no pre-check, the merge runs through spark-submit", NOOP_CHECK_ENV)
        return None
    if not answers_here():
        return None  # elsewhere, or nothing ever committed in this warehouse
    log.info("Is the date already committed with the same input? %s", " ".join(command))
    try:
        done = subprocess.run(
            command,
            env=dict(env),
            cwd=environment.REPO,
            capture_output=True,
            text=True,
            timeout=NOOP_CHECK_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("The no-op check did not finish (%s): running the merge through spark-submit", exc)
        return None
    for line in (done.stdout + done.stderr).splitlines():
        if not line.strip().startswith(REPORT_PREFIX):  # read below; the summary line above says it
            log.info("%s", line)
    if done.returncode == EXIT_NOT_NOOP:
        log.info("Not a no-op told without Spark: running the merge through spark-submit")
        return None
    if done.returncode != 0:
        log.warning("The no-op check failed (exit %s): running the merge through spark-submit", done.returncode)
        return None
    reports = report_lines(done.stdout)
    log.info("A no-op, told without Spark: spark-submit was not run")
    return reports


def report_lines(stdout: str) -> list[dict]:
    """The job's reports, one JSON object a line after REPORT_PREFIX."""
    return [
        json.loads(line.strip()[len(REPORT_PREFIX) :])
        for line in stdout.splitlines()
        if line.strip().startswith(REPORT_PREFIX)
    ]
