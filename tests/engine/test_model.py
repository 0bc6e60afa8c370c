"""Model-based test of the daily merge: a pure-Python reference model against the real engine.

Hypothesis draws a base snapshot and a few days of upsert increments over tiny key and value
domains (NULLs included), so that new keys, unchanged re-sends, changes, NULL -> NULL,
value -> NULL, NULL -> value, returning to an earlier value and empty increments all occur.
Each example builds a fresh Hive table, runs `merge.init_table` and `merge.merge_date` for
every day, and compares the whole table and each day's counts with the model, row for row."""

from __future__ import annotations

import datetime as dt
import itertools
import os

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.support import TableFixture, day, table_rows
from zipper.engine import merge

OPEN = "9999-12-31"
BASE_DS = day(0).isoformat()  # the base opens on start_date - 1 day: 2023-12-31

SINGLE = {"keys": ("id",), "schema": "id int, name string, score int"}
COMPOSITE = {"keys": ("tenant", "id"), "schema": "tenant string, id int, name string, score int"}

# Tiny domains, NULL included; '' and 0 make sure NULL is not confused with an "empty" value.
NAMES = st.sampled_from([None, "x", "y", ""])
SCORES = st.sampled_from([None, 0, 5])
ATTRS = st.tuples(NAMES, SCORES)
SINGLE_KEYS = st.tuples(st.integers(0, 5))
COMPOSITE_KEYS = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5))

_tables = itertools.count()

MODEL_SETTINGS = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)


# ---------------------------------------------------------------- the reference model

def _sort_key(row: tuple) -> tuple:
    """The ordering of `tests.support.table_rows`."""
    return tuple("" if v is None else str(v) for v in row)


class ZipperModel:
    """The merge rules in plain Python.

    open:   key tuple -> (attrs tuple, begin)    the current version of each key
    closed: [(key, attrs, begin, end)]           every version closed so far
    tracked: positions in attrs of the tracked columns (None: all); the others are updated in place"""

    def __init__(self, end_style: str, base_rows: list[tuple], key_count: int, tracked: tuple[int, ...] | None = None):
        self.end_style = end_style
        self.key_count = key_count
        self.tracked = tracked
        self.open: dict[tuple, tuple[tuple, str]] = {}
        self.closed: list[tuple[tuple, tuple, str, str]] = []
        self.history: dict[tuple, list[tuple]] = {}
        self.seen: set[str] = set()  # which kinds of transition occurred, for hypothesis events
        for row in base_rows:
            key, attrs = self._split(row)
            assert key not in self.open, "base keys are unique"
            self.open[key] = (attrs, BASE_DS)
            self.history[key] = [attrs]

    def _split(self, row: tuple) -> tuple[tuple, tuple]:
        return tuple(row[: self.key_count]), tuple(row[self.key_count:])

    def _tracked(self, attrs: tuple) -> tuple:
        return attrs if self.tracked is None else tuple(attrs[i] for i in self.tracked)

    def closed_end(self, ds: dt.date) -> str:
        return (ds if self.end_style == "exclusive" else ds - dt.timedelta(days=1)).isoformat()

    def merge(self, ds: dt.date, rows: list[tuple]) -> dict:
        """Apply one day's upsert increment; return the counts the engine should report."""
        counts = {"input": len(rows), "new": 0, "changed": 0, "unchanged": 0, "updated_in_place": 0,
                  "closed": 0, "open_before": len(self.open), "open_after": 0}
        today = ds.isoformat()
        if not rows:
            self.seen.add("empty increment")
        for row in rows:
            key, attrs = self._split(row)
            if key not in self.open:
                self.open[key] = (attrs, today)
                self.history[key] = [attrs]
                counts["new"] += 1
                continue
            old_attrs, begin = self.open[key]
            self._note(old_attrs, attrs, self.history[key])
            self.history[key].append(attrs)
            # Python == on None is NULL-safe equality: None == None, None != 0, None != ''.
            if old_attrs == attrs:
                counts["unchanged"] += 1
                continue
            if self._tracked(old_attrs) == self._tracked(attrs):
                self.open[key] = (attrs, begin)
                counts["updated_in_place"] += 1
                continue
            self.closed.append((key, old_attrs, begin, self.closed_end(ds)))
            self.open[key] = (attrs, today)
            counts["changed"] += 1
            counts["closed"] += 1
        counts["open_after"] = len(self.open)
        return counts

    def _note(self, old: tuple, new: tuple, history: list[tuple]) -> None:
        if old == new:
            self.seen.add("unchanged re-send")
        elif new in history:
            self.seen.add("return to an earlier value")
        for a, b in zip(old, new):
            if a is None and b is None:
                self.seen.add("NULL -> NULL")
            elif b is None:
                self.seen.add("value -> NULL")
            elif a is None:
                self.seen.add("NULL -> value")

    def rows(self) -> list[tuple]:
        rows = [key + attrs + (begin, OPEN) for key, (attrs, begin) in self.open.items()]
        rows += [key + attrs + (begin, end) for key, attrs, begin, end in self.closed]
        return sorted(rows, key=_sort_key)


