"""Landing-zone change files: a folder per table holding `_metadata.json` ({"keyColumns": [...]})
and Parquet files named with 20 digits (`00000000000000000001.parquet`, ...), each row marked
by `__rowMarker__` (0 insert, 1 update, 2 delete, 4 upsert; a file without it is all inserts).

A date consumes every file numbered after the last one the table consumed, up to the highest
present when the merge starts; a gap in the numbering is an error, and so is a zone that was
reset (its files end before the last one consumed, or a file already consumed was written again
with other contents), which the table would otherwise skip without a word. The merge copies
those files under its run directory (`versions/<run_id>/zipper_landing/`) and reads the copy; the
commit record names the range and the copy (`zipper.landing`), so a replay of the date reads
exactly what the first run read, even after the landing zone has been cleaned. `zipper vacuum`
keeps every copy a commit names.

Row order: each row's position comes from Parquet itself (Spark's `_metadata.row_index`, the
row's index in its file, exact however the file is split into tasks), so rows apply in file
order, then row order, with no assumption about how Spark partitions the read."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, replace

import pyarrow.parquet as pq
from pyspark.sql import functions as F

from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError, UnreadableInputError, summarize_failure
from zipper.core.paths import local_path
from zipper.core.properties import P_KEYS
from zipper.inputs import sources
from zipper.inputs.column_checks import refuse_bad_names, refuse_unstorable_types
from zipper.inputs.column_types import float_and_double, reads_as
from zipper.inputs.reader import refuse_empty_parquet
from zipper.tablespec.model import TableSpec
from zipper.tablespec.paths import render, resolve_path

METADATA = "_metadata.json"
FILE_NAME = re.compile(r"^(\d{20})\.parquet$")
MARKER = "__rowmarker__"  # `__rowMarker__`, as every input column, in lower case
MARKER_TEXT = "zipper__marker_text"  # the marker as written, for the message when it is no operation
HELPERS = (MARKER, MARKER_TEXT)  # with FILE and ROW: the columns read() adds to the data columns
KEPT = "zipper_landing"
FILE, ROW = "zipper_file", "zipper_row"


@dataclass(frozen=True)
class Consumed:
    """The files one date consumes: numbers first..last (none when first > last)."""

    folder: str
    first: int
    last: int
    files: tuple[tuple[str, int], ...]  # (name, size), in number order
    kept: str | None = None  # the copy this date reads, once made
    # The newest modification time (the zone's own clock, ms) of any file consumed up to this
    # date: a file numbered up to `last` that is newer was written again after it was consumed.
    modified_ms: int = 0

    def record(self, fingerprint: str) -> dict:
        return {
            "first": self.first,
            "last": self.last,
            "files": len(self.files),
            "bytes": sum(size for _, size in self.files),
            "kept": self.kept,
            "folder": self.folder,
            "fingerprint": fingerprint,
            "modified_ms": self.modified_ms,
        }

    def describe(self) -> str:
        if not self.files:
            return f"{self.folder} (no files after {self.last:020d})"
        return f"{self.folder} files {self.first:020d}..{self.last:020d}"


def number(name: str) -> int | None:
    match = FILE_NAME.match(name)
    return int(match.group(1)) if match else None


def file_name(n: int) -> str:
    return f"{n:020d}.parquet"


def fingerprint(first: int, last: int, files) -> str:
    """The consumed range and the files' names and sizes: the same for the landing zone and the copy."""
    digest = hashlib.sha256(f"landing {first}..{last}\n".encode())
    for name, size in files:
        digest.update(f"{name}\t{size}\n".encode())
    return f"{len(files)}f-{sum(size for _, size in files)}b-{digest.hexdigest()[:24]}"


def folder_of(spec: TableSpec, ds: dt.date) -> str:
    return resolve_path(render(spec.source.path, ds, "source.path", spec), spec)


def key_columns(spark, folder: str, spec: TableSpec | None = None, ds: dt.date | None = None) -> list[str] | None:
    """`keyColumns` of the folder's `_metadata.json`, in lower case; None without the file.
    Errors name the table and date when given."""
    where = {"table": spec.table if spec else None, "ds": ds.isoformat() if ds else None}
    path = folder.rstrip("/") + "/" + METADATA
    if not fs.exists(spark, path):
        return None
    try:
        keys = json.loads(fs.read_text(spark, path)).get("keyColumns")
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


