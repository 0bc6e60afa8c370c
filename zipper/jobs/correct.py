"""`zipper correct`: erase keys from every version, fix values in past versions, or delete
versions, published at once. A recipe of named steps:

select the versions (a predicate over the table's columns, or the keys to erase), count them
per partition (a dry run stops here and shows them), write each partition that holds a change
again into a fresh directory, audit what was written against what was read, then publish every
rewritten partition with the correction's record in one metastore transaction
(`publish.publish_correction`). Readers see the old table until then; a failure before it
leaves the table as it was, and the directories it wrote are only ever read through a publish.
Partitions without a matched version are neither rewritten nor read again."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from zipper.core import faults, fs, layout, predicate
from zipper.core.corrections import CorrectionKind, CorrectionRequest
from zipper.core.dates import utc_now_iso
from zipper.core.errors import InputError, StateError
from zipper.core.keyvalues import assignment_texts, erase_key_values, read_keys_file
from zipper.core.reports import RunAction
from zipper.inputs import conform, metrics
from zipper.jobs.context import Run, open_run, quiet
from zipper.jobs.result import Preview, RunResult, counted
from zipper.table import audit, publish, state, store
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import EndStyle
from zipper.transforms import corrections, predicates
from zipper.transforms.collected import as_collected, as_written
from zipper.transforms.predicates import column_ref

SAMPLES = 20  # rows a dry run shows


Request = CorrectionRequest  # the name the job's callers and tests know
Selection, Rewrite = corrections.Selection, corrections.Rewrite


def correct(spark, spec: TableSpec, request: Request, progress=quiet) -> RunResult:
    """Apply one correction (or, with `dry_run`, show what it would change)."""
    run = _ready_run(spark, spec, request, progress)
    table = store.whole_table(spark, spec)
    selection = _selection(spark, run.spec, request, table, run.where(run.state.last_committed))
    try:
        return _apply(run, request, table, selection)
    finally:
        if selection.keys is not None:
            selection.keys.unpersist()


def _apply(run: Run, request: Request, table: DataFrame, selection: Selection) -> RunResult:
    """The correction's steps once its versions are selected: count them, then hand the correction to
    the run's publisher (`publishers`): the live one writes, audits and publishes it, a dry run's
    shows the versions matched."""
    spec, st = run.spec, run.state
    where = run.where(st.last_committed)
    end, begin = spec.end_column, spec.begin_column
    # one pass: the versions matched per (end, begin): per partition, and the removed versions' dates
    intervals = [
        (r[begin], r[end], int(r["count"]))
        for r in selection.matching(table, spec.keys).groupBy(column_ref(end), column_ref(begin)).count().collect()
    ]
    matched: dict[str, int] = {}
    for _, version_end, count in intervals:
        matched[version_end] = matched.get(version_end, 0) + count
    if not matched:
        raise InputError(f"{selection.describe} matches no version of the table; nothing was changed", **where)
    return run.publisher.publish_correction(run, Selected(run, request, table, selection, matched, intervals))


@dataclass(frozen=True)
class Selected:
    """A correction whose versions are selected and counted (`matched`, per partition): what its
    dry run shows (`preview`), and what its live run writes and audits before the publish (`written`)."""

    run: Run
    request: Request
    table: DataFrame
    selection: Selection
    matched: dict[str, int]
    intervals: list[tuple[str, str, int]]  # the versions matched per (begin, end)

    def written(self) -> tuple[state.Correction, list[publish.Rewritten]]:
        """Each partition that holds a change written again under the run's directory and audited,
        and the correction's record. A failure deletes the run's directory."""
        run, request, selection, matched = self.run, self.request, self.selection, self.matched
        where = run.where(run.state.last_committed)
        if request.kind == CorrectionKind.SET:
            rewrite = _fixed(run.spark, run.spec, self.table, selection, matched, where)
        else:
            rewrite = _removed(run.spec, self.table, selection, matched)
        try:
            hashes = _write(run, request, selection, rewrite, self.intervals)
            faults.checkpoint("after_correct_write")
            rewritten = _audited(run, rewrite, self.table)
        except BaseException:
            fs.delete(run.root)
            raise
        finally:
            for cached in rewrite.persisted:
                cached.unpersist()
        return _record(run, request, selection, matched, rewritten, hashes), rewritten

    def published(self, correction: state.Correction, rewritten: list[publish.Rewritten]) -> RunResult:
        """The result of the correction once published."""
        run = self.run
        return RunResult(
            run.spec.table,
            run.where(run.state.last_committed)["ds"],
            RunAction.CORRECT,
            _summary(correction, rewritten),
            correction.counts,
            run.seconds(),
            run.run_id,
        )

    def preview(self) -> RunResult:
        """Per partition, the versions matched, and up to SAMPLES of them (with their new values for
        a fix): a dry run stops before the write."""
        run, selection, matched = self.run, self.selection, self.matched
        spec, progress = run.spec, run.progress
        total = sum(matched.values())
        found = f"{counted(total, 'version')} matched in {counted(len(matched), 'partition')}; nothing was written"
        progress(f"{spec.table}: dry run of the {selection.describe}: {found}")
        for end, count in sorted(matched.items()):
            progress(f"  {spec.end_column}={end}: {counted(count, 'version')}")
        sample = selection.matching(self.table, spec.keys).limit(SAMPLES)
        if selection.assignments:
            sample = sample.select("*", *[value.alias(f"new {name}") for name, value in selection.assignments.items()])
        for row in as_collected(sample).collect():
            progress("  " + ", ".join(f"{k}={_shown(v)}" for k, v in row.asDict().items()))
        return RunResult(
            spec.table,
            run.state.last_committed.isoformat(),
            RunAction.CORRECT,
            f"dry run: {found}",
            {"matched": total, "partitions": len(matched)},
            run.seconds(),
            preview=Preview(),  # shown as the dry run's lines above; its report says `dry_run`
        )


def _record(
    run: Run,
    request: Request,
    selection: Selection,
    matched: dict[str, int],
    rewritten: list[publish.Rewritten],
    hashes: tuple[str, str] | None,
) -> state.Correction:
    """The correction's commit record: what was asked, what it matched and rewrote."""
    counts = {
        "matched": sum(matched.values()),
        "partitions": len(rewritten),
        "removed": sum(p.counts["removed"] for p in rewritten),
        "coalesced": sum(p.counts["coalesced"] for p in rewritten),
        "changed": sum(p.counts["changed"] for p in rewritten),
        "rows_before": sum(p.counts["before"] for p in rewritten),
        "rows_after": sum(p.rows for p in rewritten),
    }
    correction = state.Correction(
        run_id=run.run_id,
        kind=request.kind,
        reason=request.reason,
        by=request.by,
        committed_at=utc_now_iso(),
        as_of=run.state.last_committed.isoformat(),
        where=selection.where,
        assignments=selection.assignment_texts,
        first=request.first.isoformat() if request.first else "",
        last=request.last.isoformat() if request.last else "",
        keys=selection.key_count,
        salt=hashes[0] if hashes else "",
        hashes=hashes[1] if hashes else "",
        counts=counts,
        removed=f"{run.root}/{layout.REMOVED_VERSIONS}" if request.kind != CorrectionKind.SET else "",
        touched_last=_touched_last(run.spec, run.state, [p.end for p in rewritten]),
    )
    return correction