def test_model_follows_the_rules():
    """The model itself, on the sequence of test_merge.test_null_safe_comparison_and_return_to_an_earlier_value."""
    m = ZipperModel("exclusive", [(1, "ann", "Oslo"), (2, "bob", "Rome")], 1)
    assert m.merge(day(1), [(1, "ann", None), (3, "cid", None)])["changed"] == 1
    assert m.merge(day(2), [(1, "ann", None)]) == {
        "input": 1, "new": 0, "changed": 0, "unchanged": 1, "updated_in_place": 0, "closed": 0,
        "open_before": 3, "open_after": 3}
    assert m.merge(day(3), []) == {
        "input": 0, "new": 0, "changed": 0, "unchanged": 0, "updated_in_place": 0, "closed": 0,
        "open_before": 3, "open_after": 3}
    m.merge(day(4), [(1, "ann", "Oslo")])
    assert m.rows() == [
        (1, "ann", None, "2024-01-01", "2024-01-04"),
        (1, "ann", "Oslo", "2023-12-31", "2024-01-01"),
        (1, "ann", "Oslo", "2024-01-04", OPEN),
        (2, "bob", "Rome", "2023-12-31", OPEN),
        (3, "cid", None, "2024-01-01", OPEN),
    ]
    inclusive = ZipperModel("inclusive", [(1, "ann", "Oslo")], 1)
    inclusive.merge(day(1), [(1, "ann", "Rome")])
    assert inclusive.rows() == [(1, "ann", "Oslo", "2023-12-31", "2023-12-31"),
                                (1, "ann", "Rome", "2024-01-01", OPEN)]


# ---------------------------------------------------------------- strategies

@st.composite
def scenarios(draw, keys):
    """(end_style, base rows, [increment rows per day]); rows are key parts + (name, score).

    Increments are drawn against a running picture of the table so that re-sending the current
    value, returning to an earlier value and touching existing keys are all likely, not rare."""
    end_style = draw(st.sampled_from(["exclusive", "inclusive"]))
    base = draw(st.lists(st.tuples(keys, ATTRS), max_size=6, unique_by=lambda r: r[0]))
    current = dict(base)
    seen: dict[tuple, list[tuple]] = {k: [a] for k, a in base}
    days = []
    for _ in range(draw(st.integers(1, 4))):
        increment: dict[tuple, tuple] = {}
        for _ in range(draw(st.integers(0, 6))):
            if current and draw(st.booleans()):
                key = draw(st.sampled_from(sorted(current)))
            else:
                key = draw(keys)
            if key in increment:
                continue
            how = draw(st.sampled_from(["resend", "earlier", "fresh"])) if key in current else "fresh"
            if how == "resend":
                attrs = current[key]
            elif how == "earlier" and any(a != current[key] for a in seen[key]):
                attrs = draw(st.sampled_from([a for a in seen[key] if a != current[key]]))
            else:
                attrs = draw(ATTRS)
            increment[key] = attrs
        for key, attrs in increment.items():
            current[key] = attrs
            seen.setdefault(key, []).append(attrs)
        days.append([key + attrs for key, attrs in increment.items()])
    return end_style, [key + attrs for key, attrs in base], days


