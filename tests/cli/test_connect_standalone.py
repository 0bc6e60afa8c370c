"""The warehouse's Spark Connect server on a Spark standalone cluster (ZIPPER_SPARK_MASTER): the
`zipper` commands are the same clients, the server is the cluster's application, and its tasks
run in an executor of the cluster's worker, a JVM of its own. The table is the warehouse's, in
its metastore service. Everything, the cluster's daemons too, listens on 127.0.0.1 only."""

from __future__ import annotations

import json
import time

import psutil
import pytest

from tests.cli.helpers import day, make_spec, write_parquet, zipper
from tests.standalone import Cluster, standalone_cluster
from zipper.runtime import processes, spark_server

pytestmark = pytest.mark.slow
APP_NAME = "zipper connect server"
OPEN = "9999-12-31"


@pytest.fixture
def cluster(tmp_path_factory):
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as running:
        yield running


def listening_addresses(pgid: int) -> set[str]:
    """The addresses the processes of group `pgid` listen on (an IPv4 address as itself: Java's
    dual-stack sockets show it IPv6-mapped)."""
    found = set()
    for pid in processes.group_members(pgid):
        try:
            connections = psutil.Process(pid).net_connections("inet")
        except psutil.NoSuchProcess:
            continue
        found |= {c.laddr.ip.removeprefix("::ffff:") for c in connections if c.status == psutil.CONN_LISTEN}
    return found


def completed_app(cluster: Cluster, app_id: str) -> dict:
    """The master's word on an application that ended: it hears of the end a moment after the
    driver has gone."""
    deadline = time.monotonic() + 60
    while True:
        finished = [app for app in cluster.state()["completedapps"] if app["id"] == app_id]
        if finished or time.monotonic() > deadline:
            assert len(finished) == 1, cluster.state()
            return finished[0]
        time.sleep(0.5)


def test_commands_are_clients_of_a_connect_server_whose_tasks_run_on_a_standalone_cluster(cluster, tmp_path):
    make_spec(tmp_path)
    write_parquet(tmp_path / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(tmp_path / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    write_parquet(tmp_path / "data" / "incr" / f"ds={day(2)}", [(1, "ann", "Bergen"), (2, "bob", "Paris")])
    on_cluster = {"ZIPPER_SPARK_MASTER": cluster.master}

    init = zipper(tmp_path, "init", "dim", **on_cluster)
    merges = [zipper(tmp_path, "merge", "dim", "--ds", ds, **on_cluster) for ds in (day(1), day(2))]
    history = zipper(tmp_path, "history", "dim", "--key", "id=2", "--format", "json", **on_cluster)
    table = zipper(tmp_path, "slice", "dim", "--as-of", day(2), "--format", "json", **on_cluster)
    committed = zipper(tmp_path, "status", "dim", **on_cluster)  # the metastore service's, over thrift
    server_status = zipper(tmp_path, "spark", "status", **on_cluster)

    for result in (init, *merges, history, table, committed, server_status):
        assert result.returncode == 0, result.stderr[-3000:]
    assert merges[0].stdout.startswith(f"dw.dim {day(1)}: 1 new, 1 changed, 0 re-sent unchanged, 1 closed;")
    assert merges[1].stdout.startswith(f"dw.dim {day(2)}: 0 new, 1 changed, 1 re-sent unchanged, 1 closed;")
    versions = [json.loads(line) for line in history.stdout.splitlines()]
    assert [(v["city"], v["begin_dt"], v["end_dt"]) for v in versions] == [
        ("Rome", day(0), day(1)),
        ("Paris", day(1), OPEN),
    ]
    rows = sorted((r["id"], r["city"]) for r in map(json.loads, table.stdout.splitlines()))
    assert rows == [(1, "Bergen"), (2, "Paris"), (3, "Nice")]
    assert json.loads(committed.stdout)["last_committed"] == day(2)

    # the server was the cluster's application, and its tasks ran in the worker's executor
    server = json.loads(server_status.stdout)
    assert server["master"] == cluster.master
    apps = [app for app in cluster.state()["activeapps"] if app["name"] == APP_NAME]
    assert len(apps) == 1 and apps[0]["cores"] == 1, cluster.state()
    executors = list((cluster.work / apps[0]["id"]).iterdir())
    assert len(executors) == 1
    assert "Running task" in (executors[0] / "stderr").read_text(errors="replace")

    # every port of the master, the worker, its executor and the server is on loopback
    for pgid in (cluster.master_pid, cluster.worker_pid, server["pid"]):
        assert listening_addresses(pgid) == {processes.LOCAL_HOST}, pgid

    # stopping the server ends its application on the cluster
    assert zipper(tmp_path, "spark", "stop").returncode == 0
    assert completed_app(cluster, apps[0]["id"])["state"] == "FINISHED"


def test_the_servers_driver_is_on_loopback_with_a_master_on_loopback_only(monkeypatch, tmp_path):
    """A cluster's executors elsewhere reach the driver at the host's address, Spark's default; a
    standalone master gets a share of its cores, not every one of them for as long as it runs."""
    from zipper.runtime.settings import SessionSettings

    monkeypatch.setattr(spark_server, "spark_submit_conf", lambda settings: {})  # no metastore server for this
    monkeypatch.setenv(spark_server.CORES_ENV, "2")
    service = spark_server.SparkServerService(SessionSettings(warehouse=str(tmp_path / "warehouse")))

    def submitted(master: str | None) -> tuple[str, dict[str, str], dict[str, str]]:
        if master is None:
            monkeypatch.delenv(spark_server.MASTER_ENV, raising=False)
        else:
            monkeypatch.setenv(spark_server.MASTER_ENV, master)
        command = service.command(4321)
        conf = dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--conf")
        return command[command.index("--master") + 1], conf, service.environment("t")

    master, conf, env = submitted(None)
    assert master == "local[2]" and "spark.cores.max" not in conf
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == env["SPARK_LOCAL_IP"] == "127.0.0.1"

    master, conf, env = submitted("spark://localhost:7077")
    assert master == "spark://localhost:7077" and conf["spark.cores.max"] == "2"
    assert conf["spark.driver.host"] == env["SPARK_LOCAL_IP"] == "127.0.0.1"
    monkeypatch.setenv(spark_server.CORES_ENV, "*")
    assert "spark.cores.max" not in submitted("spark://localhost:7077")[1]

    for remote in (
        "spark://spark-master:7077",
        "spark://127.0.0.1:7077,spark-master:7077",
        "yarn",
        "k8s://https://k8s:6443",
    ):
        monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
        master, conf, env = submitted(remote)
        assert master == remote
        assert (
            "spark.driver.host" not in conf and "spark.driver.bindAddress" not in conf and "SPARK_LOCAL_IP" not in env
        )
        assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"  # its clients are on this machine
