"""Where things are for the DAGs: the repository, the spark-submit job, the warehouse.

Read when a task runs (never at parse time), from the worker's environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from zipper.runtime import spark_server

REPO = Path(__file__).resolve().parents[2]
SPARK_JOB = REPO / "spark_jobs" / "zipper_job.py"
DEFAULT_POOL = "zipper_merges"  # the merge and rerun tasks' pool (docs/airflow.md, "The merge pool")
DEFAULT_CONN_ID = "zipper_spark"
EMBEDDED_MASTER = "local[*]"
EVERY_CORE = "*"  # ZIPPER_SPARK_CORES=*: the server runs a task on every core of the machine
# Passed from the worker to the Spark job when set (the job reads the same variables as the CLI).
# The worker's zipper settings the job needs too: a driver that finds the warehouse's server down
# starts it, on the database (ZIPPER_METASTORE_DB) the worker's own commands would use.
PASSED_THROUGH = (
    "ZIPPER_METASTORE",
    "ZIPPER_METASTORE_DB",
    "ZIPPER_POSTGRESQL_JDBC",
    "ZIPPER_METASTORE_HEAP",
    "ZIPPER_LOG_DIR",
    "ZIPPER_BROADCAST_MAX_ROWS",
    "ZIPPER_BROADCAST_MAX_BYTES",
)


def merge_pool_slots(environ: Mapping[str, str] | None = None) -> int:
    """The merge pool's slots the set-up creates: as many tasks as the warehouse's Spark Connect server
    runs side by side, its task slots (ZIPPER_SPARK_CORES, default 2; `*`: every core). Every task is a
    client of that one driver: more at once would only queue their Spark tasks there."""
    environ = os.environ if environ is None else environ
    cores = environ.get(spark_server.CORES_ENV, "").strip() or spark_server.DEFAULT_CORES
    if cores == EVERY_CORE:
        return os.cpu_count() or 1
    try:
        return max(1, int(cores))
    except ValueError:
        return int(spark_server.DEFAULT_CORES)  # the server refuses it when it starts, saying why


def warehouse() -> Path:
    """ZIPPER_WAREHOUSE, or the repository's `warehouse/` (a worker's working directory is arbitrary)."""
    return Path(os.environ.get("ZIPPER_WAREHOUSE") or REPO / "warehouse").expanduser().resolve()


def python_bin() -> Path:
    """The bin folder of the Python that runs Airflow; spark-submit from pyspark lives there too."""
    return Path(sys.executable).parent
