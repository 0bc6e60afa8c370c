"""A dry run's view of one date: what the merge would publish, without publishing it.

The day is written under the run's directory and audited as a real merge would; then, instead of
the publish, the histories of a few of the day's keys are read twice: as the table has them
("before") and as the run's slots would leave them ("after": the new open slot, the day's closed
slot, the history partitions the day's late changes rewrote, the table's other partitions). Keys
whose versions differ are shown, up to SAMPLE_KEYS. The run's directory is deleted afterwards, so
nothing is published and nothing is left behind."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from zipper.core import fs
from zipper.table import store
from zipper.transforms.collected import as_collected, as_written

SAMPLE_KEYS = 5  # keys whose history a dry run shows, before and after
CANDIDATES = 1000  # the day's keys compared for the sample
KEYS_DIR = "zipper_dry_keys"  # under the run's directory: the day's keys, kept past the change set's scratch


def keep_keys(run, day) -> None:
    """Write up to CANDIDATES of the day's keys under the run's directory: the change set may be
    read from scratch directories that are deleted before the audit."""
    keys = day.changes.select(*run.spec.keys).distinct().limit(CANDIDATES)
    keys.write.mode("overwrite").parquet(f"{run.root}/{KEYS_DIR}")


def sample(run, ds: dt.date, schema, open_dir: str, closed_dir: str, rewritten: tuple) -> list[dict]:
    """Up to SAMPLE_KEYS keys whose versions the day changes: `{"key": {...}, "before": [...], "after": [...]}`,
    versions as {column: text}, in begin order."""
    spark, spec = run.spark, run.spec
    end = spec.end_column
    open_end = spec.open_end.isoformat()
    keys = spark.read.parquet(f"{run.root}/{KEYS_DIR}")
    before = store.table_rows(spark, spec, schema).join(F.broadcast(keys), on=spec.keys, how="left_semi")
    replaced = [r.end for r in rewritten]
    kept = before.where((F.col(end) != open_end) & ~F.col(end).isin(replaced))
    parts = [
        spark.read.schema(schema).parquet(open_dir).withColumn(end, F.lit(open_end)),
        spark.read.schema(schema).parquet(closed_dir).withColumn(end, F.lit(spec.closed_end(ds).isoformat())),
    ]
    parts += [spark.read.schema(schema).parquet(r.location).withColumn(end, F.lit(r.end)) for r in rewritten]
    after = kept
    for part in parts:
        after = after.unionByName(part.join(F.broadcast(keys), on=spec.keys, how="left_semi"))
    differing = before.exceptAll(after).unionByName(after.exceptAll(before)).select(*spec.keys).distinct()
    chosen = [r.asDict() for r in as_collected(differing.orderBy(*spec.keys).limit(SAMPLE_KEYS)).collect()]
    if not chosen:
        return []
    picked = spark.createDataFrame(chosen, schema=differing.schema)
    shown = {}
    for side, rows in (("before", before), ("after", after)):
        for row in as_collected(rows.join(F.broadcast(picked), on=spec.keys, how="left_semi")).collect():
            values = {k: _text(v) for k, v in row.asDict().items()}
            key = tuple(values[k] for k in spec.keys)
            shown.setdefault(key, {"before": [], "after": []})[side].append(values)
    found = []
    for key in sorted(shown, key=str):
        entry = shown[key]
        order = lambda v: str(v.get(spec.begin_column))  # noqa: E731
        found.append(
            {
                "key": dict(zip(spec.keys, key)),
                "before": sorted(entry["before"], key=order),
                "after": sorted(entry["after"], key=order),
            }
        )
    return found


def lines(table: str, ds: str, found: list[dict], verdict: str) -> list[str]:
    """The sample and the guard's verdict, as the CLI prints them after the day's counts."""
    out = [f"{table} {ds}: dry run: nothing was published; change-volume guard: {verdict}"]
    if not found:
        out.append("  no key's history differs")
    for entry in found:
        out.append("  key " + ", ".join(f"{k}={v}" for k, v in entry["key"].items()))
        for side in ("before", "after"):
            versions = entry[side] or [{}]
            for version in versions:
                text = ", ".join(f"{k}={v}" for k, v in version.items()) if version else "(none)"
                out.append(f"    {side:6} {text}")
    return out


def clean(run) -> None:
    """Delete the run's directory: a dry run leaves nothing behind."""
    fs.delete(run.spark, run.root)


def _text(value) -> str:
    value = as_written(value)
    return "NULL" if value is None else str(value)