# ---------------------------------------------------------------- engine vs model

def run_against_model(spark, root_factory, shape: dict, scenario) -> None:
    end_style, base, days = scenario
    fixture = TableFixture(root_factory.mktemp("m"), f"model_{os.getpid()}_{next(_tables)}",
                           keys=shape["keys"], schema=shape["schema"], end_style=end_style)
    fixture.write_base(spark, base)
    for n, rows in enumerate(days, start=1):
        fixture.write_increment(spark, day(n), rows)
    model = ZipperModel(end_style, base, len(shape["keys"]))

    init = merge.init_table(spark, fixture.spec)
    assert init.action == "init" and init.counts["open_after"] == len(base)
    assert table_rows(spark, fixture.table) == model.rows()

    for n, rows in enumerate(days, start=1):
        expected_counts = model.merge(day(n), rows)
        result = merge.merge_date(spark, fixture.spec, day(n))
        assert result.action == "merge", (n, result.summary())
        assert result.counts == expected_counts, f"counts of day {n} ({day(n)})"
        assert table_rows(spark, fixture.table) == model.rows(), f"table after day {n} ({day(n)})"
    for seen in sorted(model.seen):
        event(seen)
    event(f"end_style {end_style}")


@pytest.mark.slow
@MODEL_SETTINGS
@given(scenario=scenarios(SINGLE_KEYS))
@example(scenario=(  # value -> NULL -> NULL -> back to the value; NULL -> value; '' and 0 are not NULL
    "exclusive",
    [(1, "x", 5), (2, None, None), (3, "", 0)],
    [
        [(1, "x", None), (2, None, None), (3, None, 0)],
        [(1, "x", None), (2, "y", None), (3, "", None)],
        [],
        [(1, "x", 5), (2, "y", None), (3, "", 0), (4, None, None)],
    ],
))
@example(scenario=(  # the same day after day under inclusive ends, with an empty base
    "inclusive",
    [],
    [[(0, "x", 0)], [(0, None, 0)], [(0, None, None)], [(0, "x", 0), (1, None, None)]],
))
def test_single_key_merges_match_the_model(spark, tmp_path_factory, scenario):
    run_against_model(spark, tmp_path_factory, SINGLE, scenario)


@pytest.mark.slow
@MODEL_SETTINGS
@given(scenario=scenarios(COMPOSITE_KEYS))
@example(scenario=(  # keys matching on one part only are different keys
    "exclusive",
    [("a", 1, "x", 0), ("b", 1, "x", 0)],
    [
        [("a", 1, "y", 0), ("a", 2, "x", 0), ("b", 0, None, None), ("b", 1, "x", 0)],
        [("b", 1, None, 0), ("a", 1, "y", 0), ("a", 2, "x", None)],
        [("a", 1, "x", 0), ("b", 1, None, 0), ("b", 2, "x", 0)],
    ],
))
def test_composite_key_merges_match_the_model(spark, tmp_path_factory, scenario):
    run_against_model(spark, tmp_path_factory, COMPOSITE, scenario)


def test_model_updates_untracked_columns_in_place():
    m = ZipperModel("exclusive", [(1, "ann", 5)], 1, tracked=(1,))  # only score is tracked
    assert m.merge(day(1), [(1, "anna", 5)])["updated_in_place"] == 1
    m.merge(day(2), [(1, "anna", 6)])
    assert m.rows() == [(1, "anna", 5, "2023-12-31", "2024-01-02"), (1, "anna", 6, "2024-01-02", OPEN)]
