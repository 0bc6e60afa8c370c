"""The spec's JSON Schema, built by pydantic from the model: what `zipper schema` prints, what
editors check a spec against while it is typed, and what the documentation's reference shows."""

from __future__ import annotations

from typing import Any

from zipper.tablespec.model import TableSpec

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of one spec file, keys spelled as a spec spells them (`source.schema`)."""
    schema = TableSpec.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "zipper table spec",
        **{k: v for k, v in schema.items() if k != "title"},
    }
