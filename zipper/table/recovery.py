"""Crash recovery: finish what a killed run left in the table's metastore entry.

A run publishes in one metastore call, so a kill leaves at most two kinds of debris: columns
its publish recorded but did not add yet, and empty partitions added but never published.
Every job that changes a table calls `recover` first."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import StateError
from zipper.table import catalog, state, store
from zipper.tablespec.model import TableSpec


def recover(spark, spec: TableSpec, st: state.TableState, ds: dt.date) -> state.TableState:
    """Finish what a killed run left: columns its publish recorded but did not add to the table
    yet, and empty partitions that were added but never published."""
    complete_columns(spark, spec, st)
    if not st.pending:
        return st
    stray = [p for p in st.pending if store.rows_in(p.location) > 0]
    if stray:
        raise StateError(
            f"partitions {[p.end for p in stray]} hold data but no zipper commit record;"
            f" see `zipper check {spec.name}`",
            table=spec.table,
            ds=ds.isoformat(),
        )
    catalog.drop_partitions(spark, spec, [p.end for p in st.pending])
    return state.read_state(spark, spec)


def complete_columns(spark, spec: TableSpec, st: state.TableState) -> bool:
    """Add (or widen) the columns the last commit recorded and the table lacks: what a run
    killed between its publish and its ALTER left undone. True when it changed the table."""
    if not st.initialized:
        return False
    recorded = st.recorded_column_change
    if recorded["renamed"] or recorded["dropped"]:
        return _complete_alter(spark, spec, recorded)
    if not (recorded["added"] or recorded["widened"]):
        return False
    current = catalog.data_columns(spark, spec)
    wanted = dict(recorded["widened"])
    columns = [(name, wanted.get(name, kind)) for name, kind in current]
    columns += [(name, kind) for name, kind in recorded["added"] if name not in dict(current)]
    if columns == current:
        return False
    catalog.alter_data_columns(spark, spec, columns)
    return True


def _complete_alter(spark, spec: TableSpec, recorded: dict) -> bool:
    """Rename or drop the columns a `zipper alter` published files without, if the table still
    has them: its partitions already hold the new files, so the table's columns follow them."""
    completed = catalog.complete_data_columns(spark, spec)  # a drop killed between its two column calls
    have = {name for name, _ in catalog.data_columns(spark, spec)}
    edits: dict[str, str | None] = {old: new for old, new in recorded["renamed"] if old in have and new not in have}
    edits.update({name: None for name, _ in recorded["dropped"] if name in have})
    if not edits:
        return completed
    catalog.edit_data_columns(spark, spec, edits)
    return True
