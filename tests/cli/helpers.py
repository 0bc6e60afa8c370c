"""Run the zipper CLI and the probe as real subprocesses, each with its own JVM."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests import support
from tests.jvm import spark_env
from zipper.runtime import metastore, spark_server

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCHEMA = "id bigint, name string, city string"


def day(n: int) -> str:
    return (dt.date(2024, 1, 1) + dt.timedelta(days=n - 1)).isoformat()


def write_parquet(folder: Path, rows: list[tuple]) -> None:
    """`folder` as one Parquet file of (id, name, city) rows."""
    support.write_parquet(folder, rows, SCHEMA)


def make_spec(root: Path, name: str = "dim", **options) -> Path:
    specs = root / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    raw = {
        "name": name,
        "table": f"dw.{name}",
        "keys": ["id"],
        "source": {"mode": "upsert", "format": "parquet", "path": str(root / "data" / "incr" / "ds={{ ds }}")},
        "base": {"format": "parquet", "path": str(root / "data" / "base")},
        "start_date": day(1),
    }
    raw.update(options)
    (specs / f"{name}.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return specs


def env_for(root: Path, **extra) -> dict:
    env = dict(os.environ)
    env.pop("ZIPPER_KILL_AT", None)
    for name in spark_server.CLIENT_ENV:  # this process may be a Spark Connect client: a command is its own
        env.pop(name, None)
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    env["ZIPPER_SPECS"] = str(root / "specs")
    env["ZIPPER_WAREHOUSE"] = str(root / "warehouse")
    env.update(spark_env())  # class data sharing and the quick JIT for the drivers (tests/jvm.py)
    env.update(extra)
    return env


def wait_for_jvms(root: Path, timeout: float = 90) -> None:
    """A killed driver's JVM exits when its stdin closes; wait so that it is gone for the next run
    (a Derby database it held is free again)."""
    import psutil

    marker = str(root / "warehouse")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for proc in psutil.process_iter(["cmdline"]):
            try:
                cmdline = proc.info["cmdline"] or []
                # the warehouse's metastore server outlives the commands on purpose (stopped by the fixtures)
                if (
                    any(marker in part for part in cmdline)
                    and "java" in " ".join(cmdline[:1])
                    and metastore.MAIN_CLASS not in cmdline
                    and spark_server.MAIN_CLASS not in cmdline  # the warehouse's Spark server, as its metastore's
                ):
                    alive.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if not alive:
            return
        time.sleep(0.1)  # a JVM exits within a second or two of its Python
    raise AssertionError(f"JVMs using {marker} did not exit")


def zipper(root: Path, *args: str, timeout: float = 300, wait: bool = True, **extra_env) -> subprocess.CompletedProcess:
    """`zipper ARGS` in `root`; then, unless `wait` is False (another run of the warehouse is held
    on purpose), until every driver JVM of the warehouse has exited."""
    result = subprocess.run(
        [str(BIN / "zipper"), *args],
        env=env_for(root, **extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=root,
    )
    if wait:
        wait_for_jvms(root)
    return result


def probe_output(result: subprocess.CompletedProcess) -> dict:
    """The JSON a probe (table_probe.py, tests/airflow/probe.py) printed on its last `PROBE ` line."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("PROBE ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("PROBE ") :])


def zipper_in_one_jvm(root: Path, *commands: list[str], timeout: float = 300) -> list[int]:
    """Exit codes of `zipper` commands run one after another in one driver (tests/airflow/probe.py),
    for set-up steps whose only outcome a test checks is success: one JVM start instead of one each."""
    plan = json.dumps({"run": [list(c) for c in commands]})
    result = subprocess.run(
        [sys.executable, "-m", "tests.airflow.probe", str(root / "warehouse"), plan],
        env=env_for(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,  # the probe is a module of the tests package
    )
    wait_for_jvms(root)
    return probe_output(result)["exits"]


def probe(root: Path, table: str, *zipper_args: str, timeout: float = 300, wait: bool = True) -> dict:
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("table_probe.py")), str(root / "warehouse"), table, *zipper_args],
        env=env_for(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=root,
    )
    if wait:
        wait_for_jvms(root)
    return probe_output(result)
