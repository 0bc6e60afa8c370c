"""Every version of one key, read from the table's Parquet files with pyarrow: no JVM, no Spark.

For pages that answer "what did this key look like, and when" in a second (the Airflow view's key
lookup). The committed state says which directories are live (the open partition and each closed
one); only those are read, each with a filter on the key. It is bounded: a table too big to scan
here, or a scan that runs out of time, is refused with the command that answers it through Spark
(`zipper history`), never half answered."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from zipper.core.errors import InputError
from zipper.core.paths import local_path
from zipper.table.state import TableState
from zipper.tablespec.model import TableSpec

MAX_BYTES = int(os.environ.get("ZIPPER_LOOKUP_MAX_BYTES", 2 << 30))  # 2 GiB of Parquet
MAX_FILES = int(os.environ.get("ZIPPER_LOOKUP_MAX_FILES", 20_000))
MAX_SECONDS = float(os.environ.get("ZIPPER_LOOKUP_MAX_SECONDS", 10))


class LookupRefused(InputError):
    """The lookup would not answer in time here (too many files or bytes, remote storage, or out
    of time): the message names `zipper history`, which answers it through Spark."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_BYTES
    max_files: int = MAX_FILES
    max_seconds: float = MAX_SECONDS


def key_versions(spec: TableSpec, state: TableState, key: dict[str, str], limits: Limits = Limits()) -> list[dict]:
    """Every version of `key` ({column: text}), oldest first, as JSON-ready dicts (the end column
    from the partition). Raises InputError for a key that does not name the key columns or does
    not read as their types, LookupRefused when the table is too large to scan here."""
    _check_key_columns(spec, key)
    started = time.monotonic()
    partitions = [state.open_partition, *state.closed] if state.open_partition else []
    files_by_end = {part.end: _parquet_files(spec, part.location) for part in partitions}
    _check_size(spec, key, files_by_end, limits)
    versions: list[dict] = []
    for end, files in files_by_end.items():
        if time.monotonic() - started > limits.max_seconds:
            raise LookupRefused(_too_large(spec, key, f"it took over {limits.max_seconds:g} s"), table=spec.table)
        if not files:
            continue
        dataset = ds.dataset([str(f) for f, _ in files], format="parquet")
        found = dataset.to_table(filter=_key_filter(spec, dataset.schema, key))
        for row in found.to_pylist():
            row[spec.end_column] = end
            versions.append({name: _json_value(value) for name, value in row.items()})
    return sorted(versions, key=lambda v: (str(v.get(spec.begin_column)), str(v.get(spec.end_column))))


def _check_key_columns(spec: TableSpec, key: dict[str, str]) -> None:
    if set(key) != set(spec.keys):
        raise InputError(
            f"a key lookup names every key column once: {', '.join(spec.keys)} (given: {', '.join(key) or 'none'})",
            table=spec.table,
        )


def _parquet_files(spec: TableSpec, location: str) -> list[tuple[Path, int]]:
    """The data files of one partition directory, with their sizes (not Spark's `_SUCCESS` or `.crc`)."""
    path = local_path(location)
    if path is None:
        raise LookupRefused(
            f"the table's files are not on this machine ({location}): use `zipper history {spec.name} --key ...`",
            table=spec.table,
        )
    folder = Path(path)
    if not folder.is_dir():
        return []
    return sorted(
        (entry, entry.stat().st_size)
        for entry in folder.rglob("*")
        if entry.is_file() and not entry.name.startswith(("_", ".")) and not entry.name.endswith(".crc")
    )


def _check_size(spec: TableSpec, key: dict[str, str], files_by_end: dict, limits: Limits) -> None:
    files = [size for found in files_by_end.values() for _, size in found]
    if len(files) > limits.max_files:
        raise LookupRefused(_too_large(spec, key, f"it has {len(files)} files"), table=spec.table)
    if sum(files) > limits.max_bytes:
        raise LookupRefused(_too_large(spec, key, f"it holds {sum(files) / 2**30:.1f} GiB"), table=spec.table)


def _too_large(spec: TableSpec, key: dict[str, str], why: str) -> str:
    given = " ".join(f"--key {k}={v}" for k, v in key.items())
    return f"the table is too large for a lookup here ({why}): run `zipper history {spec.name} {given}`"


def _key_filter(spec: TableSpec, schema: pa.Schema, key: dict[str, str]) -> pc.Expression:
    condition = None
    for column in spec.keys:
        value = _typed(spec, column, schema.field(column).type, key[column])
        term = pc.field(column) == pa.scalar(value, schema.field(column).type)
        condition = term if condition is None else condition & term
    return condition


def _typed(spec: TableSpec, column: str, arrow_type: pa.DataType, text: str):
    """`text` as a value of the key column's type (binary keys given as base64, as `zipper history` takes them)."""
    try:
        if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
            return base64.b64decode(text, validate=True)
        value = pc.cast(pa.scalar(text.strip()), arrow_type)
        if pa.types.is_decimal(arrow_type) and decimal.Decimal(text.strip()) != value.as_py():
            raise ValueError("more places than the column")  # rounding would name another key
        return value.as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, decimal.InvalidOperation, binascii.Error):
        raise InputError(f"key {column}={text!r} is not a {arrow_type} value", table=spec.table) from None


def _json_value(value):
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value
