"""The checks of the consumed rows that need no open rows: their markers, their columns (keys
present, none of the table's own, update rows carrying every column); and the rows as events."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from zipper.core.errors import InputError
from zipper.inputs import conform
from zipper.inputs.modes.landing_zone.read import FILE, HELPERS, MARKER, MARKER_TEXT, ROW
from zipper.inputs.refusals import where_of
from zipper.tablespec.model import VALIDITY_TYPES, TableSpec
from zipper.transforms import changes


def landing_events(rows, columns: list[tuple[str, str]], updated_at: str | None = None):
    """A landing zone's rows (`read.read`, markers checked) as events of the table's `columns`;
    with `updated_at` (a column of `columns`), ordered by it rather than by file and row."""
    return changes.landing_events(
        conform.to_columns(rows, columns, keep=(MARKER, FILE, ROW)),
        columns=[c for c, _ in columns],
        marker=MARKER,
        file=FILE,
        row=ROW,
        order=updated_at,
    )


def refuse_updated_at(spec: TableSpec, ds: dt.date, what: str, columns: list[tuple[str, str]]) -> None:
    """With `source.updated_at`, the zone's files must have that column, typed date or timestamp:
    it orders a key's changes across the day's files and becomes the versions' valid_from."""
    updated_at = spec.source.updated_at
    if not updated_at:
        return
    kind = dict(columns).get(updated_at)
    if kind is None:
        raise InputError(f"{what} lacks the updated_at column {updated_at!r}", **where_of(spec, ds))
    if kind not in VALIDITY_TYPES:
        raise InputError(
            f"{what} updated_at column {updated_at!r} has type {kind}; it must be a date or timestamp",
            **where_of(spec, ds),
        )


def bad_markers(rows):
    return changes.bad_markers(rows, marker=MARKER, written=MARKER_TEXT, file=FILE, row=ROW)


def refuse_markers(bad, spec: TableSpec, ds: dt.date, what: str) -> None:
    """The refusal of the rows (collected `changes.bad_markers`) whose marker is no operation."""
    if bad:
        shown = "; ".join(
            f"{r['marker'] if r['marker'] is not None else 'NULL'} in {r['file']} row {r['row'] + 1}" for r in bad
        )
        raise InputError(
            f"{what} has __rowMarker__ values other than 0 insert, 1 update, 2 delete, 4 upsert: {shown}",
            **where_of(spec, ds),
        )


def landing_columns(spec: TableSpec, ds: dt.date, what: str, rows, file_columns: dict) -> list[tuple[str, str]]:
    """The data columns of a landing zone's files as `read.read` gives them, once every file
    has the keys and none has the table's own columns."""
    for name, present in file_columns.items():
        lacking = [k for k in spec.keys if k not in present]
        if lacking:
            raise InputError(f"{what}: file {name} lacks key columns {lacking}", **where_of(spec, ds))
    input_columns = [
        (f.name, f.dataType.simpleString()) for f in rows.schema.fields if f.name not in (*HELPERS, FILE, ROW)
    ]
    for reserved in (spec.begin_column, spec.end_column, *spec.own_columns):
        if reserved in dict(input_columns):
            raise InputError(f"{what} must not contain the table's own column {reserved!r}", **where_of(spec, ds))
    return input_columns


def refuse_partial_updates(rows, spec: TableSpec, ds: dt.date, what: str, file_columns: dict, table_names: list[str]):
    """Update and upsert rows carry the full row: a file that has them must have every table column
    (but zipper's own, which the merge writes)."""
    own = spec.own_columns
    lacking = {
        name: [c for c in table_names if c not in present and c not in own] for name, present in file_columns.items()
    }
    lacking = {name: missing for name, missing in lacking.items() if missing}
    if not lacking:
        return
    offending = (
        rows.where(F.col(FILE).isin(*lacking) & F.col(MARKER).isin(1, 4))
        .select(FILE)
        .distinct()
        .orderBy(FILE)
        .limit(5)
        .collect()
    )
    if offending:
        name = offending[0][FILE]
        raise InputError(
            f"{what}: file {name} has update or upsert rows (which carry the full row) but lacks"
            f" columns {lacking[name]}",
            **where_of(spec, ds),
        )


def landing_order():
    """The order of a landing zone's changes (`changes.landing_events`): file, then row."""
    return F.struct(F.col(FILE), F.col(ROW))
