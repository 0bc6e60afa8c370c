"""The spec's key columns, which a source mode may let a spec leave to its source."""

from __future__ import annotations

from zipper.inputs.modes import mode_of
from zipper.table import catalog, state
from zipper.tablespec.model import TableSpec


def resolve_keys(spark, spec: TableSpec) -> TableSpec:
    """The spec with its key columns (a landing zone's spec may leave them to `_metadata.json`)."""
    if spec.keys:
        return spec
    recorded = catalog.table_properties(spark, spec).get(state.P_KEYS, "") if catalog.table_exists(spark, spec) else ""
    return mode_of(spec).resolve_keys(spark, spec, recorded)
