"""Class data sharing for the Spark drivers zipper starts on this machine.

A Spark driver with Hive support loads some 15,000 classes from the pyspark jars before it does
any work, and a daily merge is one fresh driver. Set-up makes, once per virtualenv, Java and set
of jars, a class data sharing archive: the classes a zipper run loads, parsed and verified by one
small run (the demo's week, a rerun, the checks, the reads) in a JVM started with
`-XX:ArchiveClassesAtExit`. Every later driver on the embedded default maps them instead
(`-XX:SharedArchiveFile` in `spark.driver.extraJavaOptions`). Same JVM, jars and configuration:
Java only skips work. A `zipper merge` of a 1M-row table in a fresh JVM took 18.2 s with the
archive against 23.4 s without (README, "Start-up").

An archive that does not match the JVM (another Java, other jars) is ignored by Java and never
offered by `driver_options`, whose key changes with them; nor is one whose size is not the size
recorded when it was made (Java crashes on a truncated archive). `ZIPPER_JVM_ARCHIVE=off` turns
it off; `ZIPPER_JVM_ARCHIVE=/path/file.jsa` uses that file instead.

    python -m zipper.runtime.jvm           # make the archive if missing (set-up runs this)
    python -m zipper.runtime.jvm --force   # try again after a recorded failure
    python -m zipper.runtime.jvm --print   # the driver options it gives, if any
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ARCHIVE_ENV = "ZIPPER_JVM_ARCHIVE"
# An archive Java cannot use is skipped; with these it says nothing about it either.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
MAKE_TIMEOUT_S = 900


def java_binary() -> Path | None:
    """The java Spark's launcher starts: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def spark_home() -> Path:
    """This environment's pyspark package folder: the drivers' SPARK_HOME and jars."""
    import pyspark

    return Path(pyspark.__file__).parent


def archive_folder() -> Path:
    return Path(sys.prefix) / "share" / "zipper" / "jvm"


def archive_key(java: Path, home: Path) -> str:
    """Changes whenever an archive could not be used: another Java, other jars."""
    digest = hashlib.sha256()
    for path in [java, *sorted((home / "jars").glob("*.jar"))]:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path() -> Path | None:
    """Where the archive for this Java and these jars is (or would be); None when turned off
    or when there is no Java or pyspark here to key it to."""
    chosen = os.environ.get(ARCHIVE_ENV, "")
    if chosen.lower() in ("off", "0", "false", "no"):
        return None
    if chosen:
        return Path(chosen)
    java = java_binary()
    if java is None:
        return None
    try:
        home = spark_home()
    except ImportError:  # a process that only submits jobs to a Spark installed elsewhere
        return None
    return archive_folder() / f"spark-{archive_key(java, home)}.jsa"


def _size_record(archive: Path) -> Path:
    return archive.with_name(archive.name + ".size")


def usable(archive: Path) -> bool:
    """Whether the archive is whole: Java skips an archive of another JVM or other jars, but a
    truncated one crashes it (SIGBUS) before any option can help, so a driver is only offered
    an archive whose size is the one recorded when it was made."""
    try:
        return int(_size_record(archive).read_text()) == archive.stat().st_size
    except (OSError, ValueError):
        return False


def driver_options() -> str:
    """JVM options for a driver of this environment's pyspark: the archive when there is one."""
    archive = archive_path()
    if archive is None or not usable(archive):
        return ""
    return f"{shlex.quote(f'-XX:SharedArchiveFile={archive}')} {QUIET}"


def _failure_record(archive: Path) -> Path:
    return archive.with_name(archive.name + ".failed")


