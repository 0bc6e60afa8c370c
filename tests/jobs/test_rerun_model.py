"""Model-based test of reruns: the reference model of test_model against the real engine.

Hypothesis draws a base and a few days (as in test_model), merges them, then changes past
increments and brings the table up to date in one of three ways: an explicit rerun from a
random date up to the change, a clear-style `merge` of a past date (then of every later one),
or a rerun that crashes at a random step and is run again. After each, the table equals the
model over the current inputs, every commit records the model's counts, and a rebuild would
write the same rows; at the end a published rebuild changes nothing. Both end styles, with all columns tracked or one untracked."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.jobs.test_model import ATTRS, MODEL_SETTINGS, SINGLE, SINGLE_KEYS, ZipperModel, scenarios
from tests.support import TableFixture, day, sorted_rows, table_rows
from zipper.core import faults
from zipper.jobs import merge, rebuild, replay
from zipper.jobs.init import init_table
from zipper.table import check, state

_tables = itertools.count()
CRASHES = [
    ("after_restore_write", 1),
    ("after_restore_publish", 1),
    ("after_write", 2),
    ("before_publish", 1),
    ("after_publish", 2),
    ("after_replayed_date", 1),
]
TRACKING = {"all": None, "score": (1,)}  # track_columns -> tracked positions in (name, score)
RERUN_SETTINGS = settings(MODEL_SETTINGS, max_examples=2)


@st.composite
def rerun_scenarios(draw):
    """(end_style, tracking, base, days, operations); an operation changes one past increment
    and then catches up: ("rerun", changed day, new rows, from) | ("clear", ..., from) |
    ("crash", ..., from, (step, occurrence))."""
    end_style, base, days = draw(scenarios(SINGLE_KEYS))
    tracking = draw(st.sampled_from(sorted(TRACKING)))
    operations = []
    for _ in range(draw(st.integers(1, 2))):
        changed = draw(st.integers(1, len(days)))
        rows = draw(st.lists(st.tuples(SINGLE_KEYS, ATTRS), max_size=4, unique_by=lambda r: r[0]))
        how = draw(st.sampled_from(["rerun", "clear", "crash"]))
        start = draw(st.integers(1, changed))
        crash = draw(st.sampled_from(CRASHES)) if how == "crash" else None
        operations.append((how, changed, [k + a for k, a in rows], start, crash))
    return end_style, tracking, base, days, operations


def reference(end_style, tracking, base, days, upto=None):
    """The model over the given inputs: (rows, counts by date)."""
    model = ZipperModel(end_style, base, 1, TRACKING[tracking])
    counts = {day(n).isoformat(): model.merge(day(n), rows) for n, rows in enumerate(days[:upto], start=1)}
    return model.rows(), counts


def assert_matches(spark, t, expected):
    """The table equals the model (rows and every date's counts) and what a rebuild would write."""
    rows, counts = expected
    assert table_rows(spark, t.table) == rows
    assert {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()} == counts
    assert sorted_rows(rebuild.rebuilt_rows(spark, t.spec)) == rows


@pytest.mark.slow
@RERUN_SETTINGS
@given(scenario=rerun_scenarios())
@example(
    scenario=(  # inclusive ends, an untracked column, a crash between two replayed dates, then a clear
        "inclusive",
        "score",
        [(1, "x", 5), (2, None, None)],
        [[(1, "y", 5), (3, "x", 0)], [(1, "y", 0), (2, None, 5)], [(3, "", 0)]],
        [
            ("crash", 2, [(1, "x", 5), (2, "x", None)], 1, ("after_replayed_date", 1)),
            ("clear", 3, [(1, "y", 0), (3, None, 0)], 2, None),
        ],
    )
)
@example(
    scenario=(  # exclusive ends, a crash inside the second replayed date, then an explicit rerun
        "exclusive",
        "all",
        [(1, "x", 5), (2, "", 0)],
        [[(1, "x", None)], [], [(1, "x", 5), (2, None, 0)]],
        [("crash", 2, [(2, "y", 0), (4, "x", 5)], 1, ("after_write", 2)), ("rerun", 3, [(1, "x", 5)], 3, None)],
    )
)
def test_reruns_match_the_model_and_a_rebuild(spark, tmp_path_factory, scenario):
    end_style, tracking, base, days, operations = scenario
    options = {"track_columns": ["score"]} if tracking == "score" else {}
    t = TableFixture(
        tmp_path_factory.mktemp("r"),
        f"rerun_model_{os.getpid()}_{next(_tables)}",
        keys=SINGLE["keys"],
        schema=SINGLE["schema"],
        end_style=end_style,
        **options,
    )
    t.write_base(spark, base)
    for n, rows in enumerate(days, start=1):
        t.write_increment(spark, day(n), rows)
    init_table(spark, t.spec)
    replay.rerun(spark, t.spec, day(1), day(len(days)))  # the first days, in one go
    assert_matches(spark, t, reference(end_style, tracking, base, days))

    current = list(days)
    for how, changed, rows, start, crash in operations:
        before = table_rows(spark, t.table)
        current[changed - 1] = rows
        t.write_increment(spark, day(changed), rows)
        if how == "rerun":
            replay.rerun(spark, t.spec, day(start))
        elif how == "clear":  # clear `start` and every later date, as the Airflow UI does
            results = [merge.merge_date(spark, t.spec, day(n)) for n in range(start, len(days) + 1)]
            assert [r.action for r in results if r.action != "noop"] == ["replay"]
        else:
            step, occurrence = crash
            try:
                with faults.crash_at(step, occurrence):
                    replay.rerun(spark, t.spec, day(start))
            except faults.SimulatedCrash:
                at = state.read_state(spark, t.spec).last_committed
                # the old table, or a consistent table at some date built from the current inputs
                seen = table_rows(spark, t.table)
                assert seen == before or seen == reference(end_style, tracking, base, current, (at - day(0)).days)[0]
                replay.rerun(spark, t.spec, day(start))  # the same command converges
        assert_matches(spark, t, reference(end_style, tracking, base, current))
        assert state.read_state(spark, t.spec).replay is None

    expected = table_rows(spark, t.table)
    rebuild.rebuild(spark, t.spec)
    assert_matches(spark, t, (expected, reference(end_style, tracking, base, current)[1]))
    assert check.run_checks(spark, t.spec)["ok"]
