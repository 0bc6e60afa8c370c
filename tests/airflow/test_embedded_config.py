"""The embedded Airflow on SQLite under a held write lock.

`airflow backfill create` failed with "database is locked" while the scheduler wrote: Python's
sqlite3 gives up after 5 s. The rendered airflow.cfg makes Airflow's own engine wait longer, and
`LocalAirflow.cli` (the demo and the end-to-end tests, which run on Airflow's defaults) runs such
a command again. The lock is held here by a second connection, as a scheduler transaction holds it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.airflow.support import AIRFLOW2_VENV, minimal_env
from zipper.airflow.environment import DEFAULT_POOL, REPO
from zipper.core.errors import StateError
from zipper.devtools import airflow_home as home_setup
from zipper.devtools import local_airflow
from zipper.devtools.airflow_home import render_config
from zipper.devtools.local_airflow import LocalAirflow

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
from zipper.devtools.airflow_home import render_config
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
    probes = {
        name: subprocess.Popen(
            [env["ZIPPER_PYTHON"], "-c", PROBE],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, env in homes.items()
    }
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

    monkeypatch.setattr(local_airflow, "wait_before_retry", release_then_wait)
    try:
        once = airflow.cli("pools", "set", "locked_once", "1", "x", check=False, retries_when_locked=0)
        again = airflow.cli("pools", "set", "locked_once", "1", "x")
    finally:
        if not released:
            database.execute("COMMIT")
        database.close()
    assert once.returncode != 0 and local_airflow.LOCKED in once.stderr  # the control: one attempt fails on the lock
    assert again.returncode == 0 and released
    assert airflow.query("SELECT slots FROM slot_pool WHERE pool = 'locked_once'") == [(1,)]


LOG_SERVERS = """
import os, sys
from airflow.cli.commands import scheduler_command, triggerer_command
from airflow.configuration import conf
# the log servers `airflow scheduler` (LocalExecutor) and `airflow triggerer` start, from their own code
with scheduler_command._serve_logs(), triggerer_command._serve_logs():
    # the ports go to a file of their own: the log servers share stdout, and their lines ran into ours
    ports = f"{conf.getint('logging', 'worker_log_server_port')} {conf.getint('logging', 'trigger_log_server_port')}"
    with open(sys.argv[1] + ".partial", "w") as out:
        out.write(ports)
    os.replace(sys.argv[1] + ".partial", sys.argv[1])  # whole or not at all
    sys.stdin.read()  # until the test closes it
"""


def _answers(port: int) -> bool:
    """An HTTP server answers on the port (Airflow's log server refuses a request without its token)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/log/probe.log", timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def test_two_embedded_airflows_on_one_machine_each_serve_their_logs(tmp_path):
    """The scheduler's and triggerer's log servers listened on Airflow's 8793 and 8794 in every embedded
    Airflow: of two on one machine (the demo's and the tests', two users' homes), the second could not
    start its own, and its UI asked the first one for the logs of running and deferred tasks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    homes = {}
    for name in ("rendered_a", "rendered_b"):  # `make airflow-setup`: airflow.cfg, read by `make airflow`
        home = tmp_path / name
        home.mkdir()
        (home / "airflow.cfg").write_text(render_config(home))
        homes[name] = {**env, "AIRFLOW_HOME": str(home)}
    for name in ("local_a", "local_b"):  # LocalAirflow: the demo and the end-to-end tests
        homes[name] = LocalAirflow(tmp_path / name, minimal_env(tmp_path / name, tmp_path, tmp_path)).env
    # Each probe writes its ports to a file; its output (and its log servers') goes to files too, so no
    # pipe fills up while the test waits.
    probes, logs = {}, {}
    for name, home_env in homes.items():
        logs[name] = tmp_path / f"{name}.log"
        with open(logs[name], "w") as log:
            probes[name] = subprocess.Popen(
                [sys.executable, "-c", LOG_SERVERS, str(tmp_path / f"{name}.ports")],
                env=home_env,
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
    try:
        ports = {}
        for name, probe in probes.items():
            written = tmp_path / f"{name}.ports"
            deadline = time.monotonic() + 300
            while not written.exists() and probe.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
            assert written.exists(), f"{name}: {logs[name].read_text()[-2000:]}"
            ports[name] = [int(port) for port in written.read_text().split()]
        every_port = [port for pair in ports.values() for port in pair]
        assert len(set(every_port)) == 8 and not {8793, 8794} & set(every_port), ports
        deadline = time.monotonic() + 120
        while not all(_answers(port) for port in every_port) and time.monotonic() < deadline:
            time.sleep(1)
        assert {port: _answers(port) for port in every_port} == {port: True for port in every_port}
        for name, probe in probes.items():
            assert probe.poll() is None, f"{name} exited: {logs[name].read_text()[-2000:]}"
    finally:
        outputs = {}
        for name, probe in probes.items():
            probe.stdin.close()  # the probe leaves its `with`, which stops its log servers
            try:
                probe.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(probe.pid, signal.SIGKILL)
                probe.wait()
            outputs[name] = logs[name].read_text()
    for name, err in outputs.items():
        assert "address already in use" not in err.lower(), f"{name}: {err[-2000:]}"


def pool_slots_in(home: Path, env: dict[str, str]) -> tuple[int, str]:
    """The merge pool's (slots, description), as `airflow pools get` shows them."""
    shown = home_setup.airflow(home, "pools", "get", DEFAULT_POOL, "-o", "json", env=env)
    (pool,) = json.loads(shown.stdout)
    return int(pool["slots"]), pool["description"]


def test_the_set_up_creates_the_merge_pool_with_a_slot_per_core_of_the_spark_server(tmp_path):
    # Every task is a client of the warehouse's Spark server: as many side by side as its task slots
    assert home_setup.pool_slots({}) == 2  # its default, ZIPPER_SPARK_CORES=2
    assert home_setup.pool_slots({"ZIPPER_SPARK_CORES": "4", "ZIPPER_METASTORE": "external"}) == 4
    assert home_setup.pool_slots({"ZIPPER_SPARK_CORES": "*"}) == (os.cpu_count() or 1)
    # Given a home set up as `make airflow-setup` does, on the default metastore (the local server)
    env = minimal_env(tmp_path, tmp_path / "specs", tmp_path / "warehouse")  # no ZIPPER_SPARK_CORES
    home = Path(env["AIRFLOW_HOME"])
    home_setup.setup(home, env=env)
    # Then the pool is zipper_merges, with the server's two slots
    slots, description = pool_slots_in(home, env)
    assert DEFAULT_POOL == "zipper_merges" and slots == 2 and "ZIPPER_SPARK_CORES" in description
    # The retired ZIPPER_METASTORE=embedded is refused, before a pool is made for it
    with pytest.raises(StateError, match="ZIPPER_METASTORE=embedded is retired"):
        home_setup.pool_slots({"ZIPPER_METASTORE": "embedded"})
    # Set to one slot by hand
    home_setup.airflow(home, "pools", "delete", DEFAULT_POOL, env=env)
    home_setup.ensure_pool(home, env=env, slots=1)
    assert pool_slots_in(home, env)[0] == 1
    # A pool that exists is kept as it is (an operator's `airflow pools set` wins over the set-up)
    home_setup.ensure_pool(home, env=env)
    assert pool_slots_in(home, env)[0] == 1
