"""upsert: each row is its key's full new state; with `sequence_by`, a key's rows of one day are
its changes in that order, and the last one stands."""

from __future__ import annotations

import datetime as dt

from zipper.inputs import conform, sources
from zipper.inputs.changeset import CheckedInput, Day, columns_of, materialize
from zipper.inputs.metrics import measure
from zipper.inputs.modes.base import SourceStrategy
from zipper.inputs.refusals import validate_keys, validate_order
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes


class Upsert(SourceStrategy):
    mode = SourceMode.UPSERT
    closes_keys = False

    def empty_counts(self, spec: TableSpec) -> dict:
        """Without `sequence_by` the input rows are the change set: none counted apart."""
        return {"source_rows": 0} if spec.source.sequence_by else {}

    def changes_of(
        self,
        spark,
        spec: TableSpec,
        st,
        ds: dt.date,
        located: sources.Input,
        df,
        table_columns,
        run_root: str,
        what: str,
        checked: bool,
    ) -> Day:
        columns, column_changes = conform.evolve(columns_of(df), table_columns, spec, ds.isoformat(), what)
        rows = conform.to_columns(df, columns)
        sequence = spec.source.sequence_by
        names = [c for c, _ in columns]
        if not sequence:
            seen = measure(rows, names) if checked else validate_keys(rows, spec, ds, what, names, located.paths)
            return Day(
                rows, seen.rows, columns, column_changes, located, variable_bytes_per_row=seen.variable_bytes_per_row
            )
        events = changes.upsert_events(rows, columns=names, order=sequence)
        seen = (
            measure(events, names)
            if checked
            else validate_order(events, spec, ds, what, sequence, names, located.paths)
        )
        flagged = changes.flag_events(events, keys=spec.keys, columns=names, match=None)
        collapsed = changes.collapse(flagged, columns=names, deletes=False)
        result, count, scratch = materialize(spark, collapsed, run_root)
        return Day(
            result,
            count,
            columns,
            column_changes,
            located,
            {"source_rows": seen.rows},
            scratch=[scratch],
            variable_bytes_per_row=seen.variable_bytes_per_row,
        )

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """Ordered changes: their sequence values checked too (`check_read_inputs`)."""
        if spec.source.sequence_by is not None:
            return self.check_read_inputs(spark, spec, located, table_columns)
        return super().check_before_rerun(spark, spec, located, table_columns)
