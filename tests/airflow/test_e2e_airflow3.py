"""Airflow 3 end to end: a real api-server, scheduler (LocalExecutor), dag-processor and triggerer on SQLite,
configured only by environment variables, running the zipper DAGs: their tasks are Spark Connect clients of
the warehouse's own server (no connection: the default), which the first one starts.

One instance serves every scenario (Airflow's own start costs most of the time here)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.airflow.support import (
    BASE,
    DATES,
    INCREMENTS,
    assert_serial,
    expected_after_first_date,
    minimal_env,
    probe,
    write_sample,
    write_spec,
)
from tests.cli.helpers import write_parquet
from tests.web.browser import attention_shown
from zipper.airflow.environment import DEFAULT_POOL
from zipper.devtools.local_airflow import LocalAirflow

pytestmark = [pytest.mark.slow, pytest.mark.airflow]
BACKFILLED = "dim_bf"
FIRST = "dim_first"
DEFERRED = "dim_deferred"
STUCK = "dim_stuck"  # its second date's increment changes every open row: the guard fails that run, on its first try
LATE = "dim_late"  # never unpaused: its sensor is run alone, and times out
LATE_RUNS = "dim_late_runs"  # scheduled, its increments never land: every sensor times out
HELD = "dim_held"  # its third date's increment lands only when the test says so
CANCELLED = "dim_cancelled"  # its first date's run belongs to a cancelled backfill
DAG = "zipper_" + BACKFILLED


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("af3")
    data = write_sample(root)
    specs, refs = root / "specs", root / "ref_specs"
    write_spec(specs, BACKFILLED, data)
    write_spec(specs, FIRST, data)
    (specs / "broken.yaml").write_text(
        "name: broken\ntable: dw.broken\nkeys: []\nsource: {path: /x}\nstart_date: '2024-01-01'\n"
    )
    write_spec(refs, "dim_ref", data)
    deferred = root / "data_deferred"  # its one date's increment lands only while the sensor waits
    write_parquet(deferred / "base", BASE)
    write_spec(
        specs,
        DEFERRED,
        deferred,
        end_date=DATES[0],
        airflow={
            "owner": "data-eng",
            "retries": 0,
            "sensor": {"mode": "deferrable", "poke_interval": 2, "timeout": 600},
        },
    )
    stuck = write_sample(root / "stuck")
    # every open row changes on the table's second day: with one committed day, the share alone decides
    write_parquet(stuck / "incr" / f"ds={DATES[1]}", [(1, "ann", "Bergen"), (2, "bob", "Lima"), (3, "cid", "Oslo")])
    write_spec(
        specs,
        STUCK,
        stuck,  # a retry would come quickly: the test can see that none does
        guard={"max_fraction": 0.7, "min_rows": 0},  # the fixed file changes 2 of 3 (67%)
        airflow={
            "owner": "data-eng",
            "tags": ["test"],
            "retries": 1,
            "retry_delay_minutes": 0.02,
            "sensor": {"poke_interval": 5, "timeout": 600},
        },
    )
    write_spec(
        specs,
        LATE,
        root / "late",
        end_date=DATES[0],  # its increment never lands
        airflow={"owner": "data-eng", "retries": 0, "sensor": {"mode": "poke", "poke_interval": 1, "timeout": 3}},
    )
    write_spec(
        specs,
        LATE_RUNS,
        root / "late_runs",
        end_date=DATES[1],
        airflow={"owner": "data-eng", "retries": 0, "sensor": {"mode": "poke", "poke_interval": 1, "timeout": 3}},
    )
    held = root / "held"  # the first two dates' increments only
    write_parquet(held / "base", BASE)
    for ds in DATES[:2]:
        write_parquet(held / "incr" / f"ds={ds}", INCREMENTS[ds])
    # in poke mode (the check is the same `poke` as in reschedule mode): on a loaded machine Airflow's
    # scheduler failed a rescheduled sensor itself ("task state changed externally") before zipper's
    # check ran, with checks 2 s and then 5 s apart, so the test missed its message
    write_spec(
        specs,
        HELD,
        held,
        end_date=DATES[2],
        airflow={"owner": "data-eng", "retries": 0, "sensor": {"mode": "poke", "poke_interval": 5, "timeout": 900}},
    )
    write_spec(
        specs,
        CANCELLED,
        write_sample(root / "cancelled"),
        end_date=DATES[1],
        airflow={"owner": "data-eng", "retries": 0, "sensor": {"poke_interval": 2, "timeout": 900}},
    )
    return {
        "root": root,
        "data": data,
        "specs": specs,
        "refs": refs,
        "warehouse": root / "warehouse",
        "deferred": deferred,
        "stuck": stuck,
        "held": held,
    }


@pytest.fixture(scope="module")
def af3(workspace):
    env = minimal_env(workspace["root"], workspace["specs"], workspace["warehouse"])
    # the OpenLineage provider's file transport: every task's events, one JSON line each
    transport = {"type": "file", "log_file_path": str(workspace["root"] / "lineage.jsonl"), "append": True}
    env["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(transport)
    instance = LocalAirflow(workspace["root"] / "airflow", env)
    instance.cli("db", "migrate")
    instance.cli("pools", "set", DEFAULT_POOL, "1", "zipper merges")
    instance.start()
    try:
        instance.wait_for_dags([DAG, f"zipper_{FIRST}", f"{DAG}_rerun", f"zipper_{DEFERRED}"])
        yield instance
    finally:
        instance.stop()


@pytest.fixture(scope="module")
def backfilled(af3):
    """`airflow backfill create` over the three dates with max-active-runs 3, run by the scheduler."""
    af3.cli(
        "backfill",
        "create",
        "--dag-id",
        DAG,
        "--from-date",
        DATES[0],
        "--to-date",
        DATES[-1],
        "--max-active-runs",
        "3",
        "--reprocess-behavior",
        "failed",
    )
    af3.cli("dags", "unpause", DAG)  # Airflow 3 queues no task of a paused DAG, backfill or not
    runs = af3.wait_for_runs(DAG, len(DATES), timeout=600)
    return {"runs": runs, "merges": af3.task_instances(DAG, "merge")}


@pytest.fixture(scope="module")
def dags_tested(af3, backfilled):
    """`airflow dags test` of the first date on a table that does not exist yet (after the backfill:
    the embedded metastore allows one Spark driver at a time)."""
    return af3.cli("dags", "test", f"zipper_{FIRST}", DATES[0], check=False, timeout=400, retries_when_locked=0)


@pytest.fixture(scope="module")
def tables(workspace, backfilled, dags_tested):
    """The Airflow tables, and the reference: `zipper merge` of each date (the daily runs)."""
    refs = str(workspace["refs"])
    return probe(
        workspace["warehouse"],
        run=[["merge", "dim_ref", "--ds", ds, "--specs", refs] for ds in DATES],
        tables=[f"dw.{BACKFILLED}", "dw.dim_ref", f"dw.{FIRST}"],
        status=[(workspace["specs"], BACKFILLED)],
    )


def test_backfill_runs_every_date_serially_in_order(backfilled):
    runs = backfilled["runs"]
    assert [r["logical_date"][:10] for r in runs] == DATES
    assert {r["run_type"] for r in runs} == {"backfill"} and {r["state"] for r in runs} == {"success"}
    assert_serial(backfilled["merges"])


def _log_events(path) -> list[dict]:
    """A task log's entries (Airflow 3 writes one JSON object a line)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def _asset_events(af3, table: str, run_id: str) -> list[dict]:
    rows = af3.query(
        "SELECT ae.extra FROM asset_event ae JOIN asset a ON a.id = ae.asset_id"
        " WHERE a.name = ? AND ae.source_run_id = ? ORDER BY ae.id",
        table,
        run_id,
    )
    return [json.loads(extra) for (extra,) in rows]


