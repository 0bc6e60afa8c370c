"""Is the day's increment there? One check per source kind, without Spark and without Airflow.

The signal is what the merge accepts: for file sources, the rendered path (a glob) matching at
least one file or folder (an empty folder is an empty increment, a day with no change); for a
Hive table source, the partition existing in the metastore (asked over thrift of the warehouse's
metastore server, without a JVM). Producers should therefore create an increment folder
only when it is complete (write elsewhere, then rename); a folder a Spark or Hadoop job is still
writing into (it holds `_temporary`) is not ready, and the merge refuses it.

The kinds of check are a closed set of this module's own (`SourceKind`), not asked of the mode
strategies in `zipper.inputs.modes`: those import pyspark when imported, and DAG files must parse
without it (the Airflow adapter never imports the data path). A new source kind adds a member
and its check in `CHECKS`, which must name every member."""

from __future__ import annotations

import datetime as dt
import glob
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path

from zipper.core import input_names
from zipper.core.hms import MetastoreClient
from zipper.core.paths import user_path
from zipper.runtime import metastore
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat, SourceMode
from zipper.tablespec.paths import parse_partition, render, resolve_path

LOCAL_SCHEMES = ("", "file")
REMOTE_ALIASES = {"s3a": "s3", "s3n": "s3"}


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checked: str  # what was looked at, for the task log
    # there, but still being written: not a missing input, which `on_missing_input: skip` skips
    writing: bool = False


class ExternalMetastore(Exception):
    """The partition can only be checked in the metastore; the caller (the sensor) does that."""

    def __init__(self, table: str, partition: dict[str, str]):
        self.table = table
        self.partition = partition
        super().__init__(f"{table} partition {partition}")


class SourceKind(StrEnum):
    """What the readiness check looks at: files matching the path, a landing zone's folder of
    change files, or a Hive table's partition in the metastore."""

    FILES = "files"
    LANDING_ZONE = "landing_zone"
    TABLE = "table"


def kind_of(spec: TableSpec) -> SourceKind:
    """The check a source needs. Landing-zone sources are folders of change files."""
    if spec.source.mode is SourceMode.LANDING_ZONE:
        return SourceKind.LANDING_ZONE
    return SourceKind.TABLE if spec.source.format == SourceFormat.TABLE else SourceKind.FILES


def _scheme(path: str) -> str:
    head = path.split("://", 1)[0] if "://" in path else ""
    return head.lower()


def _remote_fs(path: str):
    """An fsspec filesystem for hdfs://, s3a://, gs://, ... paths; a clear error if none is installed."""
    scheme = _scheme(path)
    protocol = REMOTE_ALIASES.get(scheme, scheme)
    try:
        import fsspec  # optional: only remote (hdfs://, s3a://, ...) inputs need it

        return fsspec.filesystem(protocol), protocol + path[len(scheme) :]
    except (ImportError, ValueError) as exc:
        raise RuntimeError(
            f"cannot check {path}: no fsspec filesystem for {scheme}:// here ({exc}); install the fsspec"
            " implementation for it, or set `airflow: {sensor: {enabled: false}}` in the spec"
        ) from None


def matches(path: str) -> list[str]:
    """Files or folders matching a (glob) path, local or remote."""
    if _scheme(path) in LOCAL_SCHEMES:
        return sorted(glob.glob(user_path(path)))
    fs, url = _remote_fs(path)
    return sorted(fs.glob(url))


def _is_data_file(name: str) -> bool:
    return not input_names.is_hidden(name)


def data_files(path: str) -> list[str]:
    """Data files (not `_metadata.json`, `_SUCCESS` or hidden files) under the matching paths."""
    found = []
    for match in matches(path):
        if _scheme(path) in LOCAL_SCHEMES:
            if os.path.isfile(match):
                found += [match] if _is_data_file(os.path.basename(match)) else []
                continue
            for root, _dirs, files in os.walk(match):
                found += [os.path.join(root, f) for f in files if _is_data_file(f)]
        else:
            fs, _ = _remote_fs(path)
            found += [f for f in fs.find(match) if _is_data_file(f.rsplit("/", 1)[-1])]
    return sorted(found)


