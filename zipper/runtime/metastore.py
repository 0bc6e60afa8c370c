"""The warehouse's metastore service: Hive's own metastore server, shared by every process on this machine.

On the default (`ZIPPER_METASTORE=local`) the warehouse's metastore database is served by Hive's
`HiveMetaStore` (from the pyspark jars) on a loopback port, as a shared production metastore
serves a cluster: every Spark driver, the CLI, the Airflow tasks and an analyst's `spark-sql` are
its clients, and many of them can be at once. zipper reads and publishes tables over its thrift
API (zipper.table.catalog), so a metastore without one is not an option: the earlier
`ZIPPER_METASTORE=embedded` (Derby inside the driver) is retired, and the warehouse it made is
served as it is.

The server is started on demand by whatever needs it first and left running. Its process id
and port are recorded in `<warehouse>/metastore/server.json`; a record whose process is gone (or
is not this warehouse's server) is replaced. Starting happens under a file lock, so two callers
starting it at once get one server. Its database is the warehouse's Derby database
(`<warehouse>/metastore_db`), or PostgreSQL when `ZIPPER_METASTORE_DB` names one
(`postgresql://user:password@host:port/database`, with Debian's `libpostgresql-jdbc-java` or
`ZIPPER_POSTGRESQL_JDBC=/path/postgresql.jar`).

`zipper metastore start|stop|status` manage it by hand; `for_this_run()` starts it for a run
that stops what it started (the demo, `make airflow`, the tests)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import unquote, urlsplit

from zipper.core.dates import utc_now_iso
from zipper.core.errors import StateError
from zipper.runtime import jvm, metastore_server, metastore_txn, processes
from zipper.runtime.processes import LOCAL_HOST
from zipper.runtime.service import LocalService

# The server JVM's main class (py4j's gateway, shut down once Hive's metastore serves on loopback);
# an earlier zipper's server ran Hive's own main, on every interface, and is replaced at the next start.
MAIN_CLASS = metastore_server.GATEWAY_MAIN
EARLIER_MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
# A server with table locks (its transaction tables and settings) has this argument; one an earlier
# zipper started, without them, is replaced at the next start.
LOCKS_MARKER = "-Dzipper.metastore.locks=hive-txn"
METASTORE_ENV = "ZIPPER_METASTORE"  # local (default) | external
DATABASE_ENV = "ZIPPER_METASTORE_DB"  # postgresql://user:password@host:port/database; default Derby
JDBC_JAR_ENV = "ZIPPER_POSTGRESQL_JDBC"
# The server reads the database password from its own environment, not from its command line (ps).
PASSWORD_ENV = "ZIPPER_METASTORE_DB_PASSWORD"
HEAP_ENV = "ZIPPER_METASTORE_HEAP"
# Debian's libpostgresql-jdbc-java installs the PostgreSQL JDBC driver here.
DEBIAN_POSTGRESQL_JAR = Path("/usr/share/java/postgresql.jar")
START_TIMEOUT_S = float(os.environ.get("ZIPPER_METASTORE_START_TIMEOUT", "300"))
LOG_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"


class MetastoreUnavailable(StateError):
    """The metastore service could not be started or reached: nothing was read or committed."""


@dataclass(frozen=True)
class Server:
    """A running metastore server, as recorded in `<warehouse>/metastore/server.json`."""

    pid: int
    port: int
    warehouse: str
    database: str  # where its metadata lives: the Derby folder, or the PostgreSQL URL without password
    started_at: str

    @property
    def uri(self) -> str:
        return f"thrift://{LOCAL_HOST}:{self.port}"


class MetastoreMode(StrEnum):
    """Which metastore Spark drivers use: `local` (the warehouse's server, this service) or
    `external` (whatever Spark is configured with)."""

    LOCAL = "local"
    EXTERNAL = "external"


RETIRED_EMBEDDED = "embedded"


def mode(environ: Mapping[str, str] | None = None) -> MetastoreMode:
    """Which metastore Spark drivers use: `local` (this service) or `external`, as `environ`
    (default: this process's environment) says."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(METASTORE_ENV, MetastoreMode.LOCAL).strip().lower() or MetastoreMode.LOCAL
    if chosen == RETIRED_EMBEDDED:
        raise StateError(
            f"{METASTORE_ENV}=embedded is retired: zipper reads and publishes tables over the metastore's thrift"
            " API, which Derby inside the driver does not have; the warehouse's Derby database is served as it is"
            f" by the metastore service, the default `local` (unset {METASTORE_ENV}; `zipper metastore start`"
            " starts it)"
        )
    if chosen not in list(MetastoreMode):
        raise StateError(f"{METASTORE_ENV}={chosen!r}: expected local (the default) or external")
    return MetastoreMode(chosen)


@dataclass(frozen=True)
class Database:
    """The server's metadata database: its JDBC settings and the jars it needs beyond Spark's."""

    url: str
    described: str
    driver: str = ""
    user: str = ""
    password: str = ""
    jars: tuple[str, ...] = ()

    @classmethod
    def for_warehouse(cls, warehouse: Path, configured: str | None = None) -> Database:
        configured = os.environ.get(DATABASE_ENV, "") if configured is None else configured
        if not configured:
            folder = warehouse / "metastore_db"
            return cls(f"jdbc:derby:;databaseName={folder};create=true", str(folder))
        parts = urlsplit(configured)
        if parts.scheme not in ("postgresql", "postgres"):
            raise MetastoreUnavailable(
                f"{DATABASE_ENV}={_without_password(configured)!r}: expected"
                " postgresql://user:password@host:port/database (or unset, for Derby under the warehouse)"
            )
        jar = Path(os.environ.get(JDBC_JAR_ENV) or DEBIAN_POSTGRESQL_JAR)
        if not jar.is_file():
            raise MetastoreUnavailable(
                f"the PostgreSQL JDBC driver is not at {jar}: install it (Debian: apt-get install"
                f" libpostgresql-jdbc-java) or set {JDBC_JAR_ENV} to its jar"
            )
        host = parts.hostname or "localhost"
        port = parts.port or 5432
        database = parts.path.lstrip("/") or "metastore"
        return cls(
            url=f"jdbc:postgresql://{host}:{port}/{database}",
            described=f"postgresql://{host}:{port}/{database}",
            driver="org.postgresql.Driver",
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            jars=(str(jar),),
        )

    def hiveconf(self) -> list[str]:
        pairs = [f"javax.jdo.option.ConnectionURL={self.url}"]
        if self.driver:
            pairs.append(f"javax.jdo.option.ConnectionDriverName={self.driver}")
        if self.user:
            pairs.append(f"javax.jdo.option.ConnectionUserName={self.user}")
        if self.password:  # Hadoop's Configuration expands ${env.NAME} when the metastore asks for it
            pairs.append(f"javax.jdo.option.ConnectionPassword=${{env.{PASSWORD_ENV}}}")
        if self.driver:
            pairs += self.WHOLE_SCHEMA_AT_START
        return pairs

    # DataNucleus creates a table the first time a request needs it, in a connection of its own. On
    # PostgreSQL that waited forever: its ALTER TABLE ... ADD FOREIGN KEY waited for the lock of the
    # request's open transaction (`create_table` on TBLS), which waited for the new table. Every
    # class of Hive's package.jdo loaded at start creates the whole schema first, before any request.
    WHOLE_SCHEMA_AT_START = (
        "datanucleus.autoStartMechanism=MetaData",
        "datanucleus.autoStartMetaDataFiles=package.jdo",
    )

    def environment(self) -> dict[str, str]:
        """What the server's environment adds: the password, readable by its user alone."""
        return {PASSWORD_ENV: self.password} if self.password else {}


class MetastoreService(LocalService[Server]):
    """The metastore server of one warehouse folder: find it, start it, stop it (runtime.service)."""

    record_type = Server

    def __init__(self, warehouse: str | Path, java_options: tuple[str, ...] = ()):
        """`java_options`: more options for the server's JVM (the class data sharing archive's maker)."""
        self.warehouse = Path(warehouse).expanduser().resolve()
        self.java_options = tuple(java_options)
        super().__init__(self.warehouse / "metastore", log_path=self.warehouse / "metastore" / "server.log")

    # -- finding it -------------------------------------------------------------------------------

    def _is_current(self, server: Server) -> bool:
        """A server of this zipper: the gateway's main, with table locks (an earlier one is replaced)."""
        return processes.has_cmdline(server.pid, MAIN_CLASS, self._marker(), LOCKS_MARKER)

    def _is_our_process(self, pid: int, mains: tuple[str, ...] = (MAIN_CLASS, EARLIER_MAIN_CLASS)) -> bool:
        """Whether `pid` is this warehouse's metastore server, run by one of `mains` (a recycled
        pid is some other process)."""
        return any(processes.has_cmdline(pid, main, self._marker()) for main in mains)

    def _marker(self) -> str:
        return f"-Dzipper.warehouse={self.warehouse}"

    # -- starting ----------------------------------------------------------------------------------

    def ensure(self) -> Server:
        """The running server, started first if there is none."""
        return self.start()[0]

    def _launcher(self) -> Callable[[], Server]:
        return self._launch

    def _launch(self) -> Server:
        database = Database.for_warehouse(self.warehouse)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        if database.url.startswith("jdbc:derby:"):
            self._set_aside_an_unfinished_database()
        java = jvm.java_binary()
        if java is None:
            raise MetastoreUnavailable(
                "Java was not found (JAVA_HOME or java on PATH): the metastore server is a Java process;"
                " install Java 17 (e.g. apt-get install openjdk-17-jre-headless)"
            )
        with open(self.log_path, "ab") as log:
            log.write(f"\n--- {utc_now_iso()} starting\n".encode())
        try:
            process, port = metastore_server.launch(
                self.command(java, database),
                self.settings(database),
                self.log_path,
                env={**os.environ, **database.environment()},
                cwd=self.folder,
                timeout_s=START_TIMEOUT_S,
            )
        except metastore_server.ServerFailed as failure:
            raise MetastoreUnavailable(self._start_failure(self._log_tail(), str(failure))) from None
        with open(self.log_path, "ab") as log:
            log.write(f"--- {utc_now_iso()} serving on {LOCAL_HOST}:{port} (pid {process.pid})\n".encode())
        return Server(process.pid, port, str(self.warehouse), database.described, utc_now_iso())

    def _set_aside_an_unfinished_database(self) -> None:
        """A Derby database without its `service.properties` was never finished: its first server
        was killed while it created it (a merge task killed on the warehouse's first date), and
        Derby refuses to open it ("XBM0A ... brought down in the middle of creating this
        database") at every start after. Nothing was ever stored in it, so it is moved aside
        (`metastore_db.unfinished-<time>`, kept) and the server creates the database afresh."""
        folder = self.warehouse / "metastore_db"
        if not folder.is_dir() or (folder / "service.properties").exists():
            return
        aside = folder.with_name(f"metastore_db.unfinished-{utc_now_iso().replace(':', '')}")
        folder.rename(aside)
        with open(self.log_path, "ab") as log:
            log.write(f"--- {utc_now_iso()} moved an unfinished Derby database aside: {aside}\n".encode())

    def command(self, java: Path, database: Database) -> list[str]:
        """The server's argv: a JVM on Spark's jars (and the database's), set for this warehouse,
        whose main is py4j's gateway until Hive's metastore serves (zipper.runtime.metastore_server)."""
        classpath = ":".join([str(jvm.spark_home() / "jars" / "*"), *database.jars])
        heap = os.environ.get(HEAP_ENV, "1g")
        options = [
            f"-Xmx{heap}",
            "-XX:TieredStopAtLevel=1",  # a metadata server of small requests: the quick JIT starts it sooner
            "-XX:+DisplayVMOutputToStderr",  # the log: its stdout is the starter's pipe, closed once it serves
            *jvm.server_options(),
            *self.java_options,
            # hive-exec's log4j2 defaults ask for async loggers, whose library Spark does not ship
            "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
            f"-Dlog4j2.configurationFile={LOG_CONFIG}",
            f"-Dderby.system.home={self.warehouse}",
            f"-Dderby.stream.error.file={self.warehouse / 'derby.log'}",
            self._marker(),
            LOCKS_MARKER,
        ]
        return metastore_server.gateway_command(str(java), options, classpath)

    def settings(self, database: Database) -> dict[str, str]:
        """The server's Hive settings (what Hive's main took as --hiveconf pairs)."""
        pairs = [
            *database.hiveconf(),
            "datanucleus.schema.autoCreateAll=true",
            "hive.metastore.schema.verification=false",
            f"hive.metastore.warehouse.dir={self.warehouse}",
            # a partition move is one alter_partitions call; its statistics are Spark's business
            "hive.stats.autogather=false",
        ]
        # the publish's table lock: its JDBC pool and the time-out of a killed client's lock
        return dict(pair.split("=", 1) for pair in pairs) | dict(metastore_txn.SETTINGS)

    def _start_failure(self, log: str, reason: str) -> str:
        where = f"the metastore server of {self.warehouse}"
        if any("Another instance of Derby" in text or "XSDB6" in text for text in (log, reason)):
            return (
                f"{where} could not open {self.warehouse}/metastore_db: another process has it open (a Spark"
                " driver with Derby inside, or a server of an earlier zipper); when it has finished, run"
                " `zipper metastore start`"
            )
        return f"{where} did not start: {reason[:300]} (its log: {self.log_path})"

    # -- for a run that cleans up after itself ------------------------------------------------------

    @contextlib.contextmanager
    def for_this_run(self) -> Iterator[Server]:
        """The server for the length of a `with` block; stopped at its end if this block started it."""
        server, started = self.start()
        try:
            yield server
        finally:
            if started:
                self.stop()

    def status(self) -> dict:
        """`running` while the server's JVM answers; `current` when a command would use it (one an
        earlier zipper started without table locks is replaced by the next command)."""
        server = self.answering()
        recorded = self.recorded()
        return {
            "warehouse": str(self.warehouse),
            "running": server is not None,
            "current": server is not None and self._is_current(server),
            "uri": server.uri if server else None,
            "pid": server.pid if server else None,
            "database": server.database if server else Database.for_warehouse(self.warehouse).described,
            "started_at": server.started_at if server else None,
            "stale_record": recorded is not None and server is None,
            "log": str(self.log_path),
        }


def local_uri(warehouse: str | Path) -> str:
    """The thrift URI of the warehouse's server, started first if it is not running."""
    return MetastoreService(warehouse).ensure().uri


def _without_password(url: str) -> str:
    """`url` as an error line may show it: whatever precedes its host (user, password) as ***."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    if "@" not in rest:
        return url
    return f"{scheme}{separator}***@{rest.rpartition('@')[2]}"