def _labels(af3, dag: str, task: str) -> list[str | None]:
    """Each run's task instance's rendered map index (the UI's Map Index column), in date order."""
    rows = af3.query(
        "SELECT ti.rendered_map_index FROM task_instance ti JOIN dag_run dr ON dr.dag_id = ti.dag_id"
        " AND dr.run_id = ti.run_id WHERE ti.dag_id = ? AND ti.task_id = ? ORDER BY dr.logical_date",
        dag,
        task,
    )
    return [label for (label,) in rows]


def test_each_run_shows_its_date_and_emits_its_commit_as_an_asset_event_of_the_table(af3, backfilled):
    """The run that merges D is named after D + 1 (its Run ID and Run After); its tasks say D. The asset is the
    Hive table, and each event carries the commit (a downstream DAG reads what changed)."""
    assert _labels(af3, DAG, "merge") == [f"{ds}: merged" for ds in DATES]
    assert _labels(af3, DAG, "wait_for_previous_date") == _labels(af3, DAG, "audit") == DATES
    assert af3.query("SELECT name FROM asset WHERE uri = ?", f"hive://dw/{BACKFILLED}") == [(f"dw.{BACKFILLED}",)]
    for run, ds in zip(backfilled["runs"], DATES):
        events = _asset_events(af3, f"dw.{BACKFILLED}", run["run_id"])
        assert len(events) == 1, events
        extra = events[0]
        assert (extra["table"], extra["date"], extra["action"], extra["dates"]) == (
            f"dw.{BACKFILLED}",
            ds,
            "merge",
            [ds],
        )
        assert extra["run_id"] and extra["counts"]["open_after"] > 0
        merge_log = af3.home / "logs" / f"dag_id={DAG}" / f"run_id={run['run_id']}" / "task_id=merge" / "attempt=1.log"
        said = [e["event"] for e in _log_events(merge_log)]
        # the job's summary once; its report line (the same, as JSON) is read, not logged
        assert sum(e.startswith(f"dw.{BACKFILLED} {ds}: ") for e in said) == 1, said
        assert not [e for e in said if "zipper-report" in e]


