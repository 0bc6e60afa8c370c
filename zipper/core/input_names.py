"""What the name of an input's file or folder says: whether readers skip it, and whether a write
is still under way. One rule for the merge (which lists through Hadoop) and the sensor (local
disk or fsspec), so that the sensor waits exactly for what the merge would refuse; no Spark, no
Airflow here."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# What a Hadoop or Spark job keeps inside its output folder until it commits: `_temporary` (the
# file output committer; files move out of it one by one at the job's commit) and
# `.spark-staging-<job>` (dynamic partition overwrite). A folder holding one is not complete.
JOB_OUTPUT = ("_temporary", ".spark-staging")
COPYING = "._COPYING_"  # a file `hadoop fs -put` is still copying in (Spark does not read it)


def is_hidden(name: str) -> bool:
    """Spark's and Hadoop's rule: names starting with `_` or `.` are not data (`_SUCCESS`, `.crc`)."""
    return name.startswith(("_", "."))


def is_job_output(name: str) -> bool:
    """A job's uncommitted output folder (`_temporary`, `.spark-staging-...`)."""
    return name.startswith(JOB_OUTPUT)


def is_being_copied(name: str) -> bool:
    return name.endswith(COPYING)


def unfinished_writes(folder: str, names: Callable[[], Iterable[str]]) -> list[str]:
    """What a write still under way keeps in `folder` (a matched folder, or a matched file's
    folder), as `folder/name`: the folder itself when it is a job's uncommitted output, else the
    job output folders and the files being copied in that `names()` (its entries' names) lists."""
    folder = folder.rstrip("/")
    if is_job_output(folder.rsplit("/", 1)[-1]):
        return [folder]
    return sorted(f"{folder}/{name}" for name in names() if is_job_output(name) or is_being_copied(name))
