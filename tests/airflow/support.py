"""Shared pieces of the Airflow tests: a small sample table over three dates, specs, the probe."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.helpers import REPO, day, probe_output, wait_for_jvms, write_parquet
from tests.jvm import spark_env

AIRFLOW2_VENV = REPO / ".venv-airflow2"
DATES = [day(1), day(2), day(3)]
BASE = [(1, "ann", "Oslo"), (2, "bob", "Rome")]
INCREMENTS = {
    day(1): [(2, "bob", "Paris"), (3, "cid", None)],
    day(2): [(1, "ann", "Bergen"), (3, "cid", "Lima")],
    day(3): [(4, "dan", "Kyiv"), (2, "bob", "Rome")],  # bob moves back: a change, not a no-op
}


def write_sample(root: Path) -> Path:
    """Base plus three daily increments under root/data; returns the data folder."""
    data = root / "data"
    write_parquet(data / "base", BASE)
    for ds, rows in INCREMENTS.items():
        write_parquet(data / "incr" / f"ds={ds}", rows)
    return data


def write_spec(folder: Path, name: str, data: Path, **options) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    raw = {
        "name": name,
        "table": f"dw.{name}",
        "keys": ["id"],
        "source": {"format": "parquet", "path": str(data / "incr" / "ds={{ ds }}")},
        "base": {"format": "parquet", "path": str(data / "base")},
        "start_date": DATES[0],
        "end_date": DATES[-1],
        "description": f"test table {name}",
        "airflow": {
            "owner": "data-eng",
            "tags": ["test"],
            "retries": 0,
            "sensor": {"poke_interval": 5, "timeout": 600},
        },
    }
    raw.update(options)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def minimal_env(root: Path, specs: Path, warehouse: Path) -> dict[str, str]:
    """Only what the issue allows: no rendered airflow.cfg, just these variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ZIPPER_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(root / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "ZIPPER_SPECS": str(specs),
            "ZIPPER_WAREHOUSE": str(warehouse),
        }
    )
    env.update(spark_env())  # JVM start-up options of the tasks' spark-submit drivers (tests/jvm.py)
    return env


def probe(warehouse: Path, run=(), tables=(), status=(), timeout: float = 300) -> dict:
    """One JVM: run zipper commands, then snapshot tables (see probe.py)."""
    plan = {"run": [list(a) for a in run], "tables": list(tables), "status": [[str(s), n] for s, n in status]}
    result = subprocess.run(
        [sys.executable, "-m", "tests.airflow.probe", str(warehouse), json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={
            **os.environ,
            **spark_env(),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            # its commands run in its own JVM, beside its plain session: not as clients of the warehouse's server
            "ZIPPER_SPARK_RUNNER": "driver",
        },
    )
    wait_for_jvms(warehouse.parent)  # the warehouse folder is always <root>/warehouse here
    return probe_output(result)


def assert_serial(merges: list[dict]) -> None:
    """Each date's merge started after the previous date's merge ended, in date order."""
    assert [m["state"] for m in merges] == ["success"] * len(merges), merges
    ordered = sorted(merges, key=lambda m: m["logical_date"])
    for before, after in zip(ordered, ordered[1:]):
        assert before["end_date"] <= after["start_date"], (before, after)


def expected_after_first_date() -> list[list[str]]:
    """The sample table after its base and the merge of day 1, worked out by hand."""
    open_end = "9999-12-31"
    return sorted(
        [
            ["1", "ann", "Oslo", "2023-12-31", open_end],
            ["2", "bob", "Rome", "2023-12-31", DATES[0]],
            ["2", "bob", "Paris", DATES[0], open_end],
            ["3", "cid", "", DATES[0], open_end],
        ]
    )


@contextlib.contextmanager
def task_log():
    """The (level, message) pairs logged meanwhile by the hooks and operators, through Airflow's own logging:
    structlog on Airflow 3, the `airflow.task` logger on 2.11."""
    from zipper.airflow.compat import AIRFLOW_3  # on use: tests/cli imports this module without an Airflow home

    logged: list[tuple[str, str]] = []
    if AIRFLOW_3:
        import structlog

        with structlog.testing.capture_logs() as entries:
            yield logged
        logged.extend((entry["log_level"], entry["event"]) for entry in entries)
        return

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append((record.levelname.lower(), record.getMessage()))

    handler, logger = Collect(level=logging.DEBUG), logging.getLogger("airflow.task")
    logger.addHandler(handler)
    try:
        yield logged
    finally:
        logger.removeHandler(handler)


def outlet_events():
    """The task context's `outlet_events`, as Airflow gives it to a running task."""
    from zipper.airflow.compat import AIRFLOW_3  # on use: tests/cli imports this module without an Airflow home

    if AIRFLOW_3:
        from airflow.sdk.execution_time.context import OutletEventAccessors
    else:
        from airflow.utils.context import OutletEventAccessors
    return OutletEventAccessors()
