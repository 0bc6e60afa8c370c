"""The warehouse's metastore as a local service (zipper.runtime.metastore), through the real CLI:
merges of two tables side by side, one writer per table, reads while a merge runs, the committed
state over thrift without a JVM, the retired embedded mode refused, and the server's
own life (started on demand, one for concurrent starters, on loopback alone, a dead record
replaced, stopped by pid).

Runs are held at a named step with ZIPPER_PAUSE_AT (zipper.core.faults), so "during a merge" is
a state the test waits for, never a time."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests import metastores
from tests.cli.helpers import (
    BIN,
    day,
    env_for,
    make_spec,
    probe,
    wait_for_jvms,
    write_parquet,
    zipper,
    zipper_in_one_jvm,
)
from tests.cli.test_cli import assert_one_line_error
from zipper.runtime.metastore import MetastoreService

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]


def workspace(root: Path, *names: str) -> Path:
    for name in names:
        make_spec(root, name)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", None)])
    write_parquet(root / "data" / "incr" / f"ds={day(2)}", [(1, "ann", "Bergen")])
    return root


def held(root: Path, hold: Path, step: str, *args: str) -> subprocess.Popen:
    """`zipper ARGS` started and held at `step` until `hold` is removed."""
    hold.write_text("hold\n")
    return subprocess.Popen(
        [str(BIN / "zipper"), *args],
        env=env_for(root, ZIPPER_PAUSE_AT=f"{step}:{hold}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )


def wait_reached(hold: Path, run: subprocess.Popen) -> None:
    """Until the held run says it reached its step (or ended, which fails the test)."""
    reached = Path(f"{hold}.reached")
    while not reached.exists():
        if run.poll() is not None:
            raise AssertionError(f"the held run ended (exit {run.returncode}): {run.stderr.read()[-2000:]}")
        time.sleep(0.1)


def release(hold: Path, run: subprocess.Popen) -> tuple[int, str, str]:
    hold.unlink()
    out, err = run.communicate(timeout=300)
    return run.returncode, out, err


def status(root: Path, name: str) -> dict:
    result = zipper(root, "status", name, wait=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_merges_of_two_tables_run_side_by_side_and_both_commit(tmp_path):
    root = workspace(tmp_path, "dim_a", "dim_b")
    assert zipper_in_one_jvm(root, ["init", "dim_a"], ["init", "dim_b"]) == [0, 0]
    # Given a merge of dim_a held just before its publish
    hold = root / "hold_a"
    merge_a = held(root, hold, "before_publish", "merge", "dim_a", "--ds", day(1))
    try:
        wait_reached(hold, merge_a)
        # When dim_b's merge runs meanwhile, it commits without waiting for dim_a's
        merge_b = zipper(root, "merge", "dim_b", "--ds", day(1), wait=False)
        assert merge_b.returncode == 0, merge_b.stderr
        assert status(root, "dim_b")["last_committed"] == day(1)
        assert status(root, "dim_a")["last_committed"] == "2023-12-31"  # still at its base
    finally:
        code, out, err = release(hold, merge_a)
        wait_for_jvms(root)
    # Then dim_a commits too
    assert code == 0, err
    assert status(root, "dim_a")["last_committed"] == day(1)


def test_one_writer_per_table_and_reads_answer_during_a_merge(tmp_path):
    root = workspace(tmp_path, "dim")
    assert zipper_in_one_jvm(root, ["init", "dim"], ["merge", "dim", "--ds", day(1)]) == [0, 0]
    before = status(root, "dim")
    hold = root / "hold"
    merge = held(root, hold, "before_publish", "merge", "dim", "--ds", day(2))
    try:
        wait_reached(hold, merge)
        # A second merge of the same table is refused at once, naming the run that writes it
        second = zipper(root, "merge", "dim", "--ds", day(2), wait=False)
        assert_one_line_error(
            second, f"dw.dim {day(2)}: another run is writing this table now (`zipper merge dim --ds {day(2)}`, pid"
        )
        assert "nothing of this run was published" in second.stderr
        # Reads answer with the last committed state while the merge runs
        during = status(root, "dim")
        assert during["last_committed"] == day(1) and during["recent_commits"] == before["recent_commits"]
        # the held run's new closed partition is there, pending: pointing at an empty directory
        assert [p for p in during["partitions"] if p["kind"] != "pending"] == before["partitions"]
        assert [p["end"] for p in during["partitions"] if p["kind"] == "pending"] == [day(2)]
        history = zipper(root, "history", "dim", "--key", "id=1", "--format", "json", wait=False)
        assert history.returncode == 0, history.stderr
        assert [json.loads(line)["city"] for line in history.stdout.splitlines()] == ["Oslo"]
        sliced = zipper(root, "slice", "dim", "--as-of", day(1), "--format", "json", wait=False)
        assert sliced.returncode == 0, sliced.stderr
        assert sorted(json.loads(line)["id"] for line in sliced.stdout.splitlines()) == [1, 2, 3]
        # ... and so does an analyst's Spark configured with the server's URI
        read = probe(root, "dw.dim", wait=False)["before"]
        assert read["partitions_with_rows"] == {day(1): 1, "9999-12-31": 3}
    finally:
        code, out, err = release(hold, merge)
        wait_for_jvms(root)
    assert code == 0, err
    after = status(root, "dim")
    assert after["last_committed"] == day(2)
    assert [c["ds"] for c in after["recent_commits"]] == [day(2), day(1)]


def test_the_retired_embedded_mode_is_refused_before_anything_is_made(tmp_path):
    """ZIPPER_METASTORE=embedded (Derby inside the driver) has no thrift API to publish through: a
    command refuses it in one line, and starts no server and no Spark, nor makes a warehouse."""
    root = workspace(tmp_path, "dim")
    for args in (["init", "dim"], ["status", "dim"], ["metastore", "start"]):
        refused = zipper(root, *args, ZIPPER_METASTORE="embedded")
        assert_one_line_error(
            refused, "ZIPPER_METASTORE=embedded is retired", "served as it is by the metastore service, the default"
        )
    assert not (root / "warehouse").exists()
    assert not MetastoreService(root / "warehouse").recorded()


def test_status_over_thrift_loads_no_jvm(tmp_path):
    root = workspace(tmp_path, "dim")
    assert zipper(root, "init", "dim").returncode == 0
    code = (
        "import json, sys; from zipper.cli.main import main; code = main(['status', 'dim']);"
        " print('LOADED ' + json.dumps(sorted(m for m in ('pyspark', 'py4j') if m in sys.modules)));"
        " sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env_for(root), capture_output=True, text=True, timeout=120, cwd=root
    )
    assert result.returncode == 0, result.stderr
    report, loaded = result.stdout.rsplit("LOADED ", 1)
    assert json.loads(report)["last_committed"] == "2023-12-31"
    assert json.loads(loaded) == []


def server_pids(warehouse: Path) -> list[int]:
    """The running metastore servers of `warehouse` (tests/metastores.py finds them all)."""
    return [pid for pid, served in metastores.running_servers().items() if served == warehouse.resolve()]


def assert_serves_loopback_only(pid: int, port: int) -> None:
    """The server listens on 127.0.0.1:`port` and nowhere else (py4j's gateway that set it up is
    gone): a connection to any other address of this machine on its port is refused."""
    listening = {
        (conn.laddr.ip.removeprefix("::ffff:"), conn.laddr.port)
        for conn in psutil.Process(pid).net_connections("inet")
        if conn.status == psutil.CONN_LISTEN
    }
    assert listening == {("127.0.0.1", port)}
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    # 127.0.0.2 is this machine on every Linux (127/8 is loopback) yet not the address bound: a
    # wildcard bind would take it; so would it the machine's own addresses, which are tried too
    others = {
        address.address
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family == socket.AF_INET and not address.address.startswith("127.")
    }
    for address in ["127.0.0.2", *sorted(others)]:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, port), timeout=5).close()


def test_the_server_by_hand_concurrent_starts_and_a_dead_record(tmp_path):
    warehouse = tmp_path / "warehouse"
    env = env_for(tmp_path)

    def metastore(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "zipper"), "metastore", *args], env=env, capture_output=True, text=True, timeout=300
        )

    # A Derby database its first server was killed while creating (no service.properties): Derby
    # refuses to open it, so a start moves it aside and creates the database afresh
    (warehouse / "metastore_db" / "seg0").mkdir(parents=True)

    # Three starters at once get one server
    starters = [
        subprocess.Popen([str(BIN / "zipper"), "metastore", "start"], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    said = sorted(p.communicate(timeout=300)[0].split(":")[0] for p in starters)
    assert said == [f"metastore server already running for {warehouse}"] * 2 + [
        f"metastore server started for {warehouse}"
    ]
    assert all(p.returncode == 0 for p in starters)
    [pid] = server_pids(warehouse)
    [aside] = warehouse.glob("metastore_db.unfinished-*")
    assert (aside / "seg0").is_dir() and (warehouse / "metastore_db" / "service.properties").is_file()
    running = metastore("status")
    assert running.returncode == 0 and running.stderr == "", running.stderr  # as `pg_ctl status`: 0 while it runs
    shown = json.loads(running.stdout)
    assert shown["running"] and shown["pid"] == pid and shown["database"] == f"{warehouse}/metastore_db"
    assert_serves_loopback_only(pid, int(shown["uri"].rsplit(":", 1)[1]))

    # A server killed without a word leaves a record that is detected and replaced
    os.kill(pid, signal.SIGKILL)
    while pid in server_pids(warehouse):
        time.sleep(0.1)
    gone = metastore("status")
    assert gone.returncode == 3 and gone.stderr == f"zipper: no metastore server is running for {warehouse}\n"
    dead = json.loads(gone.stdout)
    assert not dead["running"] and dead["stale_record"]
    assert metastore("start").stdout.startswith(f"metastore server started for {warehouse}")
    [restarted] = server_pids(warehouse)
    assert restarted != pid

    # A server no record names (its starter, a merge task say, was killed before it wrote one) holds
    # the Derby database: the next start stops it and starts one of its own
    (warehouse / "metastore" / "server.json").unlink()
    assert metastore("start").stdout.startswith(f"metastore server started for {warehouse}")
    [new_pid] = server_pids(warehouse)
    assert new_pid != restarted

    # Stopped by its process id; stopping again says there is nothing to stop
    stopped = metastore("stop")
    assert stopped.stdout.startswith(f"metastore server of {warehouse} stopped (pid {new_pid},")
    assert server_pids(warehouse) == [] and not (warehouse / "metastore" / "server.json").exists()
    assert metastore("stop").stdout.strip() == f"no metastore server was running for {warehouse}"


def test_a_record_naming_another_process_is_not_trusted(tmp_path):
    """A recycled pid in the record is some other process: it is neither used nor stopped."""
    warehouse = tmp_path / "warehouse"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        record = warehouse / "metastore" / "server.json"
        record.parent.mkdir(parents=True)
        record.write_text(
            json.dumps(
                {"pid": bystander.pid, "port": 1, "warehouse": str(warehouse), "database": "x", "started_at": "x"}
            )
        )
        service = MetastoreService(warehouse)
        assert service.running() is None
        server, started = service.start()
        assert started and server.pid != bystander.pid and bystander.poll() is None
        service.stop()
        assert bystander.poll() is None  # still alive
    finally:
        bystander.kill()
        bystander.wait()
    wait_for_jvms(tmp_path)


@pytest.mark.parametrize("step", ["before_publish", "after_publish"])
def test_the_server_killed_during_a_publish_leaves_old_or_new_state_and_the_next_run_converges(tmp_path, step):
    root = workspace(tmp_path, "dim")
    assert zipper(root, "init", "dim").returncode == 0
    hold = root / "hold"
    merge = held(root, hold, step, "merge", "dim", "--ds", day(1))
    try:
        wait_reached(hold, merge)
        server = MetastoreService(root / "warehouse").recorded()
        os.kill(server.pid, signal.SIGKILL)  # as an OOM killer would: no shutdown, mid-run
        while server.pid in server_pids(root / "warehouse"):
            time.sleep(0.1)
    finally:
        code, out, err = release(hold, merge)
        wait_for_jvms(root)
    if step == "before_publish":
        # the publish could not reach the metastore: one line naming it, nothing published
        assert code == 1, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"zipper: error: dw.dim {day(1)}: the metastore server"), err
        assert "zipper metastore status" in lines[0] and "\tat " not in err
    # the next command starts a new server and sees the old state (before) or the new one (after)
    seen = status(root, "dim")
    assert seen["last_committed"] == ("2023-12-31" if step == "before_publish" else day(1))
    again = zipper(root, "merge", "dim", "--ds", day(1))
    assert again.returncode == 0, again.stderr
    assert ("no-op" in again.stdout) == (step == "after_publish")
    converged = status(root, "dim")
    assert converged["last_committed"] == day(1)
    assert [p["kind"] for p in converged["partitions"]] == ["open", "closed"]  # no pending partition left
