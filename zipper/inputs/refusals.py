"""A day's refusals and their messages: NULL and repeated keys, NULL and repeated sequence values,
and the problems between the changes of one key (a delete that does not match, a landing zone's
anomalies). Keys are listed as `zipper history --key` takes them back."""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import InputError
from zipper.inputs.metrics import Seen, observe, seen_by, variable_columns
from zipper.tablespec.model import TableSpec
from zipper.transforms import changes, daily
from zipper.transforms.collected import as_collected, as_written

MAX_LISTED_KEYS = 20
# what a change of a key that is not its first of the day is checked against, in the refusals
CDC_PREVIOUS = "the row they delete (the key's previous change)"
LANDING_PREVIOUS = "the key's previous change that day"


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


def where_of(spec: TableSpec, ds: dt.date) -> dict:
    return {"table": spec.table, "ds": ds.isoformat()}


def value_text(value) -> str:
    """A key value in a message, as `zipper history --key` takes it back: rows collected through
    `as_collected` (timestamps in the session's time zone, decimals as Spark writes them),
    written by `as_written`."""
    return "NULL" if value is None else str(as_written(value))


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


def validate_keys(df, spec: TableSpec, ds: dt.date, what: str, columns: tuple[str, ...] | list[str] = ()) -> Seen:
    """Rows (and the string bytes of `columns`) of the input; fails naming keys if any is NULL
    or repeated. One pass over the input."""
    counted, observation = observe(df, "rows", variable_columns(df.schema, columns))
    refuse_key_offenders(changes_offenders(counted, spec.keys), spec, ds, what)
    return seen_by(observation, df)


def refuse_key_offenders(offenders, spec: TableSpec, ds: dt.date, what: str) -> None:
    """The refusal of a day's NULL keys, else its repeated keys (collected `daily.key_offenders`)."""
    refuse_nulls(offenders, spec, ds, what)
    if offenders:
        more = " (first 20)" if len(offenders) > MAX_LISTED_KEYS else ""
        raise InputError(
            f"{what} has keys {spec.keys} more than once{more}: {key_text(offenders[:MAX_LISTED_KEYS], spec.keys)}",
            **where_of(spec, ds),
        )


def changes_offenders(df, keys: list[str]):
    return as_collected(daily.key_offenders(df, keys).limit(MAX_LISTED_KEYS * 2 + 1)).collect()


def refuse_nulls(offenders, spec: TableSpec, ds: dt.date, what: str) -> None:
    nulls = [r for r in offenders if any(r[k] is None for k in spec.keys)][:MAX_LISTED_KEYS]
    if nulls:
        raise InputError(null_keys_text(what, nulls, spec.keys), **where_of(spec, ds))


def validate_order(events, spec: TableSpec, ds: dt.date, what: str, order_name: str | None, columns: list[str]) -> Seen:
    """Rows (and string bytes of the table's `columns`) of the events; fails naming keys that are
    NULL, and (with a sequence column, `order_name`) keys whose sequence value is NULL or repeated."""
    counted, observation = observe(events, "events", variable_columns(events.schema, columns))
    offenders = changes.order_offenders(counted, spec.keys).limit(MAX_LISTED_KEYS * 2 + 1)
    refuse_order_offenders(as_collected(offenders).collect(), spec, ds, what, order_name)
    return seen_by(observation, events)


def refuse_order_offenders(offenders, spec: TableSpec, ds: dt.date, what: str, order_name: str | None) -> None:
    """The refusal of a day's NULL keys, else its keys with a NULL or repeated sequence value
    (collected `changes.order_offenders`)."""
    refuse_nulls(offenders, spec, ds, what)
    if offenders:
        nulls = [r for r in offenders if r[changes.ORDER] is None]
        if nulls:
            raise InputError(
                f"{what} has NULL in sequence_by column {order_name!r} for keys {spec.keys}:"
                f" {key_text(nulls[:MAX_LISTED_KEYS], spec.keys)}",
                **where_of(spec, ds),
            )
        shown = ", ".join(
            f"{key_text([r], spec.keys)} ({order_name} {r[changes.ORDER]})" for r in offenders[:MAX_LISTED_KEYS]
        )
        raise InputError(
            f"{what} has the same sequence_by value twice for keys {spec.keys}: {shown}", **where_of(spec, ds)
        )


def collect_problems(problems, keys: list[str]) -> dict:
    rows = as_collected(changes.problem_summary(problems, keys=keys, examples=MAX_LISTED_KEYS)).collect()
    return {r[changes.PROBLEM]: (int(r["count"]), r["examples"]) for r in rows}


def handle_problems(spec: TableSpec, ds: dt.date, what: str, found: dict, against: str, anomalies: bool) -> dict:
    """Fail on the problems that are errors; return the counts of those that are only reported.
    `anomalies`: the mode reports a landing zone's anomalies (`SourceStrategy.reports_anomalies`)."""
    where = where_of(spec, ds)
    if changes.DELETE_MISMATCH in found:
        count, examples = found[changes.DELETE_MISMATCH]
        raise InputError(
            f"{what} has {count} delete row{'s' if count != 1 else ''} whose values differ from {against}"
            " (delete_match: all_columns);"
            f" keys {spec.keys}: {key_text(examples, spec.keys)}",
            **where,
        )
    counts = {}
    if anomalies:
        found_anomalies = {p: found[p] for p in ANOMALY_COUNTS if p in found}
        if found_anomalies and spec.source.anomalies_are_errors:
            shown = "; ".join(
                f"{anomaly_text(p, count)}: {key_text(examples, spec.keys)}"
                for p, (count, examples) in found_anomalies.items()
            )
            raise InputError(f"{what} has changes that do not fit {against} (on_anomaly: error): {shown}", **where)
        counts = {ANOMALY_COUNTS[p]: count for p, (count, _) in found_anomalies.items()}
    elif changes.DELETE_ABSENT in found:
        counts = {"deletes_of_absent_keys": found[changes.DELETE_ABSENT][0]}
    return counts


def add_counts(base: dict, more: dict) -> dict:
    for name, value in more.items():
        base[name] = base.get(name, 0) + value
    if "anomalies" in base:
        base["anomalies"] = sum(base[name] for name in ANOMALY_COUNTS.values())
    return base