def _ready_run(spark, spec: TableSpec, request: Request, progress) -> Run:
    """The run at the table's last committed date, once a killed run's debris is cleared; refused mid-replay."""
    run = open_run(spark, spec, progress=progress, dry_run=request.dry_run)
    st = run.state
    if st.replay:
        raise StateError(
            f"a rerun's replay of {st.replay.first}..{st.replay.last} was interrupted; finish it first"
            f" (`zipper rerun {spec.name} --from {st.replay.first} --to {st.replay.last}`); nothing was changed",
            table=spec.table,
            ds=st.last_committed.isoformat(),
        )
    overlong = request.overlong()
    if overlong:
        raise InputError(overlong, table=spec.table)
    return run


def _selection(spark, spec: TableSpec, request: Request, table: DataFrame, where: dict) -> Selection:
    types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    if request.kind == CorrectionKind.ERASE:
        keys = _erase_keys(spark, spec, request, types, where)
        count = keys.count()
        return Selection(describe=f"erasure of {count} key{'s' if count != 1 else ''}", keys=keys, key_count=count)
    try:
        node = predicate.parse(request.where, types)
    except predicate.PredicateError as exc:
        raise InputError(str(exc), **where) from None
    bad = predicates.bad_literals(spark, node, types)
    assignment_texts, assignments = (
        _assignments(spark, spec, request, types, where) if request.kind == CorrectionKind.SET else ({}, {})
    )
    if bad:
        raise InputError(f"--where values are not of their columns' types: {', '.join(bad)}", **where)
    matched = F.coalesce(predicates.to_column(node, types), F.lit(False)) & corrections.valid_within(
        spec.begin_column, spec.end_column, request.first, request.last, exclusive=spec.end_style == EndStyle.EXCLUSIVE
    )
    text = predicate.render_text(node)
    return Selection(
        describe=f"--where {text}" + _dates_text(request),
        matched=matched,
        assignments=assignments,
        assignment_texts=assignment_texts,
        where=text,
    )


