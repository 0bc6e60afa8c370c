"""`make demo`: the sample user dimension run through Airflow 3, then what analysts see.

Generates the sample week (zipper.devtools.demo), sets up `<repo>/airflow_home` (rendered airflow.cfg,
SQLite, the merge pool), starts the API server, scheduler, dag-processor and triggerer on a free port,
backfills zipper_dim_user over the week with `airflow backfill create`, stops Airflow, and prints
the table's partitions, one key's history and an as-of slice. Running it again backfills the week
again: every merge is then a no-op (same input, already committed). The warehouse's metastore
server (zipper.runtime.metastore) serves the demo and is stopped at its end if the demo started it."""

from __future__ import annotations

import os
import sys
import time

from zipper.airflow.environment import REPO, warehouse
from zipper.devtools.airflow_home import airflow_home, setup
from zipper.devtools.demo import generate, show
from zipper.devtools.local_airflow import LocalAirflow
from zipper.runtime.metastore import MetastoreService
from zipper.runtime.session import build_session, release_session
from zipper.runtime.settings import SessionSettings
from zipper.runtime.spark_server import SparkServerService
from zipper.tablespec.loader import find_spec

DAG_ID = "zipper_dim_user"


def main() -> int:
    specs = REPO / "dags" / "tables"
    _, spec = find_spec("dim_user", specs)
    data = REPO / "demo_data" / "dim_user"
    fresh = generate(data, spec.start_date)
    print(f"sample data {'generated' if fresh else 'already present'} in {data}")
    started = time.monotonic()

    # the warehouse's servers for the whole demo: stopped at the end if the demo started them (the
    # Spark server, which the first task starts, before the metastore server it is a client of)
    spark_server = SparkServerService(SessionSettings(warehouse=str(warehouse())))
    with MetastoreService(warehouse()).for_this_run(), spark_server.left_as_found():
        return _backfill_week(spec, specs, started)


def _backfill_week(spec, specs, started: float) -> int:
    home = airflow_home()
    setup(home)
    env = {"ZIPPER_SPECS": str(specs), "ZIPPER_WAREHOUSE": str(warehouse())}
    airflow = LocalAirflow(home, env={**os.environ, **env})
    print(
        f"Airflow: AIRFLOW_HOME={home}; starting api-server (port {airflow.port}), scheduler, dag-processor,"
        f" triggerer (log servers on ports {airflow.log_ports['worker']} and {airflow.log_ports['trigger']})"
    )
    with airflow:
        airflow.wait_for_dags([DAG_ID])
        first, last = spec.start_date.isoformat(), (spec.end_date or spec.start_date).isoformat()
        print(
            f"airflow backfill create --dag-id {DAG_ID} --from-date {first} --to-date {last}"
            " --reprocess-behavior completed --max-active-runs 1"
        )
        backfill_started = time.monotonic()
        airflow.cli(
            "backfill",
            "create",
            "--dag-id",
            DAG_ID,
            "--from-date",
            first,
            "--to-date",
            last,
            "--reprocess-behavior",
            "completed",
            "--max-active-runs",
            "1",
        )
        airflow.cli("dags", "unpause", DAG_ID)  # Airflow 3 runs no task of a paused DAG
        runs = airflow.wait_for_backfill(DAG_ID)
        backfill_s = time.monotonic() - backfill_started
        merges = {m["run_id"]: m for m in airflow.task_instances(DAG_ID, "merge")}
    print(f"\n{len(runs)} runs backfilled in {backfill_s:.0f} s (from `backfill create` to the last run's end);")
    print("merges one date at a time:")
    for run in runs:
        merge = merges[run["run_id"]]
        print(
            f"  {run['logical_date'][:10]}  {run['state']:8}  merge {merge['start_date'][11:19]} - {merge['end_date'][11:19]}"
        )
    print(f"task logs (the audit task logs each commit's counts): {home}/logs/dag_id={DAG_ID}/")

    spark = build_session(SessionSettings(warehouse=str(warehouse()), app_name="zipper demo"))
    try:
        show(spark, spec)
    finally:
        # before the server is stopped: a session left open is released as the process exits,
        # and against a stopped server pyspark retried that for ten minutes
        release_session(spark)
    print(f"\nDone in {time.monotonic() - started:.0f} s. The UI: `make airflow`. Queries: docs/querying.md.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
