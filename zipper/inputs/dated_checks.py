"""A rerun's checks of several dates' inputs, each in one job over every date's rows, failing as
the merge of the earliest offending date would: keys and sequence values, and the problems between
the changes of one key within a day."""

from __future__ import annotations

import datetime as dt
from functools import reduce

from pyspark.sql import functions as F

from zipper.inputs.refusals import collect_key_problems, collect_problems, handle_problems, refuse_key_problems
from zipper.tablespec.model import TableSpec
from zipper.transforms import changes, keychecks
from zipper.transforms.timelines import DS

# a hash of the columns other than keys and order, there only to have Spark read them (`dated_keys`)
READ_ALL = "zipper__read_all__"


def check_dated_keys(
    rows,
    spec: TableSpec,
    descriptions: dict[str, str],
    read_all_columns: bool = False,
    roots: dict[str, list[str]] | None = None,
) -> None:
    """The key checks of several dates' merges in one job, failing as the earliest offending date's
    merge would, naming all its problems at once. `rows`: each date's rows tagged with it
    (`rebuild_transforms.DS`), with the keys, and for ordered changes their order as
    `changes.ORDER`: then as `validate_order` (NULL keys, a NULL or repeated sequence value of a
    key), else as `validate_keys` (NULL and repeated keys). `descriptions`: date -> what the input
    is, for the message; `roots`: date -> the input's paths, that name its files;
    `read_all_columns`: see `keychecks.key_offenders`. Once a problem is found, one more query gathers
    every date's problems with their counts, keys and files (`refusals.collect_key_problems`)."""
    ordered = changes.ORDER in rows.columns
    read_all_columns = read_all_columns or READ_ALL in rows.columns
    found = (
        changes.order_offenders(rows, [DS, *spec.keys], read_all_columns=read_all_columns)
        if ordered
        else keychecks.key_offenders(rows, [DS, *spec.keys], read_all_columns=read_all_columns)
    )
    offender = found.limit(1).collect()  # in date order: the earliest offending date
    if not offender:
        return
    problems = collect_key_problems(rows, spec.keys, order=changes.ORDER if ordered else None, by=(DS,))
    first = min((p[DS] for p in problems), default=offender[0][DS])
    ds, what = dt.date.fromisoformat(first), descriptions.get(first, "input")
    of_first = [p for p in problems if p[DS] == first]
    refuse_key_problems(of_first, spec, ds, what, (roots or {}).get(first, []), spec.source.order_column)


def check_within_days(
    spec: TableSpec, flagged: dict, descriptions: dict[str, str], against: str, refused: list[str], anomalies: bool
) -> None:
    """The problems between the changes of one key within a day, for several dates (date ->
    `changes.flag_events` of its changes): the earliest date that has one that fails its merge is
    found in one job, then refused as its merge refuses it (`refusals.handle_problems`). `refused`:
    the problems that fail a day (`SourceStrategy.refused_within_day`); `anomalies`: the mode
    reports a landing zone's anomalies."""
    if not flagged or not refused:
        return
    dated = [
        rows.where(F.col(changes.PROBLEM).isin(*refused)).select(F.lit(ds.isoformat()).alias(DS))
        for ds, rows in sorted(flagged.items())
    ]
    first = reduce(lambda a, b: a.unionByName(b), dated).agg(F.min(DS).alias(DS)).first()[DS]
    if first is None:
        return
    ds = dt.date.fromisoformat(first)
    handle_problems(spec, ds, descriptions[first], collect_problems(flagged[ds], spec.keys), against, anomalies)


def dated_keys(df, spec: TableSpec, columns: list[tuple[str, str]], ds: dt.date, order=None, read_all=False):
    """A date's keys as its merge reads them (as the table's `columns` once the date is merged),
    and the order of its changes as `changes.ORDER` (`order`, else the sequence column, if any),
    tagged with the date. `read_all`: also a hash of its other columns (`READ_ALL`), so that the
    check reads and types them all: a CSV value that does not parse fails there, before the restore."""
    have, kinds = {f.name: f.dataType.simpleString() for f in df.schema.fields}, dict(columns)

    def typed(name: str):
        return F.col(name) if have[name] == kinds[name] else F.col(name).cast(kinds[name]).alias(name)

    sequence = spec.source.order_column
    if order is None and sequence:
        order = typed(sequence)
    ordered = [order.alias(changes.ORDER)] if order is not None else []
    others = [c for c in kinds if c in have and c not in spec.keys]
    read = [F.xxhash64(*[typed(c) for c in others]).alias(READ_ALL)] if read_all and others else []
    return df.select(*[typed(k) for k in spec.keys], *ordered, *read, F.lit(ds.isoformat()).alias(DS))
