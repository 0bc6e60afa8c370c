"""Airflow 2.11 end to end: `airflow dags backfill` from .venv-airflow2 (the same DAG files and
package), configured only by environment variables, SQLite and its SequentialExecutor."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest

from tests.airflow.support import AIRFLOW2_VENV, DATES, assert_serial, minimal_env, probe, write_sample, write_spec
from tests.jvm import spark_env
from zipper.airflow.environment import DEFAULT_POOL

pytestmark = [pytest.mark.slow, pytest.mark.airflow]
NAME = "dim_af2"


def airflow2(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    result = subprocess.run([str(AIRFLOW2_VENV / "bin" / "airflow"), *args], env=env, capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, f"airflow {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    assert (AIRFLOW2_VENV / "bin" / "airflow").exists(), "run scripts/bootstrap_airflow2.sh (make test does)"
    root = tmp_path_factory.mktemp("af2")
    data = write_sample(root)
    write_spec(root / "specs", NAME, data, airflow={"owner": "data-eng", "retries": 0, "sensor": {"enabled": False}})
    write_spec(root / "ref_specs", "dim_ref", data)
    env = minimal_env(root, root / "specs", root / "warehouse")
    env.update(spark_env(str(AIRFLOW2_VENV / "bin" / "python")))  # the tasks' drivers run that venv's pyspark
    # `airflow dags backfill` starts `airflow tasks run` subprocesses: the venv's bin goes first on PATH.
    env["PATH"] = f"{AIRFLOW2_VENV / 'bin'}:{env['PATH']}"
    airflow2(env, "db", "migrate")
    airflow2(env, "pools", "set", DEFAULT_POOL, "1", "zipper merges")
    airflow2(env, "dags", "backfill", "-s", DATES[0], "-e", DATES[-1], f"zipper_{NAME}")
    with sqlite3.connect(root / "airflow" / "airflow.db") as db:
        merges = db.execute(
            "SELECT dr.execution_date, ti.state, ti.start_date, ti.end_date FROM task_instance ti"
            " JOIN dag_run dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id"
            " WHERE ti.dag_id = ? AND ti.task_id = 'merge' ORDER BY dr.execution_date", (f"zipper_{NAME}",)).fetchall()
    tables = probe(root / "warehouse", run=[["merge", "dim_ref", "--ds", ds, "--specs", str(root / "ref_specs")]
                                            for ds in DATES], tables=[f"dw.{NAME}", "dw.dim_ref"])
    keys = ("logical_date", "state", "start_date", "end_date")
    return {"merges": [dict(zip(keys, m)) for m in merges], "tables": tables}


def test_dags_backfill_runs_every_date_serially_in_order(backfilled):
    merges = backfilled["merges"]
    assert [m["logical_date"][:10] for m in merges] == DATES
    assert_serial(merges)


def test_dags_backfill_produces_the_table_of_daily_runs(backfilled):
    tables = backfilled["tables"]
    assert tables["exits"] == [0, 0, 0]
    table, reference = tables["tables"][f"dw.{NAME}"], tables["tables"]["dw.dim_ref"]
    assert table["exists"] and table["rows"] == reference["rows"]
    assert table["partitions"] == reference["partitions"] == sorted([*DATES, "9999-12-31"])
