"""The warehouse's Spark Connect server (zipper.runtime.spark_server): one server for the module
(a JVM start is dear), reached by real clients in subprocesses (a Connect session marks its whole
process as a Connect client, which would lead this process's classic session astray).

Its clients use the warehouse's metastore service; a client without the token, or with another,
is refused; the token is private and never on a command line; the server listens on loopback
only; two commands starting it at once get one, over a record naming another program; a second
start finds it; status says running while its JVM answers, its metastore server stopped or not;
a record whose process is gone is stale; `zipper spark stop` ends its process group. The idle stop is
tested on a stand-in server (runtime.idle_stop), without a JVM."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.helpers import BIN, day, env_for, make_spec, write_parquet, zipper
from tests.metastores import _processes_marked
from zipper.cli.main import main
from zipper.core.hms import MetastoreClient
from zipper.runtime import metastore, processes, spark_server
from zipper.runtime.settings import SessionSettings

REPO = Path(__file__).resolve().parents[2]

CLIENT = r"""
import json, sys, time
started = time.monotonic()
from pyspark.sql import SparkSession
imported = time.monotonic()
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
connected = time.monotonic()
answers = [[list(row) for row in spark.sql(query).collect()] for query in sys.argv[2:]]
done = time.monotonic()
spark.stop()
print(json.dumps({"answers": answers, "import_s": imported - started, "connect_s": connected - imported,
                  "queries_s": done - connected}))
"""

REFUSED = r"""
import json, sys
from pyspark.sql import SparkSession
said = {}
for url in sys.argv[1:]:
    try:
        spark = SparkSession.builder.remote(url).create()
        said[url] = spark.sql("SELECT 1").collect()[0][0]
    except Exception as exc:
        said[url] = f"{type(exc).__name__}: {exc}"
print(json.dumps(said))
"""


def python(code: str, *args: str, timeout: float = 180) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def record_naming(service: spark_server.SparkServerService, pid: int) -> None:
    """A server record of `service`'s warehouse naming `pid`, as a start writes one."""
    service.folder.mkdir(parents=True)
    server = spark_server.Server(pid, processes.free_port(), str(service.warehouse), "x", "", "")
    processes.write_record(service.record_path, dataclasses.asdict(server))


