"""JVM start-up options for every Spark driver the tests start: the in-process session, the
`zipper` and probe subprocesses, and the spark-submit runs of the Airflow tasks.

A Spark driver with Hive support loads some 15,000 classes from the pyspark jars before it does
any work; on 2 cores loading and verifying them was most of the 20-40 s each subprocess test
paid per JVM. So the tests start every driver with

- a class data sharing archive (`-XX:SharedArchiveFile`): the classes a zipper run loads,
  parsed and verified once, mapped by every later JVM. It is made once per virtualenv, Java and
  set of jars by a small zipper run in a JVM started with `-XX:ArchiveClassesAtExit` (about a
  minute, under a lock so that the two pytest processes of scripts/test.sh make it once), and
  kept in the virtualenv;
- `-XX:TieredStopAtLevel=1`: the quick JIT only; a test driver lives seconds to minutes on
  tiny data, and the optimizing compiler's threads took CPU from the work (see QUICK_JIT).

Neither changes what the code does: the same JVM, jars and Spark configuration; Java maps
already-parsed classes and compiles less. A missing or unusable archive is ignored silently
(and the JVM loads the classes from the jars as usual). The options reach every driver through
SPARK_SUBMIT_OPTS, which Spark's launcher adds to the driver's java command line.

    python -m tests.jvm        # make the archive now (if missing) and print the options
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The quick JIT only, with the code cache tiered compilation would have (240 MB): alone it gets
# 48 MB, which the generated code of a long test session fills, and the JVM then spent a third
# of its CPU flushing and recompiling (measured on tests/engine/test_rerun.py: 154 CPU-s with
# 48 MB, 147 with both JITs, 86 with this).
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# An archive that does not match (other jars, other Java) is skipped; say nothing about it.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def java_binary() -> Path | None:
    """The java Spark's launcher uses: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def _spark_home() -> Path:
    """This virtualenv's pyspark package folder: the drivers' SPARK_HOME and jars."""
    import pyspark

    return Path(pyspark.__file__).parent


def _key(java: Path, spark_home: Path) -> str:
    """Changes whenever the archive could not be used: other Java, other jars."""
    digest = hashlib.sha256()
    for path in [java, *sorted((spark_home / "jars").glob("*.jar"))]:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _make_archive(archive: Path) -> None:
    """A zipper run (init, merges, a rerun, a check, reads) in one JVM that writes the archive as it exits."""
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="zipper-cds-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ZIPPER_", "PYSPARK_GATEWAY"))}
        env["SPARK_SUBMIT_OPTS"] = f"{QUICK_JIT} -XX:ArchiveClassesAtExit={partial} {QUIET}"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                          env.get("PYTHONPATH")]))
        result = subprocess.run([sys.executable, "-m", "tests.jvm", "--workload", scratch], env=env,
                                capture_output=True, text=True, timeout=900)
    if result.returncode == 0 and partial.exists() and partial.stat().st_size > 0:
        partial.replace(archive)
    else:
        partial.unlink(missing_ok=True)
        sys.stderr.write(f"tests.jvm: no class data sharing archive, drivers load classes from the jars"
                         f" ({result.stderr[-2000:]})\n")


@functools.lru_cache(maxsize=None)
def spark_submit_opts(python: str | None = None) -> str:
    """SPARK_SUBMIT_OPTS for drivers of the pyspark in `python`'s virtualenv (default: this one)."""
    base = os.environ.get("SPARK_SUBMIT_OPTS", "")
    java = java_binary()
    if java is None:
        return base
    opts = [base, QUICK_JIT] if base else [QUICK_JIT]
    if python is not None and Path(python) != Path(sys.executable):
        # another virtualenv (Airflow 2.11): other jar paths; an archive of its own would cost
        # more than its three drivers save
        return " ".join(opts)
    folder = Path(sys.prefix) / "zipper-test-cds"
    archive = folder / f"spark-{_key(java, _spark_home())}.jsa"
    try:
        folder.mkdir(exist_ok=True)
        with open(folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other pytest process may be making it
            if not archive.exists():
                for stale in [*folder.glob("spark-*.jsa"), *folder.glob("*.partial")]:
                    stale.unlink()
                _make_archive(archive)
    except OSError as exc:  # e.g. a read-only virtualenv: the drivers load their classes from the jars
        sys.stderr.write(f"tests.jvm: no class data sharing archive ({exc})\n")
    if archive.exists():
        opts += [f"-XX:SharedArchiveFile={archive}", QUIET]
    return " ".join(opts)


def spark_env(python: str | None = None) -> dict[str, str]:
    """Environment entries for a process that starts Spark drivers."""
    opts = spark_submit_opts(python)
    return {"SPARK_SUBMIT_OPTS": opts} if opts else {}


def _workload(scratch: str) -> None:
    """What a zipper run loads: a Hive session on a new Derby metastore, parquet written and read,
    partitions added and re-pointed, joins, aggregates, a rerun, the checks."""
    from tests.support import TableFixture, day, table_rows
    from zipper.engine import check, inspect, merge, replay
    from zipper.runtime.session import SessionSettings, build_session

    root = Path(scratch)
    spark = build_session(SessionSettings(warehouse=str(root / "warehouse"), app_name="zipper cds"))
    t = TableFixture(root, "cds")
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    t.write_increment(spark, day(1), [(2, "bob", "Paris"), (3, "cid", None)])
    t.write_increment(spark, day(2), [(1, "ann", "Bergen")])
    merge.init_table(spark, t.spec)
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    replay.rerun(spark, t.spec, day(2))
    assert check.run_checks(spark, t.spec)["ok"]
    inspect.status(spark, t.spec, 5)
    table_rows(spark, t.table)
    spark.sql(f"SHOW PARTITIONS {t.table}").collect()
    # Let the JVM write the archive as it exits: stop Spark, close the gateway's stdin, wait.
    gateway = spark.sparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
        process.wait(600)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--workload"]:
        _workload(sys.argv[2])
    else:
        print(spark_submit_opts())
