"""The warehouse's Spark Connect server: one warm Spark driver that clients reach over gRPC.

A `zipper` command or an Airflow task that starts its own driver pays a JVM's start every time;
a Spark Connect client pays about a second against a server already running and warm. The
server is Spark's own (`SparkConnectServer`, from the pyspark package's jars, started with
`spark-submit`), configured as every zipper driver is (runtime.settings: the warehouse, its
metastore server, started first, the class data sharing archive, the common settings), with Hive
support. Like the metastore server it is started on demand and left running, recorded in
`<warehouse>/spark/server.json`; a dead or foreign record is replaced, two starters get one
server (a file lock), and it is stopped by its pid, which leads its process group. Its log is
`<warehouse>/metastore/spark-server.log`, beside the metastore server's.

Its Spark runs in the driver (`local[N]`) or on a cluster's executors (ZIPPER_SPARK_MASTER, e.g. a
standalone master's `spark://host:7077`). It listens on 127.0.0.1 only (the driver's own ports too,
as long as its master is on this machine) and serves only clients that present
its token: made once, kept in `<warehouse>/spark/token` (mode 0600, in a folder of mode 0700),
and given to the server in its environment (`SPARK_CONNECT_AUTHENTICATE_TOKEN`, which Spark reads
when `spark.connect.authenticate.token` is unset), never on a command line `ps` shows. It stops
itself after `ZIPPER_SPARK_IDLE_MINUTES` (default 30) without a client connected (runtime.idle_stop:
Spark has no such setting).

`zipper spark start|stop|status` manage it by hand; `ensure_running()` and `remote_url()` are
what a client needs."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from zipper.core.dates import utc_now_iso
from zipper.core.errors import StateError
from zipper.runtime import jvm, metastore, processes
from zipper.runtime.processes import LOCAL_HOST
from zipper.runtime.service import LocalService
from zipper.runtime.settings import SessionSettings, spark_submit_conf

MAIN_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# What Spark's server (when spark.connect.authenticate.token is unset) and its Python client read.
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
IDLE_ENV = "ZIPPER_SPARK_IDLE_MINUTES"
MEMORY_ENV = "ZIPPER_SPARK_DRIVER_MEMORY"
CORES_ENV = "ZIPPER_SPARK_CORES"
MASTER_ENV = "ZIPPER_SPARK_MASTER"  # the classic driver's master too (runtime.session)
DEFAULT_IDLE_MINUTES = 30.0
DEFAULT_MEMORY = "2g"  # one driver for every client: more than a single job's default 1g
DEFAULT_CORES = "2"
START_TIMEOUT_S = float(os.environ.get("ZIPPER_SPARK_START_TIMEOUT", "300"))
STOP_GRACE_S = 30
# A dead client's query is cancelled within about the sum of these: how often a client re-opens
# its response stream, how long the server waits for it to, and how often it looks.
STREAM_RENEWAL = "15s"
DETACHED_TIMEOUT = "30s"
DETACHED_CHECK_INTERVAL = "5s"
# The host a client names: pyspark's client sends a token over TLS unless the host is literally
# `localhost`, where it uses gRPC's local credentials (plain TCP, loopback peers only). With
# 127.0.0.1 it tried TLS against this plain server and went on retrying for over half an hour.
CLIENT_HOST = "localhost"
MARKER_CONF = "spark.zipper.warehouse"  # on the server's command line: which warehouse it serves
# Left out of the server's environment: they would make spark-submit, or its Python workers, a client.
CLIENT_ENV = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")


class SparkServerUnavailable(StateError):
    """The Spark Connect server could not be started or did not answer."""


@dataclass(frozen=True)
class Server:
    """A running Spark Connect server, as recorded in `<warehouse>/spark/server.json`."""

    pid: int  # its supervisor's (runtime.idle_stop), which leads the server's process group
    port: int
    warehouse: str
    started_at: str
    metastore_uri: str  # the warehouse's metastore server it was started against ("" for an external one)
    master: str  # its --master

    @property
    def url(self) -> str:
        """Its address without the token: what may be shown."""
        return f"sc://{CLIENT_HOST}:{self.port}"


def ensure_running(settings: SessionSettings) -> Server:
    """The warehouse's server, started (and warmed) first if none runs."""
    _join_early_start(settings)
    return SparkServerService(settings).start()[0]


