"""The day's input, whatever its mode, as one checked change set (see `changes`).

Everything that can be checked without the open partition is checked here, before anything
is written: NULL and repeated keys (or equal `sequence_by` values), operation values, the
columns (and what the day does to them), and the problems found between the changes of one
key within the day. What needs the open rows (whether a key had to be open, whether a delete
matches the open row) is checked by `check_open` between the merge's two jobs, still before
anything is published."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field
from functools import reduce

from zipper.core import fs
from zipper.inputs import conform, landing, sources
from zipper.table import audit, inspect
from zipper.transforms import changes
from zipper.transforms.equality import holds_map
from zipper.core.errors import InputError, MissingInputError
from zipper.tablespec.model import TableSpec

MAX_LISTED_KEYS = 20
# what a change of a key that is not its first of the day is checked against, in the refusals
CDC_PREVIOUS = "the row they delete (the key's previous change)"
LANDING_PREVIOUS = "the key's previous change that day"
SCRATCH = "zipper_changes"
ANOMALY_COUNTS = {
    changes.INSERT_OPEN: "inserts_of_open_keys",
    changes.UPDATE_ABSENT: "updates_of_absent_keys",
    changes.DELETE_ABSENT: "deletes_of_absent_keys",
}
ANOMALY_TEXT = {  # (one, several)
    changes.INSERT_OPEN: ("insert of a key that is open", "inserts of keys that are open"),
    changes.UPDATE_ABSENT: ("update of a key that is not open", "updates of keys that are not open"),
    changes.DELETE_ABSENT: ("delete of a key that is not open", "deletes of keys that are not open"),
}


def anomaly_text(problem: str, count: int) -> str:
    """`1 update of a key that is not open`, `2 updates of keys that are not open`."""
    one, several = ANOMALY_TEXT[problem]
    return f"{count} {one if count == 1 else several}"


@dataclass
class Day:
    """A checked change set and what the merge needs to know about it."""

    changes: object  # DataFrame: the table's columns (+ zipper_op, zipper_first, zipper_match); None when empty
    rows: int
    columns: list[tuple[str, str]]  # the table's columns once this day is published
    column_changes: conform.ColumnChanges
    located: sources.Input  # what was read (for a landing zone, the kept copy)
    counts: dict = field(default_factory=dict)  # added to the run's counts
    check_open: bool = False  # first actions to check against the open rows (cdc, landing_zone)
    scratch: list[str] = field(default_factory=list)  # directories to delete once merged
    # Bytes of the string and binary columns per input row, observed while the keys were checked
    # (None when not observed): sizes the broadcast of the day's rows (merge.broadcasts).
    variable_bytes_per_row: float | None = None
    # the double columns compared at float precision (conform.float_precision_columns); set by `prepare`
    float_precision: frozenset[str] = frozenset()

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]


# ---------------------------------------------------------------- messages

def _where(spec: TableSpec, ds: dt.date) -> dict:
    return {"table": spec.table, "ds": ds.isoformat()}


def value_text(value) -> str:
    """A key value in a message, as `zipper history --key` takes it back: rows collected through
    `inspect.as_collected` (timestamps in the session's time zone, decimals as Spark writes them),
    written by `inspect.as_written`."""
    return "NULL" if value is None else str(inspect.as_written(value))


def key_text(rows, keys: list[str]) -> str:
    def one(row):
        values = [value_text(row[k]) for k in keys]
        text = values[0] if len(values) == 1 else "(" + ", ".join(values) + ")"
        diff = row[changes.DIFF] if changes.DIFF in row.__fields__ else None
        return text + (f" (columns {', '.join(diff)})" if diff else "")

    return ", ".join(one(r) for r in rows)


def null_keys_text(what: str, rows, keys: list[str]) -> str:
    """The refusal of keys with a NULL: with one key column, how many rows (listing its one NULL
    key said nothing); with several, which keys, each with its rows where they are counted."""
    def rows_of(row) -> str:
        copies = row["copies"] if "copies" in row.__fields__ else None
        return "" if copies is None else f"{copies} row{'s' if copies != 1 else ''}"

    if len(keys) == 1:
        counted = rows_of(rows[0])
        return f"{what} has {counted + ' with ' if counted else ''}NULL in key column {keys[0]!r}"
    shown = ", ".join(key_text([r], keys) + (f" ({rows_of(r)})" if rows_of(r) else "") for r in rows)
    return f"{what} has NULL in key columns {keys}: {shown}"


def observed_metrics(observation) -> dict:
    """Metrics of an Observation; empty when the JVM fails to hand them over (the caller then
    counts otherwise). An Observation never observed is a bug, and raised as one."""
    try:
        return dict(observation.get)
    except fs.jvm_failures():
        return {}


@dataclass(frozen=True)
class Seen:
    """What one pass over an input saw: its rows, and the bytes of its string and binary
    columns (None when Spark reported no metrics)."""

    rows: int
    variable_bytes: int | None = None

    @property
    def variable_bytes_per_row(self) -> float | None:
        if self.variable_bytes is None:
            return None
        return self.variable_bytes / self.rows if self.rows else 0.0


def variable_columns(schema, columns) -> list[str]:
    """The top-level string and binary columns of a StructType, among `columns`: those whose
    size Spark can only guess (merge.estimated_row_bytes counts them as measured)."""
    from pyspark.sql.types import BinaryType, StringType

    return [f.name for f in schema.fields if isinstance(f.dataType, (StringType, BinaryType)) and f.name in columns]


def _metrics(variable: list[str]) -> list:
    """The rows, and the bytes of the `variable` (string and binary) columns."""
    from pyspark.sql import functions as F

    metrics = [F.count(F.lit(1)).alias("rows")]
    if variable:
        row_bytes = sum((F.coalesce(F.octet_length(F.col(c)), F.lit(0)) for c in variable), F.lit(0))
        metrics.append(F.sum(row_bytes.cast("long")).alias("variable_bytes"))
    return metrics


def _counted(df, name: str, variable: list[str]):
    from pyspark.sql import Observation

    observation = Observation(f"zipper_{name}_{secrets.token_hex(6)}")
    return df.observe(observation, *_metrics(variable)), observation


def _seen(observation, df) -> Seen:
    observed = observed_metrics(observation)
    if "rows" not in observed:
        return Seen(df.count())
    variable = observed.get("variable_bytes", 0)
    return Seen(int(observed["rows"]), int(variable or 0))


# ---------------------------------------------------------------- key checks

def validate_keys(df, spec: TableSpec, ds: dt.date, what: str, columns: tuple[str, ...] | list[str] = ()) -> Seen:
    """Rows (and the string bytes of `columns`) of the input; fails naming keys if any is NULL
    or repeated. One pass over the input."""
    counted, observation = _counted(df, "rows", variable_columns(df.schema, columns))
    refuse_key_offenders(changes_offenders(counted, spec.keys), spec, ds, what)
    return _seen(observation, df)


def refuse_key_offenders(offenders, spec: TableSpec, ds: dt.date, what: str) -> None:
    """The refusal of a day's NULL keys, else its repeated keys (collected `daily.key_offenders`)."""
    _refuse_nulls(offenders, spec, ds, what)
    if offenders:
        more = " (first 20)" if len(offenders) > MAX_LISTED_KEYS else ""
        raise InputError(
            f"{what} has keys {spec.keys} more than once{more}: {key_text(offenders[:MAX_LISTED_KEYS], spec.keys)}",
            **_where(spec, ds),
        )


def measure(df, columns: list[str]) -> Seen:
    """Rows (and the string bytes of `columns`) of an input whose keys a rerun checked already,
    with the other dates' in one job (`inputs.check_keys`, `check_inputs`): one pass, no grouping
    by key."""
    measured = df.agg(*_metrics(variable_columns(df.schema, columns))).first().asDict()
    return Seen(int(measured["rows"]), int(measured.get("variable_bytes") or 0))


def changes_offenders(df, keys: list[str]):
    from zipper.transforms import daily

    return inspect.as_collected(daily.key_offenders(df, keys).limit(MAX_LISTED_KEYS * 2 + 1)).collect()


def _refuse_nulls(offenders, spec: TableSpec, ds: dt.date, what: str) -> None:
    nulls = [r for r in offenders if any(r[k] is None for k in spec.keys)][:MAX_LISTED_KEYS]
    if nulls:
        raise InputError(null_keys_text(what, nulls, spec.keys), **_where(spec, ds))


def validate_order(events, spec: TableSpec, ds: dt.date, what: str, order_name: str | None,
                   columns: list[str]) -> Seen:
    """Rows (and string bytes of the table's `columns`) of the events; fails naming keys that are
    NULL, and (with a sequence column, `order_name`) keys whose sequence value is NULL or repeated."""
    counted, observation = _counted(events, "events", variable_columns(events.schema, columns))
    offenders = changes.order_offenders(counted, spec.keys).limit(MAX_LISTED_KEYS * 2 + 1)
    refuse_order_offenders(inspect.as_collected(offenders).collect(), spec, ds, what, order_name)
    return _seen(observation, events)


def refuse_order_offenders(offenders, spec: TableSpec, ds: dt.date, what: str, order_name: str | None) -> None:
    """The refusal of a day's NULL keys, else its keys with a NULL or repeated sequence value
    (collected `changes.order_offenders`)."""
    _refuse_nulls(offenders, spec, ds, what)
    if offenders:
        nulls = [r for r in offenders if r[changes.ORDER] is None]
        if nulls:
            raise InputError(f"{what} has NULL in sequence_by column {order_name!r} for keys {spec.keys}:"
                             f" {key_text(nulls[:MAX_LISTED_KEYS], spec.keys)}", **_where(spec, ds))
        shown = ", ".join(f"{key_text([r], spec.keys)} ({order_name} {r[changes.ORDER]})"
                          for r in offenders[:MAX_LISTED_KEYS])
        raise InputError(f"{what} has the same sequence_by value twice for keys {spec.keys}: {shown}",
                         **_where(spec, ds))


# a hash of the columns other than keys and order, there only to have Spark read them (`_dated_keys`)
READ_ALL = "zipper__read_all__"


def check_dated_keys(rows, spec: TableSpec, descriptions: dict[str, str], read_all_columns: bool = False) -> None:
    """The key checks of several dates' merges in one job, failing as the earliest offending date's
    merge would. `rows`: each date's rows tagged with it (`rebuild_transforms.DS`), with the keys,
    and for ordered changes their order as `changes.ORDER`: then as `validate_order` (NULL keys, a
    NULL or repeated sequence value of a key), else as `validate_keys` (NULL, then repeated keys).
    `descriptions`: date -> what the input is, for the message; `read_all_columns`: see
    `daily.key_offenders`."""
    from zipper.transforms import daily
    from zipper.transforms.timelines import DS

    ordered = changes.ORDER in rows.columns
    read_all_columns = read_all_columns or READ_ALL in rows.columns
    found = (changes.order_offenders(rows, [DS, *spec.keys], read_all_columns=read_all_columns) if ordered
             else daily.key_offenders(rows, [DS, *spec.keys], read_all_columns=read_all_columns))
    offenders = inspect.as_collected(found.limit(MAX_LISTED_KEYS * 2 + 1)).collect()
    if not offenders:
        return
    first = offenders[0][DS]
    of_first = [r for r in offenders if r[DS] == first]
    ds, what = dt.date.fromisoformat(first), descriptions.get(first, "input")
    if ordered:
        refuse_order_offenders(of_first, spec, ds, what, spec.source.sequence_by)
    refuse_key_offenders(of_first, spec, ds, what)


# ---------------------------------------------------------------- problems between changes

def _collect_problems(problems, keys: list[str]) -> dict:
    rows = inspect.as_collected(changes.problem_summary(problems, keys=keys, examples=MAX_LISTED_KEYS)).collect()
    return {r[changes.PROBLEM]: (int(r["count"]), r["examples"]) for r in rows}


def _handle_problems(spec: TableSpec, ds: dt.date, what: str, found: dict, against: str) -> dict:
    """Fail on the problems that are errors; return the counts of those that are only reported."""
    where = _where(spec, ds)
    if changes.DELETE_MISMATCH in found:
        count, examples = found[changes.DELETE_MISMATCH]
        raise InputError(
            f"{what} has {count} delete row{'s' if count != 1 else ''} whose values differ from {against}"
            " (delete_match: all_columns);"
            f" keys {spec.keys}: {key_text(examples, spec.keys)}",
            **where,
        )
    counts = {}
    if spec.source.mode == "landing_zone":
        anomalies = {p: found[p] for p in ANOMALY_COUNTS if p in found}
        if anomalies and spec.source.anomalies_are_errors:
            shown = "; ".join(f"{anomaly_text(p, count)}: {key_text(examples, spec.keys)}"
                              for p, (count, examples) in anomalies.items())
            raise InputError(f"{what} has changes that do not fit {against} (on_anomaly: error): {shown}", **where)
        counts = {ANOMALY_COUNTS[p]: count for p, (count, _) in anomalies.items()}
    elif changes.DELETE_ABSENT in found:
        counts = {"deletes_of_absent_keys": found[changes.DELETE_ABSENT][0]}
    return counts


def refused_within_day(spec: TableSpec) -> list[str]:
    """The problems between the changes of one key within a day that fail the day (`_handle_problems`):
    a delete that does not match (cdc with delete_match: all_columns), a landing zone's anomalies
    with on_anomaly: error. They need no open rows, so a rerun checks them before its restore."""
    if spec.source.mode == "landing_zone":
        return list(ANOMALY_COUNTS) if spec.source.anomalies_are_errors else []
    if spec.source.mode == "cdc" and spec.source.sequence_by and spec.source.deletes_need_all_columns:
        return [changes.DELETE_MISMATCH]
    return []


def check_within_days(spec: TableSpec, flagged: dict, descriptions: dict[str, str], against: str) -> None:
    """The problems between the changes of one key within a day, for several dates (date ->
    `changes.flag_events` of its changes): the earliest date that has one that fails its merge is
    found in one job, then refused as its merge refuses it (`_handle_problems`)."""
    refused = refused_within_day(spec)
    if not flagged or not refused:
        return
    from pyspark.sql import functions as F

    from zipper.transforms.timelines import DS

    dated = [rows.where(F.col(changes.PROBLEM).isin(*refused)).select(F.lit(ds.isoformat()).alias(DS))
             for ds, rows in sorted(flagged.items())]
    first = reduce(lambda a, b: a.unionByName(b), dated).agg(F.min(DS).alias(DS)).first()[DS]
    if first is None:
        return
    ds = dt.date.fromisoformat(first)
    _handle_problems(spec, ds, descriptions[first], _collect_problems(flagged[ds], spec.keys), against)


def _add_counts(base: dict, more: dict) -> dict:
    for name, value in more.items():
        base[name] = base.get(name, 0) + value
    if "anomalies" in base:
        base["anomalies"] = sum(base[name] for name in ANOMALY_COUNTS.values())
    return base


def _problem_counts(spec: TableSpec) -> dict:
    if spec.source.mode == "landing_zone":
        return {"anomalies": 0, **dict.fromkeys(ANOMALY_COUNTS.values(), 0)}
    if spec.source.mode == "cdc":
        return {"deletes_of_absent_keys": 0}
    return {}


def check_open(spec: TableSpec, ds: dt.date, day: Day, touched_rows) -> dict:
    """The first action of each key against the open rows (`touched_rows`: the open rows of the
    day's keys): fails on a delete that does not match, or on an anomaly with on_anomaly:
    error; returns the day's counts with those that are reported added."""
    problems = changes.open_problems(touched_rows, day.changes, keys=spec.keys, columns=day.names,
                                     float_precision=day.float_precision)
    found = _collect_problems(problems, spec.keys)
    what = f"increment {day.located.description}"
    return _add_counts(dict(day.counts), _handle_problems(spec, ds, what, found, "the open row"))


# ---------------------------------------------------------------- reading

def _read(spark, spec: TableSpec, located: sources.Input, table_columns, ds: dt.date, what: str):
    df = conform.read_input(spark, spec, located, spec.source, table_columns, ds.isoformat(), what)
    sequence = spec.source.sequence_by
    if sequence and sequence not in df.columns:
        raise InputError(f"{what} lacks the sequence_by column {sequence!r}", **_where(spec, ds))
    if sequence and holds_map(df.schema[sequence].dataType):  # Spark cannot sort by it
        raise InputError(f"{what} sequence_by column {sequence!r} has type {df.schema[sequence].dataType.simpleString()},"
                         " which has no order", **_where(spec, ds))
    return df


def _columns_of(df, leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields if f.name not in leave_out]


def _materialize(spark, df, run_root: str):
    """Write a change set to a scratch directory of the run and read it back: later steps read
    it several times, and its row count comes from the footers."""
    directory = f"{run_root}/{SCRATCH}"
    df.write.parquet(directory)
    fs.mkdirs(spark, directory)
    return spark.read.schema(df.schema).parquet(directory), audit.written_rows(spark, directory), directory


def prepare(spark, spec: TableSpec, st, ds: dt.date, located: sources.Input, table_columns: list[tuple[str, str]],
            run_root: str, checked: CheckedInput | None = None) -> Day:
    """The change set of `ds` for a table in state `st` with `table_columns`; `checked`: the
    input as a rerun already read and checked it (`CheckedInput`), not read or checked again."""
    day = _prepare(spark, spec, st, ds, located, table_columns, run_root, checked)
    day.float_precision = float_precision(st, day.columns, day.column_changes)
    return day


def float_precision(st, columns: list[tuple[str, str]], column_changes: conform.ColumnChanges) -> frozenset[str]:
    """The double columns a day of a table in state `st` compares at float precision."""
    return conform.float_precision_columns(columns, column_changes, st.widened_from_float)


def _prepare(spark, spec: TableSpec, st, ds: dt.date, located: sources.Input, table_columns: list[tuple[str, str]],
             run_root: str, checked: CheckedInput | None = None) -> Day:
    mode = spec.source.mode
    if mode == "landing_zone":
        return _landing(spark, spec, ds, landing.keep(spark, located, run_root), table_columns, run_root)
    what = f"increment {located.description}"
    if located.empty and mode == "snapshot":
        raise MissingInputError(f"snapshot {located.description} has no files; an empty source must still be a file"
                         " with its columns (every open key would be closed)", **_where(spec, ds))
    if located.empty and located.format != "table":
        return _empty(spec, located, table_columns)
    if checked is not None and checked.table_columns == list(table_columns):
        df = checked.df
    else:  # not read yet, or read for columns an earlier replayed date has changed since
        df, checked = _read(spark, spec, located, table_columns, ds, what), None
    if mode == "cdc":
        return _cdc(spark, spec, ds, located, df, table_columns, run_root, what, checked=checked is not None)
    columns, column_changes = conform.evolve(_columns_of(df), table_columns, spec, ds.isoformat(), what)
    rows = conform.to_columns(df, columns)
    if mode == "snapshot":
        return _snapshot(spark, spec, st, ds, located, rows, columns, column_changes, run_root, what,
                         keys_checked=checked is not None)
    sequence = spec.source.sequence_by
    names = [c for c, _ in columns]
    if not sequence:
        seen = measure(rows, names) if checked is not None else validate_keys(rows, spec, ds, what, names)
        return Day(rows, seen.rows, columns, column_changes, located,
                   variable_bytes_per_row=seen.variable_bytes_per_row)
    events = changes.upsert_events(rows, columns=names, order=sequence)
    seen = measure(events, names) if checked is not None else validate_order(events, spec, ds, what, sequence, names)
    flagged = changes.flag_events(events, keys=spec.keys, columns=names, match=None)
    collapsed = changes.collapse(flagged, columns=names, deletes=False)
    result, count, scratch = _materialize(spark, collapsed, run_root)
    return Day(result, count, columns, column_changes, located, {"source_rows": seen.rows}, scratch=[scratch],
               variable_bytes_per_row=seen.variable_bytes_per_row)


def _empty(spec: TableSpec, located: sources.Input, table_columns) -> Day:
    counts = _problem_counts(spec)
    if spec.source.mode != "upsert" or spec.source.sequence_by:
        counts["source_rows"] = 0
    return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, counts)


