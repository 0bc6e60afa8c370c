"""The spec's key columns, which a landing zone's spec may leave to the zone itself."""

from __future__ import annotations

from zipper.inputs import landing
from zipper.tablespec.model import TableSpec


def resolve_keys(spark, spec: TableSpec) -> TableSpec:
    """The spec with its key columns (a landing zone's spec may leave them to `_metadata.json`)."""
    return spec if spec.keys else landing.resolve_keys(spark, spec)
