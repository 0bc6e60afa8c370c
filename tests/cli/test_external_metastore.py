"""`ZIPPER_METASTORE=external` against a real Hive metastore server reached over thrift, and
spark-submit to a Spark standalone cluster: the "at scale" set-up, with no code change.

The server is Hive's own `HiveMetaStore` (hive-metastore 2.3.10 from the pyspark jars, on its
own Derby database), so zipper's partition calls (list, add, re-point several partitions in one
`alterPartitions`, drop) cross the thrift wire exactly as with a shared production metastore.
Its schema is DataNucleus' own, without Hive's transaction tables, and its lock call fails (Hive's
default JDBC pool is not among Spark's jars): each process's first publish says so in one warning
line and publishes after the check alone.
The cluster is Spark's own standalone master and one worker (`spark-class`), whose executors
are JVMs of their own. The table is read back by a plain Spark session configured only with
the metastore's URI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.airflow.support import DATES, write_sample, write_spec
from tests.cli.helpers import REPO
from tests.jvm import spark_env
from tests.standalone import standalone_cluster
from zipper.devtools.local_airflow import free_port
from zipper.runtime.jvm import java_binary

pytestmark = pytest.mark.slow
SPARK_HOME = Path(__import__("pyspark").__file__).parent
SPARK_JARS = SPARK_HOME / "jars"
LOG_CONFIG = REPO / "zipper" / "runtime" / "log4j2.properties"
OPEN = "9999-12-31"


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    """A Hive metastore server on a free port, with its own Derby database and warehouse."""
    root = tmp_path_factory.mktemp("hms")
    port = free_port()
    command = [
        str(java_binary()),
        "-Xmx512m",
        "-cp",
        f"{SPARK_JARS}/*",
        # hive-exec's log4j2 defaults ask for async loggers, whose library Spark does not ship
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}",
        f"-Dderby.system.home={root}",
        "org.apache.hadoop.hive.metastore.HiveMetaStore",
        "-p",
        str(port),
        "--hiveconf",
        f"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={root}/metastore_db;create=true",
        "--hiveconf",
        "datanucleus.schema.autoCreateAll=true",
        "--hiveconf",
        "hive.metastore.schema.verification=false",
        "--hiveconf",
        f"hive.metastore.warehouse.dir={root}/warehouse",
    ]
    log = open(root / "metastore.log", "wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)
    try:
        _wait_for_port(port, server, root / "metastore.log")
        yield {"uri": f"thrift://localhost:{port}", "root": root, "warehouse": root / "warehouse"}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 240
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}: {log.read_text()[-3000:]}"
            time.sleep(1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Spark standalone master and one worker (1 core, 1 GB) on this machine (tests/standalone.py)."""
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as running:
        yield running


