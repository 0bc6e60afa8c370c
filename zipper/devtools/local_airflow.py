"""An Airflow 3 instance on this machine, for the demo and the end-to-end tests.

Airflow 3 runs every task through the API server's execution API, so a working instance is four
processes: `airflow api-server`, `airflow scheduler` (LocalExecutor), `airflow dag-processor`, and
`airflow triggerer` for deferrable increment sensors.
State is read back from the SQLite metadata database (read-only)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from zipper.airflow.environment import python_bin

SERVICES = ("api-server", "scheduler", "dag-processor", "triggerer")
FINISHED = {"success", "failed"}
LOCKED = "database is locked"
# A writer that began as a reader gets "database is locked" at once when another process holds the
# write lock (SQLite cannot wait there without a deadlock), whatever the busy timeout: on a loaded
# machine the scheduler and the dag-processor hold it often, so a command is tried up to 9 times
# over about 70 s (a clean-clone test run saw 5 tries over 20 s all fail).
LOCK_RETRIES = 8


def wait_before_retry(seconds: float) -> None:
    time.sleep(seconds)


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int, taken: tuple[int, ...] = ()) -> list[int]:
    """`count` distinct ports nothing listens on now, none of them in `taken` (held open together, so
    the kernel cannot hand out one twice)."""
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            if sock.getsockname()[1] in taken:
                sock.close()
                continue
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# Airflow's scheduler (LocalExecutor) and triggerer each start a log server, on 8793 and 8794 by default:
# a second Airflow on the machine could not start its own, and its UI would ask the first one for logs.
LOG_SERVER_PORTS = {
    "worker": "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT",
    "trigger": "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT",
}


class LocalAirflow:
    """Start with `start()`, or use as a context manager. `env` is what every process gets.

    The API server gets `port` (default: a free one) and the scheduler's and triggerer's log servers
    free ports too (unless `env` sets them), so that several can run side by side on one machine."""

    def __init__(self, home: Path, env: dict[str, str] | None = None, port: int | None = None):
        self.home = Path(home)
        self.port = port or free_port()
        base = dict(os.environ if env is None else env)
        for variable, spare in zip(LOG_SERVER_PORTS.values(), free_ports(len(LOG_SERVER_PORTS), taken=(self.port,))):
            if not base.get(variable):
                base[variable] = str(spare)
        self.log_ports = {role: int(base[variable]) for role, variable in LOG_SERVER_PORTS.items()}
        base.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://localhost:{self.port}/execution/",
                "PATH": f"{python_bin()}{os.pathsep}{base.get('PATH', '')}",
            }
        )
        base.setdefault("AIRFLOW__API_AUTH__JWT_SECRET", secrets.token_urlsafe(32))
        self.env = base
        self.processes: dict[str, subprocess.Popen] = {}

    # ------------------------------------------------------------------ processes
    def cli(
        self, *args: str, check: bool = True, timeout: float = 300, retries_when_locked: int = LOCK_RETRIES
    ) -> subprocess.CompletedProcess:
        """Runs again a command that SQLite's write lock made fail: the scheduler, the dag-processor
        and the API server write to the same file, and Airflow rolls a failed command back (it
        removes a half-created backfill for exactly this). Pass 0 for commands that are not safe
        to repeat; give `dags trigger` a `--run-id`, so that a repeat cannot start a second run."""
        for attempt in range(retries_when_locked + 1):
            result = subprocess.run(
                [str(python_bin() / "airflow"), *args], env=self.env, capture_output=True, text=True, timeout=timeout
            )
            if result.returncode == 0 or LOCKED not in result.stderr or attempt == retries_when_locked:
                break
            wait = min(2.0 * (attempt + 1), 15.0)
            print(
                f"airflow {' '.join(args[:2])}: {LOCKED}; again in {wait:.0f} s"
                f" ({attempt + 2} of {retries_when_locked + 1})",
                file=sys.stderr,
            )
            wait_before_retry(wait)
        if check and result.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        return result

    def start(self, timeout: float = 180) -> LocalAirflow:
        self.home.mkdir(parents=True, exist_ok=True)
        for service in SERVICES:
            log = open(self.home / f"{service}.out", "ab")
            self.processes[service] = subprocess.Popen(
                [str(python_bin() / "airflow"), service],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.wait_until(self._healthy, timeout, what=f"the API server on port {self.port}")
        return self

    def _healthy(self) -> bool:
        for service, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"airflow {service} exited with {process.returncode}; see {self.home}/{service}.out")
        try:
            with urllib.request.urlopen(f"http://localhost:{self.port}/api/v2/monitor/health", timeout=5) as reply:
                return reply.status == 200
        except OSError:
            return False

    def stop(self, timeout: float = 30) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for process in self.processes.values():  # a task's worker the scheduler left behind as it exited
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        self.processes.clear()

    def __enter__(self) -> LocalAirflow:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ state
    def query(self, sql: str, *params) -> list[tuple]:
        """Rows from the metadata database; retried while a writer holds the lock."""
        for attempt in range(20):
            try:
                with contextlib.closing(
                    sqlite3.connect(f"file:{self.home}/airflow.db?mode=ro", uri=True, timeout=10)
                ) as db:
                    return db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if attempt == 19 or ("locked" not in str(exc) and "no such table" not in str(exc)):
                    raise
                time.sleep(0.5)
        return []

    def wait_until(self, predicate: Callable[[], object], timeout: float, what: str, poll: float = 2.0):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(poll)

    def wait_for_dags(self, dag_ids: list[str], timeout: float = 180) -> None:
        marks = ",".join("?" * len(dag_ids))

        def parsed():
            rows = self.query(f"SELECT count(DISTINCT dag_id) FROM serialized_dag WHERE dag_id IN ({marks})", *dag_ids)
            return rows and rows[0][0] == len(dag_ids)

        self.wait_until(parsed, timeout, what=f"the dag-processor to parse {dag_ids}")

    def dag_runs(self, dag_id: str) -> list[dict]:
        rows = self.query(
            "SELECT run_id, logical_date, state, run_type FROM dag_run WHERE dag_id = ? ORDER BY logical_date", dag_id
        )
        return [dict(zip(("run_id", "logical_date", "state", "run_type"), r)) for r in rows]

    def task_instances(self, dag_id: str, task_id: str) -> list[dict]:
        rows = self.query(
            "SELECT ti.run_id, dr.logical_date, ti.state, ti.start_date, ti.end_date, ti.try_number"
            " FROM task_instance ti JOIN dag_run dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id"
            " WHERE ti.dag_id = ? AND ti.task_id = ? ORDER BY dr.logical_date",
            dag_id,
            task_id,
        )
        keys = ("run_id", "logical_date", "state", "start_date", "end_date", "try_number")
        return [dict(zip(keys, r)) for r in rows]

    def wait_for_runs(self, dag_id: str, count: int, timeout: float = 900) -> list[dict]:
        """Until `count` runs of the DAG have finished; fails fast if any failed."""

        def finished():
            runs = self.dag_runs(dag_id)
            failed = [r for r in runs if r["state"] == "failed"]
            if failed:
                raise RuntimeError(f"{dag_id}: runs failed: {failed}; logs under {self.home}/logs")
            done = [r for r in runs if r["state"] in FINISHED]
            return runs if len(done) >= count else None

        return self.wait_until(finished, timeout, what=f"{count} finished runs of {dag_id}")

    def wait_for_backfill(self, dag_id: str, timeout: float = 1800) -> list[dict]:
        """Until the DAG's latest backfill has completed; its runs, in date order. Fails fast on a failed run."""
        rows = self.query("SELECT max(id) FROM backfill WHERE dag_id = ?", dag_id)
        backfill_id = rows[0][0] if rows else None
        if backfill_id is None:
            raise RuntimeError(f"{dag_id} has no backfill")

        def runs():
            found = self.query(
                "SELECT dr.run_id, dr.logical_date, dr.state FROM dag_run dr"
                " WHERE dr.backfill_id = ? ORDER BY dr.logical_date",
                backfill_id,
            )
            found = [dict(zip(("run_id", "logical_date", "state"), r)) for r in found]
            failed = [r for r in found if r["state"] == "failed"]
            if failed:
                raise RuntimeError(f"{dag_id}: backfill runs failed: {failed}; logs under {self.home}/logs")
            done = self.query("SELECT completed_at FROM backfill WHERE id = ?", backfill_id)[0][0]
            return found if done and all(r["state"] in FINISHED for r in found) else None

        return self.wait_until(runs, timeout, what=f"the backfill of {dag_id}")