def check_operations(spec: TableSpec, ds: dt.date, located, df, what: str) -> None:
    """A cdc input has its operation column, holding only 0 and 1."""
    where = _where(spec, ds)
    op = spec.source.operation_column
    if op not in df.columns:
        files = ", ".join(fs.name_of(f.path) for f in located.files[:5]) or located.description
        raise InputError(f"{what} has no operation column {op!r} (0 insert or update, 1 delete); files: {files}",
                         **where)
    bad = changes.bad_operations(df, op_column=op).distinct().limit(5).collect()
    if bad:
        kind = df.schema[op].dataType.simpleString()
        typed = "" if kind in ("tinyint", "smallint", "int", "bigint", "string") else f" ({kind})"  # 0.0 is not 0
        shown = "; ".join(f"{r['op'] if r['op'] is not None else 'NULL'}{typed} in"
                          f" {fs.name_of(r['file']) if r['file'] else located.description}"
                          for r in sorted(bad, key=lambda r: (r["op"] is None, r["op"] or "", r["file"] or "")))
        raise InputError(f"{what} has {op} values other than 0 (insert or update) and 1 (delete): {shown}", **where)


@dataclass(frozen=True)
class CheckedInput:
    """An input a rerun read, and checked, before its restore: a cdc input's operations, keys and
    types, an ordered upsert's keys, sequence values and types (`check_inputs`), a plain upsert's
    or a snapshot's keys (`inputs.check_keys`). The merge of its date takes it as it is instead of
    reading and checking the files again."""

    df: object  # DataFrame, as `_read` returns it
    table_columns: list[tuple[str, str]]  # the table's columns it was read for (a CSV's types)


