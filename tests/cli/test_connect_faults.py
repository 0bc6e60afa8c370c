"""Many clients of one warehouse's Spark server, and faults of either side: two tables merge at
once and both commit, readers answer during a merge, a killed client's own write on the server is
stopped by the next run of its table or, with none, by the server, and a killed server leaves the old or the new state, which
the next run (on a fresh server) converges from. One warehouse for the module: its server is
started once, and only the server's own kills make the next command start another."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.helpers import BIN, day, env_for, make_spec, write_parquet, zipper
from tests.cli.test_faults import OPEN, expected_rows, strip_city
from zipper.core.reports import ERROR_PREFIX
from zipper.runtime import client_runs, spark_server
from zipper.runtime.settings import SessionSettings

pytestmark = pytest.mark.subprocess
TABLES = ("dim", "lost", "left", "right", "far")
DEADLINE_S = 180  # for a condition to come true; no test asserts how soon


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """Tables `dim`, `left`, `right` and `far`, initialized (which starts the server), on the same
    inputs: day k renames id k and adds id 10 + k, as in test_faults."""
    root = tmp_path_factory.mktemp("connect_faults")
    for name in TABLES:
        make_spec(root, name)
    write_parquet(root / "data" / "base", [(i, "n0", None) for i in range(1, 5)])
    for k in range(1, 4):
        write_parquet(root / "data" / "incr" / f"ds={day(k)}", [(k, f"n{k}", None), (10 + k, "new", None)])
    for name in TABLES:
        assert zipper(root, "init", name).returncode == 0
    return root


def settings(root: Path) -> SessionSettings:
    return SessionSettings(warehouse=str(root / "warehouse"))


def wait_for(condition, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {DEADLINE_S} s: {what}")


def held_run(root: Path, name: str, step: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """`zipper merge NAME ARGS` held at `step` until the returned file is removed."""
    hold = root / f"hold-{name}-{step}"
    hold.touch()
    Path(f"{hold}.reached").unlink(missing_ok=True)
    run = subprocess.Popen(
        [str(BIN / "zipper"), "merge", name, *args],
        env=env_for(root, ZIPPER_PAUSE_AT=f"{step}:{hold}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    wait_for(lambda: Path(f"{hold}.reached").exists() or run.poll() is not None, f"{name} reaching {step}")
    assert run.poll() is None, run.communicate()
    return run, hold


def table_rows(root: Path, table: str) -> tuple[list, list]:
    """(rows, partitions) of `table`, read as a client of the warehouse's server."""
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession(connection=spark_server.client_url(settings(root)))
    try:
        spark.catalog.refreshTable(table)
        rows = sorted([["" if v is None else str(v) for v in r] for r in spark.table(table).collect()])
        partitions = sorted(r[0].split("=", 1)[1] for r in spark.sql(f"SHOW PARTITIONS {table}").collect())
        return rows, partitions
    finally:
        spark.stop()


def running_operations(root: Path, session_id: str) -> list[str]:
    """The operations of session `session_id` the server still runs (none once it closed the session)."""
    from pyspark.sql.connect.proto import base_pb2
    from pyspark.sql.connect.session import SparkSession

    running = base_pb2.GetStatusResponse.OperationStatus.OPERATION_STATE_RUNNING
    spark = SparkSession(connection=f"{spark_server.client_url(settings(root))};session_id={session_id}")
    try:
        statuses = spark.client._get_operation_statuses().operation_statuses
    except Exception as exc:
        assert "SESSION_CLOSED" in str(exc), exc
        return []
    finally:
        spark.client.close()  # not stop(): that would release the session this looks at
    return [s.operation_id for s in statuses if s.state == running]


def test_two_tables_merge_at_once_and_readers_answer_meanwhile(warehouse):
    """`left` written and `right` about to publish, both held: status, history and slice answer;
    released, both commit."""
    left, left_hold = held_run(warehouse, "left", "after_write", "--ds", day(1))
    right, right_hold = held_run(warehouse, "right", "before_publish", "--ds", day(1))

    status = zipper(warehouse, "status", "left")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["last_committed"] == "2023-12-31", "nothing of the held merge shows"
    history = zipper(warehouse, "history", "right", "--key", "id=1", "--format", "csv")
    assert history.returncode == 0, history.stderr
    assert "n0" in history.stdout and "n1" not in history.stdout
    sliced = zipper(warehouse, "slice", "left", "--as-of", "2023-12-31")
    assert sliced.returncode == 0, sliced.stderr
    assert len(sliced.stdout.strip().splitlines()) == 1 + 4, sliced.stdout  # a header and the base's rows

    for hold in (left_hold, right_hold):
        hold.unlink()
    for name, run in (("left", left), ("right", right)):
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, (name, err[-2000:])
        assert "1 new, 1 changed" in out, (name, out)
    for table in ("dw.left", "dw.right"):
        rows, partitions = table_rows(warehouse, table)
        assert strip_city(rows) == expected_rows(1), table
        assert partitions == sorted([day(1), OPEN]), table


