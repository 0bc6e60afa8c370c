"""Dry runs: what a merge, rerun or rebuild would publish, without publishing it.

A merge's dry run writes and audits its day under the run's directory as a real merge would; then,
instead of the publish, the histories of a few of the day's keys are read twice: as the table has
them ("before") and as the run's slots would leave them ("after": the new open slot, the day's
closed slot, the history partitions the day's late changes rewrote, the table's other partitions).

A rerun or rebuild publishes many times (a restore, then each date), and each date reads what the
one before published. Its dry run therefore runs the job itself on a copy of the table's metastore
entry (`table.clone`: the same partitions, no file copied), then compares the copy with the table.

Either way keys whose versions differ are shown, up to SAMPLE_KEYS, and the run's directory is
deleted afterwards: nothing is published and nothing is left behind."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from zipper.core import fs
from zipper.core.errors import StateError, ZipperError
from zipper.jobs.keys import resolve_keys
from zipper.jobs.result import Preview, RunResult
from zipper.table import clone, state, store
from zipper.tablespec.model import TableSpec
from zipper.transforms.collected import as_collected, as_written

SAMPLE_KEYS = 5  # keys whose history a dry run shows, before and after
HASH, SIDE = "zipper__hash__", "zipper__side__"  # a row's hash; its side (+1 or "before", -1 or "after")
CANDIDATES = 1000  # the day's keys compared for the sample
KEYS_DIR = "zipper_dry_keys"  # under the run's directory: the day's keys, kept past the change set's scratch


def keep_keys(run, day) -> None:
    """Write up to CANDIDATES of the day's keys under the run's directory: the change set may be
    read from scratch directories that are deleted before the audit."""
    keys = day.changes.select(*run.spec.keys).distinct().limit(CANDIDATES)
    store.write_rows(keys, f"{run.root}/{KEYS_DIR}")


def sample(run, ds: dt.date, schema, open_dir: str, closed_dir: str, rewritten: tuple) -> list[dict]:
    """Up to SAMPLE_KEYS keys whose versions the day changes: `{"key": {...}, "before": [...], "after": [...]}`,
    versions as {column: text}, in begin order."""
    spark, spec = run.spark, run.spec
    end = spec.end_column
    open_end = spec.open_end.isoformat()
    keys = store.read_written(spark, f"{run.root}/{KEYS_DIR}")
    before = store.table_rows(spark, spec, schema).join(F.broadcast(keys), on=spec.keys, how="left_semi")
    replaced = [r.end for r in rewritten]
    kept = before.where((F.col(end) != open_end) & ~F.col(end).isin(replaced))
    parts = [
        store.read_rows(spark, schema, open_dir).withColumn(end, F.lit(open_end)),
        store.read_rows(spark, schema, closed_dir).withColumn(end, F.lit(spec.closed_end(ds).isoformat())),
    ]
    parts += [store.read_rows(spark, schema, r.location).withColumn(end, F.lit(r.end)) for r in rewritten]
    after = kept
    for part in parts:
        after = after.unionByName(part.join(F.broadcast(keys), on=spec.keys, how="left_semi"))
    hashed = _hashed(spec, before, 1).unionByName(_hashed(spec, after, -1))
    chosen = _keys_of(spec, hashed, SAMPLE_KEYS)
    return _versions_of(spark, spec, before, after, chosen, before.select(*spec.keys).schema)


def _versions_of(spark, spec, before: DataFrame, after: DataFrame, chosen: list[dict], key_schema) -> list[dict]:
    """Every version of the `chosen` keys on both sides, read in one job, as {column: text} in begin order."""
    if not chosen:
        return []
    picked = F.broadcast(spark.createDataFrame(chosen, schema=key_schema))
    both = before.withColumn(SIDE, F.lit("before")).unionByName(after.withColumn(SIDE, F.lit("after")))
    shown = {}
    for row in as_collected(both.join(picked, on=spec.keys, how="left_semi")).collect():
        values = {k: _text(v) for k, v in row.asDict().items() if k != SIDE}
        key = tuple(values[k] for k in spec.keys)
        shown.setdefault(key, {"before": [], "after": []})[row[SIDE]].append(values)
    found = []
    for key in sorted(shown, key=str):
        entry = shown[key]
        order = lambda v: (str(v.get(spec.begin_column)), str(v.get(spec.end_column)))  # noqa: E731
        found.append(
            {
                "key": dict(zip(spec.keys, key)),
                "before": sorted(entry["before"], key=order),
                "after": sorted(entry["after"], key=order),
            }
        )
    return found


def on_copy(
    spark, spec: TableSpec, job: Callable[[TableSpec, Callable[[str], None]], RunResult], progress
) -> RunResult:
    """A rerun's or rebuild's dry run: `job` (given a spec and a progress) runs on a copy of the
    table's metastore entry (`table.clone`), publishing there as it would on the table; then up to
    SAMPLE_KEYS keys whose history differs between the table and the copy are read from both, and
    the copy is dropped. The table is not changed. Its lines and errors name the table, not the copy."""
    spec = resolve_keys(spark, spec)
    st = state.read_state(spark, spec)
    if not st.initialized:
        raise StateError(
            f"a dry run shows what a rerun or rebuild would change in an initialized table, and this one is not"
            f" (`zipper init {spec.name}`, or the rebuild itself)",
            table=spec.table,
        )
    state.check_owned(st, spec)
    run_id = state.new_run_id(dry_run=True)
    copied = clone.make(spark, spec, st, run_id)

    def named(text: str) -> str:
        return text.replace(copied.table, spec.table)

    try:
        progress(
            f"{spec.table}: dry run, on a copy of the table's metastore entry ({copied.table}); the table is not changed"
        )
        try:
            result = job(copied, lambda line: progress(named(line)))
        except ZipperError as exc:
            detail = named(exc.detail) + DRY_RUN_FAILED
            raise exc.reworded(detail, table=spec.table, ds=exc.ds) from exc
        found = copy_sample(spark, spec, copied, st, state.read_state(spark, copied))
    finally:
        clone.drop(spark, copied, st, run_id)
    return _dry_result(result, spec, found)


DRY_RUN_FAILED = "; this was a dry run: the table is not changed"


def copy_sample(
    spark, spec: TableSpec, copied: TableSpec, before: state.TableState, after: state.TableState
) -> list[dict]:
    """Up to SAMPLE_KEYS keys whose versions differ between the table (`before`) and its copy after
    the job (`after`), with all their versions on both sides.

    Only the partitions the job re-pointed, added or dropped are compared (one the copy still
    points at the table's directory holds the same rows), each row as its key and a hash of all
    its columns. Each partition's row count and hash sum on both sides tell which still differ, in
    one job; keys are then looked for in those history partitions (small) and, when they give fewer
    than SAMPLE_KEYS, in the open partition. Both sides' columns are compared as text when the job
    changed them."""
    was, now = _locations(before), _locations(after)
    changed = sorted(end for end in set(was) | set(now) if was.get(end) != now.get(end))
    if not changed:
        return []
    old, new = store.whole_table(spark, spec), store.whole_table(spark, copied)
    if old.dtypes != new.dtypes:
        columns = list(dict.fromkeys(new.columns + old.columns))
        old, new = (
            side.select(*[(F.col(c) if c in side.columns else F.lit(None)).cast("string").alias(c) for c in columns])
            for side in (old, new)
        )
    end, open_end = F.col(spec.end_column), spec.open_end.isoformat()
    hashed = _hashed(spec, old.where(end.isin(changed)), 1).unionByName(_hashed(spec, new.where(end.isin(changed)), -1))
    # per partition, each side's rows and hash sum: those that still differ (one job, a few rows back)
    totals = hashed.groupBy(spec.end_column).agg(
        F.sum(SIDE).alias("rows"), F.sum(F.col(HASH).cast("decimal(38,0)") * F.col(SIDE)).alias("hashes")
    )
    differing = sorted(r[spec.end_column] for r in totals.where("rows != 0 OR hashes != 0").collect())
    history = [e for e in differing if e != open_end]
    chosen = _keys_of(spec, hashed.where(end.isin(history)), SAMPLE_KEYS) if history else []
    if len(chosen) < SAMPLE_KEYS and open_end in differing:
        found = _keys_of(spec, hashed.where(end == open_end), SAMPLE_KEYS)
        merged = {tuple(c.items()): c for c in chosen + found}
        chosen = sorted(merged.values(), key=lambda c: [str(v) for v in c.values()])[:SAMPLE_KEYS]
    return _versions_of(spark, spec, old, new, chosen, old.select(*spec.keys).schema)


def _locations(st: state.TableState) -> dict[str, str]:
    return {p.end: p.location for p in (st.open_partition, *st.closed) if p is not None}


def _hashed(spec, rows: DataFrame, side: int) -> DataFrame:
    """`rows` as their keys, the end column, a hash of every column (with which ones are NULL, which
    the hash itself skips) and `side` (+1 the table's, -1 the copy's)."""
    return rows.select(*spec.keys, spec.end_column, row_digest(rows).alias(HASH), F.lit(side).alias(SIDE))


def row_digest(rows: DataFrame):
    """A 64-bit hash of each row's columns and of which ones are NULL (the hash itself skips NULLs)."""
    columns = [F.col(c) for c in rows.columns]
    return F.xxhash64(*columns, *[F.isnull(c) for c in columns])


def _keys_of(spec, hashed: DataFrame, limit: int) -> list[dict]:
    """The first `limit` keys (in key order) with a row on one side and not the other."""
    rows = hashed.groupBy(*spec.keys, HASH).agg(F.sum(SIDE).alias(SIDE)).where(F.col(SIDE) != 0)
    found = rows.select(*spec.keys).distinct().orderBy(*spec.keys).limit(limit)
    return [r.asDict() for r in as_collected(found).collect()]


def _dry_result(result: RunResult, spec: TableSpec, found: list[dict]) -> RunResult:
    """The job's result as its dry run's: the table's name, each replayed date's result a dry run's
    (with the change-volume guard's verdict it was given on the copy), and the sample."""
    replayed = [dataclasses.replace(r, table=spec.table, preview=Preview()) for r in result.replayed]
    dates = tuple((r.ds, r.verdict) for r in replayed if r.verdict is not None)
    return dataclasses.replace(
        result,
        table=spec.table,
        message=f"dry run: {result.message}",
        replayed=replayed,
        preview=Preview(sample=found, dates=dates),
    )


def clean(run) -> None:
    """Delete the run's directory: a dry run leaves nothing behind; and clear what killed dry runs
    of the table left, as a rerun's dry run does before it starts (`clone.sweep`)."""
    fs.delete(run.root)
    clone.sweep(run.spark, run.spec, run.state)


def _text(value) -> str:
    value = as_written(value)
    return "NULL" if value is None else str(value)
