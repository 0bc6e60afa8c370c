"""Where things are for the DAGs: the repository, the spark-submit job, the warehouse.

Read when a task runs (never at parse time), from the worker's environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPARK_JOB = REPO / "spark_jobs" / "zipper_job.py"
DEFAULT_POOL = "zipper_merges"  # the merge and rerun tasks' pool (docs/airflow.md, "The merge pool")
DEFAULT_CONN_ID = "zipper_spark"
EMBEDDED_MASTER = "local[*]"
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


def merge_pool_slots() -> int:
    """The merge pool's slots the set-up creates: tables merge side by side on the warehouse's
    metastore server or an external metastore (each merge a `local[*]` driver, but much of a short
    one is JVM start-up and metastore waits, which overlap)."""
    return max(2, os.cpu_count() or 1)


def warehouse() -> Path:
    """ZIPPER_WAREHOUSE, or the repository's `warehouse/` (a worker's working directory is arbitrary)."""
    return Path(os.environ.get("ZIPPER_WAREHOUSE") or REPO / "warehouse").expanduser().resolve()


def python_bin() -> Path:
    """The bin folder of the Python that runs Airflow; spark-submit from pyspark lives there too."""
    return Path(sys.executable).parent
