"""The base and a run of increments as one pass of marked rows (`transforms.timelines`): what
`zipper rebuild` writes its versions from, and what the restore of a table with untracked columns
takes their values from, before the rerun replays its dates."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import functions as F

from zipper.inputs import dated, file_types, modes
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat
from zipper.transforms import changes, timelines
from zipper.transforms.timelines import DS


@dataclass(frozen=True)
class Located:
    """The base and the increments of a rebuild's dates, located (and fingerprinted)."""

    base: object  # sources.Input, or None without a base
    base_ds: dt.date
    increments: dict  # date -> sources.Input

    def explained(self, spark, spec: TableSpec):
        """A file of one of them typing a column otherwise than its input is read with, named
        with its date (`file_types.explained_column_types_of`)."""
        return file_types.explained_column_types_of(spark, spec, {self.base_ds: self.base, **self.increments})


@dataclass(frozen=True)
class Marked:
    """The base and every increment of a rebuild's dates as marked rows, with what they were
    computed from: the columns and the tracked ones (worked out once, for marking and for the
    versions alike)."""

    rows: object  # DataFrame: columns + DS + OP + KIND (deletes pending: `timelines.with_deletes`)
    timeline: timelines.Timeline
    # the key check left to the counts: rows of whole states find their NULL and repeated keys in
    # the marking's own sort (BAD_KEY); a date that has any is then refused with its keys named
    key_check: Callable[[], None] | None = None

    def refuse_bad_keys(self, per_date: dict[str, dict[str, int]]) -> None:
        """Fail as the earliest date's merge would when any date counts BAD_KEY rows
        (`timelines.daily_counts`), naming them all (`dated.check_keys`)."""
        if self.key_check is not None and any(c.get(timelines.BAD_KEY) for c in per_date.values()):
            self.key_check()


def one_pass(
    spark, spec: TableSpec, table_columns, tracked: list[str], found: Located, keep=None, checks=True
) -> Marked:
    """The base and the increments `found` as marked rows of the table's columns (`tracked` among
    them): each key's change of each date (`_day_changes` for a mode whose days are events), its
    keys (and operations) checked as each date's merge checks them, unless `checks` is off (inputs
    that were committed, checked then): whole states' keys once their counts are known
    (`Marked.refuse_bad_keys`), events' before. `keep`: a filter of the dated rows."""
    names = [c for c, _ in table_columns]
    base = dated.read_base(spark, spec, table_columns, found.base_ds, found.base)
    described = dated.descriptions(found.increments) | {found.base_ds.isoformat(): "base"}
    roots = dated.input_roots({**found.increments, found.base_ds: found.base})
    timeline = timeline_of(spec, names, tracked, found.base_ds, found.increments)
    changed = _day_changes(spark, spec, table_columns, found, base, described, roots, keep, checks)
    if changed is not None:
        return Marked(timelines.marked(changed, timeline), timeline)
    rows = dated.dated_rows(spark, spec, table_columns, found.increments, base, found.base_ds)
    key_check = None
    if checks:
        check = functools.partial(dated.check_keys, rows, spec, described, roots)
        if spec.source.fills_null_updates or spec.source.format == SourceFormat.CSV:
            check()  # filled rows are marked as changes; a CSV's values are all read and typed by the check
        else:
            key_check = check
    if keep is not None:
        rows = keep(rows)
    return Marked(timelines.marked(rows, timeline), timeline, key_check)


def _day_changes(spark, spec: TableSpec, table_columns, found: Located, base, described, roots, keep, checks: bool):
    """The inputs of a mode whose days are events (cdc, upsert with sequence_by) as one change per
    key and date (`timelines.day_changes`), their operations and keys (and sequence values)
    checked as each date's merge checks them; None for a mode whose rows are full states, or
    without an increment to read."""
    strategy = modes.mode_of(spec)
    if not strategy.has_day_events(spec):
        return None
    names = [c for c, _ in table_columns]
    read = {}
    for day in sorted(found.increments):
        located = found.increments[day]
        if located.missing:
            continue
        df = dated.read_checked(
            spark, spec, located, spec.source, table_columns, day, "increment", strategy.leave_out(spec)
        )
        if df is not None:
            read[day] = (located, df)
    if not read:
        return None
    if checks:
        strategy.check_dated_operations(spec, read)
    parts, match = [], None
    for day, (_, df) in sorted(read.items()):
        events, match = strategy.one_pass_events(spec, df, table_columns)
        parts.append(events.select("*", F.lit(day.isoformat()).alias(DS)))
    events = functools.reduce(lambda a, b: a.unionByName(b), parts)
    if checks:
        dated.check_keys(events, spec, described, roots)
    if base is not None:  # the base's rows upsert their keys, first on their date
        if checks:
            dated.check_keys(timelines.dated(base, names, found.base_ds.isoformat()), spec, described, roots)
        ordered = (
            [F.lit(None).cast(events.schema[changes.ORDER].dataType).alias(changes.ORDER)]
            if changes.ORDER in events.columns
            else []
        )
        based = base.select(
            *names,
            F.lit(changes.UPSERT).alias(changes.ACTION),
            *ordered,
            F.lit(found.base_ds.isoformat()).alias(DS),
        )
        events = based.unionByName(events)
    if keep is not None:
        events = keep(events)
    return timelines.day_changes(
        events, keys=list(spec.keys), columns=names, match=match, fills=spec.source.fills_null_updates
    )


def timeline_of(
    spec: TableSpec, names: list[str], tracked: list[str], base_ds: dt.date, increments: dict
) -> timelines.Timeline:
    """The one pass of `spec` over a table of `names` from the base of `base_ds` and the
    `increments` (date -> located input): its mode says which dates close the keys they lack."""
    return timelines.Timeline.of(spec, names, tracked, modes.mode_of(spec).snapshot_dates(spec, base_ds, increments))
