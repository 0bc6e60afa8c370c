"""Test helper run as a subprocess: read a zipper table with a plain Hive-enabled SparkSession
(no zipper code), optionally run one `zipper` command in the same JVM, and read it again.

    python table_probe.py WAREHOUSE TABLE [zipper args ...]

Prints one JSON object: {"before": snapshot, "exit": code, "stdout": ..., "stderr": ..., "after": snapshot}
(stdout and stderr: what the zipper command printed)."""

from __future__ import annotations

import contextlib
import io
import json
import sys


def plain_session(warehouse: str, metastore_uri: str | None = None, embedded: bool = False):
    """No zipper code in the session: by default a plain Spark Connect client of the warehouse's
    Spark server, as an analyst's notebook would be (zipper's commands run in this process are
    clients of the same server, in sessions of their own). With `metastore_uri` (thrift://...) or
    ZIPPER_SPARK_RUNNER=driver, a driver here on that metastore server (default the warehouse's own),
    as an analyst's Spark configured for it would reach it. `embedded`: Derby inside this JVM
    instead, as an analyst's Spark with no metastore configured opens the warehouse's database (and
    holds it)."""
    from pyspark.sql import SparkSession

    from zipper.runtime.session import server_url
    from zipper.runtime.settings import SessionSettings

    if not embedded and metastore_uri is None:
        url = server_url(SessionSettings(warehouse=warehouse))
        if url is not None:
            return SparkSession.builder.remote(url).create()
    if embedded:
        metastore = (
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={warehouse}/metastore_db;create=true",
        )
    else:
        if metastore_uri is None:
            from zipper.runtime.metastore import local_uri

            metastore_uri = local_uri(warehouse)
        metastore = ("spark.hadoop.hive.metastore.uris", metastore_uri)
    return (
        SparkSession.builder.master("local[2]")
        .appName("probe")
        .enableHiveSupport()
        .config("spark.sql.warehouse.dir", warehouse)
        .config(*metastore)
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def quiet(spark) -> None:
    """A driver here logs errors only (a Connect client's driver is the server's)."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        spark.sparkContext.setLogLevel("ERROR")


def snapshot(spark, table: str) -> dict:
    database, name = table.split(".")
    if not spark.catalog.tableExists(name, database):
        return {"exists": False}
    spark.catalog.refreshTable(table)
    rows = sorted([["" if v is None else str(v) for v in r] for r in spark.table(table).collect()])
    partitions = {r[0].split("=", 1)[1]: None for r in spark.sql(f"SHOW PARTITIONS {table}").collect()}
    counts = {r[0]: r[1] for r in spark.sql(f"SELECT end_dt, count(*) FROM {table} GROUP BY end_dt").collect()}
    return {
        "exists": True,
        "rows": rows,
        "partitions_with_rows": {k: counts[k] for k in sorted(counts)},
        "partitions": sorted(partitions),
    }


def main() -> int:
    warehouse, table, *command = sys.argv[1:]
    spark = plain_session(warehouse)
    quiet(spark)
    result = {"before": snapshot(spark, table)}
    if command:
        from zipper.cli.main import main as zipper_main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result["exit"] = zipper_main(command + ["--warehouse", warehouse])
        result["stdout"], result["stderr"] = out.getvalue(), err.getvalue()
        result["after"] = snapshot(spark, table)
    print("PROBE " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