def client_url(settings: SessionSettings) -> str:
    """The URL, token included, of the warehouse's server, started first if none runs."""
    _join_early_start(settings)
    service = SparkServerService(settings)
    return remote_url(service.start()[0], service.token())


# Starts under way in a thread of this process, by warehouse: the server, or what the start raised.
_early_starts: dict[Path, Future] = {}


def start_early(settings: SessionSettings) -> None:
    """Begin starting the warehouse's server in a thread when none runs, and return at once.

    A command that will need Spark calls this as soon as it knows, so that the server's JVM boots
    while the command imports the data path and reads the table's state; `ensure_running` then
    waits for that start instead of beginning one. The thread is not a daemon: a command that
    ends first still waits for the server it started to be recorded (else a server would run
    that no record names)."""
    warehouse = settings.warehouse_path
    if warehouse in _early_starts:
        return
    service = SparkServerService(settings)
    if service.running() is not None:
        return
    # The thread's warm-up imports pyspark's Connect client; imported here first, so that it never
    # imports pyspark while this thread does (pyspark's package and `pyspark.sql` import each other,
    # and two threads importing them at once left one a half-made module). This thread imports
    # pyspark next anyway; the server starts the second or so later.
    import pyspark.sql.connect.session  # noqa: F401

    started: Future = Future()

    def start() -> None:
        try:
            started.set_result(service.start()[0])
        except BaseException as exc:  # raised by the caller that waits for it
            started.set_exception(exc)

    _early_starts[warehouse] = started
    threading.Thread(target=start, name=f"zipper spark start {warehouse}").start()


def _join_early_start(settings: SessionSettings) -> None:
    """Wait for a start `start_early` began; raise what it raised."""
    started = _early_starts.pop(settings.warehouse_path, None)
    if started is not None:
        started.result()


def remote_url(server: Server, token: str) -> str:
    """The connection string for `SparkSession.builder.remote()`: its token included."""
    return f"{server.url}/;token={token}"


def server_master() -> str:
    """The server's --master: ZIPPER_SPARK_MASTER (a cluster's), else `local[ZIPPER_SPARK_CORES]`."""
    return os.environ.get(MASTER_ENV, "").strip() or f"local[{server_cores()}]"


def server_cores() -> str:
    return os.environ.get(CORES_ENV, "").strip() or DEFAULT_CORES


def master_on_loopback(master: str) -> bool:
    """Whether every process of a Spark with this master runs on this machine: `local[...]`, or a
    standalone master (`spark://`, several for a standby) named by a loopback address. Its
    executors then reach the driver on 127.0.0.1; elsewhere they need an address they can reach."""
    if master.startswith("local"):
        return True
    if not master.startswith("spark://"):
        return False  # yarn, k8s://...: executors on other machines
    hosts = [address.rsplit(":", 1)[0] for address in master.removeprefix("spark://").split(",")]
    return all(host in (LOCAL_HOST, "localhost", "[::1]") for host in hosts)


def idle_minutes() -> float:
    configured = os.environ.get(IDLE_ENV, "").strip()
    try:
        minutes = float(configured) if configured else DEFAULT_IDLE_MINUTES
    except ValueError:
        minutes = -1.0
    if minutes < 0:
        raise StateError(f"{IDLE_ENV}={configured!r}: expected minutes (0: never stop it for being idle)")
    return minutes


