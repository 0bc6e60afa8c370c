"""landing_zone: a folder of numbered Parquet change files, each row marked as an insert, update,
delete or upsert; a date consumes the files the table has not (see the package's docstring)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from functools import reduce

from zipper.inputs import conform, sources
from zipper.inputs.changeset import (
    CheckedInput,
    Day,
    DayRequest,
    KeyChanges,
    collapsed,
    evolved_columns,
    latest_events,
    open_rows_of,
    versioned,
)
from zipper.inputs.dated_checks import check_dated_keys, check_within_days, dated_keys
from zipper.inputs.modes.base import SourceStrategy
from zipper.inputs.modes.landing_zone import keys, locate, read
from zipper.inputs.modes.landing_zone.checks import (
    bad_markers,
    landing_columns,
    landing_events,
    landing_order,
    refuse_markers,
    refuse_partial_updates,
    refuse_updated_at,
)
from zipper.inputs.refusals import ANOMALY_COUNTS, LANDING_PREVIOUS
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes
from zipper.transforms.timelines import DS, dated


class LandingZone(SourceStrategy):
    mode = SourceMode.LANDING_ZONE
    located_when_due = True  # what a date consumes depends on what the table consumed before
    reports_anomalies = True
    previous_change = LANDING_PREVIOUS
    checks_open_rows = True  # an insert of an open key, an update or delete of an absent one

    def locate(self, spark, spec: TableSpec, st, ds: dt.date) -> sources.Input:
        """What the table did not consume before (a committed date's: the copy kept at its commit)."""
        return locate.locate(spark, spec, st, ds)

    def resolve_keys(self, spark, spec: TableSpec, recorded: str = "") -> TableSpec:
        """A spec may leave its keys to the table's, else to the zone's `_metadata.json`."""
        return keys.resolve_keys(spark, spec, recorded)

    def replay_inputs(self, spark, spec: TableSpec, st, dates: list[dt.date], found: dict) -> tuple[dict, dict]:
        """What a date consumes depends on what the table consumed before: a date the table never
        consumed is located when its turn comes, after the date before it is committed. The first
        such date is checked now as the zone is (as the committed dates, replayed, will leave the
        table); its merge locates it again, and checks what files arrive meanwhile."""
        restored = st.replay.landing if st.replay is not None else {}
        up_front = [d for d in dates if d.isoformat() in st.commits or d.isoformat() in restored]
        replayed, _ = super().replay_inputs(spark, spec, st, up_front, found)
        if len(up_front) == len(dates):
            return replayed, {}
        locate.require_folder(spark, spec, dates[len(up_front)])
        return replayed, self.locate_dates(spark, spec, [dates[len(up_front)]], st)

    def replay_records(self, replayed: dict) -> dict[str, dict]:
        """The kept copies the replayed dates read: a resumed replay reads them again, even once
        the restore has removed the commits that named them."""
        return {
            d.isoformat(): inp.landing.record(inp.fingerprint)
            for d, inp in replayed.items()
            if inp.landing is not None and inp.landing.kept
        }

    def commit_record(self, located: sources.Input) -> dict | None:
        """The range of files consumed and the copy kept of them, so that the date reads the same."""
        return located.landing.record(located.fingerprint) if located.landing is not None else None

    def problem_counts(self, spec: TableSpec) -> dict:
        return {"anomalies": 0, **dict.fromkeys(ANOMALY_COUNTS.values(), 0)}

    def refused_within_day(self, spec: TableSpec) -> list[str]:
        """A key's changes that do not fit its state, with on_anomaly: error."""
        return list(ANOMALY_COUNTS) if spec.source.anomalies_are_errors else []

    def first_columns(
        self, spark, spec: TableSpec, located: sources.Input, ds: dt.date
    ) -> list[tuple[str, str]] | None:
        return conform.with_validity(spec, read.columns_of(spark, spec, located, ds)) if located.files else None

    def change_set(self, request: DayRequest, ds: dt.date) -> Day:
        """The change set of the consumed files, read from their copy under the run's directory;
        `request.keep`: a filter of the rows read (a replayed date's files without the keys erased
        since)."""
        spark, spec, table_columns, keep = request.spark, request.spec, request.table_columns, request.keep
        located = locate.keep(spark, request.located, request.rows.run_root)
        request = dataclasses.replace(request, located=located)
        what = f"landing zone {located.description}"
        conform.missing_own_columns(spec, table_columns, ds.isoformat())
        counts = {**self.problem_counts(spec), "source_rows": 0, "files": len(located.files)}
        if not located.files:
            return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, counts)
        rows, file_columns = read.read(spark, spec, located, ds)
        if keep is not None:
            rows = keep(rows)
        refuse_markers(bad_markers(rows).limit(5).collect(), spec, ds, what)
        input_columns = conform.with_validity(spec, landing_columns(spec, ds, what, rows, file_columns))
        refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in table_columns])
        columns, column_changes = conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)
        names = [c for c, _ in columns]
        refuse_updated_at(spec, ds, what, columns)
        events = landing_events(rows, columns, spec.source.updated_at)
        seen = self.seen(spec, ds, located, what, events, names, checked=False, ordered=True)
        counts["source_rows"] = seen.rows
        if spec.validity_columns:  # every change kept, as its own version, in updated_at order
            open_rows = open_rows_of(request.rows, columns) if spec.source.fills_null_updates else None
            latest = latest_events(request.rows, columns, spec, events, seen)
            changed = KeyChanges(
                spec, ds, what, events, columns, counts, None, LANDING_PREVIOUS, self.reports_anomalies
            )
            kept = versioned(changed, open_rows, latest=latest)
            return self.day_of(request, kept, seen, counts, columns, column_changes)
        filled = self.filled(spec, events, names)
        collapsed_events = collapsed(
            KeyChanges(spec, ds, what, filled, columns, counts, None, LANDING_PREVIOUS, self.reports_anomalies)
        )
        return self.day_of(request, collapsed_events, seen, counts, columns, column_changes)

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """The checks of `change_set` that need no open rows, for the landing-zone inputs of several
        dates: each file's schema from its footer and the files' types reconciled; the markers, in
        one job over every date's rows; in date order (the table's columns as the dates before leave
        them), keys present, the types against the table's, update rows with every column; the NULL
        keys, in one job; with on_anomaly: error, the anomalies between a key's changes within the day
        (`check_within_days`), in one job. The merge of each date reads its files again: none is
        returned as read."""
        read_rows = {ds: read.read(spark, spec, located[ds], ds) for ds in sorted(located) if located[ds].files}
        if not read_rows:
            return {}
        descriptions = {ds.isoformat(): f"landing zone {located[ds].description}" for ds in read_rows}
        markers = [bad_markers(rows) for rows, _ in read_rows.values()]
        marked = reduce(
            lambda a, b: a.unionByName(b),
            [dated(bad, bad.columns, ds.isoformat()) for ds, bad in zip(read_rows, markers)],
        )
        bad = marked.orderBy(DS, "file", "row").limit(5).collect()
        if bad:
            first = bad[0][DS]
            refuse_markers([r for r in bad if r[DS] == first], spec, dt.date.fromisoformat(first), descriptions[first])
        columns, keyed, flagged = list(table_columns), [], {}
        refused = self.refused_within_day(spec)
        for ds, (rows, file_columns) in read_rows.items():
            what = descriptions[ds.isoformat()]
            input_columns = conform.with_validity(spec, landing_columns(spec, ds, what, rows, file_columns))
            refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in columns])
            columns = evolved_columns(spec, ds, input_columns, columns, what)
            refuse_updated_at(spec, ds, what, columns)
            updated_at = spec.source.updated_at  # orders the changes (dated_keys: the order column)
            keyed.append(dated_keys(rows, spec, columns, ds, None if updated_at else landing_order()))
            if refused:  # the anomalies need only the keys and the actions (and their order)
                key_columns = [(c, kind) for c, kind in columns if c in spec.keys or c == updated_at]
                flagged[ds] = changes.flag_events(
                    landing_events(rows, key_columns, updated_at), keys=spec.keys, columns=spec.keys, match=None
                )
        roots = {ds.isoformat(): list(located[ds].paths) for ds in read_rows}
        check_dated_keys(reduce(lambda a, b: a.unionByName(b), keyed), spec, descriptions, roots=roots)
        # then every date's changes, in one job
        check_within_days(spec, flagged, descriptions, LANDING_PREVIOUS, refused, self.reports_anomalies)
        return {}
