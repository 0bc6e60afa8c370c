"""Test helper run as a subprocess: in one process with a plain Spark session (a client of the
warehouse's Spark server, or a driver here on its metastore server), run zipper commands (the reference "daily runs"), then snapshot tables and
their commit status.

    python probe.py WAREHOUSE PLAN_JSON

PLAN: {"run": [[zipper args], ...], "tables": ["db.t", ...], "status": [[specs_dir, name], ...]}.
Prints one line `PROBE {"exits": [...], "tables": {...}, "status": {...}}`."""

from __future__ import annotations

import contextlib
import io
import json
import sys

from tests.cli.table_probe import plain_session, quiet, snapshot


def main() -> int:
    warehouse, plan = sys.argv[1], json.loads(sys.argv[2])
    spark = plain_session(warehouse)
    quiet(spark)
    from zipper.cli.main import main as zipper_main

    exits = []
    for args in plan.get("run", []):
        with contextlib.redirect_stdout(io.StringIO()):
            exits.append(zipper_main(list(args) + ["--warehouse", warehouse]))
    result = {"exits": exits, "tables": {t: snapshot(spark, t) for t in plan.get("tables", [])}, "status": {}}
    from zipper.table import inspect
    from zipper.tablespec.loader import find_spec

    for specs, name in plan.get("status", []):
        _, spec = find_spec(name, specs)
        result["status"][name] = inspect.status(spark, spec, 20)
    print("PROBE " + json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