def _dates_text(request: Request) -> str:
    if not (request.first or request.last):
        return ""
    return f" (versions valid within {request.first or '...'}..{request.last or '...'})"


def _assignments(
    spark, spec: TableSpec, request: Request, types: dict[str, str], where: dict
) -> tuple[dict[str, str], dict[str, Column]]:
    """--set col=value: a data column that is not a key, its value typed by the column (NULL: none)."""
    protected = [*spec.keys, spec.begin_column, spec.end_column]
    texts = assignment_texts(request.assignments, types, protected, refused=_derived(spec), **where)
    values = corrections.typed_values(texts, types)
    read = spark.range(1).select(*[v.cast("string").alias(f"v{i}") for i, v in enumerate(values.values())]).first()
    bad = [
        f"{name}={text!r} ({types[name]})"
        for i, (name, text) in enumerate(texts.items())
        if text.upper() != "NULL" and read[f"v{i}"] is None
    ]
    if bad:
        raise InputError(f"--set values are not of their columns' types: {', '.join(bad)}", **where)
    return texts, values


def _derived(spec: TableSpec) -> dict[str, str]:
    """The columns a fix may not set, each with why: they are derived from the source's changes,
    and a version's value of them is its place in the history."""
    instead = "fix the input and rerun the dates instead (`zipper rerun`), or delete the versions"
    derived = {
        name: f"zipper's own validity column, the time each version began or ended; {instead}"
        for name in spec.validity_columns
    }
    if spec.tombstone_column:
        derived[spec.tombstone_column] = f"zipper's own column marking the tombstones of deleted keys; {instead}"
    if spec.source.updated_at:
        derived[spec.source.updated_at] = f"the updated_at column, whose values are the versions' valid_from; {instead}"
    return derived


def _erase_keys(spark, spec: TableSpec, request: Request, types: dict[str, str], where: dict) -> DataFrame:
    """The keys to erase, typed as the table's key columns, from --erase-key or --keys-file."""
    if request.keys_file:
        rows, source = read_keys_file(Path(request.keys_file), spec.keys, **where), f"--keys-file {request.keys_file}"
    else:
        rows, source = [erase_key_values(request.erase_keys, spec.keys, **where)], "--erase-key"
    nested = [k for k in spec.keys if types[k].startswith(("array", "map", "struct", "binary"))]
    if nested:
        raise InputError(f"{source}: a key column of type {types[nested[0]]} cannot be given as text", **where)
    raw = spark.createDataFrame(rows, schema=", ".join(f"`{k}` string" for k in spec.keys))
    typed = corrections.typed_keys(raw, spec.keys, types)
    bad = typed.where(corrections.unread_key(spec.keys)).limit(5).collect()
    if bad:
        shown = "; ".join(
            ", ".join(f"{k}={row[f'raw_{i}']!r} ({types[k]})" for i, k in enumerate(spec.keys)) for row in bad
        )
        raise InputError(f"{source}: keys that are not of the key columns' types: {shown}", **where)
    return typed.select(*[column_ref(k) for k in spec.keys]).distinct().persist()


