"""Which files a date consumes: after the last one the table consumed, with no gap and no reset;
for a committed date, the copy its commit kept. And the copy a merge makes of them."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError, UnreadableInputError, summarize_failure
from zipper.inputs import sources
from zipper.inputs.modes.landing_zone.files import (
    KEPT,
    Consumed,
    file_name,
    fingerprint,
    folder_of,
    number,
    numbered_files,
)
from zipper.inputs.modes.landing_zone.keys import check_keys
from zipper.tablespec.model import TableSpec


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


def require_folder(spark, spec: TableSpec, ds: dt.date) -> str:
    """The table's landing-zone folder for `ds`; fails before anything is changed if it is missing."""
    folder = folder_of(spec, ds)
    if not fs.exists(folder):
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
    check_keys(spark, spec, st, folder, ds)
    previous = consumed_before(st, ds)
    last = previous["last"] if previous else 0
    numbered = {number(fs.name_of(f.path)): f for f in fs.list_files(folder)}
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
    fs.mkdirs(kept)
    for f in located.files:
        try:
            fs.copy(f.path, f"{kept}/{fs.name_of(f.path)}")
        except Exception as exc:
            raise UnreadableInputError(
                f"cannot copy {f.path} from the landing zone: {summarize_failure(exc, 200)}"
            ) from None
    files = numbered_files(spark, kept)
    copied = tuple((fs.name_of(f.path), f.size) for f in files)
    if copied != consumed.files:
        raise MissingInputError(f"the landing-zone files changed while they were copied: {copied} != {consumed.files}")
    return replace(located, paths=[f.path for f in files], files=files, landing=replace(consumed, kept=kept))