def run_plan(metastore: dict, cwd: Path, plan: list[dict]) -> list:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.cli.external_probe",
            metastore["uri"],
            str(metastore["warehouse"]),
            json.dumps(plan),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={
            **os.environ,
            **spark_env(),
            "ZIPPER_LOG_DIR": str(cwd / "logs"),
            "PYTHONPATH": str(REPO),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        },
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("PROBE ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("PROBE ") :])


def rows(*versions) -> list[list[str]]:
    return sorted([[str(i), name, city or "", begin, end] for i, name, city, begin, end in versions])


BASE_DAY = "2023-12-31"  # the sample's base date: the day before the first merge


def daily_rows() -> list[list[str]]:
    """The sample table after the daily merges of DATES (tests/airflow/support.py)."""
    d1, d2, d3 = DATES
    return rows(
        (1, "ann", "Oslo", BASE_DAY, d2),
        (1, "ann", "Bergen", d2, OPEN),
        (2, "bob", "Rome", BASE_DAY, d1),
        (2, "bob", "Paris", d1, d3),
        (2, "bob", "Rome", d3, OPEN),
        (3, "cid", None, d1, d2),
        (3, "cid", "Lima", d2, OPEN),
        (4, "dan", "Kyiv", d3, OPEN),
    )


def test_merges_a_rerun_and_the_checks_through_a_thrift_metastore(metastore, tmp_path):
    data = write_sample(tmp_path)
    specs = tmp_path / "specs"
    write_spec(specs, "dim_ext", data)
    d1, d2, d3 = DATES
    common = ["--specs", str(specs)]
    corrected = [(1, "ann", "Tromso")]  # D2 sent again: only ann changes (the sample: tests/airflow/support.py)
    results = run_plan(
        metastore,
        tmp_path,
        [
            *[{"run": ["merge", "dim_ext", "--ds", ds, *common]} for ds in DATES],
            {"snapshot": "dw.dim_ext"},
            {"write": [str(data / "incr" / f"ds={d2}"), corrected]},
            {"run": ["rerun", "dim_ext", "--from", d2, *common]},
            {"run": ["check", "dim_ext", *common]},
            {"run": ["status", "dim_ext", *common]},
            {"snapshot": "dw.dim_ext"},
        ],
    )
    merges, daily, _, rerun, check, status, rerun_table = results[:3], *results[3:]
    assert [m["exit"] for m in merges] == [0, 0, 0], merges
    assert daily["rows"] == daily_rows()
    assert daily["partitions"] == [d1, d2, d3, OPEN]

    assert rerun["exit"] == 0, rerun
    assert rerun_table["rows"] == rows(
        (1, "ann", "Oslo", BASE_DAY, d2),
        (1, "ann", "Tromso", d2, OPEN),
        (2, "bob", "Rome", BASE_DAY, d1),
        (2, "bob", "Paris", d1, d3),
        (2, "bob", "Rome", d3, OPEN),
        (3, "cid", None, d1, OPEN),
        (4, "dan", "Kyiv", d3, OPEN),
    )
    assert rerun_table["partitions_with_rows"] == {d1: 1, d2: 1, d3: 1, OPEN: 4}
    assert check["exit"] == 0 and json.loads(check["stdout"])["ok"], check
    committed = json.loads(status["stdout"])
    assert committed["last_committed"] == d3
    assert all(
        p["location"].startswith(f"file:{metastore['warehouse']}/dw.db/dim_ext/versions/")
        for p in committed["partitions"]
    )
    # everything lives in the server's metastore: the probe's folder holds no embedded Derby
    assert not list(tmp_path.rglob("metastore_db"))


def test_spark_submit_to_a_standalone_cluster_merges_through_the_thrift_metastore(metastore, cluster, tmp_path):
    """The Airflow task's command with a `spark://` connection: spark-submit of the job to a
    cluster, whose executors (JVMs of the worker) read the open partition and write the new
    directories; the driver publishes through the metastore server."""
    data = write_sample(tmp_path)
    specs = tmp_path / "specs"
    write_spec(specs, "dim_cluster", data)
    conf = {
        "spark.hadoop.hive.metastore.uris": metastore["uri"],
        "spark.sql.warehouse.dir": str(metastore["warehouse"]),
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
    }
    env = {
        **os.environ,
        **spark_env(),
        "ZIPPER_METASTORE": "external",
        "ZIPPER_SPECS": str(specs),
        "ZIPPER_LOG_DIR": str(tmp_path / "logs"),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    summaries = []
    for ds in DATES:
        result = subprocess.run(
            [
                str(Path(sys.executable).parent / "spark-submit"),
                "--master",
                cluster.master,
                *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
                str(REPO / "spark_jobs" / "zipper_job.py"),
                "merge",
                "dim_cluster",
                "--ds",
                ds,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
            env=env,
        )
        assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
        summaries.append([line for line in result.stdout.splitlines() if line.startswith("dw.dim_cluster ")])
    assert [len(s) for s in summaries] == [1, 1, 1], summaries
    # each merge was an application of the cluster, its tasks run by the worker's executors
    apps = sorted(p.name for p in cluster.work.iterdir() if p.name.startswith("app-"))
    assert len(apps) == len(DATES), apps
    assert all(list((cluster.work / app).glob("*/stderr")) for app in apps)

    table, check = run_plan(
        metastore, tmp_path, [{"snapshot": "dw.dim_cluster"}, {"run": ["check", "dim_cluster", "--specs", str(specs)]}]
    )
    assert table["rows"] == daily_rows()
    assert check["exit"] == 0 and json.loads(check["stdout"])["ok"], check


def test_a_corrupt_file_under_spark_submit_leaves_one_error_line_with_an_external_metastore(metastore, tmp_path):
    """The Airflow merge task's command in client mode (no connection: local) with
    ZIPPER_METASTORE=external: the driver's console is the task log. Spark's default logging put
    its INFO lines and a failed task's Java traces there, around zipper's one line."""
    from tests.cli.test_cli import JVM_NOTICE
    from zipper.core.reports import REPORT_PREFIX
    from zipper.runtime.settings import SessionSettings, spark_submit_conf, spark_submit_env

    data = write_sample(tmp_path)
    specs, logs = tmp_path / "specs", tmp_path / "logs"
    write_spec(specs, "dim_corrupt", data)
    (data / "incr" / f"ds={DATES[0]}" / "part-corrupt.parquet").write_bytes(b"garbage, not a Parquet file")
    settings = SessionSettings(metastore="external")
    conf = {
        **spark_submit_conf(settings),
        "spark.hadoop.hive.metastore.uris": metastore["uri"],
        "spark.sql.warehouse.dir": str(metastore["warehouse"]),
        "spark.ui.enabled": "false",
    }
    env = {
        **os.environ,
        **spark_env(),
        "ZIPPER_METASTORE": "external",
        "ZIPPER_SPECS": str(specs),
        "ZIPPER_LOG_DIR": str(logs),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    env.update(spark_submit_env(settings, environ=env))  # as the Airflow task's hook does in client mode
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            "local[2]",
            *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
            str(REPO / "spark_jobs" / "zipper_job.py"),
            "merge",
            "dim_corrupt",
            "--ds",
            DATES[0],
            "--json-report",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    task_log = result.stdout.splitlines() + result.stderr.splitlines()
    lines = [line for line in task_log if line != JVM_NOTICE and not line.startswith(REPORT_PREFIX)]
    # the table's first publish (its init) found no lock support, and said so once
    no_lock = f"zipper: warning: the metastore at {metastore['uri']} refused a table lock ("
    assert len([line for line in lines if line.startswith(no_lock)]) == 1, "\n".join(task_log)
    lines = [line for line in lines if not line.startswith(no_lock)]
    assert result.returncode == 1 and len(lines) == 1, "\n".join(task_log)
    assert lines[0].startswith(f"zipper: error: dw.dim_corrupt {DATES[0]}: cannot read file part-corrupt.parquet of ")
    # Spark's warnings and the executor's trace are in the driver's log file instead
    (log,) = logs.glob("spark-*.log")
    assert "ERROR Executor: Exception in task" in log.read_text() and "\n\tat org.apache." in log.read_text()
