"""snapshot: each day is the complete current source; the change set is its difference from the
open rows (with `hard_deletes: invalidate`, a key that vanished is closed)."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import InputError, MissingInputError
from zipper.inputs import conform, sources
from zipper.inputs.changeset import Day, DayRequest, float_precision
from zipper.inputs.modes.base import DayRead, SourceStrategy
from zipper.inputs.refusals import key_text, value_text, where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes, snapshots


class Snapshot(SourceStrategy):
    mode = SourceMode.SNAPSHOT
    complete_source = True

    def rebuilds_in_one_pass(self, spec: TableSpec) -> bool:
        """Each row is its key's full state, and a key a snapshot lacks is deleted on its date: one
        pass computes either (`timelines`). With `source.updated_at` a version's validity comes from
        its rows' timestamps, which the one pass does not compute."""
        return not spec.validity_columns

    def snapshot_dates(self, spec: TableSpec, base_ds: dt.date, located: dict[dt.date, sources.Input]) -> tuple:
        """With `hard_deletes` closing missing keys, the base's date and every date with a
        snapshot; a date skipped for want of one closes nothing."""
        if not spec.source.invalidate_missing:
            return ()
        return (base_ds.isoformat(), *[d.isoformat() for d in sorted(located) if not located[d].missing])

    def refuse_empty(self, spec: TableSpec, ds: dt.date, located: sources.Input) -> None:
        """No files would close every open key: an empty source must still say its columns."""
        if located.empty:
            raise MissingInputError(
                f"snapshot {located.description} has no files; an empty source must still be a"
                " file with its columns (every open key would be closed)",
                **where_of(spec, ds),
            )

    def changes_of(self, day: DayRead):
        """The difference between the snapshot and the open rows; with `source.updated_at`, as the
        day's versions (`snapshots.snapshot_versions`), once no row would rewrite history."""
        spec = day.spec
        rows = conform.to_columns(day.df, day.columns)
        seen = self.seen_in(day, rows, ordered=False)
        open_rows = day.rows.open(conform.struct_type(day.columns))
        validity = spec.validity_columns
        diff = snapshots.snapshot_changes(
            open_rows,
            rows,
            keys=spec.keys,
            columns=[c for c in day.names if c not in validity],  # the merge's own, not the snapshot's
            invalidate=spec.source.invalidate_missing,
            float_precision=float_precision(day.widened_from_float, day.columns, day.column_changes),
            deleted=spec.tombstone_column,
        )
        if not validity:
            return diff, seen, {}
        versions = snapshots.snapshot_versions(
            diff,
            columns=day.names,
            updated_at=spec.source.updated_at,
            validity=validity,
            day_end=(day.ds + dt.timedelta(days=1)).isoformat(),
            open_end=spec.open_end.isoformat(),
        )
        return versions, seen, {}

    def change_set(self, request: DayRequest, ds: dt.date) -> Day:
        """The change set of `ds`; with `source.updated_at`, once none of its rows would rewrite
        history (`refuse_history`)."""
        day = super().change_set(request, ds)
        if request.spec.validity_columns and day.changes is not None:
            self.refuse_history(request, ds, day)
        return day

    def refuse_history(self, request: DayRequest, ds: dt.date, day: Day) -> None:
        """A snapshot row whose updated_at is NULL, older than its key's open version, or as old
        with other values: a snapshot holds each key's current row, not its history. Only the
        change set's rows can be such (a row equal to its open version is as new as it), so the
        check reads them and the open rows of their keys, after the change set is written."""
        spec = request.spec
        open_rows = request.rows.open(conform.struct_type(day.columns))
        found = (
            snapshots.snapshot_history(
                open_rows,
                day.changes.where(day.changes[changes.OP] == changes.UPSERT).select(*day.names),
                keys=spec.keys,
                tracked=conform.tracked_columns(spec, day.names, ds.isoformat()),
                updated_at=spec.source.updated_at,
                valid_from=spec.validity_columns[0],
                deleted=spec.tombstone_column,
            )
            .limit(HISTORY_EXAMPLES + 1)
            .collect()
        )
        if not found:
            return
        shown = "; ".join(
            f"{key_text([row], spec.keys)} at {value_text(row['zipper_from'])}"
            + (f", open since {value_text(row['zipper_open_from'])}" if row["zipper_open_from"] is not None else "")
            for row in found[:HISTORY_EXAMPLES]
        )
        more = " (and more)" if len(found) > HISTORY_EXAMPLES else ""
        raise InputError(
            f"increment {day.located.description} has rows whose {spec.source.updated_at} is NULL, older than"
            f" their key's open version ({spec.validity_columns[0]}), or as old with other values; a snapshot"
            f" holds each key's current row, not its history; keys {spec.keys}: {shown}{more}; nothing was changed",
            **where_of(spec, ds),
        )


HISTORY_EXAMPLES = 5
