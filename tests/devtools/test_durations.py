"""Where the test suite's time goes: the pytest plugin that writes each test's set-up, call and
teardown to build/test-times (tests/durations_plugin.py), the wait of the Airflow 2.11 tests for
their virtualenv (tests/airflow2_setup.py), and the ledger made from a run
(scripts/durations_ledger.py). Small pytest runs in subprocesses, no Spark."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests import airflow2_setup, durations_plugin

REPO = Path(__file__).resolve().parents[2]
PYTEST_DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S+)$", re.M)

TINY_TESTS = """
import time

import pytest

@pytest.fixture(scope="module")
def shared():
    time.sleep(0.05)  # a set-up and a teardown long enough to show in pytest's own durations
    yield 1
    time.sleep(0.05)

def test_passes(shared):
    assert shared == 1

def test_fails():
    assert 1 == 2

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("set-up fails")

def test_with_a_broken_fixture(broken):
    pass
"""


def pytest_command(folder: Path, *args: str) -> list[str]:
    """pytest in `folder`, its own rootdir without this repository's settings."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(folder), "-c", os.devnull, *args]


def pytest_env(**env: str) -> dict[str, str]:
    """This environment without the test command's own variables, this repository's plugins importable."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZIPPER_TEST_") and k != "PYTEST_ADDOPTS"}
    return {**clean, "PYTHONPATH": str(REPO), **env}


def run_pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        pytest_command(folder, *args), cwd=folder, env=pytest_env(**env), capture_output=True, text=True, timeout=120
    )


def test_the_plugin_writes_each_tests_phases_to_the_groups_file(tmp_path):
    (tmp_path / "test_tiny.py").write_text(TINY_TESTS)
    times = tmp_path / "times"
    result = run_pytest(
        tmp_path,
        "-p",
        "tests.durations_plugin",
        "--durations=0",
        "-vv",
        "test_tiny.py",
        ZIPPER_TEST_TIMES=str(times),
        ZIPPER_TEST_GROUP="tiny",
    )
    assert result.returncode == 1, result.stdout  # a test failed
    assert sorted(p.name for p in times.iterdir()) == ["tiny.json"]
    record = json.loads((times / "tiny.json").read_text())
    assert record["group"] == "tiny" and record["exitstatus"] == 1
    assert record["wall_s"] >= 0 and record["cpu_s"] > 0
    tests = {test["id"]: test for test in record["tests"]}
    assert list(tests) == [
        "test_tiny.py::test_passes",
        "test_tiny.py::test_fails",
        "test_tiny.py::test_skipped",
        "test_tiny.py::test_with_a_broken_fixture",
    ]
    outcomes = {name.split("::")[1]: test["outcome"] for name, test in tests.items()}
    assert outcomes == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skipped": "skipped",
        "test_with_a_broken_fixture": "error",
    }
    # each phase as pytest's own --durations shows it (to its 2 decimals): the module fixture's
    # set-up in the first test's, its teardown in the last test's that used it
    shown = {(m["test"], m["phase"]): float(m["seconds"]) for m in PYTEST_DURATION.finditer(result.stdout)}
    assert shown[("test_tiny.py::test_passes", "setup")] > 0
    assert shown[("test_tiny.py::test_with_a_broken_fixture", "teardown")] > 0
    for test in tests.values():
        assert set(test) == {"id", "setup", "call", "teardown", "total", "outcome"}
        for phase in ("setup", "call", "teardown"):
            assert abs(test[phase] - shown.get((test["id"], phase), 0.0)) < 0.006, (test, phase)
        assert abs(test["total"] - (test["setup"] + test["call"] + test["teardown"])) < 0.002


def test_without_a_group_the_plugin_writes_the_default_file(tmp_path):
    (tmp_path / "test_tiny.py").write_text("def test_one():\n    pass\n")
    times = tmp_path / "times"
    result = run_pytest(tmp_path, "-p", "tests.durations_plugin", "test_tiny.py", ZIPPER_TEST_TIMES=str(times))
    assert result.returncode == 0, result.stdout
    record = json.loads((times / f"{durations_plugin.DEFAULT_GROUP}.json").read_text())
    assert [test["id"] for test in record["tests"]] == ["test_tiny.py::test_one"]


def test_the_airflow2_tests_wait_for_the_set_up_and_fail_with_it(tmp_path):
    """A listed file's tests run once the set-up has written its exit status; if it failed, they
    fail naming it, and the other files' tests do not wait."""
    (tmp_path / "test_first.py").write_text(
        textwrap.dedent("""
            from pathlib import Path

            def test_runs_before_the_set_up_ends():
                Path("started").touch()
        """)
    )
    (tmp_path / "test_needs_it.py").write_text(
        textwrap.dedent("""
            import os
            from pathlib import Path

            def test_runs_after_the_set_up():
                assert Path(os.environ["ZIPPER_TEST_AIRFLOW2_SETUP"]).read_text().strip() == "0"
        """)
    )
    status = tmp_path / "setup.exit"
    env = {airflow2_setup.STATUS_ENV: str(status), airflow2_setup.FILES_ENV: "test_needs_it.py"}
    with subprocess.Popen(
        pytest_command(tmp_path, "-p", "tests.airflow2_setup", "test_first.py", "test_needs_it.py"),
        cwd=tmp_path,
        env=pytest_env(**env),
        stdout=subprocess.PIPE,
        text=True,
    ) as waiting:
        started = tmp_path / "started"
        while not started.exists() and waiting.poll() is None:
            time.sleep(0.05)
        status.write_text("0\n")  # the set-up ends only after the first file's test has run
        out, _ = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, out

    status.write_text("2\n")
    failed = run_pytest(tmp_path, "-p", "tests.airflow2_setup", "test_first.py", "test_needs_it.py", **env)
    assert failed.returncode == 1
    assert "1 passed, 1 error" in failed.stdout, failed.stdout
    assert "the set-up of .venv-airflow2 failed (scripts/bootstrap_airflow2.sh, exit 2)" in failed.stdout


