"""The pure merge transform, row by row."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow.parquet as pq
from pyspark.testing import assertDataFrameEqual

from zipper.transforms import daily, keychecks, late
from zipper.transforms.shape import MergeShape

SCHEMA_OPEN = "id bigint, name string, city string, begin_dt string"
SCHEMA_INC = "id bigint, name string, city string"
OUT = "id bigint, name string, city string, begin_dt string, zipper_slot string, zipper_kind string"


def classify(spark, open_rows, increment, tracked=("name", "city"), broadcast=True):
    return daily.classify(
        spark.createDataFrame(open_rows, SCHEMA_OPEN),
        spark.createDataFrame(increment, SCHEMA_INC),
        MergeShape(
            keys=["id"],
            columns=["id", "name", "city"],
            tracked=list(tracked),
            begin_column="begin_dt",
            ds="2024-01-05",
        ),
        broadcast=broadcast,
    )


OPEN = [
    (1, "a", "x", "2024-01-01"),  # absent from the increment
    (2, "b", "y", "2024-01-02"),  # changes city
    (3, "c", None, "2024-01-03"),  # re-sent with the same NULL city
    (4, "d", "z", "2024-01-01"),  # NULL appears in city: a change
]
INCREMENT = [(2, "b", "w"), (3, "c", None), (4, "d", None), (9, "n", "q")]


def test_each_row_goes_to_its_slot_with_its_kind(spark):
    expected = spark.createDataFrame(
        [
            (1, "a", "x", "2024-01-01", "open", "carried"),
            (2, "b", "y", "2024-01-02", "closed", "closed"),
            (2, "b", "w", "2024-01-05", "open", "changed"),
            (3, "c", None, "2024-01-03", "open", "unchanged"),
            (4, "d", "z", "2024-01-01", "closed", "closed"),
            (4, "d", None, "2024-01-05", "open", "changed"),
            (9, "n", "q", "2024-01-05", "open", "new"),
        ],
        OUT,
    )
    assertDataFrameEqual(classify(spark, OPEN, INCREMENT), expected, checkRowOrder=False)


def test_same_result_without_broadcast(spark):
    assertDataFrameEqual(
        classify(spark, OPEN, INCREMENT, broadcast=False), classify(spark, OPEN, INCREMENT), checkRowOrder=False
    )


def test_untracked_change_updates_in_place_without_a_new_version(spark):
    result = classify(spark, [(1, "a", "x", "2024-01-01")], [(1, "a", "moved")], tracked=["name"])
    expected = spark.createDataFrame([(1, "a", "moved", "2024-01-01", "open", "updated")], OUT)
    assertDataFrameEqual(result, expected)


def test_empty_open_partition_makes_every_row_new(spark):
    result = classify(spark, [], [(1, "a", "x")])
    assertDataFrameEqual(result, spark.createDataFrame([(1, "a", "x", "2024-01-05", "open", "new")], OUT))


def test_key_problems_are_found(spark):
    df = spark.createDataFrame([(1, "a", "x"), (1, "b", "y"), (None, "c", "z"), (2, "d", "w")], SCHEMA_INC)
    assert [tuple(r) for r in keychecks.key_offenders(df, ["id"]).collect()] == [(None, 1), (1, 2)]


def written(spark, folder, files: dict[str, list[tuple]], schema: str):
    """`files` (name -> rows) written as Parquet files of those names in `folder`, read back as one
    input, and the URI Spark names each file by."""
    folder.mkdir(parents=True)
    for name, rows in files.items():
        pq.write_table(spark.createDataFrame(rows, schema).toArrow(), folder / name)
    return spark.read.parquet(str(folder)), {name: (folder / name).as_uri() for name in files}


PROBLEMS = (
    "zipper_key_problem string, zipper_keys bigint, zipper_rows bigint,"
    " zipper_examples array<struct<id:bigint, zipper_value:{value}, zipper_rows:bigint>>, zipper_files array<string>"
)


def test_key_problems_counts_every_problem_with_its_first_keys_and_the_files_that_hold_them(spark, tmp_path):
    """NULL and repeated keys in one query: a NULL key spread over two files, key 1 in both files
    (three rows), key 2 twice in one; key 3 once is no problem."""
    rows, uri = written(
        spark,
        tmp_path / "in",
        {
            "part-0.parquet": [(1, "a", "x"), (1, "b", "y"), (None, "c", "z"), (3, "d", "w")],
            "part-1.parquet": [(1, "e", "v"), (2, "f", "u"), (2, "g", "t"), (None, "h", "s"), (None, "i", "r")],
        },
        SCHEMA_INC,
    )
    both = sorted(uri.values())
    expected = spark.createDataFrame(
        [
            ("null_key", 1, 3, [(None, None, 3)], both),
            ("repeated_key", 2, 5, [(1, None, 3), (2, None, 2)], both),
        ],
        PROBLEMS.format(value="string"),
    )
    assertDataFrameEqual(keychecks.key_problems(rows, ["id"]), expected, checkRowOrder=False)
    # two examples asked for: the first keys in key order, the counts still of all of them
    first = keychecks.key_problems(rows.where("id IS NOT NULL"), ["id"], examples=1)
    assert [(r.zipper_keys, [e.id for e in r.zipper_examples]) for r in first.collect()] == [(2, [1])]


def test_key_problems_of_ordered_changes_by_date(spark, tmp_path):
    """With an order column, a key may come several times, not with the same order twice nor a NULL
    one; `by` (a rerun's dates) keeps each date's problems apart. Rows not read from files have none."""
    events = spark.createDataFrame(
        [
            ("d1", 1, 5),
            ("d1", 1, 5),
            ("d1", 1, 6),
            ("d1", 1, 6),
            ("d1", 2, 1),
            ("d1", 2, 2),  # key 2: two orders, no problem
            ("d1", 3, None),
            ("d2", None, 1),
            ("d2", 4, 1),
            ("d2", 4, 1),
        ],
        "ds string, id bigint, seq int",
    )
    found = keychecks.key_problems(events, ["id"], order="seq", by=("ds",))
    expected = spark.createDataFrame(
        [
            ("d1", "repeated_order", 1, 4, [(1, 5, 4)], []),
            ("d1", "null_order", 1, 1, [(3, None, 1)], []),
            ("d2", "null_key", 1, 1, [(None, None, 1)], []),
            ("d2", "repeated_order", 1, 2, [(4, 1, 2)], []),
        ],
        "ds string, " + PROBLEMS.format(value="int"),
    )
    assertDataFrameEqual(found, expected, checkRowOrder=False)


def test_big_pass_only_routes_rows_and_keeps_their_values(spark):
    routed = daily.route_open(
        spark.createDataFrame(OPEN, SCHEMA_OPEN), spark.createDataFrame(INCREMENT, SCHEMA_INC), keys=["id"]
    )
    expected = spark.createDataFrame(
        [row + (slot,) for row, slot in zip(OPEN, ["open", "touched", "touched", "touched"])],
        SCHEMA_OPEN + ", zipper_slot string",
    )
    assertDataFrameEqual(routed, expected, checkRowOrder=False)


def test_map_columns_compare_by_their_entries_at_any_depth(spark):
    """Spark's <=> refuses maps; equal entries in another order are the same value."""
    schema = "id bigint, tags map<string,int>, info struct<n:int, m:map<string,string>>, lists array<map<int,int>>"
    open_rows = spark.createDataFrame(
        [
            (1, {"a": 1, "b": 2}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # re-sent, entries in another order
            (2, {"a": 1}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # a map value changes
            (3, {}, None, None, "2024-01-01"),  # an empty map becomes NULL
            (4, {"a": 1}, (1, {"x": "1"}), [{1: 1}], "2024-01-01"),  # a map nested in a struct changes
            (5, {"a": 1}, (1, {"x": "1"}), [{1: 1}, {2: 2}], "2024-01-01"),  # a map nested in an array changes
        ],
        schema + ", begin_dt string",
    )
    increment = spark.createDataFrame(
        [
            (1, {"b": 2, "a": 1}, (1, {"x": "1"}), [{1: 1}]),
            (2, {"a": 2}, (1, {"x": "1"}), [{1: 1}]),
            (3, None, None, None),
            (4, {"a": 1}, (1, {"x": "2"}), [{1: 1}]),
            (5, {"a": 1}, (1, {"x": "1"}), [{1: 1}, {2: 3}]),
        ],
        schema,
    )
    columns = ["id", "tags", "info", "lists"]
    result = daily.classify(
        open_rows,
        increment,
        MergeShape(
            keys=["id"],
            columns=columns,
            tracked=columns[1:],
            begin_column="begin_dt",
            ds="2024-01-05",
        ),
    )
    kinds = {(r.id, r.zipper_kind) for r in result.where("zipper_slot = 'open'").collect()}
    assert kinds == {(1, "unchanged"), (2, "changed"), (3, "changed"), (4, "changed"), (5, "changed")}


# ---------------------------------------------------------------- late changes put in place

LATE_SCHEMA = "id int, name string, note string, ts timestamp, valid_from timestamp, valid_to timestamp"
LATE_END = dt.datetime(9999, 12, 31)
LATE_OPEN = "9999-12-31"
LATE_TODAY = "2024-03-01"  # the day merging the late changes


def _at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1) + dt.timedelta(minutes=minute)


def _late_in_place(spark, history, changes):
    """`late.in_place` on plain tuples: history (id, name, note, minute, vf, vt, begin, end),
    changes (id, name, note, minute, op); rows back as tuples in key and time order."""
    versions = spark.createDataFrame(
        [
            (k, n, u, _at(ts), _at(vf), LATE_END if vt is None else _at(vt), b, e)
            for k, n, u, ts, vf, vt, b, e in history
        ],
        LATE_SCHEMA + ", begin_dt string, end_dt string",
    )
    late_rows = spark.createDataFrame(
        [(k, n, u, _at(ts), _at(ts), None, op) for k, n, u, ts, op in changes], LATE_SCHEMA + ", zipper_op string"
    )
    result = late.in_place(
        versions,
        late_rows,
        MergeShape(
            keys=["id"],
            columns=["id", "name", "note", "ts", "valid_from", "valid_to"],
            tracked=["name"],
            validity=("valid_from", "valid_to"),
            updated_at="ts",
            begin_column="begin_dt",
            end_column="end_dt",
            open_end=LATE_OPEN,
            closed_end=LATE_TODAY,
            ds=LATE_TODAY,
        ),
    )
    return [tuple(r) for r in result.orderBy("id", "valid_from").collect()]


def _minute(value: dt.datetime) -> int | None:
    return None if value == LATE_END else int((value - dt.datetime(2024, 1, 1)).total_seconds() // 60)


def _reference_in_place(history: list[tuple], changes: list[tuple]) -> list[tuple]:
    """The rules in plain Python, one key: every event (the versions' starts, the deletes that
    made gaps, the late changes) in time order; an upsert with the tracked value (name) of the
    version before continues it (its note and ts the latest), else starts one; a delete ends it.
    A version holding an event of `history` keeps its days; a late one takes the end day of the
    version it splits, or in a gap or before the first the day merging it (no days without a
    history)."""
    events = []  # (minute, action, name, note, ts, days or None)
    for i, (_, name, note, ts, vf, vt, begin, end) in enumerate(history):
        events.append((vf, "upsert", name, note, ts, (begin, end)))
        following = history[i + 1][4] if i + 1 < len(history) else None
        if vt is not None and following != vt:
            events.append((vt, "delete", None, None, None, None))
    times = {e[0] for e in events}
    events += [(ts, op, name, note, ts, None) for _, name, note, ts, op in changes if ts not in times]
    runs = []  # [start, action, name, note, ts, days]
    for at, action, name, note, ts, days in sorted(events, key=lambda e: e[0]):
        last = runs[-1] if runs else None
        if action == "upsert" and last and last[1] == "upsert" and last[2] == name:
            if ts >= last[4]:
                last[3], last[4] = note, ts
            last[5] = last[5] or days
        else:
            runs.append([at, action, name, note, ts, days])
    rows = []
    for i, (at, action, name, note, ts, days) in enumerate(runs):
        if action == "delete":
            continue
        to = runs[i + 1][0] if i + 1 < len(runs) else None
        if days is None:
            holder = next((r for r in reversed(runs[:i]) if r[1] == "delete" or r[5]), None)
            if holder is not None and holder[1] == "upsert":
                days = (holder[5][1], holder[5][1])
            else:
                days = (LATE_TODAY, LATE_TODAY) if history else (None, None)
        rows.append((name, note, ts, at, to, *days))
    return rows


def test_late_changes_split_the_versions_that_hold_them(spark):
    history = [  # key 1: a[0, 10) b[10, open); key 2: a[0, 10), deleted at 10, c[20, 30) closed by a delete
        (1, "a", "x", 5, 0, 10, "2024-01-01", "2024-01-02"),
        (1, "b", "x", 10, 10, None, "2024-01-02", LATE_OPEN),
        (2, "a", "x", 0, 0, 10, "2024-01-01", "2024-01-02"),
        (2, "c", "x", 20, 20, 30, "2024-01-03", "2024-01-04"),
    ]
    changes = [
        (1, "z", "y", 4, "upsert"),  # splits a: a[0, 4) z[4, 10), in a's partition
        (1, "a", "q", 2, "upsert"),  # a's tracked value: continues a; its note stays (a's ts 5 is later)
        (1, "y", "y", -5, "upsert"),  # before the first version: y[-5, 0), in the merged day's partition
        (2, "d", "y", 15, "upsert"),  # in the gap: d[15, 20), in the merged day's partition
        (2, "a", "y", 5, "delete"),  # a late delete: a ends at 5
        (2, "c", "w", 25, "upsert"),  # the same tracked value as c: c's note and ts updated in place
        (2, "c", "x", 20, "upsert"),  # the moment c begins, same values: re-sent, nothing
    ]
    got = [
        (r[0], r[1], r[2], _minute(r[3]), _minute(r[4]), _minute(r[5]), r[6], r[7])
        for r in _late_in_place(spark, history, changes)
    ]
    assert got == [
        (1, "y", "y", -5, -5, 0, LATE_TODAY, LATE_TODAY),
        (1, "a", "x", 5, 0, 4, "2024-01-01", "2024-01-02"),
        (1, "z", "y", 4, 4, 10, "2024-01-02", "2024-01-02"),
        (1, "b", "x", 10, 10, None, "2024-01-02", LATE_OPEN),
        (2, "a", "x", 0, 0, 5, "2024-01-01", "2024-01-02"),
        (2, "d", "y", 15, 15, 20, LATE_TODAY, LATE_TODAY),
        (2, "c", "w", 25, 20, 30, "2024-01-03", "2024-01-04"),
    ]
    conflicting = late.conflicts(
        spark.createDataFrame([(1, "a", "x", _at(0), _at(0), _at(10))], LATE_SCHEMA),
        spark.createDataFrame([(1, "b", "x", _at(0), _at(0), None), (1, "a", "z", _at(0), _at(0), None)], LATE_SCHEMA),
        keys=["id"],
        tracked=["name"],
        validity=("valid_from", "valid_to"),
    ).collect()
    assert [(r.id, _minute(r.zipper_from)) for r in conflicting] == [(1, 0)]


def test_late_changes_in_any_order_give_the_sorted_history(spark):
    """Seeded random keys in one job: a key's changes, some loaded in time order (the history,
    built by the reference), the rest older than its latest event arriving late; the result equals
    the reference applied to all of them."""
    rng = random.Random(37)
    history, changes, expected = [], [], []
    for key in range(60):
        minutes = rng.sample(range(0, 100), rng.randint(2, 7))
        events = [(m, rng.choice(["upsert", "upsert", "delete"]), rng.choice("ab"), rng.choice("xy")) for m in minutes]
        loaded = sorted(rng.sample(events, rng.randint(1, len(events))))
        versions = _reference_in_place([], [(key, n, u, m, op) for m, op, n, u in loaded])
        if not versions:
            continue
        days = [f"2024-02-{i + 1:02d}" for i in range(len(versions) + 1)]
        rows = [
            (key, n, u, ts, vf, vt, days[i], LATE_OPEN if vt is None else days[i + 1])
            for i, (n, u, ts, vf, vt, *_) in enumerate(versions)
        ]
        last = rows[-1]
        latest = last[4] if last[5] is None else last[5]
        arrived = [(key, n, u, m, op) for m, op, n, u in events if (m, op, n, u) not in loaded and m < latest]
        if not arrived:
            continue
        history += rows
        changes += arrived
        expected += [(key, *row) for row in _reference_in_place(rows, arrived)]
    got = [
        (r[0], r[1], r[2], _minute(r[3]), _minute(r[4]), _minute(r[5]), r[6], r[7])
        for r in _late_in_place(spark, history, changes)
    ]
    assert len(changes) > 50
    assert got == sorted(expected, key=lambda r: (r[0], r[4]))
