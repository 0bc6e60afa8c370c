"""`zipper alter`: a column renamed or dropped in every version of the table, published at once.
A recipe of named steps:

check the request against the table and the spec (a key, zipper's own columns, and a column the
spec still reads are refused: the spec is edited first, then the table follows it), write every
partition again into a fresh directory (renamed, or without the column and with the versions
that differed only in it merged), audit what was written against what was read, then publish
every partition with the alter's record in one metastore transaction and change the table's
columns to match (`publish.publish_alter`). Readers see the old table until then; a failure
before it leaves the table as it was; a kill between the two metastore calls is completed by the
next run of the table (`recovery.recover`)."""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from zipper.core import faults, fs, layout
from zipper.core.alter import AlterKind, AlterRequest
from zipper.core.dates import utc_now_iso
from zipper.core.errors import InputError, StateError
from zipper.core.reports import RunAction
from zipper.inputs import conform, metrics
from zipper.jobs.context import Run, open_run, quiet
from zipper.jobs.result import RunResult, counted
from zipper.table import audit, publish, state, store
from zipper.tablespec.model import INTERNAL_PREFIX, TableSpec
from zipper.tablespec.modes import EndStyle, SourceMode
from zipper.transforms import alter, corrections
from zipper.transforms.predicates import column_ref


def alter_table(spark, spec: TableSpec, request: AlterRequest, progress=quiet) -> RunResult:
    """Rename or drop one column in every version of the table, in one commit."""
    run = open_run(spark, spec, progress=progress)
    st = run.state
    where = run.where(st.last_committed)
    if st.replay:
        raise StateError(
            f"a rerun's replay of {st.replay.first}..{st.replay.last} was interrupted; finish it first"
            f" (`zipper rerun {spec.name} --from {st.replay.first} --to {st.replay.last}`); nothing was changed",
            **where,
        )
    table = store.whole_table(spark, spec)
    data = [c for c in table.columns if c not in (spec.begin_column, spec.end_column)]
    refusal = refused(spec, request, data)
    if refusal:
        raise InputError(f"{request.describe()}: {refusal}; nothing was changed", **where)
    rewrite, persisted = _rewrite(run, request, table, data)
    try:
        observation = Observation(f"zipper_alter_{run.run_id}")
        fingerprint = corrections.fingerprint(rewrite, rewrite.columns)  # each row with its partition
        store.write_slots(rewrite.observe(observation, *fingerprint), run.root)
        ends = [p.end for p in [st.open_partition, *st.closed]]
        for end in ends:
            fs.mkdirs(layout.slot_dir(run.root, layout.corrected_slot(end)))  # a partition left with no row
        faults.checkpoint("after_alter_write")
        rewritten = _audited(run, ends, rewrite, observation, persisted["merged"])
    except BaseException:
        fs.delete(run.root)
        raise
    finally:
        for cached in persisted["cached"]:
            cached.unpersist()
    counts = {
        "partitions": len(rewritten),
        "rows_before": sum(p.counts["before"] for p in rewritten),
        "rows_after": sum(p.rows for p in rewritten),
        "merged": sum(p.counts["merged"] for p in rewritten),
    }
    record = {
        "kind": str(request.kind),
        "column": request.column,
        "new_name": request.new_name,
        "reason": request.reason,
        "by": request.by,
        "committed_at": utc_now_iso(),
        "as_of": st.last_committed.isoformat(),
        "counts": counts,
    }
    kinds = dict((f.name, f.dataType.simpleString()) for f in table.schema.fields)
    column_record = (
        {"renamed": [[request.column, request.new_name]]}
        if request.kind == AlterKind.RENAME
        else {"dropped": [[request.column, kinds[request.column]]]}
    )
    publish.publish_alter(
        spark, spec, st, publish.AlterCommit(run.run_id, record, run.root, rewritten, request.edits, column_record)
    )
    done = (
        f"renamed column {request.column} to {request.new_name}"
        if request.kind == AlterKind.RENAME
        else f"dropped column {request.column}, {counted(counts['merged'], 'version')} merged into the next"
    )
    return RunResult(
        spec.table,
        where["ds"],
        RunAction.ALTER,
        f"alter {run.run_id} published: {done} in {counted(len(rewritten), 'partition')}"
        f" ({counts['rows_before']} rows before, {counts['rows_after']} after)",
        counts,
        run.seconds(),
        run.run_id,
    )


def spec_names(spec: TableSpec) -> dict[str, list[str]]:
    """The columns the spec reads or declares, by the spec key that names them."""
    named = {
        "columns": list(spec.columns or {}),
        "track_columns": spec.track_columns if isinstance(spec.track_columns, list) else [],
        "track_columns_except": list(spec.track_columns_except or []),
        "source.sequence_by": [spec.source.sequence_by] if spec.source.sequence_by else [],
        "source.updated_at": [spec.source.updated_at] if spec.source.updated_at else [],
        "source.schema": list(spec.source.schema_ or {}),
    }
    if spec.source.mode == SourceMode.CDC:
        named["source.op_column"] = [spec.source.operation_column]
    return named