def check_inputs(spark, spec: TableSpec, located: dict, table_columns) -> dict:
    """A cdc input's operations (`check_operations`), an ordered upsert's sequence column, and the
    column types (`conform.evolve`) for several dates, in date order: a rerun checks them before it
    restores. Each date's types are compared with the table's columns as the dates before it leave
    them (a column one adds has its type for the next). Then the keys (and sequence values) of every
    date in one job (`check_dated_keys`), as the merges check them, then a cdc input's deletes that do
    not match the key's previous change that day (`check_within_days`, every date in one job). Reads
    each input's schema, its keys and sequence column, for cdc its operation column (and with those
    deletes to check, every column). Returns each date's input so read
    (date -> CheckedInput; none for an empty one)."""
    checked, columns, keyed, flagged = {}, list(table_columns), [], {}
    leave_out = (spec.source.operation_column,) if spec.source.mode == "cdc" else ()
    within_day = spec.source.mode == "cdc" and bool(refused_within_day(spec))
    for ds in sorted(located):
        if located[ds].empty and located[ds].format != "table":
            continue
        what = f"increment {located[ds].description}"
        df = _read(spark, spec, located[ds], table_columns, ds, what)
        if spec.source.mode == "cdc":
            check_operations(spec, ds, located[ds], df, what)
        # a CSV input is typed by the table's columns it is read for: its merge reads it again when
        # an earlier replayed date has changed them, and then checks it itself
        read_as_merged = located[ds].format != "csv" or columns == list(table_columns)
        columns = evolved_columns(spec, ds, _columns_of(df, leave_out), columns, what)
        checked[ds] = CheckedInput(df, list(table_columns))
        keyed.append(_dated_keys(df, spec, columns, ds, read_all=located[ds].format == "csv"))
        if within_day and read_as_merged:
            events, match = _cdc_events(spec, df, columns)
            flagged[ds] = changes.flag_events(events, keys=spec.keys, columns=[c for c, _ in columns], match=match)
    descriptions = {ds.isoformat(): f"increment {located[ds].description}" for ds in checked}
    if keyed:  # every date's keys (and sequence values) in one job
        check_dated_keys(reduce(lambda a, b: a.unionByName(b), keyed), spec, descriptions)
    check_within_days(spec, flagged, descriptions, CDC_PREVIOUS)  # then every date's changes, in one job
    return checked


