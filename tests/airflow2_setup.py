"""The tests that run Airflow 2.11 wait for `.venv-airflow2`, which scripts/test.sh sets up in the
background while the suite starts (several minutes on a fresh machine): the other tests need only
`.venv` and start at once. Loaded with `-p tests.airflow2_setup`; without its two variables (a
run of chosen tests, after a set-up that has finished) it does nothing.

ZIPPER_TEST_AIRFLOW2_SETUP: the file that receives the set-up's exit status when it ends.
ZIPPER_TEST_AIRFLOW2_FILES: the test files that need the virtualenv, space-separated, from the
repository's root. Their tests wait in their set-up (so the wait shows in the durations), and
fail there, naming the set-up, if it failed; scripts/test.sh prints its output and fails the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

STATUS_ENV = "ZIPPER_TEST_AIRFLOW2_SETUP"
FILES_ENV = "ZIPPER_TEST_AIRFLOW2_FILES"
POLL_S = 2.0


def _waiting_files(config: pytest.Config) -> set[Path]:
    return {(config.rootpath / name).resolve() for name in os.environ.get(FILES_ENV, "").split()}


def setup_status(status_file: Path) -> str:
    """The set-up's exit status, once it has ended (scripts/test.sh writes it in one rename)."""
    while not status_file.exists():
        time.sleep(POLL_S)
    return status_file.read_text().strip()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    status_file = os.environ.get(STATUS_ENV)
    if not status_file or item.path.resolve() not in _waiting_files(item.config):
        return
    status = setup_status(Path(status_file))
    if status != "0":
        pytest.fail(
            f"the set-up of .venv-airflow2 failed (scripts/bootstrap_airflow2.sh, exit {status});"
            " its output is printed at the end of the run",
            pytrace=False,
        )
