"""A day's input fingerprinted without Spark: `sources.locate` and `sources.fingerprint` for the
inputs whose listing plain Python can give exactly as Hadoop does (core.localfs).

Local files only (`file:` URIs or absolute paths), Parquet, CSV or ORC, no reader option that
leaves files out, not a landing zone and not a Hive table. Anything else, and anything the merge
would refuse (no match, a write still under way), is `Unknown`: the caller asks Spark."""

from __future__ import annotations

import datetime as dt

from zipper.core import localfs
from zipper.core.localfs import Unknown
from zipper.inputs import sources
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.tablespec.paths import render, resolve_path, spec_key

FORMATS = ("parquet", "csv", "orc")

__all__ = ["FORMATS", "Unknown", "increment_fingerprint", "supported"]


def supported(spec: TableSpec) -> bool:
    """Whether the spec's increments can be fingerprinted here at all (their paths may still not be)."""
    source = spec.source
    return (
        source.mode is not SourceMode.LANDING_ZONE
        and source.format in FORMATS
        and bool(source.path)
        and not sources.filters_files(source.options)
    )


def increment_fingerprint(spec: TableSpec, ds: dt.date) -> str:
    """The fingerprint `sources.locate` gives the increment of `ds` (the strategy's `locate` of
    every mode but the landing zone), or `Unknown`."""
    if not supported(spec):
        raise Unknown(f"{spec.table}: its source is not one this listing reads")
    source = spec.source
    rendered = resolve_path(render(source.path, ds, f"{spec_key(source)}.path", spec), spec)
    matches = localfs.glob(rendered)
    if not matches:
        if source.skips_missing_input:  # as the strategy's `locate`: a date skipped for want of input
            return sources.NO_INPUT
        raise Unknown(f"{rendered}: not found (the merge says so)")
    if localfs.unfinished_writes(matches):
        raise Unknown(f"{rendered}: still being written (the merge says so)")
    return sources.fingerprint(localfs.list_data_files(matches))
