"""What every source mode's strategy offers the merge and the rerun, and the steps the modes that
read one input a day (all but the landing zone) share."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import reduce

from zipper.core.errors import InputError
from zipper.inputs import conform, dated, reader, sources
from zipper.inputs.changeset import CheckedInput, Day, columns_of, evolved_columns, read_day_input
from zipper.inputs.column_checks import check_shape, lower_case_columns
from zipper.inputs.dated_checks import check_dated_keys, check_within_days, dated_keys
from zipper.inputs.refusals import where_of
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode
from zipper.transforms import changes


class SourceStrategy:
    """One source mode: how a day's input is located, checked and turned into the day's change
    set, and what a rerun checks up front. Stateless: `modes.mode_of` picks one per spec."""

    mode: SourceMode
    closes_keys = True  # a day may close keys (deletes, vanished keys): the merge counts them
    located_when_due = False  # a date is located only once the date before is committed
    complete_source = False  # each day is the whole source: keys left unchanged are not in the change set
    reports_anomalies = False  # a key's changes that do not fit its state are counted (on_anomaly)
    previous_change: str | None = None  # what a key's later change within the day is checked against

    def locate(self, spark, spec: TableSpec, st, ds: dt.date) -> sources.Input:
        """The increment of `ds` for the table in state `st`."""
        return sources.locate(spark, spec, spec.source, ds, "increment")

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
        return columns_of(df, self.leave_out(spec))

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
        """The change set of `ds`; `checked`: the input as a rerun already read and checked it, not
        read or checked again while it was read for the table's columns as they are now. `keep`:
        a filter of the rows read (a replayed date's input without the keys erased since)."""
        what = f"increment {located.description}"
        self.refuse_empty(spec, ds, located)
        if located.empty and located.format != "table":
            return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, self.empty_counts(spec))
        if checked is not None and checked.table_columns == list(table_columns):
            df = checked.df
        else:  # not read yet, or read for columns an earlier replayed date has changed since
            df, checked = read_day_input(spark, spec, located, table_columns, ds, what), None
        if keep is not None:
            df = keep(df)
        return self.changes_of(spark, spec, st, ds, located, df, table_columns, run_root, what, checked is not None)

    def refuse_empty(self, spec: TableSpec, ds: dt.date, located: sources.Input) -> None:
        """Refuses an input without files, where the mode cannot take one."""

    def changes_of(
        self,
        spark,
        spec: TableSpec,
        st,
        ds: dt.date,
        located: sources.Input,
        df,
        table_columns,
        run_root: str,
        what: str,
        checked: bool,
    ) -> Day:
        """The change set of the input read as `df`; `checked`: its keys were checked already."""
        raise NotImplementedError

    def check_before_rerun(self, spark, spec: TableSpec, located: dict, table_columns) -> dict[dt.date, CheckedInput]:
        """What a rerun checks of the replayed dates' inputs before its restore, as their merges
        would: each date's column types against the table's as the dates before it leave them, and
        every date's keys in one job. Returns each date's input as read, for its merge to take."""
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
        refused = self.refused_within_day(spec)
        for ds in sorted(located):
            if located[ds].empty and located[ds].format != "table":
                continue
            what = f"increment {located[ds].description}"
            df = read_day_input(spark, spec, located[ds], table_columns, ds, what)
            self.check_operations(spec, ds, located[ds], df, what)
            # a CSV input is typed by the table's columns it is read for: its merge reads it again when
            # an earlier replayed date has changed them, and then checks it itself
            read_as_merged = located[ds].format != "csv" or columns == list(table_columns)
            columns = evolved_columns(spec, ds, columns_of(df, self.leave_out(spec)), columns, what)
            checked[ds] = CheckedInput(df, list(table_columns))
            keyed.append(dated_keys(df, spec, columns, ds, read_all=located[ds].format == "csv"))
            if refused and read_as_merged:
                events, match = self.events(spec, df, columns)
                flagged[ds] = changes.flag_events(events, keys=spec.keys, columns=[c for c, _ in columns], match=match)
        descriptions = {ds.isoformat(): f"increment {located[ds].description}" for ds in checked}
        if keyed:  # every date's keys (and sequence values) in one job
            rows = reduce(lambda a, b: a.unionByName(b), keyed)
            check_dated_keys(rows, spec, descriptions, roots=dated.input_roots({ds: located[ds] for ds in checked}))
        # then every date's changes, in one job
        check_within_days(spec, flagged, descriptions, self.previous_change, refused, self.reports_anomalies)
        return checked
