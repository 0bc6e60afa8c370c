"""What a Spark of a warehouse is configured with: its settings, its runner, the driver's conf and logs.

runtime.session opens a session from these; runtime.spark_server starts the warehouse's Spark
Connect server with them."""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from zipper.runtime import jvm, metastore
from zipper.runtime.metastore import MetastoreMode

RUNTIME_DIR = Path(__file__).resolve().parent
RUNNER_ENV = "ZIPPER_SPARK_RUNNER"  # server (default) | driver
DEFAULT_WAREHOUSE = "./warehouse"
# Spark's logging for zipper's drivers: warnings and errors, on a console that follows System.err.
LOG_CONFIG = RUNTIME_DIR / "log4j2.properties"


class SparkRunner(StrEnum):
    """Where a command's Spark work runs when no ZIPPER_SPARK_REMOTE names a server."""

    SERVER = "server"  # the warehouse's Spark Connect server (runtime.spark_server), started on demand
    DRIVER = "driver"  # a classic driver in this process: its JVM started for this command alone


def spark_runner(environ: Mapping[str, str] | None = None) -> SparkRunner:
    """The runner RUNNER_ENV names in `environ` (default: this process's environment)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(RUNNER_ENV, "").strip().lower() or SparkRunner.SERVER
    if chosen not in list(SparkRunner):
        from zipper.core.errors import StateError  # on use: only a bad setting needs it

        raise StateError(
            f"{RUNNER_ENV}={chosen!r}: expected server (the default: the warehouse's Spark Connect server)"
            " or driver (a Spark driver in the command's own process)"
        )
    return SparkRunner(chosen)


@dataclass(frozen=True)
class SessionSettings:
    """`metastore='local'` (the default): the warehouse's metastore server (runtime.metastore), started
    on demand. `external`: whatever Spark is configured with."""

    warehouse: str = DEFAULT_WAREHOUSE
    metastore: MetastoreMode = MetastoreMode.LOCAL  # a plain text is taken as its member
    verbose: bool = False
    app_name: str = "zipper"
    runner: SparkRunner = field(default_factory=spark_runner)  # a plain text is taken as its member

    def __post_init__(self):
        if self.metastore == metastore.RETIRED_EMBEDDED:
            metastore.mode({metastore.METASTORE_ENV: self.metastore})  # refused, in the same line
        object.__setattr__(self, "metastore", MetastoreMode(self.metastore))
        object.__setattr__(self, "runner", spark_runner({RUNNER_ENV: self.runner}))

    @classmethod
    def from_env(cls, warehouse: str | None = None, verbose: bool = False, app_name: str = "zipper"):
        return cls(
            warehouse=warehouse or os.environ.get("ZIPPER_WAREHOUSE") or DEFAULT_WAREHOUSE,
            metastore=metastore.mode(),
            verbose=verbose,
            app_name=app_name,
        )

    @property
    def warehouse_path(self) -> Path:
        return Path(self.warehouse).expanduser().resolve()

    @property
    def on_this_machine(self) -> bool:
        """The metastore is the warehouse's own server, not an external one."""
        return self.metastore == MetastoreMode.LOCAL

    @property
    def uses_server(self) -> bool:
        """A command's session is a client of the warehouse's Spark Connect server. Not with an
        external metastore, whose Spark is configured outside zipper (ZIPPER_SPARK_REMOTE names a
        server there), nor under spark-submit, which started a driver already."""
        under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
        return self.runner == SparkRunner.SERVER and self.on_this_machine and not under_submit

    def has_metastore(self) -> bool:
        """False only when the warehouse's own metastore has no database yet (nothing was ever created)."""
        if self.metastore == MetastoreMode.EXTERNAL:
            return True
        if os.environ.get(metastore.DATABASE_ENV):
            return True  # PostgreSQL: the server says whether the table is there
        return (self.warehouse_path / "metastore_db").is_dir()


def java_property(name: str, value: str | Path) -> str:
    """`-Dname=value` as one option of a Java options string: Spark's launcher splits those at
    white space outside quotes, so a warehouse (or repository) path with a space started no
    driver at all ("Could not find or load main class space.w"). Quoted as a POSIX shell
    would, which the launcher's parser reads the same way."""
    return shlex.quote(f"-D{name}={value}")