def _dated_keys(df, spec: TableSpec, columns: list[tuple[str, str]], ds: dt.date, order=None, read_all=False):
    """A date's keys as its merge reads them (as the table's `columns` once the date is merged),
    and the order of its changes as `changes.ORDER` (`order`, else the sequence column, if any),
    tagged with the date. `read_all`: also a hash of its other columns (`READ_ALL`), so that the
    check reads and types them all: a CSV value that does not parse fails there, before the restore."""
    from pyspark.sql import functions as F

    from zipper.transforms.timelines import DS

    have, kinds = {f.name: f.dataType.simpleString() for f in df.schema.fields}, dict(columns)

    def typed(name: str):
        return F.col(name) if have[name] == kinds[name] else F.col(name).cast(kinds[name]).alias(name)

    sequence = spec.source.sequence_by
    if order is None and sequence:
        order = typed(sequence)
    ordered = [order.alias(changes.ORDER)] if order is not None else []
    others = [c for c in kinds if c in have and c not in spec.keys]
    read = [F.xxhash64(*[typed(c) for c in others]).alias(READ_ALL)] if read_all and others else []
    return df.select(*[typed(k) for k in spec.keys], *ordered, *read, F.lit(ds.isoformat()).alias(DS))


def check_landing_inputs(spark, spec: TableSpec, located: dict, table_columns) -> None:
    """The checks of `_landing` that need no open rows, for the landing-zone inputs of several
    dates: each file's schema from its footer and the files' types reconciled; the markers, in
    one job over every date's rows; in date order (the table's columns as the dates before leave
    them), keys present, the types against the table's, update rows with every column; the NULL
    keys, in one job; with on_anomaly: error, the anomalies between a key's changes within the day
    (`check_within_days`), in one job. The merge of each date reads its files again."""
    read = {ds: landing.read(spark, spec, located[ds], ds) for ds in sorted(located) if located[ds].files}
    if not read:
        return
    descriptions = {ds.isoformat(): f"landing zone {located[ds].description}" for ds in read}
    from zipper.transforms.timelines import DS, dated

    markers = [_bad_markers(rows) for rows, _ in read.values()]
    marked = reduce(lambda a, b: a.unionByName(b), [dated(bad, bad.columns, ds.isoformat())
                                                    for ds, bad in zip(read, markers)])
    bad = marked.orderBy(DS, "file", "row").limit(5).collect()
    if bad:
        first = bad[0][DS]
        _refuse_markers([r for r in bad if r[DS] == first], spec, dt.date.fromisoformat(first), descriptions[first])
    columns, keyed, flagged = list(table_columns), [], {}
    within_day = bool(refused_within_day(spec))
    for ds, (rows, file_columns) in read.items():
        what = descriptions[ds.isoformat()]
        input_columns = _landing_columns(spec, ds, what, rows, file_columns)
        _refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in columns])
        columns = evolved_columns(spec, ds, input_columns, columns, what)
        keyed.append(_dated_keys(rows, spec, columns, ds, _landing_order()))
        if within_day:  # the anomalies need only the keys and the actions
            keys = [(c, kind) for c, kind in columns if c in spec.keys]
            flagged[ds] = changes.flag_events(_landing_events(rows, keys), keys=spec.keys, columns=spec.keys,
                                              match=None)
    check_dated_keys(reduce(lambda a, b: a.unionByName(b), keyed), spec, descriptions)
    check_within_days(spec, flagged, descriptions, LANDING_PREVIOUS)  # then every date's changes, in one job