GROUPS_TXT = """\
commit 1234abc
started 2026-12-01T21:30:05Z
group in_line: 100.50 s wall, 150.25 s user CPU, 20.00 s system CPU
group with_airflow: 90.00 s wall, 30.00 s user CPU, 5.00 s system CPU
total: 130 s wall (set-up, code checks and the three groups)
"""


def sample_tests(*entries: tuple[str, float, float, float, str]) -> dict:
    return {
        "tests": [
            {
                "id": test,
                "setup": setup,
                "call": call,
                "teardown": teardown,
                "total": setup + call + teardown,
                "outcome": outcome,
            }
            for test, setup, call, teardown, outcome in entries
        ]
    }


EXPECTED_LEDGER_TAIL = """\
commit 1234abc
date 2026-12-01
total 130 s wall
group in_line          100 s wall     170 CPU-s      3 tests
group with_airflow      90 s wall      35 CPU-s      2 tests, 1 failed

3 slowest tests (s, group, test)
   60.0  with_airflow  tests/airflow/test_e2e.py::test_backfill
   12.5  in_line       tests/jobs/test_merge.py::test_b
    2.0  in_line       tests/jobs/test_merge.py::test_a
"""


def ledger(*args: str) -> subprocess.CompletedProcess:
    script = REPO / "scripts" / "durations_ledger.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60)


def test_the_ledger_lists_the_groups_and_the_slowest_tests_of_a_run(tmp_path):
    (tmp_path / "groups.txt").write_text(GROUPS_TXT)
    (tmp_path / "in_line.json").write_text(
        json.dumps(
            sample_tests(
                ("tests/jobs/test_merge.py::test_a", 1.5, 0.5, 0.0, "passed"),
                ("tests/jobs/test_merge.py::test_b", 10.0, 2.0, 0.5, "passed"),
                ("tests/core/test_x.py::test_c", 0.0, 0.1, 0.0, "skipped"),
            )
        )
    )
    (tmp_path / "with_airflow.json").write_text(
        json.dumps(
            sample_tests(
                ("tests/airflow/test_e2e.py::test_backfill", 50.0, 10.0, 0.0, "failed"),
                ("tests/airflow/test_e2e.py::test_quick", 0.0, 0.05, 0.0, "passed"),
            )
        )
    )
    result = ledger(str(tmp_path), "--slowest", "3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(line.startswith("# ") for line in lines[:3])
    assert "\n".join(lines[3:]) + "\n" == EXPECTED_LEDGER_TAIL


def test_the_ledger_reads_a_saved_output_of_the_test_command(tmp_path):
    """A log of scripts/test.sh with `--durations=0`: each group's durations and last line come
    before its `group NAME:` line; a test's phases add up."""
    log = tmp_path / "run.log"
    log.write_text(
        textwrap.dedent("""\
            ============================= slowest durations ==============================
            10.00s setup    tests/jobs/test_merge.py::test_b
            2.00s call     tests/jobs/test_merge.py::test_b
            1.50s setup    tests/jobs/test_merge.py::test_a
            0.50s teardown tests/jobs/test_merge.py::test_b
            0.50s call     tests/jobs/test_merge.py::test_a
            (2 durations < 0.005s hidden.  Use -vv to show these durations.)
            ================= 2 passed, 1 skipped, 4 warnings in 100.00s (0:01:40) =================
            group in_line: 100.50 s wall, 150.25 s user CPU, 20.00 s system CPU

            =================== tests/airflow/test_e2e.py (run alongside) ===================
            ============================= slowest durations ==============================
            50.00s setup    tests/airflow/test_e2e.py::test_backfill
            10.00s call     tests/airflow/test_e2e.py::test_backfill
            ======================== 1 failed, 1 passed in 90.00s (0:01:30) ========================
            group with_airflow: 90.00 s wall, 30.00 s user CPU, 5.00 s system CPU
        """)
    )
    result = ledger(
        "--log", str(log), "--commit", "1234abc", "--date", "2026-12-01", "--total", "130", "--slowest", "3"
    )
    assert result.returncode == 0, result.stderr
    assert "\n".join(result.stdout.splitlines()[3:]) + "\n" == EXPECTED_LEDGER_TAIL