def _removed(spec: TableSpec, table: DataFrame, selection: Selection, matched: dict[str, int]) -> Rewrite:
    """An erasure or a delete: each partition with a matched version, without them."""
    ends = sorted(matched)
    passed = corrections.removed_partitions(table, selection, ends, spec.keys, spec.end_column)
    zero = {e: 0 for e in ends}
    # every row written must be one the correction passed through: none of the removed ones
    return Rewrite(passed, None, dict(matched), zero, dict(zero), lambda rows: selection.rest(rows, spec.keys))


def _fixed(
    spark, spec: TableSpec, table: DataFrame, selection: Selection, matched: dict[str, int], where: dict
) -> Rewrite:
    """A value fix: the versions of the keys it matches, fixed and coalesced; each partition
    where one changed, with the other keys' rows as they were."""
    keys = selection.matching(table, spec.keys).select(*[column_ref(k) for k in spec.keys]).distinct().persist()
    versions = table.join(keys, spec.keys, "left_semi")
    types = {f.name: f.dataType for f in table.schema.fields}
    data = [c for c in table.columns if c not in (spec.begin_column, spec.end_column)]
    fixed = corrections.fixed_versions(
        versions,
        selection.matched,
        selection.assignments,
        keys=spec.keys,
        begin_column=spec.begin_column,
        end_column=spec.end_column,
        tracked=conform.tracked_columns(spec, data, where["ds"]),
        types=types,
        inclusive=spec.end_style == EndStyle.INCLUSIVE,
        deleted_column=spec.tombstone_column,
        valid_from_column=spec.validity_columns[0] if spec.validity_columns else None,
    ).persist(StorageLevel.MEMORY_AND_DISK)
    by_status: dict[str, dict[str, int]] = {}
    for r in fixed.groupBy(column_ref(spec.end_column), corrections.STATUS).count().collect():
        by_status.setdefault(r[corrections.STATUS], {})[r[spec.end_column]] = int(r["count"])
    changed, absorbed = by_status.get(corrections.CHANGED, {}), by_status.get(corrections.ABSORBED, {})
    ends = sorted(set(changed) | set(absorbed))
    if not ends:
        fixed.unpersist()
        keys.unpersist()
        raise InputError(
            f"{selection.describe}: the {sum(matched.values())} matched versions already hold those values;"
            " nothing was changed",
            **where,
        )
    passed, new = corrections.fixed_partitions(table, fixed, keys, ends, spec.keys, spec.end_column)
    return Rewrite(
        passed,
        new,
        {e: 0 for e in ends},
        {e: absorbed.get(e, 0) for e in ends},
        {e: changed.get(e, 0) for e in ends},
        lambda rows: rows.join(keys, spec.keys, "left_anti"),
        fixed_keys=keys,
        persisted=[fixed, keys],
    )


def _write(
    run: Run, request: Request, selection: Selection, rewrite: Rewrite, intervals: list[tuple[str, str, int]]
) -> tuple[str, str] | None:
    """Write the rewritten partitions under the run's directory, counting and hashing the rows
    passed through as they are read; an erasure's or delete's removed versions' dates (no keys);
    an erasure's salted key hashes."""
    spark, spec, run_root = run.spark, run.spec, run.root
    passed = rewrite.passed.observe(
        rewrite.observation, *corrections.fingerprint(rewrite.passed, rewrite.passed.columns)
    )
    rows = passed if rewrite.changes is None else passed.unionByName(rewrite.changes)
    store.write_slots(rows, run_root)
    for end in rewrite.removed:
        fs.mkdirs(layout.slot_dir(run_root, layout.corrected_slot(end)))  # a partition left with no row
    if request.kind == CorrectionKind.SET:
        return None
    # a later rerun's restore counts the open rows it expects by these (`corrected.removed_open_at`)
    dates = spark.createDataFrame(intervals, "begin string, end string, versions bigint")
    store.write_rows(dates, f"{run_root}/{layout.REMOVED_VERSIONS}", single_file=True)
    if request.kind != CorrectionKind.ERASE:
        return None
    salt = secrets.token_hex(16)
    directory = f"{run_root}/{layout.ERASED_KEYS}"
    hashes = selection.keys.select(corrections.key_hash(spec.keys, salt).alias("key_hash"))
    store.write_rows(hashes, directory, single_file=True)
    return salt, directory


