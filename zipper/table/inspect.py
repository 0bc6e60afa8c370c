"""Read-only views of a zipper table: status, as-of slices, the history of one key."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from decimal import Decimal, InvalidOperation

from pyspark.sql import functions as F

from zipper.core import sqltemplates
from zipper.core.errors import InputError, StateError
from zipper.core.keyvalues import parse_key_values
from zipper.table import catalog, state
from zipper.table import status as table_status
from zipper.tablespec.model import TableSpec

# Spark's name of the binary type: a key of this type is given to history as base64, not cast
BINARY_TYPE = "binary"
# the prefixes of Spark's nested types: history takes no value for a key of one of them
NESTED_TYPES = ("array", "map", "struct")


def require_initialized(spark, spec: TableSpec) -> state.TableState:
    return table_status.initialized(state.read_state(spark, spec), spec, _metastore(spark))


def _metastore(spark) -> str:
    """Where the session looked for tables, in the words a user can check."""
    uri = spark.conf.get(catalog.URIS_CONF, "") or ""
    if uri.startswith("thrift://127.0.0.1:"):
        return f"warehouse {spark.conf.get('spark.sql.warehouse.dir')}"
    return "the configured (external) metastore"


def status(spark, spec: TableSpec, recent: int = 10) -> dict:
    return table_status.report(require_initialized(spark, spec), spec, recent)


def slice_as_of(spark, spec: TableSpec, as_of: dt.date):
    st = require_initialized(spark, spec)
    if as_of > st.last_committed:
        raise StateError(f"table is only committed up to {st.last_committed}", table=spec.table, ds=as_of.isoformat())
    if st.init_ds and as_of < st.init_ds and not st.adopted_from:  # an adopted table holds its history
        raise StateError(
            f"table starts at its base date {st.init_ds}; it holds nothing as of an earlier date",
            table=spec.table,
            ds=as_of.isoformat(),
        )
    return spark.sql(
        sqltemplates.render(
            "slice_as_of.sql",
            table=spec.table,
            keys=spec.keys,
            begin_column=spec.begin_column,
            end_column=spec.end_column,
            end_style=spec.end_style,
            as_of=as_of.isoformat(),
        )
    )


def parse_key(spec: TableSpec, pairs: list[str]) -> dict[str, str]:
    return parse_key_values(
        pairs, spec.keys, flag="--key", twice="one version history is of one key", same_twice=True, table=spec.table
    )


def typed_key(spark, spec: TableSpec, key: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The --key values checked against the key columns' types, and those types, for history.sql
    to compare typed values (`id=007` finds key 7, `0` finds a double key -0.0, as the merge
    compares keys): `id=abc` on a bigint key is an error rather than a history of no versions.
    A binary key is given as base64, as slice and history write it."""
    types = dict(catalog.data_columns(spark, spec))
    nested = [k for k in spec.keys if types[k].startswith(NESTED_TYPES)]
    if nested:
        raise InputError(
            f"--key {nested[0]}: history cannot take a value for a key column of type"
            f" {types[nested[0]]}; query the table (docs/querying.md)",
            table=spec.table,
        )
    scalar = [k for k in spec.keys if types[k] != BINARY_TYPE]
    cast = _as_typed_text(spark, {k: key[k] for k in scalar}, types)
    bad = [
        f"{k}={key[k]!r} ({types[k]})"
        for k in scalar
        if cast[k] is None or (types[k].startswith("decimal") and _rounded(key[k], cast[k]))
    ]
    bad += [
        f"{k}={key[k]!r} (binary, given as base64)"
        for k in spec.keys
        if types[k] == BINARY_TYPE and not _base64(key[k])
    ]
    if bad:
        raise InputError(f"--key values are not of the key columns' types: {', '.join(bad)}", table=spec.table)
    return {k: cast[k] if k in scalar else key[k] for k in spec.keys}, {k: types[k] for k in spec.keys}


def _as_typed_text(spark, values: dict[str, str], types: dict[str, str]) -> dict[str, str | None]:
    """Each value read as its column's type and written back as Spark writes it (None where it
    does not read), in one Spark query."""
    if not values:
        return {}
    return (
        spark.range(1)
        .select(*[F.lit(v).try_cast(types[k]).cast("string").alias(k) for k, v in values.items()])
        .first()
        .asDict()
    )


def _rounded(text: str, typed: str) -> bool:
    """A value with more places than its decimal key column: Spark's cast rounds `1.004` to the
    column's `1.00`, another key. (Text Python does not read as a decimal is left to Spark.)"""
    try:
        return Decimal(text.strip()) != Decimal(typed)
    except InvalidOperation:
        return False


def _base64(text: str) -> bool:
    """Whether `text` is base64 (the whole of it), as a binary key's value must be."""
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error:
        return False
    return True


def history(spark, spec: TableSpec, key: dict[str, str]):
    require_initialized(spark, spec)
    key, types = typed_key(spark, spec, key)
    query = sqltemplates.render(
        "history.sql",
        table=spec.table,
        keys=spec.keys,
        types=types,
        begin_column=spec.begin_column,
        end_column=spec.end_column,
    )
    return spark.sql(query, args={f"key{i}": key[k] for i, k in enumerate(spec.keys)})
