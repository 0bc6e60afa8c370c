"""A day's late changes put in place: changes older than their key's latest version in the table
(`source.updated_at`) go into the key's history, and the closed partitions whose versions they
change are written again under the run's directory, published with the day.

The daily apply calls `put_in_place` between its two writes, only on a day whose change set
counted late changes as it was written. The versions themselves are computed by
`transforms.late`; this module reads the partitions a late change can reach, refuses what cannot
be placed, and writes what changed."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

from pyspark.sql import Observation
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

from zipper.core import fs, layout
from zipper.core.errors import InputError
from zipper.core.layout import Slot
from zipper.inputs import metrics
from zipper.inputs.refusals import key_text, where_of
from zipper.jobs.context import Run
from zipper.table import publish, state, store
from zipper.transforms import daily, late, vocabulary
from zipper.transforms.shape import MergeShape

LATE_KIND = "late"  # a late version with nothing to split, closed in the day's partition
LATE_OPEN_KIND = "late_open"  # the open row of a key with only late changes, as they leave it
# with ignore_null_updates, where the day's other changes of a late key are put in place with it:
LATE_NEW_KIND = "late_new"  # the open row of such a key that had none (deleted before)
LATE_GONE_KIND = "late_gone"  # such a key's open row that its changes end (deleted), not written
# one row per key with only late changes (its open row, or the one it ends): counted with the day's keys
LATE_KEY_KINDS = (LATE_OPEN_KIND, LATE_NEW_KIND, LATE_GONE_KIND)
PLACED_KINDS = (LATE_KIND, *LATE_KEY_KINDS)


@dataclass(frozen=True)
class Placed:
    """The day's late changes put in place: what the day's small job takes instead of the open
    rows of their keys, the rows it adds, and the history partitions written again."""

    touched: object  # DataFrame: the touched open rows, those of late keys as the late changes leave them
    rows: object  # DataFrame: open rows of keys with only late changes, late versions for the day's partition
    changes: int
    rewritten: tuple  # publish.Rewritten, one per history partition written again


def put_in_place(run: Run, shape: MergeShape, day, touched_rows, late_rows, open_schema) -> Placed | None:
    """Put the day's late changes in their keys' histories (`transforms.late`): read only the closed
    partitions a late change can reach (`TableState.reachable_from`), write each partition whose
    versions changed again, under the run's directory. A late change at the moment a version
    begins, with other tracked values, is refused with one line. With tombstones a late delete
    opens one and a late change before a tombstone gives it its values; with `ignore_null_updates`
    a late change's NULLs take the values of the change before it."""
    spark, spec, st, run_root, ds = run.spark, run.spec, run.state, run.root, shape.date
    valid_from, valid_to = spec.validity_columns
    # with ignore_null_updates a late key's other changes are put in place too; OVERDUE tells the late ones
    overdue = F.col(vocabulary.OVERDUE) if vocabulary.OVERDUE in late_rows.columns else F.lit(True)
    found = late_rows.agg(
        F.count(F.lit(1)).alias("rows"), F.count(F.when(overdue, 1)).alias("n"), F.min(valid_from).alias("t")
    ).first()
    if not found["rows"]:
        return None
    end, open_end, today = spec.end_column, shape.open_end, shape.closed_end
    earliest = state.earliest_reachable_end(spec, found["t"])
    late_keys = F.broadcast(late_rows.select(*spec.keys).distinct())
    reachable = st.reachable_from(spec, found["t"])
    table = store.table_rows(spark, spec, open_schema)  # every reachable partition in one scan
    closed = table.where((F.col(end) >= earliest) & (F.col(end) != open_end))
    opened = touched_rows.join(late_keys, on=spec.keys, how="left_semi").withColumn(end, F.lit(open_end))
    history = opened.unionByName(closed.join(late_keys, on=spec.keys, how="left_semi"))
    starts = late_rows.groupBy(*spec.keys).agg(F.min(valid_from).alias("zipper__from__"))
    history = history.join(starts, on=spec.keys).where(F.col(valid_to) > F.col("zipper__from__")).drop("zipper__from__")
    # written once and read back: the steps below read it several times (Spark would scan the
    # table for each; measured slower than the write)
    history_schema = StructType([*open_schema.fields, StructField(end, StringType())])
    store.write_rows(history, f"{run_root}/zipper_history")
    history = store.read_rows(spark, history_schema, f"{run_root}/zipper_history")
    _refuse_conflicts(spec, ds, day, history, late_rows, list(shape.tracked))
    result = late.in_place(history, late_rows, shape)
    result_schema = StructType(
        [
            *[history_schema[c] for c in (*day.names, spec.begin_column, end)],
            StructField(late.CHANGED, BooleanType()),
            StructField(late.REPLACES, ArrayType(StringType())),
        ]
    )
    late_dir = f"{run_root}/zipper_late"
    observation = Observation(f"zipper_late_{secrets.token_hex(6)}")  # the partitions changed, as it is written
    store.write_rows(result.observe(observation, F.flatten(F.collect_set(_reached(end))).alias("ends")), late_dir)
    result = store.read_rows(spark, result_schema, late_dir)
    changed_ends = _changed_ends(observation, result, end)
    parts = [p for p in reachable if p.end in changed_ends]
    replaced = history.select(*spec.keys, valid_from)
    rewritten = _rewrite(run, table, parts, replaced, result) if parts else ()
    result = result.drop(late.CHANGED, late.REPLACES)
    new_open = result.where(F.col(end) == open_end).drop(end)
    touched = touched_rows.join(late_keys, on=spec.keys, how="left_anti").unionByName(new_open)
    day_keys = day.changes.select(*spec.keys).distinct()
    only_late = new_open.join(day_keys, on=spec.keys, how="left_anti")
    was_open = touched_rows.join(late_keys, on=spec.keys, how="left_semi").join(day_keys, on=spec.keys, how="left_anti")
    opened = was_open.select(*spec.keys, F.lit(True).alias("zipper__was_open__"))
    kind = F.when(F.col("zipper__was_open__"), F.lit(LATE_OPEN_KIND)).otherwise(F.lit(LATE_NEW_KIND))
    rows = only_late.join(opened, on=spec.keys, how="left").select(
        *only_late.columns,
        F.lit(Slot.OPEN).alias(layout.SLOT),
        kind.alias(daily.KIND),  # not among the keys that were open: new
    )
    gone = was_open.join(only_late.select(*spec.keys), on=spec.keys, how="left_anti")
    rows = rows.unionByName(
        gone.select(*only_late.columns, F.lit(Slot.NONE).alias(layout.SLOT), F.lit(LATE_GONE_KIND).alias(daily.KIND))
    )
    in_day = result.where(F.col(end) == today).drop(end)
    rows = rows.unionByName(
        in_day.select("*", F.lit(Slot.CLOSED).alias(layout.SLOT), F.lit(LATE_KIND).alias(daily.KIND))
    )
    return Placed(
        touched,
        rows.select(*day.names, spec.begin_column, layout.SLOT, daily.KIND),
        int(found["n"]),
        tuple(rewritten),
    )


