"""What a merge of date D does, given the committed state."""

from __future__ import annotations

import datetime as dt

import pytest

from zipper.core.errors import StateError
from zipper.jobs.plan import init_date, plan_merge, plan_rerun
from zipper.tablespec.model import TableSpec

SPEC = TableSpec.model_validate(
    {
        "name": "t",
        "table": "d.t",
        "keys": ["id"],
        "source": {"path": "/x/{{ ds }}"},
        "start_date": "2024-01-01",
        "end_date": "2024-01-31",
    }
)
D = dt.date


CAUTIOUS = SPEC.model_copy(update={"on_past_date": "error"})


def plan(
    ds,
    last=D(2024, 1, 5),
    initialized=True,
    commits=None,
    current=None,
    init_ds=D(2023, 12, 31),
    pending=None,
    spec=SPEC,
):
    commits = commits if commits is not None else {f"2024-01-0{i}": f"fp{i}" for i in range(1, 6)}
    current = current or (lambda d: f"fp{d.day}")
    return plan_merge(
        spec,
        ds,
        initialized=initialized,
        last_committed=last if initialized else None,
        init_ds=init_ds,
        committed_fingerprints=commits,
        current_fingerprint=current,
        pending_replay=pending,
    )


def test_next_date_applies():
    assert plan(D(2024, 1, 6)).action == "apply"


def test_same_date_same_input_is_a_noop():
    result = plan(D(2024, 1, 5))
    assert result.action == "noop" and "same input" in result.reason


def test_same_date_changed_input_is_replayed():
    result = plan(D(2024, 1, 5), current=lambda d: "other")
    assert (result.action, result.replay_from, result.replay_to) == ("replay", D(2024, 1, 5), D(2024, 1, 5))
    assert "2024-01-05 differs" in result.reason


def test_past_date_with_unchanged_inputs_is_a_noop():
    assert plan(D(2024, 1, 3)).action == "noop"


def test_past_date_with_a_later_changed_input_replays_from_that_date():
    result = plan(D(2024, 1, 3), current=lambda d: "changed" if d.day == 4 else f"fp{d.day}")
    assert (result.action, result.replay_from, result.replay_to) == ("replay", D(2024, 1, 4), D(2024, 1, 5))
    assert "input of 2024-01-04 differs" in result.reason


def test_on_past_date_error_names_the_rerun_command():
    with pytest.raises(
        StateError, match=r"on_past_date: error, so replay it explicitly: `zipper rerun t --from 2024-01-04`"
    ) as refused:
        plan(D(2024, 1, 3), current=lambda d: "changed" if d.day >= 4 else f"fp{d.day}", spec=CAUTIOUS)
    assert refused.value.final  # a scheduler's retry would be refused the same way: fail the task at once
    assert plan(D(2024, 1, 3), spec=CAUTIOUS).action == "noop"


def test_an_interrupted_replay_is_finished_first_or_named():
    result = plan(D(2024, 1, 4), last=D(2024, 1, 3), pending=(D(2024, 1, 2), D(2024, 1, 5)))
    assert (result.action, result.replay_from, result.replay_to) == ("resume", D(2024, 1, 2), D(2024, 1, 5))
    assert "interrupted with the table at 2024-01-03" in result.reason
    with pytest.raises(
        StateError, match=r"finish it explicitly: `zipper rerun t --from 2024-01-02 --to 2024-01-05`"
    ) as refused:
        plan(D(2024, 1, 6), last=D(2024, 1, 3), pending=(D(2024, 1, 2), D(2024, 1, 5)), spec=CAUTIOUS)
    assert refused.value.final


def rerun(first, last=None, table_at=D(2024, 1, 5), pending=None, current=None, uncommit_later=False):
    commits = {f"2024-01-0{i}": f"fp{i}" for i in range(1, table_at.day + 1)}
    return plan_rerun(
        SPEC,
        first,
        last,
        initialized=True,
        last_committed=table_at,
        init_ds=D(2023, 12, 31),
        pending_replay=pending,
        committed_fingerprints=commits,
        current_fingerprint=current or (lambda d: f"fp{d.day}"),
        uncommit_later=uncommit_later,
    )


def test_rerun_restores_the_day_before_and_replays_to_the_last_committed_date():
    result = rerun(D(2024, 1, 3))
    assert result.restore_from == D(2024, 1, 3) and result.dates == [D(2024, 1, 3), D(2024, 1, 4), D(2024, 1, 5)]
    assert (result.marker_from, result.marker_to, result.notes) == (D(2024, 1, 3), D(2024, 1, 5), [])


