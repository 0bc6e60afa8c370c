"""The one place a SparkSession is opened: a Spark Connect client of the warehouse's server (or
of the one ZIPPER_SPARK_REMOTE names), or a classic driver in this process."""

from __future__ import annotations

import contextlib
import os
import warnings

from zipper.runtime import spark_server
from zipper.runtime.processes import LOCAL_HOST
from zipper.runtime.settings import SessionSettings, common_conf, new_log_file, warehouse_conf

# sc://host:port/;token=...: run as a client of that Spark Connect server instead of a driver here
REMOTE_ENV = "ZIPPER_SPARK_REMOTE"


def _jvm_console_to_log_file(settings: SessionSettings) -> None:
    """Under spark-submit the JVM is this process's parent and its stderr is the Airflow task log,
    where a failed Spark task's Java traces (about 90 lines for one corrupt file) buried zipper's
    one error line. Spark's console appender follows System.err (log4j2.properties), so pointing
    System.err and System.out at a log file, before the SparkContext starts, sends Spark's
    warnings and traces where the CLI sends them. zipper's own lines still reach the task log:
    spark-submit relays this process's output to the stream it held when it started it."""
    from pyspark import SparkContext  # on use: the Airflow hook imports runtime at DAG parse

    SparkContext._ensure_initialized()  # joins the gateway spark-submit started
    jvm = SparkContext._jvm
    stream = jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(str(new_log_file(settings)), True), True)
    jvm.java.lang.System.setErr(stream)
    jvm.java.lang.System.setOut(stream)


def server_url(settings: SessionSettings) -> str | None:
    """The URL, token included, of the Spark Connect server a session of these settings is a client
    of (the one ZIPPER_SPARK_REMOTE names, else the warehouse's, started if none runs); None when
    the session is a driver in this process."""
    remote = _remote_url()
    if remote:
        return remote
    return spark_server.client_url(settings) if settings.uses_server else None


def start_server_early(settings: SessionSettings) -> None:
    """Begin starting the server a session of these settings will be a client of, when it is the
    warehouse's own and none runs (spark_server.start_early): its start overlaps what the command
    does before it needs Spark. Nothing for a ZIPPER_SPARK_REMOTE server or a driver here."""
    if not _remote_url() and settings.uses_server:
        spark_server.start_early(settings)


def _remote_url() -> str:
    """The server ZIPPER_SPARK_REMOTE names ("" when none)."""
    return os.environ.get(REMOTE_ENV, "").strip()


def build_session(settings: SessionSettings, extra: dict[str, str] | None = None):
    """The command's session: a Spark Connect client of the server ZIPPER_SPARK_REMOTE names, else
    of the warehouse's own server (started here if none runs), else (`ZIPPER_SPARK_RUNNER=driver`,
    an external metastore, spark-submit) a classic driver in this process. Imports pyspark lazily.

    For a classic driver, unless verbose, the JVM's console output goes to a log file (log_dir), so a user, or a task
    log, sees zipper's own one-line messages and not Java's start-up chatter or stack traces."""
    warnings.filterwarnings("ignore", message=".*pandas.*")
    url = server_url(settings)
    if url:
        return connect_session(url, extra, settings.verbose)
    from pyspark import SparkConf, SparkContext  # on use: the Airflow hook imports runtime at DAG parse
    from pyspark.sql import SparkSession

    conf = dict(common_conf())
    conf["spark.app.name"] = settings.app_name
    conf["spark.sql.catalogImplementation"] = "hive"
    if settings.on_this_machine:
        settings.warehouse_path.mkdir(parents=True, exist_ok=True)
        conf.update(warehouse_conf(settings))
        conf.setdefault("spark.ui.enabled", "false")
    conf.update(extra or {})
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    # Under spark-submit the JVM already runs with its --master; elsewhere default to local.
    if "spark.master" not in conf and not under_submit:
        conf["spark.master"] = os.environ.get("ZIPPER_SPARK_MASTER", "local[*]")
    if conf.get("spark.master", "").startswith("local"):
        # a driver with no executors elsewhere: its RPC and block manager ports on loopback only
        conf.setdefault("spark.driver.bindAddress", LOCAL_HOST)
        conf.setdefault("spark.driver.host", LOCAL_HOST)

    if SparkContext._active_spark_context is None and not under_submit:
        spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
        gateway = None
        if not settings.verbose:
            from pyspark.java_gateway import launch_gateway  # on use: the Airflow hook imports runtime at DAG parse

            log_file = open(new_log_file(settings), "ab")
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log_file, "stderr": log_file})
        SparkContext(conf=spark_conf, gateway=gateway)
    elif under_submit and SparkContext._active_spark_context is None and not settings.verbose:
        _jvm_console_to_log_file(settings)

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not settings.verbose:
        _quiet_query_context_loggers()
    return spark


def connect_session(url: str, extra: dict[str, str] | None = None, verbose: bool = False):
    """A new Spark Connect session of the server at `url` (`sc://host:port/;token=...`): no JVM in
    this process. Its own session on the server, not one another caller of this process holds:
    release_session() ends it, its cached relations with it. The settings a classic driver starts
    with are set on it where Spark lets a session change them; those fixed when the server started
    (its metastore, its warehouse, its memory) are the server's."""
    # PySpark's own builder, which marks the whole process a Connect client: its functions and
    # columns are then the client's (the Connect session class alone would leave them classic)
    from pyspark.sql import SparkSession  # on use: a client's import

    # The settings go in one request with the session's creation, not two round trips per key:
    # the SQL ones (the others, such as the console's progress bar, are the server's), the server
    # keeping those it cannot change, and its warning about each of them not shown.
    settings = {k: v for k, v in {**common_conf(), **(extra or {})}.items() if k.startswith("spark.sql.")}
    spark = SparkSession.builder.remote(url).create()  # no request yet
    give_up_soon_on_a_lost_server(spark)  # before the first: a server killed then hung the command 10 minutes
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*CANNOT_MODIFY_CONFIG.*")
        if settings:
            spark.conf._set_all(configs=settings, silent=True)  # the one request the builder's config(map=) sends
    if not verbose:
        _quiet_query_context_loggers()
    return spark


def give_up_soon_on_a_lost_server(spark) -> None:
    """Spark's client retries a server that stopped answering for over 10 minutes (15 tries, up to
    a minute apart): a command whose server was killed hung that long. The warehouse's server is
    local: when it does not answer for a few seconds it is gone, and its queries with it."""
    if not is_connect(spark):
        return
    from pyspark.sql.connect.client.retries import DefaultPolicy  # on use: a client's import

    spark.client.set_retry_policies([DefaultPolicy(max_retries=6, max_backoff=2000)])
    # its warning on giving up would be a second line beside the command's one error line
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def release_session(spark) -> None:
    """End a command's Spark Connect session on its server (what it cached goes with it). A classic
    session is left alone: its driver is this process's, or spark-submit's, and ends with it."""
    if spark is not None and is_connect(spark):
        with contextlib.suppress(Exception):  # a server gone already: nothing left to release
            spark.stop()


def _quiet_query_context_loggers() -> None:
    """PySpark logs every analysis error with its full JVM trace to stderr through these two
    loggers, before the error reaches zipper's one-line message; --verbose keeps them."""
    from pyspark.logger import PySparkLogger  # on use: the Airflow hook imports runtime at DAG parse

    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
