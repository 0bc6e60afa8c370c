"""JVM start-up options for every Spark driver the tests start: the in-process session, the
`zipper` and probe subprocesses, and the spark-submit runs of the Airflow tasks.

- The product's class data sharing archive (`zipper.devtools.jvm_archive`, made by set-up): the product
  maps it in the drivers it configures itself (the warehouse's own metastore); passing it here too reaches
  the tests' other drivers (probe sessions, the external-metastore run).
- `-XX:TieredStopAtLevel=1`: the quick JIT only; a test driver lives seconds to minutes on
  tiny data, and the optimizing compiler's threads took CPU from the work (see QUICK_JIT).

Neither changes what the code does: the same JVM, jars and Spark configuration. The options
reach every driver through SPARK_SUBMIT_OPTS, which Spark's launcher adds to the driver's java
command line.

    python -m tests.jvm        # make the archive now (if missing) and print the options
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from zipper.devtools import jvm_archive
from zipper.runtime import jvm

# The quick JIT only, with the code cache tiered compilation would have (240 MB): alone it gets
# 48 MB, which the generated code of a long test session fills, and the JVM then spent a third
# of its CPU flushing and recompiling (measured on tests/jobs/test_rerun.py: 154 CPU-s with
# 48 MB, 147 with both JITs, 86 with this).
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
STRICT = "-Xshare:on"
REPOSITORY_VENV = Path(__file__).resolve().parents[1] / ".venv"  # the one whose archive the set-up makes


@functools.cache
def spark_submit_opts(python: str | None = None) -> str:
    """SPARK_SUBMIT_OPTS for drivers of the pyspark in `python`'s virtualenv (default: this one)."""
    base = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if jvm.java_binary() is None:
        return base
    opts = [base, QUICK_JIT] if base else [QUICK_JIT]
    python = python or sys.executable
    if Path(python).parent.parent.resolve() != REPOSITORY_VENV.resolve():
        # another virtualenv (Airflow 2.11), whether the drivers are started from .venv's tests or
        # from its own pytest: other jar paths; an archive of its own would cost more than its
        # three drivers save (and one made while the groups run was refused, "shared class paths
        # mismatch", by the Spark server of the 2.11 operator tests)
        return " ".join(opts)
    jvm_archive.ensure_archive()
    archive = jvm.driver_options()
    # With the archive, strict sharing: a driver that cannot map it fails instead of quietly
    # starting slower, so every test driver (the Airflow tasks' too) shows that it maps.
    return " ".join(filter(None, [*opts, archive, STRICT if archive else ""]))


def spark_env(python: str | None = None) -> dict[str, str]:
    """Environment entries for a process that starts Spark drivers."""
    opts = spark_submit_opts(python)
    return {"SPARK_SUBMIT_OPTS": opts} if opts else {}


if __name__ == "__main__":
    print(spark_submit_opts())
