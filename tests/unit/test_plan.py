"""What a merge of date D does, given the committed state."""

from __future__ import annotations

import datetime as dt

import pytest

from zipper.engine.plan import init_date, plan_merge
from zipper.errors import StateError
from zipper.spec.model import TableSpec

SPEC = TableSpec.model_validate(
    {"name": "t", "table": "d.t", "keys": ["id"], "source": {"path": "/x/{{ ds }}"},
     "start_date": "2024-01-01", "end_date": "2024-01-31"}
)
D = dt.date


def plan(ds, last=D(2024, 1, 5), initialized=True, commits=None, current=None, init_ds=D(2023, 12, 31)):
    commits = commits if commits is not None else {f"2024-01-0{i}": f"fp{i}" for i in range(1, 6)}
    current = current or (lambda d: f"fp{d.day}")
    return plan_merge(SPEC, ds, initialized=initialized, last_committed=last if initialized else None,
                      init_ds=init_ds, committed_fingerprints=commits, current_fingerprint=current)


def test_next_date_applies():
    assert plan(D(2024, 1, 6)).action == "apply"


def test_same_date_same_input_is_a_noop():
    result = plan(D(2024, 1, 5))
    assert result.action == "noop" and "same input" in result.reason


def test_same_date_changed_input_is_an_error():
    with pytest.raises(StateError, match="2024-01-05 differs"):
        plan(D(2024, 1, 5), current=lambda d: "other")


def test_past_date_with_unchanged_inputs_is_a_noop():
    assert plan(D(2024, 1, 3)).action == "noop"


def test_past_date_with_a_later_changed_input_names_it():
    with pytest.raises(StateError, match="2024-01-04 differs"):
        plan(D(2024, 1, 3), current=lambda d: "changed" if d.day == 4 else f"fp{d.day}")


def test_gap_names_the_missing_dates():
    with pytest.raises(StateError, match="missing dates first: 2024-01-06, 2024-01-07"):
        plan(D(2024, 1, 8))


def test_uninitialized_table_is_created_on_the_first_date_only():
    assert plan(D(2024, 1, 1), initialized=False).action == "init_and_apply"
    with pytest.raises(StateError, match="not initialized"):
        plan(D(2024, 1, 2), initialized=False)


def test_dates_outside_the_schedule_are_refused():
    with pytest.raises(StateError, match="before the spec's start_date"):
        plan(D(2023, 12, 1))
    with pytest.raises(StateError, match="after the spec's end_date"):
        plan(D(2024, 2, 1))


def test_base_date_cannot_be_merged():
    with pytest.raises(StateError, match="base date 2024-01-02"):
        plan(D(2024, 1, 2), init_ds=D(2024, 1, 2))


def test_init_date_defaults_to_the_day_before_start():
    assert init_date(SPEC, None) == D(2023, 12, 31)
    assert init_date(SPEC, D(2024, 1, 10)) == D(2024, 1, 10)
