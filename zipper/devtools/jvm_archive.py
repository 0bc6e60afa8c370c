"""Make the class data sharing archive zipper's Spark drivers map (see `zipper.runtime.jvm`).

Set-up runs this once per virtualenv, Java and set of jars: one small zipper run (the demo's
week, a rerun, the checks, the reads) in a JVM started with `-XX:ArchiveClassesAtExit`. The
run's metastore server is started the same way and writes the server's archive as it stops.

    python -m zipper.devtools.jvm_archive           # make the archive if missing (set-up runs this)
    python -m zipper.devtools.jvm_archive --force   # try again after a recorded failure
    python -m zipper.devtools.jvm_archive --print   # the driver options it gives, if any
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from zipper.runtime.jvm import (
    ARCHIVE_ENV,
    QUIET,
    archive_path,
    driver_options,
    server_archive_path,
    size_record,
    usable,
)

MAKE_TIMEOUT_S = 900


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
                    sys.stderr.write(
                        f"zipper: no class data sharing archive (making it failed, see {failed});"
                        " Spark drivers start without it; `python -m zipper.devtools.jvm_archive --force` tries again\n"
                    )
                    return None
                if ARCHIVE_ENV not in os.environ:  # our own folder: one archive per Java and jars
                    for stale in [*archive.parent.glob("spark-*"), *archive.parent.glob("metastore-*")]:
                        stale.unlink()
                sys.stderr.write(
                    "zipper setup: making the Spark drivers' class data sharing archive"
                    " (a minute or two, once per Java and Spark)\n"
                )
                failure = _make(archive)
                if failure:
                    failed.write_text(failure + "\n")
                    sys.stderr.write(
                        f"zipper: no class data sharing archive; Spark drivers start without it"
                        f" ({failure.splitlines()[-1] if failure.strip() else 'see ' + str(failed)})\n"
                    )
                else:
                    failed.unlink(missing_ok=True)
    except OSError as exc:  # e.g. a read-only virtualenv
        sys.stderr.write(f"zipper: no class data sharing archive ({exc}); Spark drivers start without it\n")
        return None
    return archive if usable(archive) else None


def _make(archive: Path) -> str:
    """Run the workload in a JVM that writes the archive as it exits; '' on success, else why not.
    The workload's metastore server writes the server's archive (jvm.server_archive_path) likewise."""
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    server_archive = server_archive_path() or archive.with_name(f"metastore-{archive.name}")
    server_partial = server_archive.with_name(f"{server_archive.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="zipper-jvm-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ZIPPER_", "PYSPARK_GATEWAY"))}
        # the quick JIT: this run only loads classes, and compiles less for it
        env["SPARK_SUBMIT_OPTS"] = (
            f"-XX:TieredStopAtLevel=1 {shlex.quote(f'-XX:ArchiveClassesAtExit={partial}')} {QUIET}"
        )
        env[ARCHIVE_ENV] = "off"  # the workload's driver must not map an archive while dumping one
        try:
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "zipper.devtools.jvm_archive",
                    "--workload",
                    scratch,
                    "--server-archive",
                    str(server_partial),
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=MAKE_TIMEOUT_S,
            )
            failure = "" if result.returncode == 0 else result.stderr.strip()[-2000:]
        except subprocess.TimeoutExpired:
            failure = f"the archiving run took over {MAKE_TIMEOUT_S} s"
    if not failure and partial.exists() and partial.stat().st_size > 0:
        _put_in_place(partial, archive)
        if server_partial.exists() and server_partial.stat().st_size > 0:
            _put_in_place(server_partial, server_archive)  # else the server only starts slower
        server_partial.unlink(missing_ok=True)
        return ""
    partial.unlink(missing_ok=True)
    server_partial.unlink(missing_ok=True)
    return failure or "the archiving run ended without writing the archive"


def _put_in_place(partial: Path, archive: Path) -> None:
    record = size_record(archive)
    pending = record.with_name(f"{record.name}.{os.getpid()}.partial")
    pending.write_text(str(partial.stat().st_size))
    pending.replace(record)  # the size first: an archive without it is never offered
    partial.replace(archive)


def _workload(scratch: Path, server_archive: str | None = None) -> None:
    """What zipper's drivers load: a Hive session on the warehouse's metastore server (stopped at
    the end), the demo's base and week of merges, a rerun, the checks, status, history and slices
    written in each format."""
    # Loaded here, not at the top: the workload runs in its own process (`--workload`), and the
    # set-up (or a test that imports it) must not load the data path and pyspark.
    import yaml

    from zipper.devtools import demo
    from zipper.runtime.metastore import MetastoreService
    from zipper.tablespec.loader import load_spec_file

    data = scratch / "data"
    spec_file = scratch / "dim_archive.yaml"
    start = "2024-01-01"
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "dim_archive",
                "table": "zipper_jvm.dim_archive",
                "keys": ["user_id"],
                "source": {"mode": "upsert", "format": "parquet", "path": f"{data}/incr/ds={{{{ ds }}}}"},
                "base": {"format": "parquet", "path": f"{data}/base"},
                "start_date": start,
                "end_date": "2024-01-07",
            }
        )
    )
    spec = load_spec_file(spec_file)
    demo.generate(data, spec.start_date)
    dump = (f"-XX:ArchiveClassesAtExit={server_archive}", *QUIET.split()) if server_archive else ()
    service = MetastoreService(scratch / "warehouse", java_options=dump)
    service.start()
    try:
        _run_workload(scratch, spec)
    finally:
        # Java writes the server's archive as it exits on SIGTERM: give it the time that takes,
        # and keep no archive of a server that had to be killed (a truncated archive crashes Java)
        service.stop(grace_s=600)
        if server_archive and not service.stopped_cleanly:
            Path(server_archive).unlink(missing_ok=True)


def _run_workload(scratch: Path, spec) -> None:
    from zipper.core.dates import date_range
    from zipper.jobs import merge, replay
    from zipper.jobs.init import init_table
    from zipper.runtime.session import build_session
    from zipper.runtime.settings import SessionSettings, SparkRunner
    from zipper.table import check, inspect

    # a driver in this JVM, whose classes are the archive's: never a client of a server
    settings = SessionSettings(
        warehouse=str(scratch / "warehouse"), app_name="zipper jvm archive", runner=SparkRunner.DRIVER
    )
    spark = build_session(settings)
    init_table(spark, spec)
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
    parser = argparse.ArgumentParser(prog="python -m zipper.devtools.jvm_archive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the driver options instead of making the archive")
    parser.add_argument("--force", action="store_true", help="try again after a recorded failure")
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--server-archive", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.workload:
        _workload(Path(args.workload), args.server_archive)
        return 0
    if not args.print:
        ensure_archive(force=args.force)
    print(driver_options())
    return 0


if __name__ == "__main__":
    sys.exit(main())