class SparkServerService(LocalService[Server]):
    """The Spark Connect server of one warehouse: find it, start it, stop it (runtime.service).
    Its lock (`server.lock`) is taken by runtime.idle_stop too, by that name."""

    record_type = Server
    stop_grace_s = STOP_GRACE_S
    stop_group = True  # its pid is its supervisor's, which leads the server's process group

    def __init__(self, settings: SessionSettings):
        self.settings = settings
        self.warehouse = settings.warehouse_path
        super().__init__(self.warehouse / "spark", log_path=self.warehouse / "metastore" / "spark-server.log")
        self.token_path = self.folder / "token"

    # -- finding it -------------------------------------------------------------------------------

    def _is_current(self, server: Server) -> bool:
        """This warehouse's server, started against the metastore server that runs now: one whose
        metastore server was stopped or replaced would fail in its catalog."""
        return self._is_our_process(server.pid) and server.metastore_uri == self._metastore_uri()

    def _metastore_uri(self) -> str:
        """The thrift URI of the warehouse's running metastore server ("" when the metastore is
        an external one). A Spark server keeps the URI it started with, so one whose metastore
        server has since restarted on another port is replaced rather than used."""
        if not self.settings.on_this_machine:
            return ""
        running = metastore.MetastoreService(self.warehouse).running()
        return running.uri if running else "(not running)"

    def _is_our_process(self, pid: int) -> bool:
        return processes.has_cmdline(pid, MAIN_CLASS, self._marker())

    def _marker(self) -> str:
        return f"{MARKER_CONF}={self.warehouse}"

    # -- its token ---------------------------------------------------------------------------------

    def token(self) -> str:
        """The server's token, made the first time it is asked for. Written whole under another
        name and linked into place, so that a reader never sees half of it and two makers agree."""
        self._private_folder()
        if not self.token_path.exists():
            made = self.folder / f"token.{os.getpid()}.tmp"
            descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(32) + "\n")
            try:
                os.link(made, self.token_path)
            except FileExistsError:
                pass  # another maker's came first: theirs it is
            finally:
                made.unlink()
        os.chmod(self.token_path, 0o600)
        return self.token_path.read_text().strip()

    def _private_folder(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)  # mkdir's mode passes through the umask

    # -- starting and stopping ---------------------------------------------------------------------

    def _launcher(self) -> Callable[[], Server]:
        """A launch with the server's token, made (the first time) before the start's lock is taken."""
        token = self.token()
        return lambda: self._launch(token)

    @contextlib.contextmanager
    def left_as_found(self) -> Iterator[None]:
        """A `with` block whose Spark work may start the server (its first client does); stopped at
        the block's end when none was running at its start, so a demo leaves no server behind."""
        was_running = self.running() is not None
        try:
            yield
        finally:
            if not was_running:
                self.stop()

    def _launch(self, token: str) -> Server:
        if jvm.java_binary() is None:
            raise SparkServerUnavailable(
                "Java was not found (JAVA_HOME or java on PATH): the Spark Connect server is a Java process;"
                " install Java 17 (e.g. apt-get install openjdk-17-jre-headless)"
            )
        minutes = idle_minutes()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        last_log = ""
        for _ in range(3):  # a port taken between choosing it and binding it: choose another
            port = processes.free_port()
            command = self.supervised(self.command(port), port, minutes)
            with open(self.log_path, "ab") as log:
                log.write(f"\n--- {utc_now_iso()} starting on port {port}\n".encode())
                log.flush()
                process = subprocess.Popen(
                    command,
                    env=self.environment(token),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.folder,
                    start_new_session=True,  # its own process group, outliving the command that started it
                )
            if processes.wait_until_accepting(process, port, START_TIMEOUT_S, group=True):
                server = Server(
                    process.pid, port, str(self.warehouse), utc_now_iso(), self._metastore_uri(), server_master()
                )
                self._warm(server, token)
                return server
            last_log = self._log_tail()
            if "Address already in use" not in last_log:
                break
        raise SparkServerUnavailable(self._start_failure(last_log))

    def command(self, port: int) -> list[str]:
        """The server's spark-submit argv: the warehouse's driver settings (its metastore server
        started first), Hive support, its Connect port on loopback, the driver's size and its
        master from the environment. The driver's own ports are on loopback too when its master
        is (runtime.session does the same for a command's own driver); a cluster's executors on
        other machines need the host's address, Spark's default."""
        master = server_master()
        conf = spark_submit_conf(self.settings)
        conf.update(
            {
                "spark.sql.catalogImplementation": "hive",
                "spark.connect.grpc.binding.address": LOCAL_HOST,
                "spark.connect.grpc.binding.port": str(port),
                "spark.connect.grpc.port.maxRetries": "0",  # the recorded port or none
                "spark.ui.enabled": "false",
                # A client that died mid-query leaves its query running on the server. The server
                # notices only when it ends the client's response stream (which a live client
                # re-opens at once; every 2 minutes by default), and cancels the query once no
                # client has re-attached for the detached timeout (5 minutes by default).
                "spark.connect.execute.reattachable.senderMaxStreamDuration": STREAM_RENEWAL,
                "spark.connect.execute.manager.detachedTimeout": DETACHED_TIMEOUT,
                "spark.connect.execute.manager.maintenanceInterval": DETACHED_CHECK_INTERVAL,
                MARKER_CONF: str(self.warehouse),
            }
        )
        if master_on_loopback(master):
            # the driver's RPC and block manager ports otherwise listen on the host's address
            conf.update({"spark.driver.bindAddress": LOCAL_HOST, "spark.driver.host": LOCAL_HOST})
        if master.startswith("spark://") and server_cores().isdigit():
            # a standalone master gives an application every free core of its workers, for as long
            # as it runs: this one runs for hours, and the cluster's other applications need some
            # (ZIPPER_SPARK_CORES=*: every core)
            conf["spark.cores.max"] = server_cores()
        memory = os.environ.get(MEMORY_ENV, "").strip() or DEFAULT_MEMORY
        command = [str(jvm.spark_home() / "bin" / "spark-submit"), "--master", master]
        command += ["--driver-memory", memory, "--name", "zipper connect server", "--class", MAIN_CLASS]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        return [*command, "spark-internal"]

    def supervised(self, command: list[str], port: int, minutes: float) -> list[str]:
        """`command` under runtime.idle_stop, which stops it once idle."""
        supervisor = [sys.executable, "-m", "zipper.runtime.idle_stop", "--port", str(port)]
        return [*supervisor, "--idle-minutes", f"{minutes:g}", "--record", str(self.record_path), "--", *command]

    def environment(self, token: str) -> dict[str, str]:
        """The server's environment: the token (readable by its user alone, unlike the command
        line), this pyspark's home and Python, and the zipper this process runs (a work tree
        may share a virtualenv installed from another)."""
        env = {key: value for key, value in os.environ.items() if key not in CLIENT_ENV}
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        env.update({TOKEN_ENV: token, "SPARK_HOME": str(jvm.spark_home()), "PYSPARK_PYTHON": sys.executable})
        if master_on_loopback(server_master()):
            env["SPARK_LOCAL_IP"] = LOCAL_HOST  # Spark's own address: loopback, as the binding confs say
        return env

    def _warm(self, server: Server, token: str) -> None:
        """One tiny job, so that the first real client does not pay the server's warm-up (17 s
        measured). Through the Connect session class itself: the generic builder would mark
        this whole process as a Connect client, and a classic session here would go astray."""
        from pyspark.sql.connect.session import SparkSession  # on use: a client's import

        try:
            client = SparkSession.builder.remote(remote_url(server, token)).create()
            try:
                client.sql("SELECT count(*) FROM range(1000)").collect()
            finally:
                client.stop()
        except Exception as exc:
            processes.terminate(server.pid, STOP_GRACE_S, group=True)
            raise SparkServerUnavailable(
                f"the Spark Connect server of {self.warehouse} started but did not answer its first query:"
                f" {str(exc).splitlines()[0][:300]} (its log: {self.log_path})"
            ) from exc

    def _start_failure(self, log: str) -> str:
        reason = next(
            (line.strip() for line in reversed(log.splitlines()) if "Exception" in line or "Error" in line),
            "it exited or did not answer in time",
        )
        return f"the Spark Connect server of {self.warehouse} did not start: {reason[:300]} (its log: {self.log_path})"

    def status(self) -> dict:
        """`running` while the server's JVM answers, whatever became of its metastore server;
        `current` when a command would use it (one whose metastore server was stopped or replaced
        is replaced by the next command)."""
        server = self.answering()
        recorded = self.recorded()
        return {
            "warehouse": str(self.warehouse),
            "running": server is not None,
            "current": server is not None and self._is_current(server),
            "url": server.url if server else None,  # without the token: see token_file
            "pid": server.pid if server else None,
            "port": server.port if server else None,
            "started_at": server.started_at if server else None,
            "master": (server.master or None) if server else None,  # the one it started with
            "stale_record": recorded is not None and server is None,
            "token_file": str(self.token_path),
            "idle_minutes": idle_minutes(),
            "log": str(self.log_path),
        }
