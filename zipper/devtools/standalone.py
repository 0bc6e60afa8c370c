"""`make airflow`: `airflow standalone` with this package's DAGs, and the warehouse's metastore
server for as long as it runs.

The server is started first (the UI's tasks and an analyst's queries all use it) and stopped at
the end if this command started it. Airflow's processes are stopped as a process group: stopping
`airflow standalone` by its own pid leaves its scheduler, API server and triggerer running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from zipper.airflow.environment import warehouse
from zipper.runtime.metastore import MetastoreService

STOP_TIMEOUT_S = 30


def main() -> int:
    _stop_on_signals()
    airflow = Path(sys.executable).parent / "airflow"
    with MetastoreService(warehouse()).for_this_run() as server:
        print(f"metastore server for {warehouse()}: {server.uri} (pid {server.pid})", flush=True)
        process = subprocess.Popen([str(airflow), "standalone"], start_new_session=True)
        try:
            return process.wait()
        except KeyboardInterrupt:
            return 130
        finally:
            _stop_group(process)


def _stop_on_signals() -> None:
    """Ctrl-C and `kill` both end the run through the `finally` below. Set explicitly: a command
    started in the background of a script inherits SIGINT ignored, and Python then keeps it so."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the whole group; what is still there after STOP_TIMEOUT_S gets SIGKILL. Waiting
    for `standalone` alone is not enough: its scheduler's workers outlive it, ignoring SIGTERM."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _group_alive(process) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _group_alive(process: subprocess.Popen) -> bool:
    process.poll()  # reap standalone itself, or it would count as alive
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
