"""`make airflow` (zipper.devtools.standalone): Airflow standalone with the warehouse's metastore
server, and on Ctrl-C nothing left running: not the server, not any of Airflow's processes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.helpers import REPO
from zipper.devtools.airflow_home import setup
from zipper.devtools.local_airflow import free_port
from zipper.runtime import processes
from zipper.runtime.metastore import MetastoreService

pytestmark = [pytest.mark.slow, pytest.mark.airflow]
BIN = Path(sys.executable).parent


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(proc.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def test_make_airflow_stops_airflow_and_the_metastore_server_it_started(tmp_path):
    home, warehouse, port = tmp_path / "airflow", tmp_path / "warehouse", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ZIPPER_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "ZIPPER_WAREHOUSE": str(warehouse),
            "ZIPPER_SPECS": str(REPO / "dags" / "tables"),
            "PATH": f"{BIN}:{env.get('PATH', '')}",
        }
    )
    setup(home, api_port=port, env=env)
    log = tmp_path / "standalone.log"  # a file, not a pipe: Airflow's chatter must never block on it
    with open(log, "wb") as out:
        wrapper = subprocess.Popen(
            [sys.executable, "-m", "zipper.devtools.standalone"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # as a command started in the background of a script (CI, nohup) is: SIGINT ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
    try:
        said = re.compile(r"^metastore server for .*: thrift://127\.0\.0\.1:\d+ \(pid (\d+)\)$", re.MULTILINE)
        while not (found := said.search(log.read_text(errors="replace"))):
            assert wrapper.poll() is None, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        server_pid = int(found.group(1))
        assert MetastoreService(warehouse).running().pid == server_pid
        # Airflow's API server answers: standalone and its processes are up
        deadline = time.monotonic() + 600
        while True:
            assert wrapper.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "Airflow's API server never answered"
                time.sleep(1)
        [standalone] = [pid for pid in children(wrapper.pid) if pid != server_pid]
        assert len(processes.group_members(standalone)) > 1  # standalone started its scheduler, API server, ...
    finally:
        # Ctrl-C in the terminal: the wrapper stops Airflow's process group and the server
        wrapper.send_signal(signal.SIGINT)
        try:
            wrapper.wait(300)
        except subprocess.TimeoutExpired:
            os.killpg(wrapper.pid, signal.SIGKILL)  # no orphans from a failed test
            raise
    assert wrapper.returncode == 130
    assert not alive(server_pid) and MetastoreService(warehouse).running() is None
    assert processes.group_members(standalone) == []
