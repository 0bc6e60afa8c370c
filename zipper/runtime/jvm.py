"""Class data sharing for the Spark drivers zipper starts on this machine.

A Spark driver with Hive support loads some 15,000 classes from the pyspark jars before it does
any work, and a daily merge is one fresh driver. Set-up makes, once per virtualenv, Java and set
of jars, a class data sharing archive: the classes a zipper run loads, parsed and verified by one
small run (the demo's week, a rerun, the checks, the reads) in a JVM started with
`-XX:ArchiveClassesAtExit`. Every later driver with the warehouse's own metastore maps them instead
(`-XX:SharedArchiveFile` in `spark.driver.extraJavaOptions`). Same JVM, jars and configuration:
Java only skips work. A `zipper merge` of a 1M-row table in a fresh JVM took 18.2 s with the
archive against 23.4 s without (docs/benchmarks.md, "Start-up").

An archive that does not match the JVM (another Java, other jars) is ignored by Java and never
offered by `driver_options`, whose key changes with them; nor is one whose size is not the size
recorded when it was made (Java crashes on a truncated archive). `ZIPPER_JVM_ARCHIVE=off` turns
it off; `ZIPPER_JVM_ARCHIVE=/path/file.jsa` uses that file instead.

This module only finds the archive and offers it to a driver; `zipper.devtools.jvm_archive`
makes it (set-up runs `python -m zipper.devtools.jvm_archive`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import shutil
import sys
from pathlib import Path

ARCHIVE_ENV = "ZIPPER_JVM_ARCHIVE"
# More Java options for the drivers and the Spark server zipper starts (`-XX:TieredStopAtLevel=1`,
# a heap dump on OutOfMemoryError, ...), after the archive's.
JAVA_OPTIONS_ENV = "ZIPPER_SPARK_JAVA_OPTIONS"
# An archive Java cannot use is skipped; with these it says nothing about it either.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def java_binary() -> Path | None:
    """The java Spark's launcher starts: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def spark_home() -> Path:
    """This environment's pyspark package folder: the drivers' SPARK_HOME and jars. Found without
    importing pyspark: the Spark server's early start asks for it in a thread while the command's
    main thread imports pyspark, and two threads importing pyspark at once (its package and
    `pyspark.sql` import each other) left the main thread a half-made module ("cannot import name
    'SQLContext' from partially initialized module 'pyspark.sql'")."""
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        raise ModuleNotFoundError("No module named 'pyspark'", name="pyspark")
    return Path(found.origin).parent


def archive_folder() -> Path:
    return Path(sys.prefix) / "share" / "zipper" / "jvm"


def archive_key(java: Path, home: Path) -> str:
    """Changes whenever an archive could not be used: another Java, other jars. The files are
    named by their real paths: a virtualenv reached through a link (a copy of the repository
    sharing .venv) is the same Java and jars, and must not take the archive for stale."""
    digest = hashlib.sha256()
    for path in [java, *sorted((home / "jars").glob("*.jar"))]:
        stat = path.stat()
        digest.update(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
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


def size_record(archive: Path) -> Path:
    return archive.with_name(archive.name + ".size")


def usable(archive: Path) -> bool:
    """Whether the archive is whole: Java skips an archive of another JVM or other jars, but a
    truncated one crashes it (SIGBUS) before any option can help, so a driver is only offered
    an archive whose size is the one recorded when it was made."""
    try:
        return int(size_record(archive).read_text()) == archive.stat().st_size
    except (OSError, ValueError):
        return False


def driver_options() -> str:
    """JVM options for a driver (or the Spark server) of this environment's pyspark: the archive
    when there is one, then the user's own (ZIPPER_SPARK_JAVA_OPTIONS): zipper sets the driver's
    Java options whole, so a value of `spark.driver.extraJavaOptions` would not reach it."""
    archive = archive_path()
    options = [f"{shlex.quote(f'-XX:SharedArchiveFile={archive}')} {QUIET}"] if archive and usable(archive) else []
    options.append(os.environ.get(JAVA_OPTIONS_ENV, "").strip())
    return " ".join(filter(None, options))


def server_archive_path() -> Path | None:
    """The archive of the warehouse's metastore server (zipper.runtime.metastore), beside the
    drivers' one and with the same key: Hive's metastore, DataNucleus and Derby, whose classes
    made most of the server's start (measured: 17-19 s without, 8-12 s with, on a loaded machine)."""
    archive = archive_path()
    if archive is None or not archive.name.startswith("spark-"):
        return None  # off, or a file ZIPPER_JVM_ARCHIVE names for the drivers alone
    return archive.with_name("metastore-" + archive.name[len("spark-") :])


def server_options() -> list[str]:
    """JVM options (argv items) for the metastore server: its archive when there is one."""
    archive = server_archive_path()
    if archive is None or not usable(archive):
        return []
    return [f"-XX:SharedArchiveFile={archive}", *QUIET.split()]