def test_each_merge_reports_its_input_and_the_table_to_openlineage(af3, workspace, backfilled):
    """The provider's listener sends each merge's COMPLETE event: the day's input folder, the Hive table with
    its columns and the rows the day wrote (as the run's asset event counts them)."""
    lines = (workspace["root"] / "lineage.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    completes = [
        e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == f"{DAG}.merge" and e["outputs"]
    ]
    by_input = {e["inputs"][0]["name"]: e for e in completes}
    for run, ds in zip(backfilled["runs"], DATES):
        [event] = [e for name, e in by_input.items() if name.endswith(f"ds={ds}")]
        assert [i["namespace"] for i in event["inputs"]] == ["file"]
        [output] = event["outputs"]
        assert output["name"] == f"dw.{BACKFILLED}" and output["namespace"].startswith("hive://127.0.0.1:")
        assert {"id", "begin_dt", "end_dt"} <= {f["name"] for f in output["facets"]["schema"]["fields"]}
        counts = _asset_events(af3, f"dw.{BACKFILLED}", run["run_id"])[0]["counts"]
        rows = output["outputFacets"]["outputStatistics"]["rowCount"]
        assert rows == counts["open_after"] + counts["closed"]


def test_backfill_produces_the_table_of_daily_runs(tables):
    assert tables["exits"] == [0, 0, 0]
    backfilled, reference = tables["tables"][f"dw.{BACKFILLED}"], tables["tables"]["dw.dim_ref"]
    assert backfilled["exists"] and backfilled["rows"] == reference["rows"]
    assert backfilled["partitions"] == reference["partitions"] == sorted([*DATES, "9999-12-31"])
    commits = tables["status"][BACKFILLED]["recent_commits"]
    assert [c["ds"] for c in sorted(commits, key=lambda c: c["committed_at"])] == DATES


def test_audit_logs_the_counts_of_each_commit(af3, backfilled):
    audits = af3.task_instances(DAG, "audit")
    assert [a["state"] for a in audits] == ["success"] * len(DATES)
    log = next((af3.home / "logs" / f"dag_id={DAG}").glob("run_id=*/task_id=audit/attempt=1.log")).read_text()
    assert "new=" in log and "open_after=" in log and "changed=" in log


def test_dags_test_creates_the_table_on_its_first_date(dags_tested, tables):
    assert dags_tested.returncode == 0, dags_tested.stdout[-3000:] + dags_tested.stderr[-3000:]
    first = tables["tables"][f"dw.{FIRST}"]
    assert first["exists"] and first["rows"] == expected_after_first_date()


def test_a_bad_spec_is_an_import_error_of_its_own_file(af3, workspace):
    out = af3.cli("dags", "list-import-errors", "-o", "json", check=False).stdout  # exits 1 when it lists any
    errors = json.loads(out[out.index("[{") :])
    broken = str(workspace["specs"] / "broken.yaml")
    assert [e["filepath"] for e in errors] == [broken], errors
    assert "key 'keys'" in errors[0]["error"] and broken in errors[0]["error"]


def _freeze_data(workspace, label: str) -> str:
    """Copy the current inputs for a reference table that merges them from scratch."""
    frozen = workspace["root"] / f"data_{label}"
    shutil.copytree(workspace["data"], frozen)
    write_spec(workspace["refs"], f"ref_{label}", frozen)
    return f"ref_{label}"


def _reference_and_table(workspace, ref: str) -> tuple[dict, dict]:
    result = probe(
        workspace["warehouse"],
        run=[["merge", ref, "--ds", ds, "--specs", str(workspace["refs"])] for ds in DATES],
        tables=[f"dw.{BACKFILLED}", f"dw.{ref}"],
    )
    assert result["exits"] == [0] * len(DATES)
    return result["tables"][f"dw.{BACKFILLED}"], result["tables"][f"dw.{ref}"]


@pytest.mark.parametrize("with_future", [False, True], ids=["only_that_date", "with_future_runs"])
def test_clearing_a_past_merge_replays_it(af3, workspace, backfilled, with_future):
    """Clearing D2's merge after its input changed gives the table of daily runs over the new input."""
    changed = [(1, "ann", "Tromso"), (5, "eve", "Faro")] if with_future else [(1, "ann", "Bergen"), (6, "fay", "Oslo")]
    write_parquet(workspace["data"] / "incr" / f"ds={DATES[1]}", changed)
    ref = _freeze_data(workspace, "future" if with_future else "single")
    before = {m["run_id"]: m["try_number"] for m in af3.task_instances(DAG, "merge")}
    last = DATES[-1] if with_future else DATES[1]
    # -t is a substring on Airflow 3.3 (a regex on 2.11): "merge" names the merge task on both
    af3.cli("tasks", "clear", DAG, "-t", "merge", "-d", "-s", DATES[1], "-e", last, "-y")
    cleared = [m for m in af3.task_instances(DAG, "merge") if DATES[1] <= m["logical_date"][:10] <= last]
    assert len(cleared) == (2 if with_future else 1)
    af3.wait_until(
        lambda: all(
            m["state"] == "success" and m["try_number"] > before[m["run_id"]]
            for m in af3.task_instances(DAG, "merge")
            if m["run_id"] in {c["run_id"] for c in cleared}
        ),
        600,
        "the cleared merges",
    )
    table, reference = _reference_and_table(workspace, ref)
    assert table["rows"] == reference["rows"] and table["partitions"] == reference["partitions"]
    # the cleared date replayed itself and the next: its audit logs both dates' counts and where the table ended
    replayed_run = cleared[0]["run_id"]
    audits = sorted((af3.home / "logs" / f"dag_id={DAG}" / f"run_id={replayed_run}" / "task_id=audit").glob("*.log"))
    said = [e["event"] for e in _log_events(audits[-1]) if e.get("logger", "").endswith("ZipperAuditOperator")]
    assert [e.split(":")[0] for e in said[:2]] == [f"dw.{BACKFILLED} {DATES[1]}", f"dw.{BACKFILLED} {DATES[2]}"]
    assert "open_after=" in said[0] and "open_after=" in said[1]
    assert said[-1].startswith(
        f"dw.{BACKFILLED}: replayed {DATES[1]}..{DATES[2]} (2 dates); the table is at {DATES[2]}, "
    )
    assert _asset_events(af3, f"dw.{BACKFILLED}", replayed_run)[-1]["dates"] == DATES[1:]
    assert _labels(af3, DAG, "merge")[1] == f"{DATES[1]}: replayed {DATES[1]}..{DATES[2]}"
    if with_future:  # the last date's cleared merge found its input unchanged: a no-op, which emits no event
        assert _labels(af3, DAG, "merge")[2] == f"{DATES[2]}: no-op (already committed with the same input)"
        assert len(_asset_events(af3, f"dw.{BACKFILLED}", cleared[1]["run_id"])) == 1  # its first merge's


