"""`zipper adopt`: take over an SCD2 table written by hand as this spec's zipper table, its history
kept, committed through a date so that the next daily merge continues it.

The spec's `adopt:` section names the table and how it writes a version's validity. Every key's
rows must be one chain of versions (at most one open, none overlapping, each holding at least a
day, none after `--through`; gaps only when allowed): anything else is refused in one line that
names the keys, before anything is made. The versions are then written in zipper's layout (the
open partition, a history partition per closing date) and published in one metastore call, each
history partition with a commit record of its closing date; the table's base date is `--through`,
so reruns and merges go on from the date after it. The adopted table is only read."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from pyspark.sql import functions as F

from zipper.core import layout
from zipper.core.errors import InputError, SpecError, StateError
from zipper.core.reports import RunAction
from zipper.inputs import conform
from zipper.jobs.init import created_table
from zipper.jobs.rebuild import audit_slots
from zipper.jobs.result import RunResult, counted
from zipper.table import catalog, publish, recovery, state, store
from zipper.tablespec.adoption import AdoptSpec
from zipper.tablespec.model import VALIDITY_TYPES, TableSpec
from zipper.transforms import adoption
from zipper.transforms.timelines import with_slot

DATE_TYPES = ("date", "string")  # a begin, end or snapshot column's types the adoption reads
NUMBER_DATE_TYPES = ("int", "bigint")  # theirs too with a date_format (20231201)
FLAG_TYPES = ("boolean", "tinyint", "smallint", "int", "bigint")  # a deleted flag's


@dataclass(frozen=True)
class Adopted:
    """The table to take over, read and checked: its rows in one form, its data columns, and how
    many versions each date's run closed (None: the open ones)."""

    normal: object  # DataFrame: the table's rows and adoption.BEGIN, OPEN, END
    columns: list[tuple[str, str]]
    closed_by: dict[dt.date | None, int]
    gaps: int  # keys with a gap between two versions (allowed with allow_gaps)

    @property
    def open_rows(self) -> int:
        return self.closed_by.get(None, 0)

    @property
    def closed_rows(self) -> int:
        return sum(n for day, n in self.closed_by.items() if day is not None)


def adopt(spark, spec: TableSpec, through: dt.date, allow_gaps: bool = False, dry_run: bool = False) -> RunResult:
    """Take over `spec.adopt.table` as of `through` (see the module's docstring). `dry_run`: read
    and check it, say what would be adopted, make nothing."""
    started = time.monotonic()
    where = {"table": spec.table, "ds": through.isoformat()}
    source = _section(spec, where)
    if source.table.lower() == spec.table.lower():
        raise SpecError(
            f"adopt.table is the spec's own table {spec.table}: adopt makes a new table from it and leaves it"
            " as it is; name another `table:` in the spec",
            **where,
        )
    st = state.read_state(spark, spec)
    state.check_owned(st, spec, through)  # a table zipper did not make is never dropped or changed
    if st.initialized:
        raise StateError(
            f"the table exists already (base date {st.init_ds}, at {st.last_committed}); adopt makes a new table:"
            " name another `table:` in the spec; nothing was changed",
            **where,
        )
    adopted = _read(spark, spec, source, through, allow_gaps)
    try:
        return _adopted(spark, spec, st, source, through, adopted, dry_run, started)
    finally:
        adopted.normal.unpersist()