def _check_keys(spark, spec: TableSpec, st, folder: str, ds: dt.date) -> None:
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


def consumed_before(st, ds: dt.date) -> dict | None:
    """The landing record of the latest commit before `ds` (None when there is none), or of a
    date an interrupted replay restored away, to commit again before `ds`."""
    if st is None or not st.exists:
        return None
    earlier = {d: c.landing for d, c in st.commits.items() if d < ds.isoformat() and c.landing}
    if st.replay is not None:
        earlier.update({d: record for d, record in st.replay.landing.items() if d < ds.isoformat()})
    return earlier[max(earlier)] if earlier else None


def _refuse_reset(spark, st, folder: str, previous: dict | None, numbered: dict, where: dict) -> None:
    """Fails when the zone no longer continues the files the table consumed: it ends before the
    last one consumed, or a consumed file was written again (newer than every consumed file)
    with a size other than the kept copy's. A file only copied or touched keeps its size."""
    if previous is None or not numbered:
        return
    last = previous["last"]
    if max(numbered) < last:
        raise InputError(
            f"landing zone {folder} ends at {file_name(max(numbered))}, but the table has consumed"
            f" files up to {file_name(last)}: the zone was reset or its newest files removed;"
            " nothing was changed",
            **where,
        )
    seen = previous.get("modified_ms") or 0
    newer = sorted(n for n, f in numbered.items() if n <= last and seen and f.modified_ms > seen)
    for n in newer:
        commit = next(
            (c for c in st.commits.values() if c.landing and c.landing["first"] <= n <= c.landing["last"]), None
        )
        kept = dict(_kept_sizes(spark, commit.landing)) if commit is not None else {}
        if kept.get(file_name(n)) != numbered[n].size:
            consumed = (
                f"the table consumed it on {commit.ds} with {kept[file_name(n)]} bytes"
                if file_name(n) in kept
                else "the table consumed it before, and its kept copy is gone"
            )
            raise InputError(
                f"landing zone {folder}: {file_name(n)} was written again after it was consumed"
                f" ({numbered[n].size} bytes now; {consumed}): the zone was reset or rewritten;"
                " nothing was changed",
                **where,
            )


def _kept_sizes(spark, record: dict) -> list[tuple[str, int]]:
    return [(fs.name_of(f.path), f.size) for f in numbered_files(spark, record.get("kept"))]


def numbered_files(spark, folder: str | None) -> list:
    """The change files (20-digit names) directly in `folder`, by name; none when it is missing."""
    if not folder:
        return []
    return [f for f in fs.list_files(spark, folder) if number(fs.name_of(f.path)) is not None]


def require_folder(spark, spec: TableSpec, ds: dt.date) -> str:
    """The table's landing-zone folder for `ds`; fails before anything is changed if it is missing."""
    folder = folder_of(spec, ds)
    if not fs.exists(spark, folder):
        raise MissingInputError(
            f"landing zone not found: {folder}; nothing was changed", table=spec.table, ds=ds.isoformat()
        )
    return folder


def locate(spark, spec: TableSpec, st, ds: dt.date) -> sources.Input:
    """The files `ds` consumes: for a committed date the kept copy its commit names, otherwise
    every file after the last consumed one, checked for gaps and for a change of keyColumns."""
    where = {"table": spec.table, "ds": ds.isoformat()}
    commit = st.commits.get(ds.isoformat()) if st is not None and st.exists else None
    if commit is not None and commit.landing:
        return _kept(spark, spec, commit.landing, commit.fingerprint, ds)
    replaying = st.replay if st is not None and st.exists else None
    if replaying is not None and ds.isoformat() in replaying.landing:  # restored away, to be replayed
        record = replaying.landing[ds.isoformat()]
        return _kept(spark, spec, record, record["fingerprint"], ds)
    folder = require_folder(spark, spec, ds)
    _check_keys(spark, spec, st, folder, ds)
    previous = consumed_before(st, ds)
    last = previous["last"] if previous else 0
    numbered = {number(fs.name_of(f.path)): f for f in fs.list_files(spark, folder)}
    numbered.pop(None, None)
    _refuse_reset(spark, st, folder, previous, numbered, where)
    new = sorted(n for n in numbered if n > last)
    if new:
        missing = sorted(set(range(last + 1, new[-1] + 1)) - set(new))
        if missing:
            shown = ", ".join(file_name(n) for n in missing[:5]) + (
                f" ... ({len(missing)} files)" if len(missing) > 5 else ""
            )
            raise MissingInputError(
                f"landing zone {folder}: numbering has a gap after"
                f" {file_name(last) if last else 'the start'}: missing {shown}",
                **where,
            )
    files = [numbered[n] for n in new]
    modified = max([f.modified_ms for f in files] + [(previous or {}).get("modified_ms") or 0])
    consumed = Consumed(
        folder,
        last + 1,
        new[-1] if new else last,
        tuple((fs.name_of(f.path), f.size) for f in files),
        modified_ms=modified,
    )
    return sources.Input(
        consumed.describe(),
        "parquet",
        [f.path for f in files],
        files,
        fingerprint(consumed.first, consumed.last, consumed.files),
        landing=consumed,
    )


