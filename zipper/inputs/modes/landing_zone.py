"""landing_zone: a folder of numbered Parquet change files, each row marked as an insert, update,
delete or upsert (see `inputs.landing`); a date consumes the files the table has not."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import reduce

from pyspark.sql import functions as F

from zipper.core.errors import InputError
from zipper.inputs import conform, landing, sources
from zipper.inputs.changeset import CheckedInput, Day, collapsed, evolved_columns, materialize
from zipper.inputs.dated_checks import check_dated_keys, check_within_days, dated_keys
from zipper.inputs.modes.base import SourceStrategy
from zipper.inputs.refusals import ANOMALY_COUNTS, LANDING_PREVIOUS, validate_order, where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes
from zipper.transforms.timelines import DS, dated


class LandingZone(SourceStrategy):
    mode = SourceMode.LANDING_ZONE
    located_when_due = True  # what a date consumes depends on what the table consumed before
    reports_anomalies = True
    previous_change = LANDING_PREVIOUS

    def locate(self, spark, spec: TableSpec, st, ds: dt.date) -> sources.Input:
        """What the table did not consume before (a committed date's: the copy kept at its commit)."""
        return landing.locate(spark, spec, st, ds)

    def problem_counts(self, spec: TableSpec) -> dict:
        return {"anomalies": 0, **dict.fromkeys(ANOMALY_COUNTS.values(), 0)}

    def refused_within_day(self, spec: TableSpec) -> list[str]:
        """A key's changes that do not fit its state, with on_anomaly: error."""
        return list(ANOMALY_COUNTS) if spec.source.anomalies_are_errors else []

    def first_columns(
        self, spark, spec: TableSpec, located: sources.Input, ds: dt.date
    ) -> list[tuple[str, str]] | None:
        return landing.columns_of(spark, spec, located, ds) or None

    def change_set(
        self,
        spark,
        spec: TableSpec,
        st,
        ds: dt.date,
        located: sources.Input,
        table_columns: list[tuple[str, str]],
        run_root: str,
        checked: CheckedInput | None = None,
        keep: Callable | None = None,
    ) -> Day:
        """The change set of the consumed files, read from their copy under the run's directory;
        `keep`: a filter of the rows read (a replayed date's files without the keys erased since)."""
        located = landing.keep(spark, located, run_root)
        what = f"landing zone {located.description}"
        counts = {**self.problem_counts(spec), "source_rows": 0, "files": len(located.files)}
        if not located.files:
            return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, counts)
        rows, file_columns = landing.read(spark, spec, located, ds)
        if keep is not None:
            rows = keep(rows)
        refuse_markers(bad_markers(rows).limit(5).collect(), spec, ds, what)
        input_columns = landing_columns(spec, ds, what, rows, file_columns)
        refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in table_columns])
        columns, column_changes = conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)
        names = [c for c, _ in columns]
        events = landing_events(rows, columns)
        seen = validate_order(events, spec, ds, what, None, names, located.paths)
        counts["source_rows"] = seen.rows
        collapsed_events = collapsed(
            spec, ds, what, events, names, counts, None, LANDING_PREVIOUS, self.reports_anomalies
        )
        result, count, scratch = materialize(spark, collapsed_events, run_root)
        return Day(
            result,
            count,
            columns,
            column_changes,
            located,
            counts,
            check_open=True,
            scratch=[scratch],
            variable_bytes_per_row=seen.variable_bytes_per_row,
        )

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """The checks of `change_set` that need no open rows, for the landing-zone inputs of several
        dates: each file's schema from its footer and the files' types reconciled; the markers, in
        one job over every date's rows; in date order (the table's columns as the dates before leave
        them), keys present, the types against the table's, update rows with every column; the NULL
        keys, in one job; with on_anomaly: error, the anomalies between a key's changes within the day
        (`check_within_days`), in one job. The merge of each date reads its files again: none is
        returned as read."""
        read = {ds: landing.read(spark, spec, located[ds], ds) for ds in sorted(located) if located[ds].files}
        if not read:
            return {}
        descriptions = {ds.isoformat(): f"landing zone {located[ds].description}" for ds in read}
        markers = [bad_markers(rows) for rows, _ in read.values()]
        marked = reduce(
            lambda a, b: a.unionByName(b), [dated(bad, bad.columns, ds.isoformat()) for ds, bad in zip(read, markers)]
        )
        bad = marked.orderBy(DS, "file", "row").limit(5).collect()
        if bad:
            first = bad[0][DS]
            refuse_markers([r for r in bad if r[DS] == first], spec, dt.date.fromisoformat(first), descriptions[first])
        columns, keyed, flagged = list(table_columns), [], {}
        refused = self.refused_within_day(spec)
        for ds, (rows, file_columns) in read.items():
            what = descriptions[ds.isoformat()]
            input_columns = landing_columns(spec, ds, what, rows, file_columns)
            refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in columns])
            columns = evolved_columns(spec, ds, input_columns, columns, what)
            keyed.append(dated_keys(rows, spec, columns, ds, landing_order()))
            if refused:  # the anomalies need only the keys and the actions
                keys = [(c, kind) for c, kind in columns if c in spec.keys]
                flagged[ds] = changes.flag_events(
                    landing_events(rows, keys), keys=spec.keys, columns=spec.keys, match=None
                )
        roots = {ds.isoformat(): list(located[ds].paths) for ds in read}
        check_dated_keys(reduce(lambda a, b: a.unionByName(b), keyed), spec, descriptions, roots=roots)
        # then every date's changes, in one job
        check_within_days(spec, flagged, descriptions, LANDING_PREVIOUS, refused, self.reports_anomalies)
        return {}