def _adopted(
    spark, spec: TableSpec, st, source: AdoptSpec, through: dt.date, adopted: Adopted, dry_run: bool, started: float
) -> RunResult:
    """The adoption of the table as read and checked: said (a dry run), or written and published."""
    partitions = len([day for day in adopted.closed_by if day is not None])
    said = (
        f"{counted(adopted.open_rows, 'open row')}, {counted(adopted.closed_rows, 'closed row')} in"
        f" {counted(partitions, 'history partition')} from {source.table}"
        + (f"; {counted(adopted.gaps, 'key')} with gaps kept" if adopted.gaps else "")
    )
    counts = {"open_after": adopted.open_rows, "closed": adopted.closed_rows, "partitions": partitions}
    if dry_run:
        return RunResult(
            spec.table,
            through.isoformat(),
            RunAction.ADOPT,
            f"dry run: would adopt {said}; nothing was written",
            counts,
            time.monotonic() - started,
        )

    st, _ = created_table(spark, spec, st, adopted.columns)
    st = recovery.recover(spark, spec, st, through)  # what a killed adopt left: empty partitions
    run_id = state.new_run_id()
    run_root = state.run_dir(st, run_id)
    names = [name for name, _ in catalog.data_columns(spark, spec)]
    rows = adoption.versions(
        adopted.normal,
        columns=names,
        begin_column=spec.begin_column,
        end_column=spec.end_column,
        end_style=spec.end_style,
        open_end=spec.open_end.isoformat(),
        valid_to=(spec.valid_to_column, dict(adopted.columns)[spec.valid_to_column]) if spec.validity_columns else None,
    )
    slotted = with_slot(rows, spec.end_column, spec.open_end.isoformat())
    store.write_slots(slotted.repartition(layout.SLOT), run_root)  # a file per partition

    open_dir = layout.slot_dir(run_root, layout.Slot.OPEN)
    closed_dirs = {
        day: layout.slot_dir(run_root, layout.closed_slot(spec.closed_end(day).isoformat()))
        for day in adopted.closed_by
        if day is not None
    }
    expected = {open_dir: adopted.open_rows} | {closed_dirs[day]: adopted.closed_by[day] for day in closed_dirs}
    audit_slots(spec, through, expected)

    commit = publish.AdoptCommit(
        through,
        run_id,
        run_root,
        open_dir,
        adopted.open_rows,
        closed_dirs,
        {day: adopted.closed_by[day] for day in closed_dirs},
        source.table,
        # a rerun from the day after `through` reads untracked values from the open rows it wrote
        open_kept=bool(
            conform.untracked_columns(spec, names, conform.tracked_columns(spec, names, through.isoformat()))
        ),
    )
    publish.publish_adoption(spark, spec, state.read_state(spark, spec), commit)
    return RunResult(
        spec.table,
        through.isoformat(),
        RunAction.ADOPT,
        f"adopted {said}; committed through {through}",
        counts,
        time.monotonic() - started,
        run_id,
    )


def _section(spec: TableSpec, where: dict) -> AdoptSpec:
    """The spec's `adopt:` section; options whose columns a hand-written table does not hold refused."""
    if spec.adopt is None:
        raise SpecError("the spec has no `adopt:` section naming the table to take over", **where)
    source = spec.adopt
    if source.deleted_column and not spec.source.keeps_tombstones:
        raise SpecError(
            f"adopt.deleted_column {source.deleted_column!r} needs source.hard_deletes: new_record, which keeps"
            " a deleted key's version; nothing was changed",
            **where,
        )
    if bool(source.validity_columns) != bool(spec.source.updated_at):
        raise SpecError(
            "adopt.valid_from_column and valid_to_column name the table's validity columns, which a spec with"
            " source.updated_at needs and one without has no place for; nothing was changed",
            **where,
        )
    return source


