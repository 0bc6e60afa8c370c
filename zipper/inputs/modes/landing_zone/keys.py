"""The zone's own key columns (`_metadata.json`'s `keyColumns`): a spec may leave its keys to
them, and they may never change under a table."""

from __future__ import annotations

import datetime as dt
import json

from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError
from zipper.core.properties import P_KEYS
from zipper.inputs.modes.landing_zone.files import METADATA, folder_of
from zipper.tablespec.model import TableSpec


def key_columns(spark, folder: str, spec: TableSpec | None = None, ds: dt.date | None = None) -> list[str] | None:
    """`keyColumns` of the folder's `_metadata.json`, in lower case; None without the file.
    Errors name the table and date when given."""
    where = {"table": spec.table if spec else None, "ds": ds.isoformat() if ds else None}
    path = folder.rstrip("/") + "/" + METADATA
    if not fs.exists(path):
        return None
    try:
        keys = json.loads(fs.read_text(path)).get("keyColumns")
    except (ValueError, AttributeError) as exc:
        raise InputError(f"{path} is not a JSON object with keyColumns: {exc}", **where) from None
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise InputError(f"{path}: keyColumns must be a non-empty list of column names, got {keys!r}", **where)
    return [k.lower() for k in keys]


def resolve_keys(spark, spec: TableSpec, recorded: str = "") -> TableSpec:
    """The spec with its keys: as given, else the table's (`recorded`: its key property, once
    created), else `keyColumns`."""
    if spec.keys:
        return spec
    if recorded:
        return spec.with_keys(recorded.split(","))
    folder = folder_of(spec, spec.start_date)
    keys = key_columns(spark, folder, spec)
    if keys is None:
        raise MissingInputError(
            f"the spec has no keys and {folder}/{METADATA} is missing; give `keys:` or keyColumns", table=spec.table
        )
    return spec.with_keys(keys)


def check_keys(spark, spec: TableSpec, st, folder: str, ds: dt.date) -> None:
    keys = key_columns(spark, folder, spec, ds)
    if keys is None:
        return
    recorded = st.properties.get(P_KEYS, "") if st is not None and st.exists else ""
    table_keys = recorded.split(",") if recorded else list(spec.keys)
    if keys != table_keys:
        what = "the table's keys" if recorded else "the spec's keys"
        raise InputError(
            f"{folder}/{METADATA} keyColumns {keys} differ from {what} {table_keys}; key columns"
            " cannot change (recreate the table to change them)",
            table=spec.table,
            ds=ds.isoformat(),
        )
