"""snapshot: each day is the complete current source; the change set is its difference from the
open rows (with `hard_deletes: invalidate`, a key that vanished is closed)."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import MissingInputError
from zipper.inputs import conform, sources
from zipper.inputs.changeset import Day, columns_of, float_precision, materialize
from zipper.inputs.metrics import measure
from zipper.inputs.modes.base import SourceStrategy
from zipper.inputs.refusals import validate_keys, where_of
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
        names = [c for c, _ in columns]
        seen = measure(rows, names) if checked else validate_keys(rows, spec, ds, what, names, located.paths)
        open_rows = spark.read.schema(conform.struct_type(columns)).parquet(st.open_partition.location)
        diff = changes.snapshot_changes(
            open_rows,
            rows,
            keys=spec.keys,
            columns=names,
            invalidate=spec.source.invalidate_missing,
            float_precision=float_precision(st, columns, column_changes),
        )
        result, count, scratch = materialize(spark, diff, run_root)
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