def warehouse_conf(settings: SessionSettings) -> dict[str, str]:
    """Settings that make a local Spark use the warehouse folder's own metastore server (started
    here if it is not running). The driver runs here, so it also maps the class data sharing
    archive set-up made (runtime.jvm)."""
    warehouse = settings.warehouse_path
    options = [
        # a path, not a file: URI, which a space would make invalid
        java_property("log4j2.configurationFile", LOG_CONFIG),
        jvm.driver_options(),
    ]
    conf = {
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.hadoop.hive.metastore.uris": metastore.local_uri(warehouse),
    }
    conf["spark.driver.extraJavaOptions"] = " ".join(filter(None, options))
    return conf


def common_conf() -> dict[str, str]:
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "static",
        # Lets one write emit the open and closed slots without a sort: each task keeps a writer
        # per slot open. Planned writes would add a sort by slot and bypass these writers.
        "spark.sql.maxConcurrentOutputFileWriters": "4",
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.parquet.compression.codec": "snappy",
        # Decimals as fixed-length byte arrays (not int32/int64) and lists and maps in Hive's
        # layout: Hive's own Parquet reader (through 3.x) fails on Spark's default encoding of
        # decimals up to 18 digits, and analysts read the tables from Hive too.
        "spark.sql.parquet.writeLegacyFormat": "true",
        # A rebuild's window functions run over a cached, key-partitioned relation: without these,
        # its 200 shuffle partitions (spark.sql.shuffle.partitions) became up to 200 files in every
        # partition it writes, whatever the table's size. Coalesced by size (64 MB per task, AQE's
        # advisory size) rather than to one task per core, so file sizes follow the data.
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
    }


def spark_submit_conf(settings: SessionSettings) -> dict[str, str]:
    """The --conf pairs a spark-submit of spark_jobs/zipper_job.py needs for these settings.

    Under spark-submit the driver JVM starts before any Python runs, so JVM options (the log
    configuration, the class data sharing archive) must be on the command line rather than set by the job. With an
    external metastore only the common settings: the metastore, the warehouse and the driver's
    JVM options are Spark's own configuration (hive-site.xml, spark-defaults.conf), and the log
    configuration of a client-mode driver comes through spark_submit_env."""
    conf = dict(common_conf())
    if settings.on_this_machine:
        conf.update(warehouse_conf(settings))
        conf["spark.ui.enabled"] = "false"
    return conf


def spark_submit_env(
    settings: SessionSettings, deploy_mode: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment variables a spark-submit of spark_jobs/zipper_job.py needs beside its --conf
    pairs, given the submitting process's environment (default: this one's).

    With an external metastore in client mode (the driver runs here and its console is the task
    log), zipper's log configuration, whose console follows System.err (_jvm_console_to_log_file),
    goes first in SPARK_SUBMIT_OPTS, not in spark.driver.extraJavaOptions as with the
    warehouse's own metastore: a --conf would replace that option whole, the value spark-defaults.conf gives it
    included. Spark's launcher puts SPARK_SUBMIT_OPTS before the driver options of the Spark
    conf, and the JVM keeps the last value of a property, so a log configuration given there
    (spark-defaults.conf, the DAG's conf, --driver-java-options), or later in SPARK_SUBMIT_OPTS,
    wins. It is named by log4j's older property, which either name given later overrides (log4j
    prefers log4j2.configurationFile, whatever the order). Cluster mode gets nothing: the
    driver and its log are the cluster's, and SPARK_SUBMIT_OPTS would only quieten the submitting
    JVM, whose INFO lines carry the application or driver id the Spark provider tracks."""
    environ = os.environ if environ is None else environ
    if settings.on_this_machine or deploy_mode == "cluster":
        return {}  # the warehouse's own metastore: the driver options are in its conf
    option = java_property("log4j.configurationFile", LOG_CONFIG)
    current = environ.get("SPARK_SUBMIT_OPTS", "").strip()
    if option in current:
        return {}  # already there (a second submit from the same process)
    return {"SPARK_SUBMIT_OPTS": f"{option} {current}".strip()}


def log_dir(settings: SessionSettings) -> Path:
    default = settings.warehouse_path / "logs" if settings.on_this_machine else Path("/tmp/zipper-logs")
    return Path(os.environ.get("ZIPPER_LOG_DIR") or default)


# The file a driver's console output goes to when whoever started the job named it (the Airflow
# task does, so that its failure and its log can name the file of this very run).
LOG_FILE_ENV = "ZIPPER_SPARK_LOG"


def new_log_file(settings: SessionSettings) -> Path:
    """A fresh file in the log folder for one driver's console output, or the one LOG_FILE_ENV names."""
    named = os.environ.get(LOG_FILE_ENV)
    if named:
        Path(named).parent.mkdir(parents=True, exist_ok=True)
        return Path(named)
    folder = log_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"spark-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