STARTS = {}  # how the module's server was started: what each starter said, and the bystander


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(settings, the server, its token, the start's seconds): one server for the module, stopped
    by its pid at the end, and the metastore server it started too. Started by two `zipper spark
    start` processes at once, over a record that names another program's pid (a recycled one)."""
    root = tmp_path_factory.mktemp("connect")
    settings = SessionSettings(warehouse=str(root / "warehouse"))
    service = spark_server.SparkServerService(settings)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    record_naming(service, bystander.pid)
    began = time.monotonic()
    try:
        command = [str(BIN / "zipper"), "spark", "start", "--warehouse", settings.warehouse]
        starters = [
            subprocess.Popen(command, env=env_for(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        STARTS["said"] = [(p.communicate(timeout=300), p.returncode) for p in starters]
        STARTS["bystander"] = bystander
        server = service.running()
        assert server is not None, STARTS["said"]
        yield settings, server, service.token(), time.monotonic() - began
    finally:
        service.stop()
        metastore.MetastoreService(settings.warehouse_path).stop()
        bystander.kill()
        bystander.wait()


def test_two_commands_starting_the_server_at_once_get_one_and_a_record_naming_another_program_is_left_alone(served):
    settings, server, _, _ = served
    said = sorted(out.split(":")[0] for (out, _), _ in STARTS["said"])
    assert said == [
        f"Spark Connect server already running for {settings.warehouse_path}",
        f"Spark Connect server started for {settings.warehouse_path}",
    ], STARTS["said"]
    assert [code for _, code in STARTS["said"]] == [0, 0]
    supervisors = _processes_marked("zipper.runtime.idle_stop", f"{spark_server.MARKER_CONF}=")
    assert [pid for pid, where in supervisors.items() if where == settings.warehouse_path] == [server.pid]
    assert STARTS["bystander"].poll() is None  # the program the old record named: neither used nor stopped


def test_a_client_with_the_token_reads_and_writes_through_the_warehouses_metastore(served):
    settings, server, token, start_s = served
    url = spark_server.remote_url(server, token)
    assert url == f"sc://localhost:{server.port}/;token={token}"
    ran = python(
        CLIENT,
        url,
        "CREATE DATABASE IF NOT EXISTS connect_db",
        "CREATE TABLE connect_db.people (id INT, name STRING) USING parquet",
        "INSERT INTO connect_db.people VALUES (1, 'ann'), (2, 'bob')",
        "SELECT id, name FROM connect_db.people ORDER BY id",
    )
    assert ran["answers"][-1] == [[1, "ann"], [2, "bob"]]
    print(f"server start {start_s:.1f} s; first client: {ran}")
    # the table is the warehouse's metastore service's, and its files are under the warehouse
    with MetastoreClient(metastore.MetastoreService(settings.warehouse_path).running().uri) as client:
        table = client.table("connect_db", "people")
    assert table is not None
    assert (settings.warehouse_path / "connect_db.db" / "people").is_dir()


def test_a_client_without_the_token_or_with_another_is_refused(served):
    _, server, token, _ = served
    no_token, wrong = f"sc://localhost:{server.port}", f"sc://localhost:{server.port}/;token=not-{token}"
    said = python(REFUSED, no_token, wrong)
    assert "UNAUTHENTICATED" in said[no_token] and "No authentication token provided" in said[no_token]
    assert "UNAUTHENTICATED" in said[wrong] and "Invalid authentication token" in said[wrong]


def test_the_token_is_private_and_on_no_command_line(served):
    settings, server, token, _ = served
    folder = settings.warehouse_path / "spark"
    assert stat.S_IMODE((folder / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert len(token) >= 40
    for pid in processes.group_members(server.pid):  # the supervisor, the JVM, any Python worker
        assert token.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    log = settings.warehouse_path / "metastore" / "spark-server.log"
    assert log.is_file() and token not in log.read_text(errors="replace")


def test_the_server_listens_on_loopback_only(served):
    _, server, _, _ = served
    listening = set().union(*(listening_addresses(pid) for pid in processes.group_members(server.pid)))
    assert (processes.LOCAL_HOST, server.port) in listening
    assert {address for address, _ in listening} == {processes.LOCAL_HOST}  # the driver's own ports too
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, server.port), timeout=5).close()


CLASSIC_DRIVER = r"""
import json, sys, psutil
from zipper.runtime.settings import SessionSettings
from zipper.runtime.session import build_session
spark = build_session(SessionSettings(warehouse=sys.argv[1]))
assert spark.range(3).count() == 3
processes = [psutil.Process(), *psutil.Process().children(recursive=True)]
listening = {(c.laddr.ip, c.laddr.port) for p in processes for c in p.net_connections("inet") if c.status == "LISTEN"}
print(json.dumps({"listening": sorted(listening)}))
"""


def test_a_commands_own_driver_listens_on_loopback_only(served):
    """A classic driver of a command (no Connect server named) has its RPC and block manager ports,
    and pyspark's gateway, on loopback: it has no executors elsewhere to serve."""
    settings, _, _, _ = served
    env = {k: v for k, v in os.environ.items() if k not in spark_server.CLIENT_ENV and k != "ZIPPER_SPARK_REMOTE"}
    env["ZIPPER_SPARK_RUNNER"] = "driver"
    result = subprocess.run(
        [sys.executable, "-c", CLASSIC_DRIVER, settings.warehouse],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    listening = json.loads(result.stdout.strip().splitlines()[-1])["listening"]
    assert len(listening) >= 2  # the gateway, the driver's RPC and its block manager
    # Java's dual-stack sockets show an IPv4 address as IPv6-mapped (::ffff:127.0.0.1)
    assert {address.removeprefix("::ffff:") for address, _ in listening} == {processes.LOCAL_HOST}


def test_zipper_commands_run_as_clients_of_the_server_zipper_spark_remote_names(served):
    """With ZIPPER_SPARK_REMOTE, a command starts no driver of its own: its init and merge run on
    the server, and the table they commit is what any client of it reads."""
    settings, server, token, _ = served
    root = settings.warehouse_path.parent
    make_spec(root, "remote_dim")
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    url = spark_server.remote_url(server, token)
    logs_before = set((root / "warehouse").rglob("*.log"))

    init = zipper(root, "init", "remote_dim", ZIPPER_SPARK_REMOTE=url)
    merged = zipper(root, "merge", "remote_dim", "--ds", day(1), ZIPPER_SPARK_REMOTE=url)

    assert init.returncode == 0, init.stderr[-3000:]
    assert merged.returncode == 0, merged.stderr[-3000:]
    assert merged.stdout.startswith(f"dw.remote_dim {day(1)}: 1 new, 1 changed, 0 re-sent unchanged, 1 closed;")
    assert set((root / "warehouse").rglob("*.log")) == logs_before  # no driver of its own wrote a log
    read = python(CLIENT, url, "SELECT id, city, end_dt FROM dw.remote_dim ORDER BY id, end_dt")
    assert read["answers"] == [
        [[1, "Oslo", "9999-12-31"], [2, "Rome", day(1)], [2, "Paris", "9999-12-31"], [3, "Nice", "9999-12-31"]]
    ]


def test_a_second_start_finds_the_running_server(served, capsys):
    settings, server, _, _ = served
    assert spark_server.ensure_running(settings) == server
    assert main(["spark", "status", "--warehouse", settings.warehouse]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["running"] and shown["pid"] == server.pid and shown["url"] == server.url
    assert "token=" not in json.dumps(shown)


def test_a_server_whose_metastore_server_restarted_is_replaced_by_the_next_client(served):
    """A Spark server keeps the thrift URI it started with: once the warehouse's metastore server
    is stopped and started again (on another port), the next client gets a new Spark server
    started against the new one, and reads the same tables."""
    settings, server, token, _ = served
    hms = metastore.MetastoreService(settings.warehouse_path)
    assert server.metastore_uri == hms.running().uri
    hms.stop()
    service = spark_server.SparkServerService(settings)
    assert service.running() is None  # not to be used any more
    shown = service.status()  # but its JVM answers: running, not current
    assert (shown["running"], shown["current"], shown["pid"], shown["stale_record"]) == (True, False, server.pid, False)
    # as a command does: begin the start early, twice (one start), then wait for it
    spark_server.start_early(settings)
    spark_server.start_early(settings)
    replaced = spark_server.ensure_running(settings)
    assert replaced.pid != server.pid and not processes.group_alive(server.pid)
    supervisors = _processes_marked("zipper.runtime.idle_stop", f"{spark_server.MARKER_CONF}=")
    # the two early starts and the wait started one server
    assert [pid for pid, where in supervisors.items() if where == settings.warehouse_path] == [replaced.pid]
    assert replaced.metastore_uri == hms.running().uri
    read = python(CLIENT, spark_server.remote_url(replaced, token), "SELECT id FROM connect_db.people ORDER BY id")
    assert read["answers"] == [[[1], [2]]]


def test_a_record_whose_process_is_gone_is_stale_and_stopped_as_nothing(tmp_path, capsys):
    """A server killed without a word leaves its record: status says not running (exit 3) and
    names the stale record; stop removes it without stopping anything (a start replaces a record
    it cannot use: the module's own start, over a record naming another program)."""
    settings = SessionSettings(warehouse=str(tmp_path / "warehouse"))
    service = spark_server.SparkServerService(settings)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    record_naming(service, gone.pid)
    assert service.running() is None and service.answering() is None
    assert main(["spark", "status", "--warehouse", settings.warehouse]) == 3
    shown = json.loads(capsys.readouterr().out)
    assert (shown["running"], shown["current"], shown["stale_record"]) == (False, False, True)
    assert main(["spark", "stop", "--warehouse", settings.warehouse]) == 0
    assert capsys.readouterr().out.strip() == f"no Spark Connect server was running for {settings.warehouse_path}"
    assert not service.record_path.exists()


def test_a_killed_servers_record_is_replaced_by_a_real_start_and_stop_ends_its_process_group(served, capsys):
    """The module's last test: the server is gone after it. Killed without a word, the module's
    server leaves its record: status names it stale, and the next start replaces it with a server
    that answers; stop ends that one's process group."""
    settings = served[0]
    killed = spark_server.SparkServerService(settings).running()  # an earlier test replaced the module's first
    assert killed is not None
    os.killpg(killed.pid, signal.SIGKILL)  # the supervisor leads the server's process group
    while processes.group_alive(killed.pid):
        time.sleep(0.1)
    assert main(["spark", "status", "--warehouse", settings.warehouse]) == 3
    assert json.loads(capsys.readouterr().out)["stale_record"]
    assert main(["spark", "start", "--warehouse", settings.warehouse]) == 0
    capsys.readouterr()
    server = spark_server.SparkServerService(settings).running()
    assert server is not None and server.pid != killed.pid
    assert main(["spark", "status", "--warehouse", settings.warehouse]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["running"], shown["current"], shown["pid"]) == (True, True, server.pid), shown

    assert main(["spark", "stop", "--warehouse", settings.warehouse]) == 0
    assert capsys.readouterr().out.startswith(f"Spark Connect server of {settings.warehouse_path} stopped (pid")
    assert not processes.group_alive(server.pid)
    assert main(["spark", "status", "--warehouse", settings.warehouse]) == 3
    said = capsys.readouterr()
    assert not json.loads(said.out)["running"]
    assert said.err == f"zipper: no Spark Connect server is running for {settings.warehouse_path}\n"
    assert main(["spark", "stop", "--warehouse", settings.warehouse]) == 0
    assert capsys.readouterr().out.strip() == f"no Spark Connect server was running for {settings.warehouse_path}"


STAND_IN = r"""
import socket, sys, time
server = socket.socket()
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
held = []
while True:
    held.append(server.accept()[0])
"""


def test_the_supervisor_stops_a_server_no_client_has_used_for_the_idle_period(tmp_path):
    port = processes.free_port()
    record = tmp_path / "server.json"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "zipper.runtime.idle_stop", "--port", str(port), "--idle-minutes", "0.02"]
        + ["--record", str(record), "--", sys.executable, "-c", STAND_IN, str(port)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,
    )
    try:
        record.write_text(json.dumps({"pid": supervisor.pid}))
        while not processes.accepts(port):
            assert supervisor.poll() is None
            time.sleep(0.1)
        # a client connected for three idle periods keeps it
        with socket.create_connection((processes.LOCAL_HOST, port)):
            time.sleep(3.6)
            assert supervisor.poll() is None
        # once it has gone, the server and its supervisor end after one idle period, the record with them
        assert supervisor.wait(timeout=30) == 0
        assert not processes.group_alive(supervisor.pid)
        assert not record.exists()
    finally:
        processes.terminate(supervisor.pid, group=True)


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """Where process `pid` listens: the (address, port) of its listening sockets."""
    inodes = set()
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return set()
    for descriptor in descriptors:
        try:
            target = os.readlink(descriptor)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return {(s.local, s.port) for s in processes.tcp_sockets() if s.state == processes.LISTEN and s.inode in inodes}


def non_loopback_address() -> str | None:
    """This machine's IPv4 address on its default route, or its host name's; None if only loopback."""
    candidates = []
    for probe in ("192.0.2.1", "10.255.255.255"):  # a UDP "connect" sends nothing: it only picks a route
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                candidates.append(udp.getsockname()[0])
        except OSError:
            continue
    try:
        candidates.append(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    return next((address for address in candidates if not address.startswith(("127.", "0."))), None)


def test_an_early_start_that_fails_is_said_by_the_command_that_waits_for_it(tmp_path, monkeypatch):
    """start_early's thread keeps what went wrong; ensure_running raises it, with its words."""
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    monkeypatch.setenv("PATH", str(tmp_path))
    settings = SessionSettings(warehouse=str(tmp_path / "warehouse"))
    spark_server.start_early(settings)
    with pytest.raises(spark_server.SparkServerUnavailable, match="Java was not found"):
        spark_server.ensure_running(settings)
    assert spark_server.SparkServerService(settings).recorded() is None
