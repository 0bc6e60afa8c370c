"""`ZIPPER_METASTORE=external` against a real Hive metastore server reached over thrift.

The server is Hive's own `HiveMetaStore` (hive-metastore 2.3.10 from the pyspark jars, on its
own Derby database), so zipper's partition calls (list, add, re-point several partitions in one
`alterPartitions`, drop) cross the thrift wire exactly as with a shared production metastore.
The table is read back by a plain Spark session configured only with the metastore's URI."""

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
from zipper.airflow.local import free_port
from zipper.runtime.jvm import java_binary

pytestmark = pytest.mark.slow
SPARK_JARS = Path(__import__("pyspark").__file__).parent / "jars"
LOG_CONFIG = REPO / "zipper" / "runtime" / "log4j2.properties"
OPEN = "9999-12-31"


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    """A Hive metastore server on a free port, with its own Derby database and warehouse."""
    root = tmp_path_factory.mktemp("hms")
    port = free_port()
    command = [
        str(java_binary()), "-Xmx512m", "-cp", f"{SPARK_JARS}/*",
        # hive-exec's log4j2 defaults ask for async loggers, whose library Spark does not ship
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}", f"-Dderby.system.home={root}",
        "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port),
        "--hiveconf", f"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={root}/metastore_db;create=true",
        "--hiveconf", "datanucleus.schema.autoCreateAll=true",
        "--hiveconf", "hive.metastore.schema.verification=false",
        "--hiveconf", f"hive.metastore.warehouse.dir={root}/warehouse",
    ]
    log = open(root / "metastore.log", "wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None, (root / "metastore.log").read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the metastore server did not open its port"
                time.sleep(1)
        yield {"uri": f"thrift://localhost:{port}", "root": root, "warehouse": root / "warehouse"}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def run_plan(metastore: dict, cwd: Path, plan: list[dict]) -> list:
    result = subprocess.run(
        [sys.executable, "-m", "tests.cli.external_probe", metastore["uri"], str(metastore["warehouse"]),
         json.dumps(plan)],
        capture_output=True, text=True, timeout=600, cwd=cwd,
        env={**os.environ, **spark_env(), "ZIPPER_LOG_DIR": str(cwd / "logs"), "PYTHONPATH": str(REPO),
             "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"},
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("PROBE ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("PROBE "):])


def rows(*versions) -> list[list[str]]:
    return sorted([[str(i), name, city or "", begin, end] for i, name, city, begin, end in versions])


def test_merges_a_rerun_and_the_checks_through_a_thrift_metastore(metastore, tmp_path):
    data = write_sample(tmp_path)
    specs = tmp_path / "specs"
    write_spec(specs, "dim_ext", data)
    d1, d2, d3 = DATES
    common = ["--specs", str(specs)]
    corrected = [(1, "ann", "Tromso")]  # D2 sent again: only ann changes (the sample: tests/airflow/support.py)
    results = run_plan(metastore, tmp_path, [
        *[{"run": ["merge", "dim_ext", "--ds", ds, *common]} for ds in DATES],
        {"snapshot": "dw.dim_ext"},
        {"write": [str(data / "incr" / f"ds={d2}"), corrected]},
        {"run": ["rerun", "dim_ext", "--from", d2, *common]},
        {"run": ["check", "dim_ext", *common]},
        {"run": ["status", "dim_ext", *common]},
        {"snapshot": "dw.dim_ext"},
    ])
    merges, daily, _, rerun, check, status, rerun_table = results[:3], *results[3:]
    assert [m["exit"] for m in merges] == [0, 0, 0], merges
    base_day = "2023-12-31"
    assert daily["rows"] == rows(
        (1, "ann", "Oslo", base_day, d2), (1, "ann", "Bergen", d2, OPEN),
        (2, "bob", "Rome", base_day, d1), (2, "bob", "Paris", d1, d3), (2, "bob", "Rome", d3, OPEN),
        (3, "cid", None, d1, d2), (3, "cid", "Lima", d2, OPEN),
        (4, "dan", "Kyiv", d3, OPEN),
    )
    assert daily["partitions"] == [d1, d2, d3, OPEN]

    assert rerun["exit"] == 0, rerun
    assert rerun_table["rows"] == rows(
        (1, "ann", "Oslo", base_day, d2), (1, "ann", "Tromso", d2, OPEN),
        (2, "bob", "Rome", base_day, d1), (2, "bob", "Paris", d1, d3), (2, "bob", "Rome", d3, OPEN),
        (3, "cid", None, d1, OPEN),
        (4, "dan", "Kyiv", d3, OPEN),
    )
    assert rerun_table["partitions_with_rows"] == {d1: 1, d2: 1, d3: 1, OPEN: 4}
    assert check["exit"] == 0 and json.loads(check["stdout"])["ok"], check
    committed = json.loads(status["stdout"])
    assert committed["last_committed"] == d3
    assert all(p["location"].startswith(f"file:{metastore['warehouse']}/dw.db/dim_ext/versions/")
               for p in committed["partitions"])
    # everything lives in the server's metastore: the probe's folder holds no embedded Derby
    assert not list(tmp_path.rglob("metastore_db"))
