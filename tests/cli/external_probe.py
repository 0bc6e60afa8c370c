"""Test helper run as a subprocess: one JVM whose plain Hive session talks to a Hive metastore
server over thrift (`ZIPPER_METASTORE=external`), running zipper commands and reading tables.

    python -m tests.cli.external_probe METASTORE_URI WAREHOUSE_DIR PLAN_JSON

PLAN: a list of steps, in order: {"run": [zipper args]}, {"write": [folder, rows]} (a Parquet
file of the sample schema) or {"snapshot": "db.table"}. Prints one line `PROBE [results]`, one
result per step: the exit code and output of a run, null for a write, the table's snapshot."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

from tests.cli.table_probe import plain_session, snapshot


def main() -> int:
    uri, warehouse, plan = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    os.environ["ZIPPER_METASTORE"] = "external"
    spark = plain_session(warehouse, metastore_uri=uri)
    spark.sparkContext.setLogLevel("ERROR")
    from tests.cli.helpers import write_parquet
    from zipper.cli.main import main as zipper_main

    results = []
    for step in plan:
        if "run" in step:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = zipper_main(list(step["run"]))
            results.append({"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
        elif "write" in step:
            folder, rows = step["write"]
            write_parquet(Path(folder), [tuple(r) for r in rows])
            results.append(None)
        else:
            results.append(snapshot(spark, step["snapshot"]))
    print("PROBE " + json.dumps(results, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