def _kept(spark, spec: TableSpec, record: dict, recorded_fingerprint: str, ds: dt.date) -> sources.Input:
    kept = record.get("kept")
    files = numbered_files(spark, kept)
    consumed = Consumed(
        record.get("folder", ""),
        record["first"],
        record["last"],
        tuple((fs.name_of(f.path), f.size) for f in files),
        kept,
        record.get("modified_ms") or 0,
    )
    found = fingerprint(consumed.first, consumed.last, consumed.files)
    if found != recorded_fingerprint:
        raise InputError(
            f"the copy of the landing-zone files {record['first']:020d}..{record['last']:020d} kept at"
            f" {kept} is missing or changed; the date cannot be read again",
            table=spec.table,
            ds=ds.isoformat(),
        )
    return sources.Input(
        f"{consumed.describe()} (kept copy)", "parquet", [f.path for f in files], files, found, landing=consumed
    )


def keep(spark, located: sources.Input, run_root: str) -> sources.Input:
    """Copy the consumed files under the run directory (unless they are a kept copy already) and
    return the input that reads the copy."""
    consumed = located.landing
    if consumed.kept is not None or not located.files:
        return located
    kept = f"{run_root}/{KEPT}"
    fs.mkdirs(spark, kept)
    for f in located.files:
        try:
            fs.copy(spark, f.path, f"{kept}/{fs.name_of(f.path)}")
        except Exception as exc:
            raise UnreadableInputError(
                f"cannot copy {f.path} from the landing zone: {summarize_failure(exc, 200)}"
            ) from None
    files = numbered_files(spark, kept)
    copied = tuple((fs.name_of(f.path), f.size) for f in files)
    if copied != consumed.files:
        raise MissingInputError(f"the landing-zone files changed while they were copied: {copied} != {consumed.files}")
    return replace(located, paths=[f.path for f in files], files=files, landing=replace(consumed, kept=kept))


def read(spark, spec: TableSpec, located: sources.Input, ds: dt.date):
    """The consumed files as one DataFrame: every column any file has (types reconciled by safe
    widening), MARKER (0 for a file without one), FILE (its name) and ROW (its position in the
    file). Returns (rows, {file name: its columns}) so that callers can check what each file lacks."""
    where = {"table": spec.table, "ds": ds.isoformat()}
    # the zone, not the run's kept copy, names a file for the user
    origin = getattr(located.landing, "folder", None) or located.description
    refuse_empty_parquet(located.files, f"landing zone {origin}", numbered=True, **where)
    schemas, by_signature, spark_schemas = {}, {}, {}
    for f, signature in _signatures(located.files, where, origin).items():
        if signature not in by_signature:  # one Spark schema read per distinct file schema
            spark_schema = _spark_schema(spark, f.path, where, origin)
            by_signature[signature] = _fields(spark_schema, f.path, where)
            spark_schemas[json.dumps(by_signature[signature])] = spark_schema
        schemas[f.path] = by_signature[signature]
    union = _union_types(schemas, where, [k.lower() for k in spec.keys])
    refuse_bad_names(list(union), spec, ds.isoformat(), f"landing zone {origin}")
    parts = []
    for paths, fields in _groups(schemas).items():
        df = spark.read.schema(spark_schemas[json.dumps(fields)]).parquet(*paths)
        have = {lower: original for original, lower, _ in fields}
        selected = [
            (F.col(f"`{have[name]}`").cast(kind) if name in have else F.lit(None).cast(kind)).alias(name)
            for name, kind in union.items()
            if name != MARKER
        ]
        written = F.col(f"`{have[MARKER]}`") if MARKER in have else F.lit(0)
        # Spark's file metadata by its logical name: a data column `_metadata` hides `F.col("_metadata")`
        metadata = df.metadataColumn("_metadata")
        # try_cast: a marker written as text ('X') is reported as a bad marker, not a failed cast
        parts.append(
            df.select(
                *selected,
                written.try_cast("int").alias(MARKER),
                written.cast("string").alias(MARKER_TEXT),
                metadata["file_name"].alias(FILE),
                metadata["row_index"].alias(ROW),
            )
        )
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    refuse_unstorable_types(rows, spec, ds.isoformat(), f"landing zone {origin}")
    columns = {fs.name_of(path): [lower for _, lower, _ in fields] for path, fields in schemas.items()}
    return rows, columns


