"""The zone's layout: where a date's folder is, how its change files are numbered, and the
record of the files a date consumed (`Consumed`), which its commit keeps."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass

from zipper.core import fs
from zipper.tablespec.model import TableSpec
from zipper.tablespec.paths import render, resolve_path

METADATA = "_metadata.json"
FILE_NAME = re.compile(r"^(\d{20})\.parquet$")
KEPT = "zipper_landing"


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


def numbered_files(spark, folder: str | None) -> list:
    """The change files (20-digit names) directly in `folder`, by name; none when it is missing."""
    if not folder:
        return []
    return [f for f in fs.list_files(folder) if number(fs.name_of(f.path)) is not None]