def _landing_order():
    """The order of a landing zone's changes (`changes.landing_events`): file, then row."""
    from pyspark.sql import functions as F

    return F.struct(F.col(landing.FILE), F.col(landing.ROW))


def evolved_columns(spec: TableSpec, ds: dt.date, input_columns, table_columns, what: str) -> list:
    """The table's columns once an input of `input_columns` is merged (`conform.evolve`)."""
    return conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)[0]


def _cdc(spark, spec: TableSpec, ds: dt.date, located, df, table_columns, run_root: str, what: str,
         checked: bool = False) -> Day:
    """`checked`: the operations and keys were checked already (`check_inputs`)."""
    where = _where(spec, ds)
    op = spec.source.operation_column
    if not checked:
        check_operations(spec, ds, located, df, what)
    columns, column_changes = conform.evolve(_columns_of(df, (op,)), table_columns, spec, ds.isoformat(), what)
    names = [c for c, _ in columns]
    sequence = spec.source.sequence_by
    events, match = _cdc_events(spec, df, columns)
    counts = _problem_counts(spec)
    if not sequence:
        seen = measure(events, names) if checked else validate_keys(events, spec, ds, what, names)
        collapsed = changes.single_changes(events, columns=names, match=match)
    else:
        seen = measure(events, names) if checked else validate_order(events, spec, ds, what, sequence, names)
        collapsed = _collapsed(spec, ds, what, events, names, counts, match, CDC_PREVIOUS)
    counts["source_rows"] = seen.rows
    result, count, scratch = _materialize(spark, collapsed, run_root)
    return Day(result, count, columns, column_changes, located, counts, check_open=True, scratch=[scratch],
               variable_bytes_per_row=seen.variable_bytes_per_row)