def stalled_run(root: Path, name: str, ds: str) -> tuple[subprocess.Popen, str, str]:
    """`zipper merge NAME --ds DS` whose own write runs on the server until it is cancelled
    (ZIPPER_STALL_WRITES): the process, and its session and tag as its lock notes them, once
    the server runs that write."""
    run = subprocess.Popen(
        [str(BIN / "zipper"), "merge", name, "--ds", ds],
        env=env_for(root, ZIPPER_STALL_WRITES="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    lock_file = root / "warehouse" / "metastore" / "locks" / f"dw.{name}.lock"

    def noted() -> dict | None:
        assert run.poll() is None, run.communicate()
        try:
            lock = json.loads(lock_file.read_text())
        except (FileNotFoundError, ValueError):
            return None  # not yet taken, or being rewritten (the holder truncates it to note more)
        return lock if lock.get(client_runs.SESSION_FIELD) else None

    try:
        lock = wait_for(noted, f"{name}'s run noting its session in the lock")
        assert lock["run"] == f"zipper merge {name} --ds {ds}" and lock["pid"] == run.pid, lock
        session, tag = lock[client_runs.SESSION_FIELD], lock[client_runs.TAG_FIELD]
        assert tag == f"zipper:dw.{name}:pid={run.pid}"
        wait_for(lambda: running_operations(root, session), f"{name}'s own write running on the server")
    except BaseException:
        run.kill()  # else, its server stopped after the module, it would start another one
        raise
    return run, session, tag


def run_dirs(root: Path, name: str) -> set[str]:
    return {d.name for d in (root / "warehouse" / "dw.db" / name / "versions").iterdir()}


def cleared(name: str, ds: str, pid: int) -> str:
    return (
        f"cleared 1 directory(ies) the unfinished run `zipper merge {name} --ds {ds}` (pid {pid}) wrote"
        " and never published"
    )


def test_a_killed_clients_write_leaves_the_table_and_the_next_run_stops_it_on_the_server(warehouse):
    """SIGKILL a merge while its own write runs on the server: the table is as it was, the write
    runs on, and the next merge of the date, once it holds the lock, stops it and deletes its
    directory before it commits."""
    before, dirs_before = table_rows(warehouse, "dw.dim"), run_dirs(warehouse, "dim")
    run, session, _ = stalled_run(warehouse, "dim", day(1))
    [killed_dir] = wait_for(lambda: run_dirs(warehouse, "dim") - dirs_before, "the write's directory")
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    assert running_operations(warehouse, session), "the killed client's write runs on"
    assert table_rows(warehouse, "dw.dim") == before, "the killed run changed the table"

    converge = zipper(warehouse, "merge", "dim", "--ds", day(1))
    assert converge.returncode == 0, converge.stderr[-2000:]  # the lock is free
    assert (
        f"stopped 1 operation(s) the killed run `zipper merge dim --ds {day(1)}` (pid {run.pid})"
        " left running on the Spark server"
    ) in converge.stdout
    assert cleared("dim", day(1), run.pid) in converge.stdout
    assert killed_dir not in run_dirs(warehouse, "dim")
    assert "1 new, 1 changed" in converge.stdout
    assert running_operations(warehouse, session) == [], "stopped, and its session released"
    rows, partitions = table_rows(warehouse, "dw.dim")
    assert strip_city(rows) == expected_rows(1)
    assert partitions == sorted([day(1), OPEN])


def test_a_killed_clients_write_ends_on_the_server_with_no_next_run(warehouse):
    """SIGKILL a merge while its own write runs on the server, and run nothing after it: the server
    cancels the write once no client came back for it (spark_server.DETACHED_TIMEOUT), so a table
    nobody reruns holds no core; the next run finds nothing to stop, deletes the killed run's
    directory and commits the day."""
    before, dirs_before = table_rows(warehouse, "dw.lost"), run_dirs(warehouse, "lost")
    run, session, _ = stalled_run(warehouse, "lost", day(1))
    [killed_dir] = wait_for(lambda: run_dirs(warehouse, "lost") - dirs_before, "the write's directory")
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    wait_for(lambda: not running_operations(warehouse, session), "the server ending the killed client's write")
    assert table_rows(warehouse, "dw.lost") == before, "the killed run changed the table"

    converge = zipper(warehouse, "merge", "lost", "--ds", day(1))
    assert converge.returncode == 0, converge.stderr[-2000:]  # the lock is free
    assert "stopped" not in converge.stdout and "1 new, 1 changed" in converge.stdout, converge.stdout
    assert cleared("lost", day(1), run.pid) in converge.stdout and killed_dir not in run_dirs(warehouse, "lost")
    rows, partitions = table_rows(warehouse, "dw.lost")
    assert strip_city(rows) == expected_rows(1)
    assert partitions == sorted([day(1), OPEN])


def test_the_server_killed_mid_merge_or_publish_leaves_old_or_new_state_and_the_next_run_converges(warehouse):
    """Kill the server's process group while a merge of `far` is held at each step: the command
    fails with one line, or commits the day, having nothing left to ask the server (past its
    write, the audit reads the files' footers and the publish is the metastore's); the next
    merge, on a fresh server, converges to what an undisturbed run makes."""
    for k, step in enumerate(("after_write", "before_publish", "after_publish"), start=1):
        run, hold = held_run(warehouse, "far", step, "--ds", day(k))
        server = spark_server.SparkServerService(settings(warehouse)).running()
        assert server is not None
        os.killpg(server.pid, signal.SIGKILL)  # the supervisor leads the server's process group
        hold.unlink()
        out, err = run.communicate(timeout=600)
        if run.returncode != 0:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), (step, err[-3000:])
            assert f"dw.far {day(k)}" in lines[0] and "spark-server.log" in lines[0], (step, lines[0])
        else:
            assert f"dw.far {day(k)}: 1 new, 1 changed" in out, (step, out)

        converge = zipper(warehouse, "merge", "far", "--ds", day(k))
        assert converge.returncode == 0, (step, converge.stderr[-2000:])
        assert ("no-op" if run.returncode == 0 else "1 new, 1 changed") in converge.stdout, (step, converge.stdout)
        rows, partitions = table_rows(warehouse, "dw.far")
        assert strip_city(rows) == expected_rows(k), step
        assert partitions == sorted([day(i) for i in range(1, k + 1)] + [OPEN]), step