def _read(spark, spec: TableSpec, source: AdoptSpec, through: dt.date, allow_gaps: bool) -> Adopted:
    """The table's rows as of `through`, checked; every problem refused in one line."""
    what = f"adopted table {source.table}"
    where = {"table": spec.table, "ds": through.isoformat()}
    if not spark.catalog.tableExists(source.table):
        raise InputError(f"{what} does not exist; nothing was changed", **where)
    rows = store.other_table(spark, source.table)
    types = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in rows.schema.fields}
    mapped = [c for c in (source.begin_column, source.end_column, source.snapshot_column) if c]
    missing = [c for c in [*source.own_columns, *spec.keys] if c.lower() not in types]
    if missing:
        raise InputError(f"{what} lacks the columns {missing}; it has {[n for n, _ in types.values()]}", **where)
    readable = DATE_TYPES + (NUMBER_DATE_TYPES if source.date_format else ())
    wrong = [f"{types[c.lower()][0]} {types[c.lower()][1]}" for c in mapped if types[c.lower()][1] not in readable]
    if wrong:
        written = (
            f"dates, or text or numbers written as {source.date_format}"
            if source.date_format
            else "dates or YYYY-MM-DD text (name adopt.date_format for others, such as yyyyMMdd)"
        )
        raise InputError(f"{what}: the columns {wrong} must be {written}", **where)
    times = [f"{types[c.lower()][0]} {types[c.lower()][1]}" for c in source.validity_columns]
    if any(t.split()[-1] not in VALIDITY_TYPES for t in times):
        raise InputError(f"{what}: the validity columns {times} must be timestamps or dates", **where)
    flag = source.deleted_column
    if flag and types[flag.lower()][1] not in FLAG_TYPES:
        raise InputError(
            f"{what}: the deleted column {flag} {types[flag.lower()][1]} must be a boolean or a number", **where
        )
    own = {c.lower() for c in source.own_columns}
    columns = [(name, kind) for name, kind in types.values() if name.lower() not in own]
    zippers = {c.lower() for c in (spec.begin_column, spec.end_column, *spec.own_columns)}
    clash = [n for n, _ in columns if n.lower() in zippers]
    if clash:
        raise InputError(
            f"{what} has data columns {clash} named as the spec's begin_column, end_column or deleted_column;"
            " name others in the spec",
            **where,
        )
    if source.snapshot_column:
        rows = rows.where(adoption.as_date(source.snapshot_column, source.date_format) == F.lit(through))
    if spec.validity_columns:  # zipper's own columns, from the table's pair; the updated_at column too, if it lacks it
        updated_at = spec.source.updated_at
        valid_from, valid_to = source.validity_columns
        if updated_at.lower() not in {name.lower() for name, _ in columns}:
            rows = rows.withColumn(updated_at, F.col(valid_from))
            columns = [*columns, (updated_at, types[valid_from.lower()][1])]
        kind = dict((n.lower(), k) for n, k in columns)[updated_at.lower()]
        rows = rows.withColumn(spec.valid_from_column, F.col(valid_from).cast(kind)).withColumn(
            spec.valid_to_column, F.col(valid_to).cast(kind)
        )
        columns = [*columns, (spec.valid_from_column, kind), (spec.valid_to_column, kind)]
    if spec.tombstone_column:  # zipper's own column, from the table's flag (none deleted without one)
        deleted = F.coalesce(F.col(flag).cast("boolean"), F.lit(False)) if flag else F.lit(False)
        rows = rows.withColumn(spec.tombstone_column, deleted)
        columns = [*columns, (spec.tombstone_column, "boolean")]
    normal = adoption.normalized(
        rows.select(*[name for name, _ in columns], source.begin_column, source.end_column),
        begin_column=source.begin_column,
        end_column=source.end_column,
        end_style=source.end_style,
        open_end=source.open_end.isoformat() if source.open_end else None,
        date_format=source.date_format,
    ).cache()
    found = {
        r[adoption.PROBLEM]: (r["keys"], list(r["examples"]))
        for r in adoption.problems(
            normal,
            keys=spec.keys,
            end_column=source.end_column,
            open_end=source.open_end.isoformat() if source.open_end else None,
            through=through.isoformat(),
            validity=spec.validity_columns,
        ).collect()
    }
    gaps = found.pop(adoption.Problem.GAP, (0, []))
    if gaps[0] and not allow_gaps:
        found[adoption.Problem.GAP] = gaps
    if found:
        shown = "; ".join(
            f"{counted(n, 'key')} with {problem}: {', '.join(examples)}" + (" ..." if n > len(examples) else "")
            for problem, (n, examples) in sorted(found.items(), key=lambda kv: list(adoption.Problem).index(kv[0]))
        )
        hint = " (pass --allow-gaps to keep gaps: a key deleted, then back)" if adoption.Problem.GAP in found else ""
        raise InputError(f"{what}, keys {spec.keys}: {shown}{hint}; nothing was changed", **where)
    closed_by = {r[adoption.END]: r["count"] for r in adoption.closings(normal).collect()}
    if not closed_by:
        copy = f" has no copy with {source.snapshot_column} = {through}" if source.snapshot_column else " has no rows"
        raise InputError(f"{what}{copy}; nothing was changed", **where)
    return Adopted(normal, columns, closed_by, gaps[0] if allow_gaps else 0)