def _signatures(files: list[fs.FileInfo], where: dict, origin: str) -> dict:
    """Each file's schema as a comparable string, from its footer (pyarrow) when the files are
    local; remote files are each their own signature (Spark reads each one's schema)."""
    local = [local_path(f.path) for f in files]
    if not all(local):
        return {f: f.path for f in files}
    signatures = {}
    for f, path in zip(files, local):
        try:
            signatures[f] = pq.read_schema(path).remove_metadata().to_string(show_field_metadata=False)
        except Exception as exc:
            raise UnreadableInputError(
                f"cannot read landing-zone file {fs.name_of(f.path)} of {origin}:"
                f" {str(exc).strip().splitlines()[0][:300]}",
                **where,
            ) from None
    return signatures


def _spark_schema(spark, path: str, where: dict, origin: str):
    try:
        return spark.read.parquet(path).schema
    except Exception as exc:
        raise UnreadableInputError(
            f"cannot read landing-zone file {fs.name_of(path)} of {origin}: {summarize_failure(exc, 300)}", **where
        ) from None


def _fields(schema, path: str, where: dict) -> list[tuple[str, str, str]]:
    """(name, lower-case name, Spark type) of a Parquet file's columns, as Spark reads them."""
    names = [field.name.lower() for field in schema.fields]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise InputError(f"landing-zone file {path} has columns that differ only in case: {clashes}", **where)
    return [(field.name, field.name.lower(), field.dataType.simpleString()) for field in schema.fields]


def columns_of(spark, spec: TableSpec, located: sources.Input, ds: dt.date) -> list[tuple[str, str]]:
    """The data columns the consumed files hold (without the marker), for a table created from them."""
    if not located.files:
        return []
    rows, _ = read(spark, spec, located, ds)
    return [(f.name, f.dataType.simpleString()) for f in rows.schema.fields if f.name not in (*HELPERS, FILE, ROW)]


def _groups(schemas: dict[str, list]) -> dict[tuple[str, ...], list]:
    """Files with the same columns, read together."""
    groups: dict[str, list[str]] = {}
    fields_of = {}
    for path, fields in schemas.items():
        signature = json.dumps(fields)
        groups.setdefault(signature, []).append(path)
        fields_of[signature] = fields
    return {tuple(paths): fields_of[signature] for signature, paths in groups.items()}


def _union_types(schemas: dict[str, list], where: dict, keys: list[str]) -> dict[str, str]:
    """One type per column over the files, by safe widening; a key never mixes float and double
    (0.1 as a float and 0.1 as a double are different keys)."""
    union: dict[str, str] = {}
    seen_in: dict[str, str] = {}
    for path, fields in schemas.items():
        for _, name, kind in fields:
            if name in keys and float_and_double(union.get(name), kind):
                raise InputError(
                    f"landing-zone key column {name!r} has type {union[name]} in"
                    f" {fs.name_of(seen_in[name])} and {kind} in {fs.name_of(path)}; a float key and a"
                    " double key are different values",
                    **where,
                )
            if name not in union or union[name] == kind or reads_as(kind, union[name]):
                union.setdefault(name, kind)
                seen_in.setdefault(name, path)
            elif reads_as(union[name], kind) or union[name] == "void":
                union[name] = kind
            elif kind != "void":
                raise InputError(
                    f"landing-zone column {name!r} has type {union[name]} in {fs.name_of(seen_in[name])}"
                    f" and {kind} in {fs.name_of(path)}",
                    **where,
                )
    return union
