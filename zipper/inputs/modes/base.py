"""What every source mode's strategy offers the jobs, and the steps the modes share: locating
several dates, the tail of a change set (keys checked, written to scratch, the `Day`), and, for
the modes that read one input a day (all but the landing zone), the reading and the rerun's
checks."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import functions as F

from zipper.core.dates import describe_dates
from zipper.core.errors import InputError, InputNotFoundError, ZipperError
from zipper.core.reports import NO_INPUT_REASON, SKIPPED
from zipper.inputs import conform, dated, reader, sources
from zipper.inputs.changeset import (
    CheckedInput,
    Day,
    DayRequest,
    columns_of,
    evolved_columns,
    materialize,
    read_day_input,
)
from zipper.inputs.column_checks import check_shape, lower_case_columns
from zipper.inputs.dated_checks import check_dated_keys, check_within_days, dated_keys
from zipper.inputs.metrics import Seen, measure
from zipper.inputs.refusals import footer_seen, validate_keys, validate_order, where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat, SourceMode
from zipper.transforms import changes


@dataclass(frozen=True)
class DayRead:
    """One day's input as read, handed to the mode to make its change set of (`changes_of`):
    one record rather than ten parameters restated by every mode."""

    spark: object
    spec: TableSpec
    ds: dt.date
    located: sources.Input
    df: object  # the rows read, their operations checked
    columns: list[tuple[str, str]]  # the table's columns once the input has evolved them
    column_changes: conform.ColumnChanges
    what: str  # how errors name the input
    checked: bool  # a rerun has checked the keys already
    filtered: bool = False  # rows were left out as read (a replayed date's keys erased since)
    rows: object = None  # table.store.TableRows: the table's own rows, as the mode may read them
    widened_from_float: frozenset[str] = frozenset()  # columns earlier dates widened from float

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]


class SourceStrategy:
    """One source mode: how a day's input is located, checked and turned into the day's change
    set, and what a rerun checks up front. Stateless: `modes.mode_of` picks one per spec."""

    mode: SourceMode
    closes_keys = True  # a day may close keys (deletes, vanished keys): the merge counts them
    located_when_due = False  # a date is located only once the date before is committed
    complete_source = False  # each day is the whole source: keys left unchanged are not in the change set
    reports_anomalies = False  # a key's changes that do not fit its state are counted (on_anomaly)
    previous_change: str | None = None  # what a key's later change within the day is checked against
    checks_open_rows = False  # a day's first actions are checked against the open rows (`Day.check_open`)

    def rebuilds_in_one_pass(self, spec: TableSpec) -> bool:
        """Whether `zipper rebuild` can compute the table in one pass: only from rows that are each
        a key's full state on their date. Otherwise it replays every date through the daily merge
        on a copy of the table, published once (`rebuild._by_replay`)."""
        return False

    def has_day_events(self, spec: TableSpec) -> bool:
        """Whether a day's rows are events a one-pass rebuild collapses per key and date
        (`one_pass_events`), rather than each its key's full state on its date, taken as it is."""
        return False

    def one_pass_events(self, spec: TableSpec, df, columns: list[tuple[str, str]]):
        """A day's input (its operations checked) as the events of the table's `columns` a one-pass
        rebuild collapses per key and date (`timelines.day_changes`), and the columns a delete must
        match; only where `has_day_events`."""
        raise NotImplementedError

    def check_dated_operations(self, spec: TableSpec, read: dict) -> None:
        """Refuses, as the earliest date's merge would, what several dates' rows say they do
        (`read`: date -> (located input, rows as read)), in one job where the mode reads it from a column."""

    def snapshot_dates(self, spec: TableSpec, base_ds: dt.date, located: dict[dt.date, sources.Input]) -> tuple:
        """The dates (text, in order, the base's first) whose input closes the keys it lacks, for a
        one-pass rebuild over the `located` inputs (`timelines.Timeline`); none but a snapshot's."""
        return ()

    def resolve_keys(self, spark, spec: TableSpec, recorded: str = "") -> TableSpec:
        """The spec with its key columns; `recorded`: the table's, once created. Only a mode whose
        source names its own keys lets a spec leave them out."""
        return spec

    def locate_dates(self, spark, spec: TableSpec, dates: list[dt.date], st=None) -> dict[dt.date, sources.Input]:
        """Every date's increment (as the table in state `st` sees it); fails naming every date
        whose increment is missing or unreadable."""
        located, failed = {}, []
        for day in dates:
            try:
                located[day] = self.locate(spark, spec, st, day)
            except InputError as exc:
                failed.append((day, exc))
        if failed:
            missing, first = describe_dates([d for d, _ in failed]), failed[0][1]
            raise _retried_first([exc for _, exc in failed]).reworded(
                f"increments missing for {missing} ({first.detail}); nothing was changed",
                table=spec.table,
                ds=failed[0][0].isoformat(),
            )
        return located

    def replay_inputs(self, spark, spec: TableSpec, st, dates: list[dt.date], found: dict) -> tuple[dict, dict]:
        """A rerun's inputs, located before anything changes: (the inputs its dates replay, those
        of dates only checked now, each located again when its turn comes). `found`: the inputs
        located already (by the plan's fingerprints). Every date's input is known up front."""
        located = {d: found[d] for d in dates if d in found}
        located |= self.locate_dates(spark, spec, [d for d in dates if d not in found], st)
        return {d: located[d] for d in dates}, {}

    def replay_records(self, replayed: dict) -> dict[str, dict]:
        """What a replay's marker records of its dates' inputs (ds text -> record), so that a
        resumed replay reads what the restored-away commits read: nothing, when the input stays."""
        return {}

    def commit_record(self, located: sources.Input) -> dict | None:
        """What a commit records of the input it read beyond its fingerprint (None: nothing)."""
        return None

    def locate(self, spark, spec: TableSpec, st, ds: dt.date) -> sources.Input:
        """The increment of `ds` for the table in state `st`; with `on_missing_input: skip`, one
        that is not there at all is `sources.not_found` (an input still being written still fails)."""
        try:
            return sources.locate(spark, spec, spec.source, ds, "increment")
        except InputNotFoundError as exc:
            if not spec.source.skips_missing_input:
                raise
            return sources.not_found(exc.missing, spec.source.format)

    def skipped_counts(self, spec: TableSpec) -> dict:
        """The counts of a date skipped for want of input: an empty day's, marked so."""
        return {**self.empty_counts(spec), SKIPPED: NO_INPUT_REASON}

    def leave_out(self, spec: TableSpec) -> tuple[str, ...]:
        """The input's columns that are not the table's data."""
        return ()

    def problem_counts(self, spec: TableSpec) -> dict:
        """The counts of the problems between changes a day starts with (reported even when 0)."""
        return {}

    def empty_counts(self, spec: TableSpec) -> dict:
        """The counts of a day whose input has no rows."""
        return {**self.problem_counts(spec), "source_rows": 0}

    def refused_within_day(self, spec: TableSpec) -> list[str]:
        """The problems between the changes of one key within a day that fail the day. They need
        no open rows, so a rerun checks them before its restore."""
        return []

    def first_columns(
        self, spark, spec: TableSpec, located: sources.Input, ds: dt.date
    ) -> list[tuple[str, str]] | None:
        """The data columns of a day's input, for a table created from it (None when it has none)."""
        what = f"increment {located.description}"
        try:
            df = reader.read(spark, located, spec.source)
        except InputError as exc:  # as read_input does: the reader's errors name neither table nor date
            raise exc.reworded(exc.detail, **where_of(spec, ds)) from None
        if df is None:
            return None
        df = lower_case_columns(df, spec, ds.isoformat(), what)
        check_shape(df, spec, ds.isoformat(), what)
        return self.input_columns(spec, df)

    def input_columns(self, spec: TableSpec, df) -> list[tuple[str, str]]:
        """The table's columns an input brings: its data columns, and the validity columns the
        merge computes from its `updated_at` (`conform.with_validity`)."""
        return conform.with_validity(spec, columns_of(df, self.leave_out(spec)))

    def change_set(self, request: DayRequest, ds: dt.date) -> Day:
        """The change set of `ds`; `request.checked`: the input as a rerun already
        read and checked it, not read or checked again while it was read for the table's columns
        as they are now. `request.keep`: a filter of the rows read (a replayed date's input
        without the keys erased since)."""
        spark, spec, located = request.spark, request.spec, request.located
        table_columns, checked, keep = request.table_columns, request.checked, request.keep
        what = f"increment {located.description}"
        conform.missing_own_columns(spec, table_columns, ds.isoformat())
        if located.missing:  # nothing to read: a day without changes (a snapshot's closes nothing)
            return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, self.skipped_counts(spec))
        self.refuse_empty(spec, ds, located)
        if located.empty and located.format != SourceFormat.TABLE:
            return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, self.empty_counts(spec))
        if checked is not None and checked.table_columns == list(table_columns):
            df = checked.df
        else:  # not read yet, or read for columns an earlier replayed date has changed since
            df, checked = read_day_input(spark, spec, located, table_columns, ds, what), None
        if keep is not None:
            df = keep(df)
        if checked is None:
            self.check_operations(spec, ds, located, df, what)
        columns, column_changes = conform.evolve(
            self.input_columns(spec, df), table_columns, spec, ds.isoformat(), what
        )
        changed, seen, counts = self.changes_of(
            DayRead(
                spark,
                spec,
                ds,
                located,
                df,
                columns,
                column_changes,
                what,
                checked is not None,
                keep is not None,
                request.rows,
                request.widened_from_float,
            )
        )
        return self.day_of(request, changed, seen, counts, columns, column_changes)

    def refuse_empty(self, spec: TableSpec, ds: dt.date, located: sources.Input) -> None:
        """Refuses an input without files, where the mode cannot take one."""

    def changes_of(self, day: DayRead) -> tuple[object, Seen, dict]:
        """What the mode makes of the day's input: the change set, what the pass that checked its
        keys saw (`seen`, from `seen_in`), and the day's counts."""
        raise NotImplementedError

    def seen_in(self, day: DayRead, rows, ordered: bool) -> Seen:
        """`seen` of rows made from the day's input. Rows that are the change set as they are, of a
        small Parquet input, are counted from its footers, and the merge's write checks their keys
        (`refusals.footer_seen`): one Spark job less. So is an input a rerun checked already."""
        if day.checked and not day.filtered:  # its keys checked already: the footers count it
            counted = footer_seen(day.located, day.names)
            if counted is not None:
                return dataclasses.replace(counted, keys_unchecked=False)
        elif not (ordered or day.filtered or self.writes_change_set(day.spec)):
            counted = footer_seen(day.located, day.names)
            if counted is not None:
                return counted
        return self.seen(day.spec, day.ds, day.located, day.what, rows, day.names, day.checked, ordered)

    def seen(
        self, spec: TableSpec, ds: dt.date, located: sources.Input, what: str, rows, names, checked: bool, ordered: bool
    ) -> Seen:
        """Rows and string bytes of the input (`ordered`: as events, ordered by a key's changes),
        its NULL and repeated keys (or sequence values) refused on the way, unless a rerun
        checked them already."""
        if checked:
            return measure(rows, names)
        if ordered:
            return validate_order(rows, spec, ds, what, spec.source.order_column, names, located.paths)
        return validate_keys(rows, spec, ds, what, names, located.paths)

    def writes_change_set(self, spec: TableSpec) -> bool:
        """Whether the change set is written to scratch and read back (later steps read it several
        times, and its count comes from the footers); not when it is the input rows as they are."""
        return True

    def day_of(self, request: DayRequest, changed, seen: Seen, counts: dict, columns, column_changes) -> Day:
        """The change set as the merge takes it, its input rows counted."""
        located = request.located
        if not self.writes_change_set(request.spec):
            return Day(
                changed,
                seen.rows,
                columns,
                column_changes,
                located,
                variable_bytes_per_row=seen.variable_bytes_per_row,
                keys_unchecked=seen.keys_unchecked,
            )
        counted = ()
        if request.spec.validity_columns:  # its keys, and its late changes, counted as it is written
            counted = (F.sum(F.when(F.col(changes.LAST), 1).otherwise(0)).alias("keys"),)
            if changes.LATE in changed.columns:
                counted += (F.sum(F.when(F.col(changes.LATE), 1).otherwise(0)).alias("late"),)
        result, count, scratch, observed = materialize(request.rows, changed, counted)
        keys = None
        if request.spec.validity_columns:
            keys = int(observed["keys"] or 0) if "keys" in observed else changes.last_rows(result).count()
        late = int(observed["late"] or 0) if "late" in observed else None
        counts = dict(counts)
        counts["source_rows"] = seen.rows
        return Day(
            result,
            count,
            columns,
            column_changes,
            located,
            counts,
            check_open=self.checks_open_rows,
            scratch=[scratch],
            variable_bytes_per_row=seen.variable_bytes_per_row,
            keys=keys,
            late=late,
        )

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """What a rerun checks of the replayed dates' inputs before its restore, as their merges
        would: each date's column types against the table's as the dates before it leave them, and
        every date's keys in one job. Returns each date's input as read, for its merge to take. A
        date skipped for want of input has nothing to check."""
        located = {day: inp for day, inp in located.items() if not inp.missing}
        read, replayed_columns = dated.read_increments(spark, spec, table_columns, located)
        dated.check_keys(
            dated.dated_rows(spark, spec, replayed_columns, located, read=read),
            spec,
            dated.descriptions(located),
            dated.input_roots(located),
        )
        return {day: CheckedInput(df, list(table_columns)) for day, df in read.items()}

    def check_operations(self, spec: TableSpec, ds: dt.date, located: sources.Input, df, what: str) -> None:
        """Refuses what the input's rows say they do, where the mode reads that from a column."""

    def filled(self, spec: TableSpec, events, names: list[str]):
        """A key's ordered changes of the day with their NULLs filled (ignore_null_updates), so that
        collapsing them and checking a delete against the previous change see the key's state."""
        if not spec.source.fills_null_updates or changes.ORDER not in events.columns:
            return events
        return changes.fill_null_updates(events, keys=spec.keys, columns=names)

    def events(self, spec: TableSpec, df, columns: list[tuple[str, str]]):
        """The input as events of the table's `columns`, and the columns a delete must match."""
        raise NotImplementedError

    def check_read_inputs(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """A rerun's up-front checks of ordered changes (cdc, upsert with sequence_by), for several
        dates, in date order: the operations (`check_operations`), the sequence column, and the
        column types (`conform.evolve`) against the table's columns as the dates before leave them
        (a column one adds has its type for the next). Then the keys (and sequence values) of every
        date in one job (`check_dated_keys`), as the merges check them, then the deletes that do not
        match the key's previous change that day (`check_within_days`, every date in one job).
        Reads each input's schema, its keys and sequence column, its operation column (and with
        those deletes to check, every column). Returns each date's input so read (date ->
        CheckedInput; none for an empty one)."""
        checked, columns, keyed, flagged = {}, list(table_columns), [], {}
        conform.missing_own_columns(spec, table_columns, min(located).isoformat() if located else None)
        refused = self.refused_within_day(spec)
        for ds in sorted(located):
            if located[ds].missing or (located[ds].empty and located[ds].format != SourceFormat.TABLE):
                continue
            what = f"increment {located[ds].description}"
            df = read_day_input(spark, spec, located[ds], table_columns, ds, what)
            self.check_operations(spec, ds, located[ds], df, what)
            # a CSV input is typed by the table's columns it is read for: its merge reads it again when
            # an earlier replayed date has changed them, and then checks it itself
            read_as_merged = located[ds].format != SourceFormat.CSV or columns == list(table_columns)
            columns = evolved_columns(spec, ds, self.input_columns(spec, df), columns, what)
            checked[ds] = CheckedInput(df, list(table_columns))
            keyed.append(dated_keys(df, spec, columns, ds, read_all=located[ds].format == SourceFormat.CSV))
            if refused and read_as_merged:
                events, match = self.events(spec, df, columns)
                names = [c for c, _ in columns]
                flagged[ds] = changes.flag_events(
                    self.filled(spec, events, names), keys=spec.keys, columns=names, match=match
                )
        descriptions = {ds.isoformat(): f"increment {located[ds].description}" for ds in checked}
        if keyed:  # every date's keys (and sequence values) in one job
            rows = reduce(lambda a, b: a.unionByName(b), keyed)
            check_dated_keys(rows, spec, descriptions, roots=dated.input_roots({ds: located[ds] for ds in checked}))
        # then every date's changes, in one job
        check_within_days(spec, flagged, descriptions, self.previous_change, refused, self.reports_anomalies)
        return checked


def _retried_first(errors: list[ZipperError]) -> ZipperError:
    """The error that says what several say together: one that another try may fix, if any."""
    return next((e for e in errors if not e.final), errors[0])