def _cdc_events(spec: TableSpec, df, columns: list[tuple[str, str]]):
    """A cdc input (operations checked) as events of the table's `columns`, and the columns a delete
    must carry: all but the keys and the sequence (which orders, and so differs), or None."""
    op, sequence, names = spec.source.operation_column, spec.source.sequence_by, [c for c, _ in columns]
    match = [c for c in names if c not in spec.keys and c != sequence] if spec.source.deletes_need_all_columns else None
    events = changes.cdc_events(conform.to_columns(df, columns, keep=(op,)), op_column=op, columns=names,
                                order=sequence)
    return events, match


def _collapsed(spec: TableSpec, ds: dt.date, what: str, events, names: list[str], counts: dict, match,
               against: str):
    """Several changes of a key in one day, collapsed to the state the last one leaves; the
    problems between them (a delete that does not match `against`, ...) refused or counted first."""
    flagged = changes.flag_events(events, keys=spec.keys, columns=names, match=match)
    _add_counts(counts, _handle_problems(spec, ds, what, _collect_problems(flagged, spec.keys), against))
    return changes.collapse(flagged, columns=names, deletes=True)


def _landing(spark, spec: TableSpec, ds: dt.date, located: sources.Input, table_columns, run_root: str) -> Day:
    where = _where(spec, ds)
    what = f"landing zone {located.description}"
    counts = {**_problem_counts(spec), "source_rows": 0, "files": len(located.files)}
    if not located.files:
        return Day(None, 0, list(table_columns), conform.ColumnChanges(), located, counts)
    rows, file_columns = landing.read(spark, spec, located, ds)
    _refuse_markers(_bad_markers(rows).limit(5).collect(), spec, ds, what)
    input_columns = _landing_columns(spec, ds, what, rows, file_columns)
    _refuse_partial_updates(rows, spec, ds, what, file_columns, [c for c, _ in table_columns])
    columns, column_changes = conform.evolve(input_columns, table_columns, spec, ds.isoformat(), what)
    names = [c for c, _ in columns]
    events = _landing_events(rows, columns)
    seen = validate_order(events, spec, ds, what, None, names)
    counts["source_rows"] = seen.rows
    collapsed = _collapsed(spec, ds, what, events, names, counts, None, LANDING_PREVIOUS)
    result, count, scratch = _materialize(spark, collapsed, run_root)
    return Day(result, count, columns, column_changes, located, counts, check_open=True, scratch=[scratch],
               variable_bytes_per_row=seen.variable_bytes_per_row)


