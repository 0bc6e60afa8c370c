"""upsert: each row is its key's full new state; with `sequence_by`, a key's rows of one day are
its changes in that order, and the last one stands; with `updated_at`, each one stands in turn."""

from __future__ import annotations

import datetime as dt

from zipper.inputs import conform
from zipper.inputs.changeset import CheckedInput, KeyChanges, latest_events, open_rows_of, versioned
from zipper.inputs.modes.base import DayRead, SourceStrategy
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes


class Upsert(SourceStrategy):
    mode = SourceMode.UPSERT
    closes_keys = False

    def empty_counts(self, spec: TableSpec) -> dict:
        """Without `sequence_by` the input rows are the change set: none counted apart."""
        return {"source_rows": 0} if spec.source.order_column else {}

    def rebuilds_in_one_pass(self, spec: TableSpec) -> bool:
        """Each row is its key's full state on its date; with `sequence_by`, a key's rows of a date
        collapse to its last, as its merge collapses them. With `source.updated_at` every change is a
        version whose validity the one pass does not compute."""
        return not spec.validity_columns

    def has_day_events(self, spec: TableSpec) -> bool:
        """With `sequence_by` a key's rows of a date are its changes; without, its full state."""
        return spec.source.order_column is not None

    def one_pass_events(self, spec: TableSpec, df, columns: list[tuple[str, str]]):
        """The rows as changes ordered by the sequence column."""
        names = [c for c, _ in columns]
        return changes.upsert_events(
            conform.to_columns(df, columns), columns=names, order=spec.source.order_column
        ), None

    def writes_change_set(self, spec: TableSpec) -> bool:
        """Without `sequence_by` the input rows are the change set as they are."""
        return spec.source.order_column is not None

    def changes_of(self, day: DayRead):
        """The rows as they are; with `sequence_by`, each key's last change of the day."""
        spec, names = day.spec, day.names
        rows = conform.to_columns(day.df, day.columns)
        sequence = spec.source.order_column
        if not sequence:
            return rows, self.seen_in(day, rows, ordered=False), {}
        events = changes.upsert_events(rows, columns=names, order=sequence)
        seen = self.seen_in(day, events, ordered=True)
        if spec.validity_columns:  # every change kept, as its own version
            open_rows = open_rows_of(day.rows, day.columns) if spec.source.fills_null_updates else None
            latest = latest_events(day.rows, day.columns, spec, events, seen)
            changed = KeyChanges(spec, day.ds, day.what, events, day.columns, {}, deletes=False)
            kept = versioned(changed, open_rows, latest=latest)
            return kept, seen, {}
        flagged = changes.flag_events(self.filled(spec, events, names), keys=spec.keys, columns=names, match=None)
        return changes.collapse(flagged, columns=names, deletes=False), seen, {}

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """Ordered changes: their sequence values checked too (`check_read_inputs`)."""
        if spec.source.order_column is not None:
            return self.check_read_inputs(spark, spec, located, table_columns)
        return super().check_before_rerun(spark, spec, located, table_columns)
