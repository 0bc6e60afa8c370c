"""`zipper vacuum`: remove version directories no partition points to, once older than retention."""

from __future__ import annotations

import datetime as dt

from zipper.engine import fs, inspect, state
from zipper.spec.model import TableSpec

MIN_AGE = dt.timedelta(hours=1)


def _run_of(location: str, root: str) -> str | None:
    prefix = root.rstrip("/") + "/"
    return location[len(prefix):].split("/")[0] if location.startswith(prefix) else None


def vacuum(spark, spec: TableSpec, retention_days: int | None = None, dry_run: bool = False,
           now: dt.datetime | None = None) -> dict:
    st = inspect.require_initialized(spark, spec)
    retention = spec.retention_days if retention_days is None else retention_days
    now = now or dt.datetime.now(dt.timezone.utc)
    root = fs.qualify(spark, state.versions_root(st))
    partitions = [st.open_partition, *st.closed, *st.pending]
    live = {_run_of(fs.qualify(spark, p.location), root) for p in partitions}
    removed, kept = [], 0
    for directory, modified_ms in sorted(fs.list_dirs(spark, root)):
        run = directory.rstrip("/").rsplit("/", 1)[-1]
        if run == "empty" or run in live:
            kept += 1
            continue
        started = state.run_time(run) or dt.datetime.fromtimestamp(modified_ms / 1000, dt.timezone.utc)
        # A directory this young may belong to a merge that is still running.
        if now - started < max(dt.timedelta(days=retention), MIN_AGE):
            kept += 1
            continue
        size = fs.du(spark, directory)
        if not dry_run:
            fs.delete(spark, directory)
        removed.append({"directory": directory, "bytes": size})
    return {
        "table": spec.table,
        "retention_days": retention,
        "dry_run": dry_run,
        "removed": removed,
        "removed_bytes": sum(r["bytes"] for r in removed),
        "kept": kept,
    }