def test_rerun_past_the_last_date_merges_without_a_restore_and_short_ranges_say_what_is_dropped():
    ahead = rerun(D(2024, 1, 6), D(2024, 1, 8))
    assert ahead.restore_from is None and ahead.dates == [D(2024, 1, 6), D(2024, 1, 7), D(2024, 1, 8)]
    with pytest.raises(
        StateError,
        match=r"2024-01-02: --to 2024-01-03 is before the last committed date 2024-01-05:"
        r" 2024-01-04, 2024-01-05 would no longer be committed .*; pass --uncommit-later",
    ):
        rerun(D(2024, 1, 2), D(2024, 1, 3))
    with pytest.raises(
        StateError,
        match=r"nothing to replay: the table is at 2024-01-05, before 2024-01-06; merge"
        r" 2024-01-06 \(`zipper merge t --ds 2024-01-06`\), or give --to",
    ):
        rerun(D(2024, 1, 6))
    short = rerun(D(2024, 1, 2), D(2024, 1, 3), uncommit_later=True)
    assert short.dates == [D(2024, 1, 2), D(2024, 1, 3)]
    assert "2024-01-04, 2024-01-05 will no longer be committed" in short.notes[0]


def test_rerun_resumes_an_interrupted_replay_and_redoes_only_changed_dates():
    pending = (D(2024, 1, 2), D(2024, 1, 5))
    resumed = rerun(D(2024, 1, 2), table_at=D(2024, 1, 3), pending=pending)
    assert resumed.restore_from is None and resumed.dates == [D(2024, 1, 4), D(2024, 1, 5)]
    assert "resuming the interrupted replay of 2024-01-02..2024-01-05 (table at 2024-01-03)" in resumed.notes[0]
    assert resumed.resume_news == []  # a merge that said it resumes has nothing to add
    changed = rerun(
        D(2024, 1, 2), table_at=D(2024, 1, 3), pending=pending, current=lambda d: "new" if d.day == 3 else f"fp{d.day}"
    )
    assert changed.restore_from == D(2024, 1, 3) and changed.dates[0] == D(2024, 1, 3)
    assert changed.notes == [
        "resuming the interrupted replay of 2024-01-02..2024-01-05 (table at 2024-01-03);"
        " the input of 2024-01-03 changed since it was replayed"
    ]
    assert changed.resume_news == ["the input of 2024-01-03 changed since it was replayed"]
    earlier = rerun(D(2024, 1, 1), table_at=D(2024, 1, 3), pending=pending)
    assert earlier.restore_from == D(2024, 1, 1) and earlier.dates[-1] == D(2024, 1, 5)
    assert (earlier.marker_from, earlier.marker_to) == (D(2024, 1, 1), D(2024, 1, 5))


def test_rerun_refuses_gaps_reversed_ranges_and_the_base_date():
    with pytest.raises(StateError, match="merge the missing dates first: 2024-01-06"):
        rerun(D(2024, 1, 7))
    with pytest.raises(StateError, match="--to 2024-01-02 is before --from 2024-01-03"):
        rerun(D(2024, 1, 3), D(2024, 1, 2))
    with pytest.raises(StateError, match="not initialized"):
        plan_rerun(
            SPEC,
            D(2024, 1, 3),
            None,
            initialized=False,
            last_committed=None,
            init_ds=None,
            pending_replay=None,
            committed_fingerprints={},
            current_fingerprint=str,
        )
    with pytest.raises(StateError, match="base date 2024-01-02"):
        plan_rerun(
            SPEC,
            D(2024, 1, 2),
            None,
            initialized=True,
            last_committed=D(2024, 1, 5),
            init_ds=D(2024, 1, 2),
            pending_replay=None,
            committed_fingerprints={},
            current_fingerprint=str,
        )


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


@pytest.mark.parametrize("end_style, last_run", [("exclusive", D(2024, 1, 2)), ("inclusive", D(2024, 1, 3))])
def test_a_date_that_would_close_versions_on_open_end_is_refused(end_style, last_run):
    """Its closed partition would be the open partition itself: the publish would replace the open rows."""
    spec = SPEC.model_copy(update={"end_date": None, "open_end": D(2024, 1, 3), "end_style": end_style})
    assert plan(last_run, last=last_run - dt.timedelta(days=1), spec=spec).action == "apply"
    after = last_run + dt.timedelta(days=1)
    with pytest.raises(
        StateError,
        match=rf"d\.t {after}: date would close versions on 2024-01-0\d, not before open_end"
        rf" 2024-01-03: the last run date is {last_run} \(set end_date, or a later open_end\)",
    ):
        plan(after, last=last_run, spec=spec)


def test_init_refuses_a_base_date_no_merge_could_follow():
    assert init_date(SPEC, D(2023, 12, 31)) == D(2023, 12, 31) and init_date(SPEC, D(2024, 1, 9)) == D(2024, 1, 9)
    with pytest.raises(
        StateError,
        match=r"d\.t 2023-12-01: --ds is before 2023-12-31, the day before start_date: .*"
        r"init with --ds 2023-12-31 or later",
    ):
        init_date(SPEC, D(2023, 12, 1))
    with pytest.raises(StateError, match=r"--ds is not before open_end 9999-12-31"):
        init_date(SPEC, D(9999, 12, 31))