def _landing_events(rows, columns: list[tuple[str, str]]):
    """A landing zone's rows (`landing.read`, markers checked) as events of the table's `columns`."""
    return changes.landing_events(conform.to_columns(rows, columns, keep=(landing.MARKER, landing.FILE, landing.ROW)),
                                  columns=[c for c, _ in columns], marker=landing.MARKER, file=landing.FILE,
                                  row=landing.ROW)


def _bad_markers(rows):
    return changes.bad_markers(rows, marker=landing.MARKER, written=landing.MARKER_TEXT, file=landing.FILE,
                               row=landing.ROW)


def _refuse_markers(bad, spec: TableSpec, ds: dt.date, what: str) -> None:
    """The refusal of the rows (collected `changes.bad_markers`) whose marker is no operation."""
    if bad:
        shown = "; ".join(f"{r['marker'] if r['marker'] is not None else 'NULL'} in {r['file']} row {r['row'] + 1}"
                          for r in bad)
        raise InputError(f"{what} has __rowMarker__ values other than 0 insert, 1 update, 2 delete, 4 upsert: {shown}",
                         **_where(spec, ds))


def _landing_columns(spec: TableSpec, ds: dt.date, what: str, rows, file_columns: dict) -> list[tuple[str, str]]:
    """The data columns of a landing zone's files as `landing.read` gives them, once every file
    has the keys and none has the table's own columns."""
    for name, present in file_columns.items():
        lacking = [k for k in spec.keys if k not in present]
        if lacking:
            raise InputError(f"{what}: file {name} lacks key columns {lacking}", **_where(spec, ds))
    input_columns = [(f.name, f.dataType.simpleString()) for f in rows.schema.fields
                     if f.name not in (*landing.HELPERS, landing.FILE, landing.ROW)]
    for reserved in (spec.begin_column, spec.end_column):
        if reserved in dict(input_columns):
            raise InputError(f"{what} must not contain the table's own column {reserved!r}", **_where(spec, ds))
    return input_columns