def source_path(spec: TableSpec, ds: dt.date) -> str:
    return resolve_path(render(spec.source.path, ds, "source.path", spec), spec)


def unfinished_writes(path: str, found: list[str]) -> list[str]:
    """What a write still under way keeps in the matched folders (`input_names.unfinished_writes`
    decides, as for the merge, which refuses such a folder)."""
    remote = _scheme(path) not in LOCAL_SCHEMES
    fs = _remote_fs(path)[0] if remote else None

    def folder_of(match: str) -> str:
        is_dir = fs.isdir(match) if remote else os.path.isdir(match)
        return match if is_dir else match.rstrip("/").rsplit("/", 1)[0]

    def names_in(folder: str) -> list[str]:
        if remote:
            return [n.rstrip("/").rsplit("/", 1)[-1] for n in fs.ls(folder, detail=False)]
        return os.listdir(folder)

    unfinished = set()
    for folder in {folder_of(match) for match in found}:  # a glob of files names their folder once
        unfinished.update(input_names.unfinished_writes(folder, partial(names_in, folder)))
    return sorted(unfinished)


def check_files(spec: TableSpec, ds: dt.date, warehouse: Path) -> Readiness:
    """Ready when the rendered path matches and no job is still writing into it (a Spark job
    writing straight to the day's folder makes the folder before its first file is committed)."""
    path = source_path(spec, ds)
    found = matches(path)
    unfinished = unfinished_writes(path, found)
    if unfinished:
        return Readiness(
            False, f"{path} (still being written: it holds {unfinished[0].rsplit('/', 1)[-1]})", writing=True
        )
    return Readiness(bool(found), path)


def check_landing_zone(spec: TableSpec, ds: dt.date, warehouse: Path) -> Readiness:
    """Landing zones keep one folder per table; the day is there when any data file is."""
    path = source_path(spec, ds)
    return Readiness(bool(data_files(path)), f"data files under {path}")


def check_table(spec: TableSpec, ds: dt.date, warehouse: Path) -> Readiness:
    """The partition (or, unpartitioned, the table) in the metastore, as the merge reads it:
    - `local` (the default): asked of the warehouse's metastore server over thrift, no JVM here;
    - `external`: the caller asks the metastore (ExternalMetastore)."""
    source = spec.source
    partition = parse_partition(render(source.partition, ds, "source.partition", spec)) if source.partition else {}
    if metastore.mode() == metastore.MetastoreMode.EXTERNAL:
        raise ExternalMetastore(source.table, partition)
    return check_table_over_thrift(source.table, partition, metastore.MetastoreService(warehouse).ensure().uri)


def check_table_over_thrift(table: str, partition: dict[str, str], uri: str) -> Readiness:
    """Whether the metastore at `uri` has the table's partition (or, for `{}`, the table)."""
    database, name = table.split(".")
    described = table + (f" partition {partition}" if partition else "")
    with MetastoreClient(uri) as client:
        found = client.table(database, name)
        if found is None:
            return Readiness(False, f"{described} (no such table yet in the metastore at {uri})")
        if not partition:
            return Readiness(True, f"{table} in the metastore at {uri}")
        columns = [column.name.lower() for column in found.partitionKeys or []]
        values = {key.lower(): value for key, value in partition.items()}
        if sorted(values) != sorted(columns):
            # as the merge refuses it: waiting could never end
            raise ValueError(
                f"source.partition names {sorted(values)}, but {table} is"
                + (f" partitioned by {columns}: name each of them" if columns else " not partitioned")
            )
        part = client.partition(database, name, values)
    if part is None:
        return Readiness(False, f"{described} (not yet in the metastore at {uri})")
    return Readiness(True, f"{described} at {part.sd.location} (metastore at {uri})")


CHECKS: dict[SourceKind, Callable[[TableSpec, dt.date, Path], Readiness]] = {
    SourceKind.FILES: check_files,
    SourceKind.TABLE: check_table,
    SourceKind.LANDING_ZONE: check_landing_zone,
}
assert set(CHECKS) == set(SourceKind), "every source kind needs its readiness check"


def check_increment(spec: TableSpec, ds: dt.date, warehouse: Path) -> Readiness:
    return CHECKS[kind_of(spec)](spec, ds, warehouse)
