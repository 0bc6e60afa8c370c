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
from pathlib import Path

from zipper.airflow.environment import warehouse
from zipper.runtime.metastore import MetastoreService

STOP_TIMEOUT_S = 30


def main() -> int:
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


def _stop_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


if __name__ == "__main__":
    sys.exit(main())
