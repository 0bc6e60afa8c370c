"""Where a pytest run's time went: every test's set-up, call and teardown, written to
`build/test-times/<group>.json` when the run ends (scripts/test.sh loads it with
`-p tests.durations_plugin` and names the group in ZIPPER_TEST_GROUP; without it the file is
`selection.json`). `scripts/durations_ledger.py` turns a full run's files into tests/durations.txt.

A test's set-up includes the module and session fixtures it was the first to use, and its
teardown those it was the last to use: the time is shown on the test that paid it, as pytest's
own `--durations` shows it. The run's wall and CPU time (this process and the processes it
reaped: the drivers, servers and Airflow processes it started) are in the file too.

    {"group": "in_line", "wall_s": 2249.1, "cpu_s": 2958.0, "collect_s": 3.2, "exitstatus": 0,
     "tests": [{"id": "tests/jobs/test_merge.py::test_x", "setup": 1.2, "call": 3.4,
                "teardown": 0.0, "total": 4.6, "outcome": "passed"}, ...]}
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest

GROUP_ENV = "ZIPPER_TEST_GROUP"  # the file's name: the group scripts/test.sh runs
FOLDER_ENV = "ZIPPER_TEST_TIMES"  # where the files go (default: build/test-times under the rootdir)
DEFAULT_GROUP = "selection"  # a run of chosen tests (`scripts/test.sh tests/jobs -q`)
PHASES = ("setup", "call", "teardown")


def times_folder(rootdir: Path) -> Path:
    return Path(os.environ.get(FOLDER_ENV) or rootdir / "build" / "test-times")


class Durations:
    """Collects each report's duration by test id, in the order the tests ran."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.group = os.environ.get(GROUP_ENV) or DEFAULT_GROUP
        self.started_at = dt.datetime.now(dt.UTC)
        self.started = time.perf_counter()
        self.collect_s: float | None = None
        self.tests: dict[str, dict] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collect_s = time.perf_counter() - self.started

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.tests.setdefault(
            report.nodeid, {"id": report.nodeid, **dict.fromkeys(PHASES, 0.0), "outcome": "passed"}
        )
        entry[report.when] += report.duration
        if report.when == "call":
            entry["outcome"] = report.outcome
        elif report.failed:  # a failed set-up or teardown, as pytest counts it
            entry["outcome"] = "error"
        elif report.skipped:
            entry["outcome"] = "skipped"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        tests = []
        for entry in self.tests.values():
            entry = {**entry, **{phase: round(entry[phase], 3) for phase in PHASES}}
            entry["total"] = round(sum(entry[phase] for phase in PHASES), 3)
            tests.append(entry)
        record = {
            "group": self.group,
            "started": self.started_at.isoformat(timespec="seconds"),
            "wall_s": round(time.perf_counter() - self.started, 1),
            "cpu_s": round(_cpu_seconds(), 1),
            "collect_s": None if self.collect_s is None else round(self.collect_s, 1),
            "exitstatus": int(exitstatus),
            "tests": tests,
        }
        folder = times_folder(self.config.rootpath)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{self.group}.json"
        partial = target.with_name(f".{target.name}.{os.getpid()}")  # a reader never sees half a file
        partial.write_text(_one_test_a_line(record))
        partial.replace(target)


def _one_test_a_line(record: dict) -> str:
    """JSON with one test a line, so `grep` finds a test with its figures."""
    head = json.dumps({key: value for key, value in record.items() if key != "tests"})[:-1]
    tests = ",\n  ".join(json.dumps(test) for test in record["tests"])
    return f'{head}, "tests": [\n  {tests}\n]}}\n'


def _cpu_seconds() -> float:
    """User and system CPU of this process and of the child processes it has reaped."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Durations(config), "zipper-durations")
