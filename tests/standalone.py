"""A Spark standalone cluster on this machine for the tests: a master and one worker (1 core, 1 GB)
from the pyspark package's own `spark-class` (a pip install has no `sbin/`), everything on
127.0.0.1. Each daemon leads a process group of its own (the worker's executors are in the
worker's), so that stopping it by its pid stops whatever it started."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zipper.runtime import jvm, processes
from zipper.runtime.processes import LOCAL_HOST

READY_TIMEOUT_S = 240  # two JVM starts on a busy two-core machine


@dataclass(frozen=True)
class Cluster:
    master: str  # spark://127.0.0.1:<port>
    master_pid: int
    worker_pid: int
    web_port: int  # the master's web UI, whose /json/ says its workers and applications
    work: Path  # the worker's folder: one folder per application, one per executor in it
    logs: Path

    def state(self) -> dict:
        """What the master's web UI says of its workers and applications, as JSON."""
        with urllib.request.urlopen(f"http://{LOCAL_HOST}:{self.web_port}/json/", timeout=30) as answer:
            return json.load(answer)


@contextlib.contextmanager
def standalone_cluster(root: Path) -> Iterator[Cluster]:
    """A master and one registered worker, files under `root`; both stopped by pid on leaving."""
    port, web_port = processes.free_port(), processes.free_port()
    master_url = f"spark://{LOCAL_HOST}:{port}"
    env = {
        **os.environ,
        "SPARK_HOME": str(jvm.spark_home()),
        "SPARK_DAEMON_MEMORY": "256m",
        # the web UIs bind to every address without it, whatever --host says
        "SPARK_LOCAL_IP": LOCAL_HOST,
        "SPARK_LOG_DIR": str(root / "logs"),
    }
    env.pop("SPARK_SUBMIT_OPTS", None)  # the tests' driver options are for drivers
    spark_class = str(jvm.spark_home() / "bin" / "spark-class")
    master_args = ["org.apache.spark.deploy.master.Master", "--host", LOCAL_HOST, "--port", str(port)]
    master_args += ["--webui-port", str(web_port)]
    worker_args = ["org.apache.spark.deploy.worker.Worker", "--host", LOCAL_HOST, "--cores", "1", "--memory", "1g"]
    worker_args += ["--webui-port", str(processes.free_port()), "--work-dir", str(root / "work"), master_url]
    started: list[int] = []
    try:
        master = _start(root / "master.log", [spark_class, *master_args], env, root)
        started.append(master.pid)
        assert processes.wait_until_accepting(master, port, READY_TIMEOUT_S, group=True), _tail(root / "master.log")
        worker = _start(root / "worker.log", [spark_class, *worker_args], env, root)
        started.append(worker.pid)
        cluster = Cluster(master_url, master.pid, worker.pid, web_port, root / "work", root / "logs")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not _has_a_live_worker(cluster):
            assert worker.poll() is None and time.monotonic() < deadline, _tail(root / "worker.log")
            time.sleep(0.5)
        yield cluster
    finally:
        for pid in reversed(started):
            processes.terminate(pid, grace_s=30, group=True)


def _has_a_live_worker(cluster: Cluster) -> bool:
    try:
        return any(worker["state"] == "ALIVE" for worker in cluster.state()["workers"])
    except (OSError, ValueError):  # its web UI starts a moment after its port (and answers a page before its JSON)
        return False


def _start(log: Path, command: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )


def _tail(log: Path) -> str:
    return processes.log_tail(log, 3000)