def test_rerun_dag_from_the_trigger_form(af3, workspace, backfilled):
    rerun_dag = f"{DAG}_rerun"
    # a wrong name and a bad date typed on the command line: Airflow takes them (it printed a 57-line traceback
    # when the params' schema refused them), and the task refuses them in one line, before any Spark starts
    bad = "manual__bad_conf"
    typed = af3.cli("dags", "trigger", rerun_dag, "--run-id", bad, "--conf", json.dumps({"from": "2024-13-01"}))
    assert "Traceback" not in typed.stdout + typed.stderr
    af3.wait_until(lambda: [r["state"] for r in af3.dag_runs(rerun_dag)] == ["failed"], 300, "the bad trigger to fail")
    bad_log = "".join(
        p.read_text() for p in (af3.home / "logs" / f"dag_id={rerun_dag}" / f"run_id={bad}").glob("*/*.log")
    )
    assert (
        f"dw.{BACKFILLED}: rerun param 'from' is not a param of this DAG: from_date (YYYY-MM-DD, required)"
    ) in bad_log
    assert "spark-submit" not in bad_log.lower() and _labels(af3, rerun_dag, "rerun") == ["failed"]

    write_parquet(workspace["data"] / "incr" / f"ds={DATES[2]}", [(4, "dan", "Lviv")])
    ref = _freeze_data(workspace, "rerun")
    # first a dry run from the form's toggle: on a copy of the table, nothing published, no asset event; its
    # dates and the keys it would change are in the task's log and in the XCom the Zipper view reads
    dry_id = f"manual__dry_run_from_{DATES[2]}"
    conf = json.dumps({"from_date": DATES[2], "dry_run": True})
    af3.cli("dags", "trigger", rerun_dag, "--run-id", dry_id, "--conf", conf)
    af3.wait_until(
        lambda: {r["run_id"]: r["state"] for r in af3.dag_runs(rerun_dag)}.get(dry_id) in ("success", "failed"),
        600,
        "the dry run",
    )
    assert {r["run_id"]: r["state"] for r in af3.dag_runs(rerun_dag)}[dry_id] == "success"
    assert _asset_events(af3, f"dw.{BACKFILLED}", dry_id) == []
    assert _labels(af3, rerun_dag, "rerun")[-1] == f"dry run: would replay {DATES[2]}"
    dry_log = "".join(
        p.read_text() for p in (af3.home / "logs" / f"dag_id={rerun_dag}" / f"run_id={dry_id}").glob("*/*.log")
    )
    assert f"dw.{BACKFILLED} {DATES[2]}: dry run: nothing was published; change-volume guard: passes" in dry_log
    shown = subprocess.run(
        [sys.executable, "-c", VIEW_DRY_RUN, rerun_dag], env=af3.env, capture_output=True, text=True, timeout=300
    )
    seen = json.loads(shown.stdout.strip().splitlines()[-1])
    assert seen["run_id"] == dry_id and [d["ds"] for d in seen["dates"]] == [DATES[2]], seen
    assert {"id": "4"} in [entry["key"] for entry in seen["sample"]], seen
    dan = next(entry for entry in seen["sample"] if entry["key"] == {"id": "4"})
    assert dan["after"][-1]["city"] == "Lviv" and dan["before"][-1]["city"] != "Lviv", dan

    run_id = f"manual__rerun_from_{DATES[2]}"  # named, so a retry after a lock error cannot start a second run
    af3.cli("dags", "trigger", rerun_dag, "--run-id", run_id, "--conf", json.dumps({"from_date": DATES[2]}))

    def state() -> str | None:
        return {r["run_id"]: r["state"] for r in af3.dag_runs(rerun_dag)}.get(run_id)

    af3.wait_until(lambda: state() in ("success", "failed"), 600, "the rerun")
    assert state() == "success"
    table, reference = _reference_and_table(workspace, ref)
    assert table["rows"] == reference["rows"]
    assert _asset_events(af3, f"dw.{BACKFILLED}", run_id)[-1]["action"] == "rerun"


