"""The embedded Airflow on SQLite under a held write lock.

`airflow backfill create` failed with "database is locked" while the scheduler wrote: Python's
sqlite3 gives up after 5 s. The rendered airflow.cfg makes Airflow's own engine wait longer, and
`LocalAirflow.cli` (the demo and the end-to-end tests, which run on Airflow's defaults) runs such
a command again. The lock is held here by a second connection, as a scheduler transaction holds it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.airflow.support import AIRFLOW2_VENV, minimal_env
from zipper.airflow import local
from zipper.airflow.environment import REPO
from zipper.airflow.local import LocalAirflow

pytestmark = pytest.mark.airflow
HELD_SECONDS = 12  # well past sqlite3's default 5 s, well short of the configured 60 s

PROBE = """
import sys
from airflow import settings
if settings.engine is None:
    settings.configure_orm()
print("WRITING", flush=True)
try:
    with settings.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO probe VALUES (1)")
except Exception as exc:
    print("FAILED", type(exc).__name__, str(exc).splitlines()[0], flush=True)
    sys.exit(1)
print("WRITTEN", flush=True)
"""

RENDER = """
import sys
from pathlib import Path
from zipper.airflow.home import render_config
home = Path(sys.argv[1])
(home / "airflow.cfg").write_text(render_config(home))
"""


def airflow_home(root: Path, python: str, rendered: bool) -> dict[str, str]:
    root.mkdir()
    with sqlite3.connect(root / "airflow.db") as db:
        db.execute("PRAGMA journal_mode=WAL")  # as Airflow leaves its database
        db.execute("CREATE TABLE probe (x INTEGER)")
    if rendered:
        subprocess.run([python, "-c", RENDER, str(root)], check=True, cwd=REPO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return {**env, "AIRFLOW_HOME": str(root), "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "ZIPPER_PYTHON": python}


def test_rendered_config_makes_airflow_wait_out_a_held_lock_on_both_versions(tmp_path):
    homes = {
        "airflow 3, rendered": airflow_home(tmp_path / "af3", sys.executable, rendered=True),
        "airflow 2, rendered": airflow_home(tmp_path / "af2", str(AIRFLOW2_VENV / "bin" / "python"), rendered=True),
        "airflow 3, defaults": airflow_home(tmp_path / "plain", sys.executable, rendered=False),
    }
    holders = []
    for env in homes.values():
        holder = sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holders.append(holder)
    probes = {name: subprocess.Popen([env["ZIPPER_PYTHON"], "-c", PROBE], env=env, cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for name, env in homes.items()}
    try:
        for probe in probes.values():
            while (line := probe.stdout.readline()) and not line.startswith("WRITING"):
                pass
        time.sleep(HELD_SECONDS)
    finally:
        for holder in holders:
            holder.execute("COMMIT")
            holder.close()
    outcomes = {}
    for name, probe in probes.items():
        out, err = probe.communicate(timeout=120)
        outcomes[name] = (probe.returncode, out.strip() or err.strip()[-500:])
    assert outcomes["airflow 3, rendered"] == (0, "WRITTEN")
    assert outcomes["airflow 2, rendered"] == (0, "WRITTEN")
    # The control: without the setting the same write fails, so the setting is what made the difference.
    assert outcomes["airflow 3, defaults"][0] == 1 and "database is locked" in outcomes["airflow 3, defaults"][1]


def test_a_command_failed_on_the_lock_is_run_again_and_succeeds(tmp_path, monkeypatch):
    env = minimal_env(tmp_path, tmp_path / "specs", tmp_path / "warehouse")
    airflow = LocalAirflow(tmp_path / "airflow", env)
    airflow.cli("db", "migrate")
    database = sqlite3.connect(airflow.home / "airflow.db", isolation_level=None)
    database.execute("BEGIN IMMEDIATE")
    released = []

    def release_then_wait(seconds: float) -> None:  # the wait between attempts: the lock is gone by then
        if not released:
            database.execute("COMMIT")
            released.append(seconds)

    monkeypatch.setattr(local, "wait_before_retry", release_then_wait)
    try:
        once = airflow.cli("pools", "set", "locked_once", "1", "x", check=False, retries_when_locked=0)
        again = airflow.cli("pools", "set", "locked_once", "1", "x")
    finally:
        if not released:
            database.execute("COMMIT")
        database.close()
    assert once.returncode != 0 and local.LOCKED in once.stderr  # the control: one attempt fails on the lock
    assert again.returncode == 0 and released
    assert airflow.query("SELECT slots FROM slot_pool WHERE pool = 'locked_once'") == [(1,)]
