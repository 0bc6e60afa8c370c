"""`--json-report` on a failed merge: a report line says whether another try could succeed, so
that a scheduler fails the task at once on bad input and retries one whose input is not there yet.
One JVM per test."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import day, make_spec, write_parquet, zipper
from zipper.core.reports import ERROR_PREFIX, REPORT_PREFIX

pytestmark = pytest.mark.subprocess


def failure_of(result) -> tuple[dict, str]:
    """(the failure's report line, the one error line) of a failed run."""
    assert result.returncode == 1, result.stderr
    reports = [
        json.loads(line[len(REPORT_PREFIX) :]) for line in result.stdout.splitlines() if line.startswith(REPORT_PREFIX)
    ]
    errors = result.stderr.strip().splitlines()
    assert len(reports) == 1 and len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith(ERROR_PREFIX)
    return reports[0], errors[0]


@pytest.fixture
def root(tmp_path):
    make_spec(tmp_path)
    write_parquet(tmp_path / "data" / "base", [(1, "ann", "Oslo")])
    return tmp_path


def test_a_repeated_key_is_a_final_failure(root):
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(1, "ann", "Rome"), (1, "ann", "Lima")])
    report, error = failure_of(zipper(root, "merge", "dim", "--ds", day(1), "--json-report"))
    assert error == f"{ERROR_PREFIX}{report['error']}"
    assert f"dw.dim {day(1)}: " in error and "1 key ['id'] more than once (2 rows) in part-" in error
    assert report == {"failed": True, "final": True, "error": report["error"]}


def test_an_increment_not_there_yet_is_not_final(root):
    report, error = failure_of(zipper(root, "merge", "dim", "--ds", day(1), "--json-report"))
    assert f"dw.dim {day(1)}: increment not found: " in error
    assert report == {"failed": True, "final": False, "error": error.removeprefix(ERROR_PREFIX)}