def _refuse_partial_updates(rows, spec: TableSpec, ds: dt.date, what: str, file_columns: dict, table_names: list[str]):
    """Update and upsert rows carry the full row: a file that has them must have every table column."""
    from pyspark.sql import functions as F

    lacking = {name: [c for c in table_names if c not in present] for name, present in file_columns.items()}
    lacking = {name: missing for name, missing in lacking.items() if missing}
    if not lacking:
        return
    offending = (
        rows.where(F.col(landing.FILE).isin(*lacking) & F.col(landing.MARKER).isin(1, 4))
        .select(landing.FILE).distinct().orderBy(landing.FILE).limit(5).collect()
    )
    if offending:
        name = offending[0][landing.FILE]
        raise InputError(f"{what}: file {name} has update or upsert rows (which carry the full row) but lacks"
                         f" columns {lacking[name]}", **_where(spec, ds))


def _snapshot(spark, spec: TableSpec, st, ds: dt.date, located, rows, columns, column_changes, run_root: str,
              what: str, keys_checked: bool = False) -> Day:
    names = [c for c, _ in columns]
    seen = measure(rows, names) if keys_checked else validate_keys(rows, spec, ds, what, names)
    open_rows = spark.read.schema(conform.struct_type(columns)).parquet(st.open_partition.location)
    diff = changes.snapshot_changes(open_rows, rows, keys=spec.keys, columns=names,
                                    invalidate=spec.source.invalidate_missing,
                                    float_precision=float_precision(st, columns, column_changes))
    result, count, scratch = _materialize(spark, diff, run_root)
    return Day(result, count, columns, column_changes, located, {"source_rows": seen.rows}, scratch=[scratch],
               variable_bytes_per_row=seen.variable_bytes_per_row)


def first_columns(spark, spec: TableSpec, st, located: sources.Input, ds: dt.date) -> list[tuple[str, str]] | None:
    """The data columns of a day's input, for a table created from it (None when it has none)."""
    what = f"increment {located.description}"
    if spec.source.mode == "landing_zone":
        return landing.columns_of(spark, spec, located, ds) or None
    try:
        df = sources.read(spark, located, spec.source)
    except InputError as exc:  # as read_input does: the reader's errors name neither table nor date
        raise exc.reworded(exc.detail, **_where(spec, ds)) from None
    if df is None:
        return None
    df = conform.lower_case_columns(df, spec, ds.isoformat(), what)
    conform.check_shape(df, spec, ds.isoformat(), what)
    leave_out = (spec.source.operation_column,) if spec.source.mode == "cdc" else ()
    return _columns_of(df, leave_out)
