"""cdc: each row is a change with an operation (`op_column`: 0 insert or update, 1 delete); with
`sequence_by`, a key's changes of one day apply in that order."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from zipper.core import fs
from zipper.core.errors import InputError
from zipper.inputs import conform, sources
from zipper.inputs.changeset import CheckedInput, KeyChanges, collapsed, latest_events, open_rows_of, versioned
from zipper.inputs.modes.base import DayRead, SourceStrategy
from zipper.inputs.refusals import CDC_PREVIOUS, where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes


class Cdc(SourceStrategy):
    mode = SourceMode.CDC
    previous_change = CDC_PREVIOUS
    checks_open_rows = True  # a delete must match its key's open row

    def leave_out(self, spec: TableSpec) -> tuple[str, ...]:
        return (spec.source.operation_column,)

    def problem_counts(self, spec: TableSpec) -> dict:
        return {"deletes_of_absent_keys": 0}

    def refused_within_day(self, spec: TableSpec) -> list[str]:
        """A delete that does not match the key's previous change (delete_match: all_columns)."""
        if spec.source.order_column and spec.source.deletes_need_all_columns:
            return [changes.DELETE_MISMATCH]
        return []

    def rebuilds_in_one_pass(self, spec: TableSpec) -> bool:
        """Each key's changes of a date collapse to one, as its merge collapses them; with
        `source.updated_at` every change is a version whose validity the one pass does not compute."""
        return not spec.validity_columns

    def has_day_events(self, spec: TableSpec) -> bool:
        return True

    def one_pass_events(self, spec: TableSpec, df, columns: list[tuple[str, str]]):
        return self.events(spec, df, columns)

    def check_dated_operations(self, spec: TableSpec, read: dict) -> None:
        """Every date's operation column there (no job), then its values in one job: the earliest
        date with a value other than 0 and 1 refused as its merge refuses it (`check_operations`)."""
        op, bad = spec.source.operation_column, None
        for ds in sorted(read):
            located, df = read[ds]
            if op not in df.columns:
                self.check_operations(spec, ds, located, df, f"increment {located.description}")
            found = changes.bad_operations(df, op_column=op).select(F.lit(ds.isoformat()).alias("ds"))
            bad = found if bad is None else bad.unionByName(found)
        first = bad.orderBy("ds").limit(1).collect() if bad is not None else []
        if first:
            ds = dt.date.fromisoformat(first[0]["ds"])
            located, df = read[ds]
            self.check_operations(spec, ds, located, df, f"increment {located.description}")

    def check_operations(self, spec: TableSpec, ds: dt.date, located: sources.Input, df, what: str) -> None:
        """A cdc input has its operation column, holding only 0 and 1."""
        where = where_of(spec, ds)
        op = spec.source.operation_column
        if op not in df.columns:
            files = ", ".join(fs.name_of(f.path) for f in located.files[:5]) or located.description
            raise InputError(
                f"{what} has no operation column {op!r} (0 insert or update, 1 delete); files: {files}", **where
            )
        bad = changes.bad_operations(df, op_column=op).distinct().limit(5).collect()
        if bad:
            kind = df.schema[op].dataType.simpleString()
            typed = "" if kind in ("tinyint", "smallint", "int", "bigint", "string") else f" ({kind})"  # 0.0 is not 0
            shown = "; ".join(
                f"{r['op'] if r['op'] is not None else 'NULL'}{typed} in"
                f" {fs.name_of(r['file']) if r['file'] else located.description}"
                for r in sorted(bad, key=lambda r: (r["op"] is None, r["op"] or "", r["file"] or ""))
            )
            raise InputError(f"{what} has {op} values other than 0 (insert or update) and 1 (delete): {shown}", **where)

    def events(self, spec: TableSpec, df, columns: list[tuple[str, str]]):
        """A cdc input (operations checked) as events of the table's `columns`, and the columns a
        delete must carry: all but the keys, the sequence (which orders, and so differs) and the
        validity columns (the merge's own), or None."""
        op, sequence, names = spec.source.operation_column, spec.source.order_column, [c for c, _ in columns]
        match = (
            [c for c in names if c not in spec.keys and c != sequence and c not in spec.own_columns]
            if spec.source.deletes_need_all_columns
            else None
        )
        events = changes.cdc_events(
            conform.to_columns(df, columns, keep=(op,)), op_column=op, columns=names, order=sequence
        )
        return events, match

    def changes_of(self, day: DayRead):
        """Each key's one change of the day; with `sequence_by`, the state its last change leaves,
        the problems between its changes refused or counted first."""
        spec, names = day.spec, day.names
        sequence = spec.source.order_column
        events, match = self.events(spec, day.df, day.columns)
        counts = self.problem_counts(spec)
        seen = self.seen_in(day, events, ordered=bool(sequence))
        if not sequence:
            return changes.single_changes(events, columns=names, match=match), seen, counts
        if spec.validity_columns:  # every change kept, as its own version
            open_rows = open_rows_of(day.rows, day.columns) if spec.source.fills_null_updates else None
            latest = latest_events(day.rows, day.columns, spec, events, seen)
            changed = KeyChanges(
                spec, day.ds, day.what, events, day.columns, counts, match, CDC_PREVIOUS, self.reports_anomalies
            )
            kept = versioned(changed, open_rows, latest=latest)
            return kept, seen, counts
        filled = self.filled(spec, events, names)
        collapsed_events = collapsed(
            KeyChanges(spec, day.ds, day.what, filled, day.columns, counts, match, CDC_PREVIOUS, self.reports_anomalies)
        )
        return collapsed_events, seen, counts

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        return self.check_read_inputs(spark, spec, located, table_columns)