def test_a_deferrable_sensor_waits_in_the_triggerer_until_the_increment_lands(af3, workspace, backfilled):
    dag = f"zipper_{DEFERRED}"
    af3.cli("dags", "unpause", dag)  # catchup: its one date

    def sensor_state():
        waits = af3.task_instances(dag, "wait_for_increment")
        return waits[0]["state"] if waits else None

    af3.wait_until(lambda: sensor_state() == "deferred", 300, "the sensor to defer")
    triggers = af3.query(
        "SELECT t.classpath FROM trigger t JOIN task_instance ti ON ti.trigger_id = t.id"
        " WHERE ti.dag_id = ? AND ti.task_id = 'wait_for_increment'",
        dag,
    )
    assert triggers == [("zipper.airflow.triggers.IncrementTrigger",)]
    assert af3.task_instances(dag, "merge")[0]["state"] in (None, "none", "scheduled")  # nothing ran yet

    # Land the file only once the scheduler has drained the executor's event for the deferring
    # attempt: a trigger that fires before that meets Airflow's race (apache/airflow#72716), where
    # the stale "success" finds the task queued again and fails it.
    af3.wait_until(
        lambda: _scheduler_saw_exit(af3, dag, "wait_for_increment"),
        120,
        "the scheduler to process the deferring attempt's exit",
    )
    write_parquet(workspace["deferred"] / "incr" / f"ds={DATES[0]}", INCREMENTS[DATES[0]])
    runs = af3.wait_for_runs(dag, 1, timeout=600)
    assert runs[0]["state"] == "success"
    logs = af3.home / "logs" / f"dag_id={dag}"
    sensor_log = "".join(p.read_text() for p in logs.glob("run_id=*/task_id=wait_for_increment/attempt=*.log"))
    assert "found:" in sensor_log  # execute_complete, after the trigger fired
    audit_log = next(logs.glob("run_id=*/task_id=audit/attempt=1.log")).read_text()
    assert "new=1" in audit_log and "changed=1" in audit_log and "open_after=3" in audit_log


def _scheduler_saw_exit(af3, dag: str, task: str) -> bool:
    log = (af3.home / "scheduler.out").read_text(errors="replace")
    return any(
        "Received executor event" in line and f"'{dag}'" in line and f"'{task}'" in line for line in log.splitlines()
    )


# The Zipper view's reading of a failed task's reason, in Airflow's own environment (its database)
VIEW_REASONS = """
import sys
from airflow.utils.session import create_session
from zipper.web.airflow_runs import _failure_reasons
with create_session() as session:
    print(_failure_reasons(session, {(sys.argv[1], sys.argv[2]): "merge"})[(sys.argv[1], sys.argv[2])])
"""


VIEW_DRY_RUN = """
import json, sys
from zipper.web.airflow_runs import latest_dry_run
print(json.dumps(latest_dry_run(sys.argv[1])))
"""