def refused(spec: TableSpec, request: AlterRequest, data: list[str]) -> str:
    """Why the table or its spec cannot take the request ("" if they can). The spec leads: it must
    no longer name the old column, and with declared `columns` it must name the new one."""
    column, new = request.column, request.new_name
    if column in spec.keys:
        return f"{column!r} is a key column; a key cannot be renamed or dropped"
    if column in (spec.begin_column, spec.end_column, *spec.own_columns):
        return f"{column!r} is zipper's own column (begin, end, validity or deleted); it cannot be renamed or dropped"
    if column not in data:
        return f"the table has no column {column!r} (its data columns: {', '.join(data)})"
    still = [key for key, names in spec_names(spec).items() if column in names]
    if still:
        return (
            f"the spec still names {column!r} ({', '.join(still)}); edit the spec first"
            + (f" to name {new!r}" if new else "")
            + ", then alter the table"
        )
    if request.kind == AlterKind.DROP:
        if len([c for c in data if c not in spec.keys and c not in spec.own_columns]) == 1:
            return f"{column!r} is the table's last data column besides the keys"
        return ""
    if new in data or new in (spec.begin_column, spec.end_column, *spec.keys, *spec.own_columns):
        return f"the table already has a column {new!r}"
    if new.startswith(INTERNAL_PREFIX):
        return f"names starting with {INTERNAL_PREFIX!r} are reserved for zipper's own columns"
    if spec.columns is not None and new not in spec.columns:
        return f"the spec's columns do not name {new!r}; declare it there first, then alter the table"
    return ""


def _rewrite(run: Run, request: AlterRequest, table: DataFrame, data: list[str]) -> tuple[DataFrame, dict]:
    """Every row of the table as it is written again, with its SLOT (its partition), without the
    end column; and what was cached for it (a drop's versions, and its merged counts)."""
    spec = run.spec
    end = column_ref(spec.end_column)
    if request.kind == AlterKind.RENAME:
        rows = alter.renamed(table, request.column, request.new_name)
        columns = [c for c in rows.columns if c != spec.end_column]
        return corrections.slotted(rows, columns, spec.end_column), {"cached": [], "merged": {}}
    types = {f.name: f.dataType for f in table.schema.fields}
    left = [c for c in data if c != request.column]
    tracked = conform.tracked_columns(spec, left, run.where(run.state.last_committed)["ds"])
    versions = alter.dropped(
        table,
        request.column,
        keys=spec.keys,
        begin_column=spec.begin_column,
        end_column=spec.end_column,
        tracked=tracked + list(spec.tombstone_columns),  # a tombstone never merges with the version it closed
        types=types,
        inclusive=spec.end_style == EndStyle.INCLUSIVE,
        validity=spec.validity_columns or None,
    ).persist(StorageLevel.MEMORY_AND_DISK)
    merged = {
        r[spec.end_column]: int(r["count"])
        for r in versions.where(F.col(alter.STATUS) == alter.ABSORBED).groupBy(end).count().collect()
    }
    kept = alter.merged_away(versions)
    columns = [c for c in kept.columns if c != spec.end_column]
    return corrections.slotted(kept, columns, spec.end_column), {"cached": [versions], "merged": merged}


def _audited(
    run: Run, ends: list[str], rewrite: DataFrame, observation: Observation, merged: dict[str, int]
) -> list[publish.Rewritten]:
    """Check what was written against what was read before publishing (`audit.reconcile_alter`):
    rows per partition (footers: before less the merged versions is after), and every row
    written, read back, counted and hashed as it was when written."""
    spark, spec, st = run.spark, run.spec, run.state
    by_end = {p.end: p for p in [st.open_partition, *st.closed]}
    directories = {e: layout.slot_dir(run.root, layout.corrected_slot(e)) for e in ends}
    before = {e: store.rows_in(by_end[e].location) for e in ends}
    written = {e: store.rows_in(d) for e, d in directories.items()}
    schema = rewrite.drop(layout.SLOT).schema
    read_back = corrections.with_slot_from_path(store.read_rows(spark, schema, *directories.values()), spec.end_column)
    read_back = read_back.select(*[column_ref(c) for c in rewrite.columns])
    after = read_back.agg(*corrections.fingerprint(read_back, read_back.columns)).first()
    seen = metrics.observed_metrics(observation)
    rewritten = [
        publish.Rewritten(
            e, directories[e], written[e], {"before": before[e], "merged": merged.get(e, 0), "after": written[e]}
        )
        for e in ends
    ]
    audit.reconcile_alter(
        end_column=spec.end_column,
        counts={p.end: p.counts for p in rewritten},
        recorded={e: by_end[e].params.get(state.ROWS) for e in ends},
        rows_written=(int(seen.get("rows") or 0), int(seen.get("hash") or 0)),
        rows_read_back=(int(after["rows"]), int(after["hash"])),
        **run.where(st.last_committed),
    )
    return rewritten
