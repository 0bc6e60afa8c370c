"""Airflow 2.11 end to end: `airflow dags backfill` from .venv-airflow2 (the same DAG files and
package), configured only by environment variables, SQLite and its SequentialExecutor."""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest

from tests.airflow.support import (
    AIRFLOW2_VENV,
    DATES,
    INCREMENTS,
    assert_serial,
    minimal_env,
    probe,
    write_sample,
    write_spec,
)
from tests.cli.helpers import write_parquet
from tests.jvm import spark_env
from zipper.airflow.environment import DEFAULT_POOL
from zipper.airflow.sensors import PREVIOUS_DATE_TASK

pytestmark = [pytest.mark.slow, pytest.mark.airflow]
NAME = "dim_af2"
STUCK = "dim_af2_stuck"  # its second date's increment repeats a key


def airflow2(env: dict, *args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(AIRFLOW2_VENV / "bin" / "airflow"), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0 or not check, (
        f"airflow {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


@pytest.fixture(scope="module")
def af2(tmp_path_factory):
    """An Airflow 2.11 home with the specs' DAGs (migrated database, the pool), and its environment."""
    assert (AIRFLOW2_VENV / "bin" / "airflow").exists(), "run scripts/bootstrap_airflow2.sh (make test does)"
    root = tmp_path_factory.mktemp("af2")
    data = write_sample(root)
    write_spec(root / "specs", NAME, data, airflow={"owner": "data-eng", "retries": 0, "sensor": {"enabled": False}})
    stuck = write_sample(root / "stuck")  # its second date's increment repeats a key: that date fails
    write_parquet(stuck / "incr" / f"ds={DATES[1]}", [(1, "ann", "Bergen"), (1, "ann", "Lima")])
    write_spec(root / "specs", STUCK, stuck, airflow={"owner": "data-eng", "retries": 0, "sensor": {"enabled": False}})
    write_spec(root / "ref_specs", "dim_ref", data)
    env = minimal_env(root, root / "specs", root / "warehouse")
    env.update(spark_env(str(AIRFLOW2_VENV / "bin" / "python")))  # the tasks' drivers run that venv's pyspark
    # `airflow dags backfill` starts `airflow tasks run` subprocesses: the venv's bin goes first on PATH.
    env["PATH"] = f"{AIRFLOW2_VENV / 'bin'}:{env['PATH']}"
    airflow2(env, "db", "migrate")
    airflow2(env, "pools", "set", DEFAULT_POOL, "1", "zipper merges")
    # what a scheduler's DAG processor does: record the DAGs and their datasets (events of an unknown one are dropped)
    airflow2(env, "dags", "reserialize")
    return {"root": root, "env": env, "stuck": stuck}


def task_states(af2: dict, dag_id: str, task_id: str) -> list[dict]:
    with sqlite3.connect(af2["root"] / "airflow" / "airflow.db") as db:
        rows = db.execute(
            "SELECT dr.execution_date, ti.state, ti.start_date, ti.end_date FROM task_instance ti"
            " JOIN dag_run dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id"
            " WHERE ti.dag_id = ? AND ti.task_id = ? ORDER BY dr.execution_date",
            (dag_id, task_id),
        ).fetchall()
    return [dict(zip(("logical_date", "state", "start_date", "end_date"), row)) for row in rows]


@pytest.fixture(scope="module")
def backfilled(af2):
    airflow2(af2["env"], "dags", "backfill", "-s", DATES[0], "-e", DATES[-1], f"zipper_{NAME}")
    return {"merges": task_states(af2, f"zipper_{NAME}", "merge")}


@pytest.fixture(scope="module")
def tables(af2, backfilled, failed_date):
    """Both backfilled tables and the reference, `zipper merge` of each date (the daily runs), read
    in one driver once the last backfill is done (the embedded metastore allows one at a time)."""
    root = af2["root"]
    return probe(
        root / "warehouse",
        run=[["merge", "dim_ref", "--ds", ds, "--specs", str(root / "ref_specs")] for ds in DATES],
        tables=[f"dw.{NAME}", "dw.dim_ref", f"dw.{STUCK}"],
    )


def test_dags_backfill_runs_every_date_serially_in_order(backfilled):
    merges = backfilled["merges"]
    assert [m["logical_date"][:10] for m in merges] == DATES
    assert_serial(merges)


def test_dags_backfill_produces_the_table_of_daily_runs(tables):
    assert tables["exits"] == [0, 0, 0]
    table, reference = tables["tables"][f"dw.{NAME}"], tables["tables"]["dw.dim_ref"]
    assert table["exists"] and table["rows"] == reference["rows"]
    assert table["partitions"] == reference["partitions"] == sorted([*DATES, "9999-12-31"])


def test_each_merge_emits_its_commit_as_a_dataset_event_and_its_task_names_its_date(af2, backfilled):
    """The same DAG files on 2.11: the dataset event's extra is the commit, and the merge task's label (its
    rendered map index, which 2.11's UI shows for mapped tasks only) the date it merged."""
    with sqlite3.connect(af2["root"] / "airflow" / "airflow.db") as db:
        extras = db.execute(
            "SELECT de.extra FROM dataset_event de JOIN dataset d ON d.id = de.dataset_id"
            " WHERE d.uri = ? AND de.source_task_id = 'merge' ORDER BY de.id",
            (f"hive://dw/{NAME}",),
        ).fetchall()
        labels = db.execute(
            "SELECT ti.rendered_map_index FROM task_instance ti JOIN dag_run dr ON dr.dag_id = ti.dag_id"
            " AND dr.run_id = ti.run_id WHERE ti.dag_id = ? AND ti.task_id = 'merge' ORDER BY dr.execution_date",
            (f"zipper_{NAME}",),
        ).fetchall()
    events = [json.loads(extra) for (extra,) in extras]
    assert [(e["table"], e["date"], e["action"], e["dates"]) for e in events] == [
        (f"dw.{NAME}", ds, "merge", [ds]) for ds in DATES
    ]
    assert all(e["run_id"] and e["counts"]["open_after"] > 0 for e in events)
    assert [label for (label,) in labels] == [f"{ds}: merged" for ds in DATES]


@pytest.fixture(scope="module")
def failed_date(af2, backfilled):
    """A backfill over the table whose second date is bad (after the backfill above: the embedded
    metastore allows one Spark driver at a time); after fixing the input and clearing, a backfill
    of the last date alone, then the backfill from the failed date the messages name."""
    env, dag = af2["env"], f"zipper_{STUCK}"
    logs = af2["root"] / "airflow" / "logs" / f"dag_id={dag}"

    def log(ds: str, task: str) -> str:
        """The latest attempt's log of that date's task."""
        attempts = logs.glob(f"run_id=backfill__{ds}T*/task_id={task}/attempt=*.log")
        return max(attempts, key=lambda p: int(p.stem.split("=")[1])).read_text()

    def states(task: str) -> list[str]:
        return [t["state"] for t in task_states(af2, dag, task)]

    # without --continue-on-failures the backfill stops at the failed date, and the later dates get no run
    airflow2(env, "dags", "backfill", "--continue-on-failures", "-s", DATES[0], "-e", DATES[-1], dag)  # exits 0
    failed = {
        "merges": states("merge"),
        "gates": states(PREVIOUS_DATE_TASK),
        "merge_log": log(DATES[1], "merge"),
        "gate_log": log(DATES[2], PREVIOUS_DATE_TASK),
    }
    write_parquet(af2["stuck"] / "incr" / f"ds={DATES[1]}", INCREMENTS[DATES[1]])  # the fixed file
    airflow2(env, "tasks", "clear", dag, "-s", DATES[1], "-y")
    # the last date alone: its previous date's run is queued, and only a backfill of that date starts it
    alone = airflow2(env, "dags", "backfill", "-s", DATES[2], "-e", DATES[2], dag, check=False, timeout=300)
    behind = {
        "exit": alone.returncode,
        "gates": states(PREVIOUS_DATE_TASK),
        "gate_log": log(DATES[2], PREVIOUS_DATE_TASK),
    }
    airflow2(env, "tasks", "clear", dag, "-s", DATES[1], "-y")
    airflow2(env, "dags", "backfill", "-s", DATES[1], "-e", DATES[-1], dag)
    return {"failed": failed, "behind": behind, "merges": task_states(af2, dag, "merge")}


def resume_from(ds: str) -> str:
    """What the messages say runs the dates from ds again on 2.11 (a cleared backfill run waits for a backfill)."""
    dag = f"zipper_{STUCK}"
    return f"airflow tasks clear {dag} -s {ds} -y, then airflow dags backfill -s {ds} -e <last date> {dag}"


def test_a_failed_date_fails_the_later_runs_at_once_and_clearing_and_backfilling_from_it_converges(failed_date, tables):
    failed = failed_date["failed"]
    assert failed["merges"] == ["success", "failed", "upstream_failed"]
    assert failed["gates"] == ["success", "success", "failed"]
    assert f"the merge of the previous date {DATES[1]} " in failed["gate_log"]
    assert resume_from(DATES[1]) in failed["gate_log"] and resume_from(DATES[1]) in failed["merge_log"]
    assert_serial(failed_date["merges"])
    assert tables["tables"][f"dw.{STUCK}"]["rows"] == tables["tables"]["dw.dim_ref"]["rows"]


def test_a_backfill_run_behind_a_queued_earlier_run_fails_at_once_instead_of_waiting_for_ever(failed_date):
    """Airflow 2.11 counts a backfill run against the DAG's one active run and starts a queued
    backfill run only in a backfill: waiting for it held this run in its gate for the sensor's
    default timeout, seven days."""
    behind = failed_date["behind"]
    assert behind["exit"] != 0 and behind["gates"] == ["success", None, "failed"]  # the failed date: cleared, queued
    assert f"the run of the previous date {DATES[1]} " in behind["gate_log"]
    assert "is queued, and cannot start while this run runs" in behind["gate_log"]
    assert resume_from(DATES[1]) in behind["gate_log"]