def test_a_failed_date_fails_the_later_runs_at_once_and_clearing_it_with_them_converges(af3, workspace, backfilled):
    """A later run that waited on the failed date would hold the DAG's one active-run place and
    keep the cleared date queued for ever; its first task fails it instead."""
    dag = f"zipper_{STUCK}"
    af3.cli("dags", "unpause", dag)  # catchup: three dates, the second one's input is bad

    def states():
        return [r["state"] for r in af3.dag_runs(dag)]

    af3.wait_until(lambda: states() == ["success", "failed", "failed"], 600, "the runs after the bad date to fail")
    merges = af3.task_instances(dag, "merge")
    assert [m["state"] for m in merges] == ["success", "failed", "upstream_failed"]
    assert [g["state"] for g in af3.task_instances(dag, "wait_for_previous_date")] == ["success", "success", "failed"]
    logs = af3.home / "logs" / f"dag_id={dag}"
    gate_log = "".join(p.read_text() for p in logs.glob("run_id=*/task_id=wait_for_previous_date/attempt=*.log"))
    assert (
        f"the merge of the previous date {DATES[1]}" in gate_log
        and f"airflow tasks clear {dag} -s {DATES[1]} -y" in gate_log
    )
    merge_log = "".join(p.read_text() for p in logs.glob("run_id=*/task_id=merge/attempt=*.log"))
    # the task fails with the job's own line (what the UI and alerts show), not the command that failed
    assert f"dw.{STUCK} {DATES[1]}: " in merge_log
    assert "Cannot execute" not in merge_log
    # the job's error line is an error of the task log, and the failure names Spark's log: the warehouse's server's
    bad_date_log = logs / f"run_id={merges[1]['run_id']}" / "task_id=merge" / "attempt=1.log"
    errors = [e["event"] for e in _log_events(bad_date_log) if e["level"] == "error"]
    assert any(e.startswith(f"zipper: error: dw.{STUCK} {DATES[1]}: ") for e in errors), errors
    spark_log = re.search(r"Spark's is (\S+\.log)\)", bad_date_log.read_text())
    assert spark_log and Path(spark_log.group(1)).is_file(), bad_date_log.read_text()[-3000:]
    assert Path(spark_log.group(1)) == workspace["warehouse"].resolve() / "metastore" / "spark-server.log"
    # each task parses the DAG file as it starts: the folder's bad spec (broken.yaml), another
    # table's, is the import errors' news, not in every task log of this table
    assert "broken.yaml" not in gate_log + merge_log and "zipper: skipping" not in gate_log + merge_log
    # retries: 1, but the same input fails the same way: failed on its first try, never retried
    bad_date = logs / f"run_id={merges[1]['run_id']}" / "task_id=merge"
    assert merges[1]["try_number"] == 1 and sorted(p.name for p in bad_date.glob("attempt=*.log")) == ["attempt=1.log"]
    assert "Not retried: another try would fail the same way." in merge_log
    # the job's line is left for the Zipper view, which shows it as why the latest run failed
    recorded = af3.query(
        "SELECT value FROM xcom WHERE dag_id = ? AND run_id = ? AND task_id = 'merge' AND key = 'zipper_failure'",
        dag,
        merges[1]["run_id"],
    )
    reason = recorded[0][0] if len(recorded) == 1 else None
    while isinstance(reason, str) and reason.startswith('"'):  # stored as JSON text
        reason = json.loads(reason)
    assert reason and reason.startswith(f"dw.{STUCK} {DATES[1]}: change-volume guard: "), recorded
    assert "3 of 3 open rows (100%; limit 70%); with 1 committed day the table has no usual day yet" in reason
    shown = subprocess.run(
        [sys.executable, "-c", VIEW_REASONS, dag, merges[1]["run_id"]],
        env=af3.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert shown.stdout.strip().splitlines()[-1] == reason, shown.stdout
    # where on-call looks, in a browser: the tables page says why the table is stuck, though its
    # latest run is the next date's, failed at its gate (which passes the guard's line on)
    attention = attention_shown(f"http://localhost:{af3.port}", af3.home, STUCK)
    assert attention.startswith("latest run failed (") and attention.endswith(
        f"): the merge of {DATES[1]} failed: {reason}"
    ), attention
    # a new date: its later runs stopped at their gate, so they are cleared with it
    assert (
        "then clear this run and every later one (they stop at their first task until this date has merged):"
        f" airflow tasks clear {dag} -s {DATES[1]} -y"
    ) in merge_log

    write_parquet(workspace["stuck"] / "incr" / f"ds={DATES[1]}", INCREMENTS[DATES[1]])  # the fixed file
    af3.cli("tasks", "clear", dag, "-s", DATES[1], "-y")  # as the failed task's message says
    af3.wait_until(lambda: states() == ["success"] * 3, 600, "the cleared runs to succeed")
    assert_serial(af3.task_instances(dag, "merge"))
    write_spec(workspace["refs"], "ref_stuck", workspace["stuck"])  # the same inputs, merged by daily commands
    result = probe(
        workspace["warehouse"],
        run=[["merge", "ref_stuck", "--ds", ds, "--specs", str(workspace["refs"])] for ds in DATES],
        tables=[f"dw.{STUCK}", "dw.ref_stuck"],
    )
    assert result["exits"] == [0] * len(DATES)
    assert result["tables"][f"dw.{STUCK}"]["rows"] == result["tables"]["dw.ref_stuck"]["rows"]


def test_a_past_date_queued_behind_a_later_run_fails_that_run_instead_of_waiting_for_ever(af3, workspace, backfilled):
    """`airflow dags test` of a past date replaces its scheduled run by a manual one, run after
    "now": cleared with the later dates, it is queued behind them, and a later run whose first
    task waited for it would hold the DAG's one active-run place for ever. That run fails at
    once instead; the past date then runs, and clearing the later dates, as the message says,
    converges."""
    dag = f"zipper_{STUCK}"
    assert [r["state"] for r in af3.dag_runs(dag)] == ["success"] * 3  # where the test above left it
    increment = workspace["stuck"] / "incr" / f"ds={DATES[1]}"
    write_parquet(increment, [(1, "ann", "Bergen"), (1, "ann", "Lima")])  # a repeated key: the test run fails
    # paused meanwhile: the scheduler would otherwise queue the test run's merge too, and run it in
    # its own process (the failure then in its log, not in this command's output)
    af3.cli("dags", "pause", dag)
    tested = af3.cli("dags", "test", dag, DATES[1], check=False, timeout=400, retries_when_locked=0)
    af3.cli("dags", "unpause", dag)
    assert tested.returncode != 0
    # a past date (its next date merged): the refused replay changed nothing, and only this merge is to run again
    said = " ".join((tested.stdout + tested.stderr).split())
    assert "The table is unchanged: its later dates stay committed, and their runs need nothing." in said, said[-3000:]
    assert f"clear only this merge: airflow tasks clear {dag} -t merge -d -s {DATES[1]} -e {DATES[1]} -y" in said
    assert "every later one" not in said
    runs = af3.dag_runs(dag)
    assert runs[1]["run_type"] == "manual" and runs[1]["state"] == "failed"
    write_parquet(increment, INCREMENTS[DATES[1]])  # the fixed file (new modification time: replayed)
    af3.cli("tasks", "clear", dag, "-s", DATES[1], "-y")

    def gate(run: int) -> dict:
        return af3.task_instances(dag, "wait_for_previous_date")[run]

    af3.wait_until(
        lambda: af3.task_instances(dag, "merge")[1]["state"] == "success",
        600,
        "the cleared past date to run (not held behind the later run)",
    )
    assert gate(2)["state"] == "failed"
    logs = af3.home / "logs" / f"dag_id={dag}"
    gate_log = "".join(
        p.read_text()
        for p in logs.glob(f"run_id={af3.dag_runs(dag)[2]['run_id']}/task_id=wait_for_previous_date/attempt=*.log")
    )
    assert f"the run of the previous date {DATES[1]}" in gate_log and "is queued behind this one" in gate_log
    assert f"airflow tasks clear {dag} -s {DATES[2]} -y" in gate_log
    af3.cli("tasks", "clear", dag, "-s", DATES[2], "-y")
    af3.wait_until(lambda: [r["state"] for r in af3.dag_runs(dag)] == ["success"] * 3, 600, "the later date to run")
    result = probe(workspace["warehouse"], tables=[f"dw.{STUCK}", "dw.ref_stuck"])
    assert result["tables"][f"dw.{STUCK}"]["rows"] == result["tables"]["dw.ref_stuck"]["rows"]


def test_a_sensor_that_times_out_names_the_increment_it_waited_for(af3, workspace):
    """Airflow's own timeout message names only the run's duration."""
    result = af3.cli("tasks", "test", f"zipper_{LATE}", "wait_for_increment", DATES[0], check=False, timeout=300)
    output = result.stdout + result.stderr
    assert "new_state=failed" in output  # `tasks test` exits 0 on Airflow 3.3 whatever the task did
    assert (
        f"dw.{LATE}: the increment of {DATES[0]} did not land within the sensor's timeout of 3 s:"
        f" {workspace['root'] / 'late' / 'incr' / f'ds={DATES[0]}'} ("
    ) in output
    assert (
        f"Once it is there, clear this run and every later one: airflow tasks clear zipper_{LATE} -s {DATES[0]} -y"
    ) in output


def test_a_run_after_a_sensor_timeout_says_the_previous_increment_never_landed(af3, workspace):
    """The previous merge is `upstream_failed` when its sensor timed out: the gate says so, in
    words, rather than a state name that sends the on-call engineer to the wrong task."""
    dag = f"zipper_{LATE_RUNS}"
    af3.wait_for_dags([dag])
    af3.cli("dags", "unpause", dag)
    af3.wait_until(
        lambda: [r["state"] for r in af3.dag_runs(dag)] == ["failed", "failed"],
        300,
        "both runs to fail (no increment ever lands)",
    )
    assert [t["state"] for t in af3.task_instances(dag, "merge")] == ["upstream_failed", "upstream_failed"]
    assert [t["state"] for t in af3.task_instances(dag, "wait_for_increment")] == ["failed", "upstream_failed"]
    logs = af3.home / "logs" / f"dag_id={dag}"
    gate_log = "".join(
        p.read_text()
        for p in logs.glob(f"run_id={af3.dag_runs(dag)[1]['run_id']}/task_id=wait_for_previous_date/attempt=*.log")
    )
    assert (
        f"the merge of the previous date {DATES[0]} (run {af3.dag_runs(dag)[0]['run_id']}) did not run:"
        " its wait_for_increment failed"
    ) in gate_log
    assert f"airflow tasks clear {dag} -s {DATES[0]} -y" in gate_log


def test_a_past_merge_cleared_while_a_later_run_waits_for_its_increment(af3, workspace):
    """Clearing only a past date's merge queues its run while the latest run holds the DAG's one active-run
    place, waiting for its increment.

    An earlier date (D, two dates back) then waits for that run to end, however long its increment takes:
    the waiting sensor says so at each check and names the rerun DAG, which replays D at once. The previous
    date (D+1) would wait for ever, its merge for D+1's (depends_on_past): Airflow's deadlock detection skips
    runs with depends_on_past tasks. So the sensor stops its run at its next check instead, naming the command
    that resumes it; the queued dates then merge again, and the clear the message names merges the last."""
    dag = f"zipper_{HELD}"
    af3.wait_for_dags([dag])
    af3.cli("dags", "unpause", dag)

    def states(task: str) -> list[str | None]:
        return [t["state"] for t in af3.task_instances(dag, task)]

    def held_in_its_sensor() -> bool:
        return states("merge")[:2] == ["success", "success"] and states("wait_for_increment")[2:] in (
            ["up_for_reschedule"],
            ["running"],
        )

    af3.wait_until(held_in_its_sensor, 900, "the third run to wait for its increment")
    last_run = af3.dag_runs(dag)[2]["run_id"]
    logs = af3.home / "logs" / f"dag_id={dag}" / f"run_id={last_run}"

    def sensor_log() -> str:
        return "".join(p.read_text() for p in logs.glob("task_id=wait_for_increment/attempt=*.log"))

    af3.cli("tasks", "clear", dag, "-t", "merge", "-s", DATES[0], "-e", DATES[0], "-y")
    assert af3.dag_runs(dag)[0]["state"] == "queued"
    first_run = af3.dag_runs(dag)[0]["run_id"]
    af3.wait_until(lambda: "was cleared and is queued behind this one" in sensor_log(), 300, "the sensor to say so")
    said = " ".join(sensor_log().split())
    assert f"the run of {DATES[0]} (run {first_run}) was cleared and is queued behind this one" in said
    assert f"To replay {DATES[0]} now, trigger {dag}_rerun with from_date {DATES[0]}" in said
    assert states("wait_for_increment")[2] != "failed"  # nothing deadlocks: the run goes on waiting

    af3.cli("tasks", "clear", dag, "-t", "merge", "-s", DATES[1], "-e", DATES[1], "-y")

    def runs() -> list[str]:
        return [r["state"] for r in af3.dag_runs(dag)]

    af3.wait_until(
        lambda: runs() == ["success", "success", "failed"],
        600,
        "the cleared dates to merge again and the later run to stop",
    )
    assert states("wait_for_increment") == ["success", "success", "failed"]
    assert states("merge") == ["success", "success", "upstream_failed"]
    assert f"the run of the previous date {DATES[1]} (run {af3.dag_runs(dag)[1]['run_id']}) is queued" in sensor_log()
    assert f"airflow tasks clear {dag} -s {DATES[2]} -y" in sensor_log()

    write_parquet(workspace["held"] / "incr" / f"ds={DATES[2]}", INCREMENTS[DATES[2]])
    af3.cli("tasks", "clear", dag, "-s", DATES[2], "-y")  # as the message says
    af3.wait_until(lambda: runs() == ["success"] * 3, 600, "the last date to merge")
    assert_serial(af3.task_instances(dag, "merge"))


def _api(af3, method: str, path: str, body: dict | None = None) -> dict:
    """The public REST API as the admin user (the CLI has no backfill cancel and no run state)."""
    password = json.loads((af3.home / "simple_auth_manager_passwords.json.generated").read_text())["admin"]

    def call(url: str, payload: dict, verb: str, token: str | None = None) -> dict:
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        request = urllib.request.Request(
            f"http://localhost:{af3.port}{url}", data=json.dumps(payload).encode(), headers=headers, method=verb
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read() or b"{}")

    token = call("/auth/token", {"username": "admin", "password": password}, "POST")["access_token"]
    return call(path, body or {}, method, token)


def test_a_run_waiting_for_a_stranded_run_of_a_cancelled_backfill_says_how_to_resume(af3, workspace):
    """Airflow 3 never starts a run of a cancelled backfill cleared after the cancel
    (apache/airflow#72337), and a task cannot see the backfill's state: the next date's gate
    waits, and its log says what resolves it if that backfill was cancelled. Doing so converges."""
    dag = f"zipper_{CANCELLED}"
    af3.wait_for_dags([dag])  # paused: the backfill's run cannot start before it is cancelled
    af3.cli(
        "backfill",
        "create",
        "--dag-id",
        dag,
        "--from-date",
        DATES[0],
        "--to-date",
        DATES[0],
        "--reprocess-behavior",
        "failed",
    )
    backfill_id = af3.query("SELECT max(id) FROM backfill WHERE dag_id = ?", dag)[0][0]
    _api(af3, "PUT", f"/api/v2/backfills/{backfill_id}/cancel")
    assert [r["state"] for r in af3.dag_runs(dag)] == ["failed"]  # the cancel fails its queued runs
    af3.cli("tasks", "clear", dag, "-s", DATES[0], "-e", DATES[0], "-y")
    af3.cli("dags", "unpause", dag)  # catchup: the scheduler adds the second date's run

    def runs() -> list[tuple[str, str]]:
        return [(r["run_type"], r["state"]) for r in af3.dag_runs(dag)]

    def gate_log() -> str:
        logs = af3.home / "logs" / f"dag_id={dag}"
        return "".join(p.read_text() for p in logs.glob("run_id=scheduled__*/task_id=wait_for_previous_date/*.log"))

    af3.wait_until(lambda: "apache/airflow#72337" in gate_log(), 300, "the second date's gate to say why it waits")
    assert runs() == [("backfill", "queued"), ("scheduled", "running")]
    assert (
        f"airflow backfill create --dag-id {dag} --from-date {DATES[0]} --to-date <the last of their dates>"
        " --reprocess-behavior failed"
    ) in gate_log()

    stranded = af3.dag_runs(dag)[0]["run_id"]
    _api(af3, "PATCH", f"/api/v2/dags/{dag}/dagRuns/{stranded}", {"state": "failed"})  # "mark failed" in the UI
    assert "once the scheduler has closed that backfill" in gate_log()
    # the scheduler closes the backfill once none of its runs is left unfinished; a create before that is refused
    af3.wait_until(
        lambda: af3.query("SELECT completed_at FROM backfill WHERE id = ?", backfill_id)[0][0] is not None,
        300,
        "the scheduler to close the cancelled backfill",
    )
    # Once seen closed, a create was still refused on a loaded machine ("Another backfill is
    # running"), as the hint warns: ask again until Airflow takes it, as the user would
    created = []

    def create() -> bool:
        done = af3.cli(*recreate, check=False)
        created.append(done)
        return done.returncode == 0 or "Another backfill is running" not in done.stderr

    recreate = ("backfill", "create", "--dag-id", dag, "--from-date", DATES[0], "--to-date", DATES[0])
    recreate += ("--reprocess-behavior", "failed")
    af3.wait_until(create, 300, "Airflow to take the new backfill")
    assert created[-1].returncode == 0, created[-1].stderr[-2000:]
    af3.wait_until(lambda: [state for _, state in runs()] == ["success", "success"], 600, "both dates to merge")
    assert_serial(af3.task_instances(dag, "merge"))