def _audited(run: Run, rewrite: Rewrite, table: DataFrame) -> list[publish.Rewritten]:
    """Check what was written against what was read before publishing (`audit.reconcile_correction`):
    rows per partition (footers), the rows passed through (read back, counted and hashed), and
    the open partition's keys."""
    spark, spec, st, run_root = run.spark, run.spec, run.state, run.root
    where = run.where(st.last_committed)
    by_end = {p.end: p for p in [st.open_partition, *st.closed]}
    ends = sorted(rewrite.removed)
    before_rows = {e: store.rows_in(by_end[e].location) for e in ends}
    directories = {e: layout.slot_dir(run_root, layout.corrected_slot(e)) for e in ends}
    written = {e: store.rows_in(d) for e, d in directories.items()}
    schema = table.drop(spec.end_column).schema
    read_back = store.read_rows(spark, schema, *directories.values())
    read_back = corrections.with_slot_from_path(read_back, spec.end_column)
    outside = rewrite.outside(read_back).select(*[column_ref(c) for c in rewrite.passed.columns])
    after = outside.agg(*corrections.fingerprint(outside, outside.columns)).first()
    before = metrics.observed_metrics(rewrite.observation)
    rewritten = []
    for e in ends:
        counts = {
            "before": before_rows[e],
            "removed": rewrite.removed[e],
            "coalesced": rewrite.coalesced[e],
            "changed": rewrite.changed[e],
            "after": written[e],
        }
        rewritten.append(publish.Rewritten(e, directories[e], written[e], counts))
    open_end = spec.open_end.isoformat()
    keys_twice = 0
    if open_end in directories and rewrite.fixed_keys is not None:
        # an erase or delete only passes open rows through (hashed above); a fix writes its keys' anew
        opened = store.read_rows(spark, schema, directories[open_end])
        keys_twice = corrections.keys_twice(opened, rewrite.fixed_keys, spec.keys).count()
    audit.reconcile_correction(
        end_column=spec.end_column,
        counts={p.end: p.counts for p in rewritten},
        recorded={e: by_end[e].params.get(state.ROWS) for e in ends},
        passed_read=(int(before.get("rows") or 0), int(before.get("hash") or 0)),
        passed_written=(int(after["rows"]), int(after["hash"])),
        open_keys_twice=keys_twice,
        **where,
    )
    return rewritten


def _touched_last(spec: TableSpec, st: state.TableState, ends: list[str]) -> str:
    """The last day a changed version was valid on: the table's date if an open one changed."""
    if spec.open_end.isoformat() in ends:
        return st.last_committed.isoformat()
    last = max(dt.date.fromisoformat(e) for e in ends)
    return (last - dt.timedelta(days=1) if spec.end_style == EndStyle.EXCLUSIVE else last).isoformat()


def _summary(correction: state.Correction, rewritten: list[publish.Rewritten]) -> str:
    c = correction.counts
    done = {
        CorrectionKind.ERASE: f"erased {counted(c['removed'], 'version')} of {counted(correction.keys, 'key')}",
        CorrectionKind.DELETE: f"deleted {counted(c['removed'], 'version')}",
        CorrectionKind.SET: f"fixed {counted(c['changed'], 'version')}"
        + (f", {c['coalesced']} merged into the next" if c["coalesced"] else ""),
    }[correction.kind]
    return (
        f"correction {correction.run_id} published: {done} in {counted(len(rewritten), 'partition')}"
        f" ({c['rows_before']} rows before, {c['rows_after']} after)"
    )


def _shown(value) -> str:
    value = as_written(value)
    return "NULL" if value is None else str(value)
