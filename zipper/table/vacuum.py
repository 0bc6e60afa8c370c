"""`zipper vacuum`: remove data directories no partition points to, once older than retention.

Each run writes `versions/<run_id>/zipper_slot=open` and `.../zipper_slot=closed`. The closed
directory stays referenced for as long as its history partition exists; the open one is
superseded by the next day's run. A date may also keep a copy of its input (a landing zone's
consumed files, in `.../zipper_landing`), referenced by its commit record. So the unit of removal is the slot
directory, and a run directory goes when nothing in it is referenced any more.

An erasure (`zipper correct --erase-key`) leaves the directories it superseded holding the
erased rows: every unreferenced directory of a run that started before the latest erasure goes
at once, whatever the retention (an erasure must not wait weeks for its copies to go).

What a killed dry run left (its directory, a rerun's copy of the table's entry) goes once an hour
old, whatever the retention, as the next dry run would clear it (`clone.sweep`)."""

from __future__ import annotations

import datetime as dt

from zipper.core import fs, layout
from zipper.core.corrections import CorrectionKind
from zipper.table import clone, inspect, state
from zipper.tablespec.model import TableSpec

MIN_AGE = dt.timedelta(hours=1)


def live_directories(st: state.TableState) -> set[str]:
    """Every directory the table's state points to or names (qualified, no trailing slash): its
    partitions', and the files later runs read again."""
    live = {fs.qualify(p.location).rstrip("/") for p in [st.open_partition, *st.closed, *st.pending] if p}
    # the inputs' copies dates read from (a landing zone's), kept so that they can be read again
    live |= {fs.qualify(kept).rstrip("/") for kept in st.kept_input_copies()}
    # the salted hashes of erased keys, read by every later rerun and rebuild
    live |= {fs.qualify(c.hashes).rstrip("/") for c in st.corrections if c.hashes}
    # the dates of the versions a correction removed, read by a later rerun's restore audit
    live |= {fs.qualify(c.removed).rstrip("/") for c in st.corrections if c.removed}
    # an adoption's open rows, where a rerun from the day after it reads untracked columns' values
    live |= {fs.qualify(st.init_open).rstrip("/")} if st.init_open else set()
    return live


def vacuum(
    spark, spec: TableSpec, retention_days: int | None = None, dry_run: bool = False, now: dt.datetime | None = None
) -> dict:
    st = inspect.require_initialized(spark, spec)
    retention = spec.retention_days if retention_days is None else retention_days
    now = now or dt.datetime.now(dt.UTC)
    root = fs.qualify(state.versions_root(st)).rstrip("/")
    # killed dry runs' copies of the table's entry, before their directories go
    copies = clone.leftover_copies(spark, spec, now) if dry_run else clone.drop_leftovers(spark, spec, now)
    live = live_directories(st)
    erasures = sorted(c.run_id for c in st.corrections if c.kind == CorrectionKind.ERASE)
    removed, kept, kept_young, purged = [], 0, 0, 0
    for run_dir, modified_ms in sorted(fs.list_dirs(root)):
        run_dir = run_dir.rstrip("/")
        run = run_dir.rsplit("/", 1)[-1]
        started = state.run_time(run) or dt.datetime.fromtimestamp(modified_ms / 1000, dt.UTC)
        # A directory this young may belong to a merge that is still running.
        old_enough = now - started >= max(dt.timedelta(days=retention), MIN_AGE)
        # written before the latest erasure: it may hold erased rows, and cannot publish any more
        erased = bool(erasures) and run < erasures[-1]
        # a killed dry run's: nothing in it was ever published, and it holds nothing to keep
        dry_left = clone.is_leftover_run(run, now)
        if run == layout.EMPTY or not (old_enough or erased or dry_left):
            kept += 1
            kept_young += run != layout.EMPTY and now - started < MIN_AGE
            continue
        children = [d.rstrip("/") for d, _ in fs.list_dirs(run_dir)]
        referenced = [c for c in children if c in live]
        targets = [run_dir] if not referenced else [c for c in children if c not in live]
        for target in targets:
            removed.append({"directory": target, "bytes": fs.du(target)})
            purged += erased and not old_enough
            if not dry_run:
                fs.delete(target)
        kept += bool(referenced)
    return {
        "table": spec.table,
        "retention_days": retention,
        "dry_run": dry_run,
        "removed": removed,
        "removed_bytes": sum(r["bytes"] for r in removed),
        "kept": kept,
        "kept_young": kept_young,  # kept whatever the retention: a merge may still be writing them
        "purged_for_erasure": purged,  # removed before their retention: written before an erasure
        "dry_run_copies": copies,  # killed dry runs' copies of the table's entry, dropped
    }


def clear_killed_run(st: state.TableState, since: dt.datetime) -> list[str]:
    """Delete what a run killed while it held the table's lock wrote and never published; the
    directories deleted. Those are the run directories of runs started since it took the lock
    (`since`) and after the table's open rows were last published, that no partition points into
    and no commit, correction or replay names (a dry run's are its own to clear). The caller holds
    the lock and has stopped the killed run's work on the Spark server: nothing else writes there.

    Vacuum would remove them too, but only an hour later, as it cannot tell them from a running
    merge's; the lock's next holder can."""
    if not st.exists or not st.location or st.open_partition is None:
        return []
    live = live_directories(st)
    named = {c.run_id for c in st.commits.values()} | {c.run_id for c in st.corrections}
    if st.replay:
        named.add(st.replay.run_id)
    cleared = []
    for run_dir, _ in sorted(fs.list_dirs(fs.qualify(state.versions_root(st)).rstrip("/"))):
        run_dir = run_dir.rstrip("/")
        run = run_dir.rsplit("/", 1)[-1]
        started = state.run_time(run)
        if (
            started is None  # `empty`, or no run's
            or started < since
            or run <= st.open_run
            or run in named
            or state.is_dry_run_id(run)
            or any(path == run_dir or path.startswith(run_dir + "/") for path in live)
        ):
            continue
        fs.delete(run_dir)
        cleared.append(run_dir)
    return cleared