def ensure_archive(force: bool = False) -> Path | None:
    """Make the archive unless it exists (under a lock: concurrent set-ups make it once).
    Returns it, or None when it could not be made (drivers then load classes from the jars).

    A failure is recorded and not retried by every later set-up (each try costs a minute or
    more) until `force`, or until Java or the jars change (a new key)."""
    archive = archive_path()
    if archive is None:
        return None
    failed = _failure_record(archive)
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        with open(archive.parent / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not usable(archive):
                if failed.exists() and not force:
                    sys.stderr.write(f"zipper: no class data sharing archive (making it failed, see {failed});"
                                     " Spark drivers start without it; `python -m zipper.runtime.jvm --force` tries again\n")
                    return None
                if ARCHIVE_ENV not in os.environ:  # our own folder: one archive per Java and jars
                    for stale in archive.parent.glob("spark-*"):
                        stale.unlink()
                sys.stderr.write("zipper setup: making the Spark drivers' class data sharing archive"
                                 " (a minute or two, once per Java and Spark)\n")
                failure = _make(archive)
                if failure:
                    failed.write_text(failure + "\n")
                    sys.stderr.write(f"zipper: no class data sharing archive; Spark drivers start without it"
                                     f" ({failure.splitlines()[-1] if failure.strip() else 'see ' + str(failed)})\n")
                else:
                    failed.unlink(missing_ok=True)
    except OSError as exc:  # e.g. a read-only virtualenv
        sys.stderr.write(f"zipper: no class data sharing archive ({exc}); Spark drivers start without it\n")
        return None
    return archive if usable(archive) else None


def _make(archive: Path) -> str:
    """Run the workload in a JVM that writes the archive as it exits; '' on success, else why not."""
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="zipper-jvm-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ZIPPER_", "PYSPARK_GATEWAY"))}
        # the quick JIT: this run only loads classes, and compiles less for it
        env["SPARK_SUBMIT_OPTS"] = (f"-XX:TieredStopAtLevel=1 {shlex.quote(f'-XX:ArchiveClassesAtExit={partial}')}"
                                    f" {QUIET}")
        env[ARCHIVE_ENV] = "off"  # the workload's driver must not map an archive while dumping one
        try:
            result = subprocess.run([sys.executable, "-m", "zipper.runtime.jvm", "--workload", scratch], env=env,
                                    capture_output=True, text=True, timeout=MAKE_TIMEOUT_S)
            failure = "" if result.returncode == 0 else result.stderr.strip()[-2000:]
        except subprocess.TimeoutExpired:
            failure = f"the archiving run took over {MAKE_TIMEOUT_S} s"
    if not failure and partial.exists() and partial.stat().st_size > 0:
        record = _size_record(archive)
        pending = record.with_name(f"{record.name}.{os.getpid()}.partial")
        pending.write_text(str(partial.stat().st_size))
        pending.replace(record)  # the size first: an archive without it is never offered
        partial.replace(archive)
        return ""
    partial.unlink(missing_ok=True)
    return failure or "the archiving run ended without writing the archive"


def _workload(scratch: Path) -> None:
    """What zipper's drivers load: a Hive session on a new Derby metastore, the demo's base and
    week of merges, a rerun, the checks, status, history and slices written in each format."""
    import yaml

    from zipper import demo
    from zipper.engine import check, inspect, merge, replay
    from zipper.engine.plan import date_range
    from zipper.runtime.session import SessionSettings, build_session
    from zipper.spec.loader import load_spec_file

    data = scratch / "data"
    spec_file = scratch / "dim_archive.yaml"
    start = "2024-01-01"
    spec_file.write_text(yaml.safe_dump({
        "name": "dim_archive", "table": "zipper_jvm.dim_archive", "keys": ["user_id"],
        "source": {"mode": "upsert", "format": "parquet", "path": f"{data}/incr/ds={{{{ ds }}}}"},
        "base": {"format": "parquet", "path": f"{data}/base"},
        "start_date": start, "end_date": "2024-01-07",
    }))
    spec = load_spec_file(spec_file)
    demo.generate(data, spec.start_date)
    spark = build_session(SessionSettings(warehouse=str(scratch / "warehouse"), app_name="zipper jvm archive"))
    merge.init_table(spark, spec)
    for ds in date_range(spec.start_date, spec.end_date):
        merge.merge_date(spark, spec, ds)
    replay.rerun(spark, spec, spec.start_date + (spec.end_date - spec.start_date) // 2)
    if not check.run_checks(spark, spec)["ok"]:
        raise SystemExit("the archiving run's table failed its checks")
    inspect.status(spark, spec, 5)
    inspect.history(spark, spec, {"user_id": "7"}).collect()
    sliced = inspect.slice_as_of(spark, spec, spec.start_date)
    for kind in ("csv", "json", "parquet"):
        getattr(sliced.write, kind)(str(scratch / f"slice.{kind}"))
    spark.sql(f"SHOW PARTITIONS {spec.table}").collect()
    # Java writes the archive as the JVM exits: stop Spark, close the gateway's stdin, wait.
    gateway = spark.sparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
        process.wait(600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zipper.runtime.jvm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the driver options instead of making the archive")
    parser.add_argument("--force", action="store_true", help="try again after a recorded failure")
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.workload:
        _workload(Path(args.workload))
        return 0
    if not args.print:
        ensure_archive(force=args.force)
    print(driver_options())
    return 0


if __name__ == "__main__":
    sys.exit(main())