def landing_events(rows, columns: list[tuple[str, str]]):
    """A landing zone's rows (`landing.read`, markers checked) as events of the table's `columns`."""
    return changes.landing_events(
        conform.to_columns(rows, columns, keep=(landing.MARKER, landing.FILE, landing.ROW)),
        columns=[c for c, _ in columns],
        marker=landing.MARKER,
        file=landing.FILE,
        row=landing.ROW,
    )


def bad_markers(rows):
    return changes.bad_markers(
        rows, marker=landing.MARKER, written=landing.MARKER_TEXT, file=landing.FILE, row=landing.ROW
    )


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
    """The data columns of a landing zone's files as `landing.read` gives them, once every file
    has the keys and none has the table's own columns."""
    for name, present in file_columns.items():
        lacking = [k for k in spec.keys if k not in present]
        if lacking:
            raise InputError(f"{what}: file {name} lacks key columns {lacking}", **where_of(spec, ds))
    input_columns = [
        (f.name, f.dataType.simpleString())
        for f in rows.schema.fields
        if f.name not in (*landing.HELPERS, landing.FILE, landing.ROW)
    ]
    for reserved in (spec.begin_column, spec.end_column):
        if reserved in dict(input_columns):
            raise InputError(f"{what} must not contain the table's own column {reserved!r}", **where_of(spec, ds))
    return input_columns


def refuse_partial_updates(rows, spec: TableSpec, ds: dt.date, what: str, file_columns: dict, table_names: list[str]):
    """Update and upsert rows carry the full row: a file that has them must have every table column."""
    lacking = {name: [c for c in table_names if c not in present] for name, present in file_columns.items()}
    lacking = {name: missing for name, missing in lacking.items() if missing}
    if not lacking:
        return
    offending = (
        rows.where(F.col(landing.FILE).isin(*lacking) & F.col(landing.MARKER).isin(1, 4))
        .select(landing.FILE)
        .distinct()
        .orderBy(landing.FILE)
        .limit(5)
        .collect()
    )
    if offending:
        name = offending[0][landing.FILE]
        raise InputError(
            f"{what}: file {name} has update or upsert rows (which carry the full row) but lacks"
            f" columns {lacking[name]}",
            **where_of(spec, ds),
        )


def landing_order():
    """The order of a landing zone's changes (`changes.landing_events`): file, then row."""
    return F.struct(F.col(landing.FILE), F.col(landing.ROW))
