"""snapshot: each day is the complete current source; the change set is its difference from the
open rows (with `hard_deletes: invalidate`, a key that vanished is closed)."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import MissingInputError
from zipper.inputs import conform, sources
from zipper.inputs.changeset import float_precision
from zipper.inputs.modes.base import DayRead, SourceStrategy
from zipper.inputs.refusals import where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes


class Snapshot(SourceStrategy):
    mode = SourceMode.SNAPSHOT
    complete_source = True

    def refuse_empty(self, spec: TableSpec, ds: dt.date, located: sources.Input) -> None:
        """No files would close every open key: an empty source must still say its columns."""
        if located.empty:
            raise MissingInputError(
                f"snapshot {located.description} has no files; an empty source must still be a"
                " file with its columns (every open key would be closed)",
                **where_of(spec, ds),
            )

    def changes_of(self, day: DayRead):
        """The difference between the snapshot and the open rows."""
        spec, st = day.spec, day.st
        rows = conform.to_columns(day.df, day.columns)
        seen = self.seen_in(day, rows, ordered=False)
        open_rows = day.spark.read.schema(conform.struct_type(day.columns)).parquet(st.open_partition.location)
        diff = changes.snapshot_changes(
            open_rows,
            rows,
            keys=spec.keys,
            columns=day.names,
            invalidate=spec.source.invalidate_missing,
            float_precision=float_precision(st, day.columns, day.column_changes),
            deleted=spec.tombstone_column,
        )
        return diff, seen, {}
