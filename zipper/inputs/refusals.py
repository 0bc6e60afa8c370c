"""A day's refusals and their messages: NULL and repeated keys, NULL and repeated sequence values,
and the problems between the changes of one key (a delete that does not match, a landing zone's
anomalies). Keys are listed as `zipper history --key` takes them back."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError
from zipper.inputs.metrics import (
    FIRST_ORDER,
    Seen,
    metrics_of,
    observe,
    observe_with,
    observed_metrics,
    seen_by,
    variable_columns,
)
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat
from zipper.transforms import changes, keychecks
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


def validate_keys(
    df, spec: TableSpec, ds: dt.date, what: str, columns: tuple[str, ...] | list[str] = (), roots: list[str] = ()
) -> Seen:
    """Rows (and the string bytes of `columns`) of the input; fails naming every NULL and
    repeated key (`refuse_key_problems`; `roots`: the input's paths, that name its files). One
    pass over a good input."""
    counted, observation = observe(df, "rows", variable_columns(df.schema, columns))
    if keychecks.key_offenders(counted, spec.keys).limit(1).collect():
        refuse_key_problems(collect_key_problems(df, spec.keys), spec, ds, what, roots)
    return seen_by(observation, df)


# A local Parquet input up to this size is counted from its files' footers, and its keys are checked
# by the merge's own write as it reads them (`checked_as_read`): on a small day the key check's job
# of its own costs more than the rest of the merge's reading. Larger, the job also measures the
# rows' strings, which size the broadcast of the day's rows.
CHECKED_AS_READ_ROWS = 100_000
CHECKED_AS_READ_BYTES = 16 << 20  # the files' uncompressed size, as their footers give it
KEYS_SEEN = "zipper_key_problem_rows"


def footer_seen(located, columns: list[str]) -> Seen | None:
    """The rows of a small local Parquet input, from its files' footers (no Spark job), and the
    bytes of its top-level string and binary `columns` as stored before compression (they size
    the broadcast of the day's rows, as the key check's job measures them); its keys left for the
    write to check (`Seen.keys_unchecked`). None where the input is not such a one."""
    import pyarrow.parquet as pq  # the footers only

    from zipper.core.paths import local_path

    if located.format != SourceFormat.PARQUET or located.missing:
        return None
    files = located.kept if located.kept is not None else located.files
    paths = [local_path(f.path) for f in files]
    if not paths or not all(paths):
        return None
    wanted = {c.lower() for c in columns}
    rows = size = variable = 0
    for path in paths:
        try:
            metadata = pq.read_metadata(path)
        except (OSError, ValueError):  # gone, or not Parquet: the reading job says it as it always does
            return None
        rows += metadata.num_rows
        for group in (metadata.row_group(g) for g in range(metadata.num_row_groups)):
            size += group.total_byte_size
            for chunk in (group.column(c) for c in range(group.num_columns)):
                top = chunk.path_in_schema.split(".")[0].lower()
                if chunk.physical_type == "BYTE_ARRAY" and top in wanted and "." not in chunk.path_in_schema:
                    variable += chunk.total_uncompressed_size
        if rows > CHECKED_AS_READ_ROWS or size > CHECKED_AS_READ_BYTES:
            return None
    return Seen(rows, variable, keys_unchecked=True)


def checked_as_read(df, keys: list[str]):
    """`df` counting, as a job reads it, its rows whose key is NULL or repeated (`key_problems_seen`
    reads the count once the job has run): the key check of an input counted from its footers,
    made by the merge's own write rather than a job of its own."""
    from pyspark.sql import Window

    copies = F.count(F.lit(1)).over(Window.partitionBy(*keys))
    bad = F.sum(F.when(keychecks.null_key(keys) | (F.col(_COPIES) > 1), 1).otherwise(0)).alias(KEYS_SEEN)
    # one partition (the input is small: CHECKED_AS_READ_ROWS): the window then needs no shuffle,
    # whose stage would cost the write a second planning pass
    counted, observation = observe_with(df.coalesce(1).withColumn(_COPIES, copies), "keys", bad)
    return counted.drop(_COPIES), observation


_COPIES = "zipper__copies__"


def refuse_if_seen(observation, df, spec: TableSpec, ds: dt.date, what: str, roots: list[str] = ()) -> None:
    """After the write that read it (`checked_as_read`), refuse the input's NULL and repeated keys as
    `validate_keys` does, naming them all."""
    observed = observed_metrics(observation)
    if KEYS_SEEN in observed:
        found = bool(observed[KEYS_SEEN])
    else:  # the metrics were not handed over: the check's own job
        found = bool(keychecks.key_offenders(df, spec.keys).limit(1).collect())
    if found:
        refuse_key_problems(collect_key_problems(df, spec.keys), spec, ds, what, roots)


def validate_order(
    events, spec: TableSpec, ds: dt.date, what: str, order_name: str | None, columns: list[str], roots: list[str] = ()
) -> Seen:
    """Rows (and string bytes of the table's `columns`) of the events; fails naming every NULL
    key and (with a sequence column, `order_name`) every key whose sequence value is NULL or
    repeated, all in one refusal (`refuse_key_problems`)."""
    # the earliest change too, which tells a day of `source.updated_at` which closed partitions its
    # late changes can reach (`changeset.latest_events`), without a pass of its own
    first = [F.min(changes.ORDER).alias(FIRST_ORDER)] if changes.ORDER in events.columns else []
    counted, observation = observe_with(events, "events", *metrics_of(variable_columns(events.schema, columns)), *first)
    if changes.order_offenders(counted, spec.keys).limit(1).collect():
        found = collect_key_problems(events, spec.keys, order=changes.ORDER)
        refuse_key_problems(found, spec, ds, what, roots, order_name)
    return seen_by(observation, events)


def collect_key_problems(rows, keys: list[str], order: str | None = None, by: tuple[str, ...] = ()) -> list:
    """`keychecks.key_problems` collected: a day's only once its check found one (the check of a good
    day stays one plain aggregation; this query gathers every problem with its files at once)."""
    found = keychecks.key_problems(rows, keys, order=order, by=by, examples=MAX_LISTED_KEYS)
    return as_collected(found).collect()


def refuse_key_problems(
    problems, spec: TableSpec, ds: dt.date, what: str, roots: list[str] = (), order_name: str | None = None
) -> None:
    """One refusal naming every problem of a day's keys (collected `keychecks.key_problems`), so that
    the input is fixed in one go rather than problem by problem."""
    if problems:
        text = key_problems_text(what, problems, spec.keys, roots, order_name, spec.source.order_key)
        raise InputError(text, **where_of(spec, ds))
    # the check found a problem the report does not: the files changed between the two reads
    raise MissingInputError(
        f"{what} has NULL or repeated keys {spec.keys}, and changed while it was read; merge it again",
        **where_of(spec, ds),
    )


def key_problems_text(
    what: str,
    problems,
    keys: list[str],
    roots: list[str] = (),
    order_name: str | None = None,
    order_key: str = "sequence_by",
) -> str:
    """`what has P1; P2; ...`: each problem with its count, its files and its first keys, e.g.
    `increment /in has 2 rows with NULL in key column 'id' in part-1.parquet; 3 keys ['id'] more
    than once (7 rows) in part-0.parquet and part-1.parquet: 1, 4, 9`. Keys are listed as `zipper
    history --key` takes them back."""
    by_kind = {p[keychecks.KEY_PROBLEM]: p for p in problems}
    shown = [
        _problem_text(by_kind[kind], keys, roots, order_name, order_key)
        for kind in keychecks.KEY_PROBLEMS
        if kind in by_kind
    ]
    return f"{what} has " + "; ".join(shown)


def _problem_text(problem, keys: list[str], roots: list[str], order_name: str | None, order_key: str) -> str:
    kind, count, rows = problem[keychecks.KEY_PROBLEM], problem[keychecks.KEY_COUNT], problem[keychecks.ROWS]
    examples = problem[keychecks.EXAMPLES]
    files = files_text(problem[keychecks.FILES], roots)
    where = f" in {files}" if files else ""
    first = f", the first {len(examples)}" if count > len(examples) else ""
    if kind == keychecks.NULL_KEY:
        if len(keys) == 1:  # its one key is NULL: listing it says nothing
            return f"{_counted(rows, 'row')} with NULL in key column {keys[0]!r}{where}"
        listed = ", ".join(f"{key_text([e], keys)} ({_counted(e[keychecks.ROWS], 'row')})" for e in examples)
        return f"{_counted(rows, 'row')} with NULL in key columns {keys}{where}{first}: {listed}"
    head = f"{_counted(count, 'key')} {keys}"
    if kind == keychecks.REPEATED_KEY:
        return f"{head} more than once ({_counted(rows, 'row')}){where}{first}: {key_text(examples, keys)}"
    name = order_name or "order"  # a landing zone's order (file, row) is never NULL nor repeated
    if kind == keychecks.NULL_ORDER:
        return (
            f"{head} with NULL in {order_key} column {name!r} ({_counted(rows, 'row')}){where}{first}:"
            f" {key_text(examples, keys)}"
        )
    listed = ", ".join(f"{key_text([e], keys)} ({name} {value_text(e[keychecks.VALUE])})" for e in examples)
    return (
        f"{head} with a repeated value in {order_key} column {name!r} ({_counted(rows, 'row')}){where}{first}: {listed}"
    )


MAX_LISTED_FILES = 5


def files_text(files, roots: list[str] = ()) -> str:
    """`a.parquet`, `a.parquet and b.parquet`, `a, b, c, d, e and 3 more files`: files as Spark
    names them (URIs), each as `file_name` shows it."""
    names = [file_name(f, roots) for f in files if f]
    if len(names) <= 1:
        return "".join(names)
    if len(names) > MAX_LISTED_FILES:
        return ", ".join(names[:MAX_LISTED_FILES]) + f" and {len(names) - MAX_LISTED_FILES} more files"
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def file_name(path: str, roots: list[str] = ()) -> str:
    """A file Spark read, as the user knows it: relative to the input's folder (`roots`, the input's
    paths: `part-0.parquet`, `sub/part-1.parquet`), its name when a root is the file itself, else
    its whole path (plain for a local one)."""
    spelled = fs.spelled_alike(path)
    for root in roots:
        folder = fs.spelled_alike(root).rstrip("/")
        if spelled == folder:
            return fs.name_of(spelled)
        if spelled.startswith(folder + "/"):
            return spelled[len(folder) + 1 :]
    return spelled


def _counted(n: int, noun: str) -> str:
    """`1 row`, `2 rows`."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def collect_problems(problems, keys: list[str]) -> dict:
    rows = as_collected(changes.problem_summary(problems, keys=keys, examples=MAX_LISTED_KEYS)).collect()
    return {r[changes.PROBLEM]: (int(r["count"]), r["examples"]) for r in rows}


def refused_problems(spec: TableSpec, anomalies: bool) -> set[str]:
    """The problems that fail a day in `handle_problems` (the others are only counted): a delete that
    does not match, and with on_anomaly: error, a landing zone's anomalies."""
    refused = {changes.DELETE_MISMATCH}
    if anomalies and spec.source.anomalies_are_errors:
        refused |= set(ANOMALY_COUNTS)
    return refused


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