def _reached(end: str):
    """The end values of the partitions a version of `transforms.late.in_place`'s result makes the
    merge write again: its own and those of the versions it replaces, when it changed (else NULL)."""
    return F.when(F.col(late.CHANGED), F.array_union(F.col(late.REPLACES), F.array(F.col(end))))


def _changed_ends(observation, result, end: str) -> set[str]:
    """The end values of the partitions whose versions the late changes changed: observed as the
    result was written, or read off it when the metrics were not handed over."""
    observed = metrics.observed_metrics(observation)
    if "ends" in observed:
        return set(observed["ends"] or ())
    return {r[end] for r in result.select(F.explode(_reached(end)).alias(end)).distinct().collect()}


def _rewrite(run: Run, table, parts: list, replaced, result) -> tuple:
    """The history partitions `parts` written again in one job under the run's directory, one file
    each: their rows (`table`) less the versions the late changes replaced (`replaced`: keys and
    valid_from), and the result's versions that belong in them. One `publish.Rewritten` each."""
    end = run.spec.end_column
    ends = [p.end for p in parts]
    kept = table.where(F.col(end).isin(ends)).join(F.broadcast(replaced), on=list(replaced.columns), how="left_anti")
    rows = kept.unionByName(result.where(F.col(end).isin(ends)).select(*kept.columns))
    root = f"{run.root}/zipper_rewritten"
    store.write_by(rows.repartition(F.col(end)), root, end)
    rewritten = []
    for value in ends:
        directory = f"{root}/{end}={value}"
        fs.mkdirs(directory)  # a partition left without rows is written empty
        rewritten.append(publish.Rewritten(value, directory, store.rows_in(directory), {}))
    return tuple(rewritten)


LATE_EXAMPLES = 5  # keys a refusal of late changes names


def _keys_at(rows, spec, moment: str) -> str:
    """The first keys of `rows` (a DataFrame) with their `moment` column, for a refusal's line."""
    shown = rows.select(*spec.keys, moment).limit(LATE_EXAMPLES + 1).collect()
    text = "; ".join(f"{key_text([r], spec.keys)} at {r[moment]}" for r in shown[:LATE_EXAMPLES])
    return text + (" (and more)" if len(shown) > LATE_EXAMPLES else "")


def _refuse_conflicts(spec, ds: dt.date, day, history, late_rows, tracked) -> None:
    """A late change at the moment a version of its key begins, with other tracked values: refused."""
    found = late.conflicts(
        history,
        late_rows,
        keys=spec.keys,
        tracked=tracked,
        validity=spec.validity_columns,
        fill_nulls=spec.source.fills_null_updates,
    )
    text = _keys_at(found, spec, "zipper_from")
    if not text:
        return
    raise InputError(
        f"increment {day.located.description} has late changes at the moment a version of their key begins,"
        f" with other values ({spec.source.updated_at} equal to its {spec.validity_columns[0]}); keys {spec.keys}:"
        f" {text}; nothing was changed",
        **where_of(spec, ds),
    )
