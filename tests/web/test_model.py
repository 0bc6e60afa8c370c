"""What the view shows about a table, from its committed state (zipper.web.model): no I/O."""

from __future__ import annotations

import datetime as dt

from zipper.table.catalog import Partition
from zipper.table.state import (
    COMMITTED_AT,
    COUNTS,
    DS,
    FINGERPRINT,
    LAST_COMMITTED,
    P_SPEC_NAME,
    ROWS,
    RUN_ID,
    Commit,
    Correction,
    TableState,
)
from zipper.tablespec.model import TableSpec
from zipper.web import model

SPEC = TableSpec.model_validate(
    {
        "name": "dim",
        "table": "dw.dim",
        "keys": ["id"],
        "source": {"mode": "upsert", "format": "parquet", "path": "/data/ds={{ ds }}"},
        "start_date": "2024-01-01",
    }
)


def state(*dates: str, open_rows: int = 5) -> TableState:
    commits = {
        d: Commit(
            d, f"run-{d}", f"{d}T01:00:00+00:00", "fp", {"new": 1, "changed": 2, "closed": 2, "open_after": i + 3}, 2, d
        )
        for i, d in enumerate(dates)
    }
    closed = [Partition(c.end, f"file:/t/{c.ds}", c.params()) for c in commits.values()]
    last = {LAST_COMMITTED: dates[-1], RUN_ID: f"run-{dates[-1]}", ROWS: str(open_rows)} if dates else {}
    return TableState(
        exists=True,
        location="file:/t",
        properties={P_SPEC_NAME: "dim"},
        open_partition=Partition("9999-12-31", "file:/t/open", last),
        commits=commits,
        closed=closed,
    )


def test_the_lag_counts_the_scheduled_dates_not_committed():
    today = dt.date(2024, 1, 10)  # the run of 2024-01-09 has started: it is due
    assert model.expected_date(SPEC, today) == dt.date(2024, 1, 9)
    assert model.lag_days(SPEC, dt.date(2024, 1, 9), today) == 0
    assert model.lag_days(SPEC, dt.date(2024, 1, 6), today) == 3
    assert model.lag_days(SPEC, None, today) is None  # nothing committed yet
    assert model.lag_days(SPEC, None, dt.date(2024, 1, 1)) == 0  # before its first date: nothing due
    ended = SPEC.model_copy(update={"end_date": dt.date(2024, 1, 5)})
    assert model.lag_days(ended, dt.date(2024, 1, 5), today) == 0  # its end date is as far as it goes


def test_a_summary_flags_what_needs_attention_first_a_failed_run():
    today = dt.date(2024, 1, 4)
    st = state("2024-01-01", "2024-01-02", "2024-01-03")
    fine = model.table_summary(SPEC, st, today)
    assert (fine["last_committed"], fine["lag_days"], fine["problem"]) == ("2024-01-03", 0, None)
    assert fine["open_rows"] == 5 and fine["closed_rows"] == 6 and fine["last_commit"]["ds"] == "2024-01-03"
    behind = model.table_summary(SPEC, st, dt.date(2024, 1, 7))
    assert behind["problem"] == "3 days behind"
    failed = model.table_summary(SPEC, st, dt.date(2024, 1, 7), {"state": "failed", "failed_task": "merge"})
    assert failed["problem"] == "latest run failed (merge)"
    # with the job's own line, which its task left (zipper.airflow.run_reports.FAILURE_XCOM)
    why = {"state": "failed", "failed_task": "merge", "failure": "dw.dim 2024-01-04: change-volume guard: ..."}
    assert model.table_summary(SPEC, st, dt.date(2024, 1, 7), why)["problem"] == (
        "latest run failed (merge): dw.dim 2024-01-04: change-volume guard: ..."
    )
    assert model.table_summary(SPEC, TableState(exists=False), today)["problem"] == "no table yet"


def test_the_series_has_one_point_per_committed_date_and_the_log_is_newest_first():
    st = state("2024-01-02", "2024-01-01", "2024-01-03")
    points = model.series(st)
    assert [p["ds"] for p in points] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert points[0] == {"ds": "2024-01-01", "open_after": 4, "new": 1, "changed": 2, "unchanged": 0, "closed": 2}
    assert [c["ds"] for c in model.commit_log(st, 2)] == ["2024-01-03", "2024-01-02"]
    assert model.commit_log(st, 0) == []
    entry = model.commit_log(st, 1)[0]
    assert entry["run_id"] == "run-2024-01-03" and entry["action"] == "merge" and entry["fingerprint"] == "fp"
    assert {COMMITTED_AT, COUNTS, DS, FINGERPRINT} <= set(st.closed[0].params)


def test_the_commit_log_says_which_action_committed_each_date():
    st = state("2024-01-01", "2024-01-02")
    replayed = Commit(
        "2024-01-03", "run-r", "2024-01-04T01:00:00+00:00", "fp", {"open_after": 5}, 0, "2024-01-03", None, "replay"
    )
    assert Commit.from_partition(Partition("2024-01-03", "file:/t/r", replayed.params())).action == "replay"
    older = {k: v for k, v in replayed.params().items() if k != "zipper.action"}  # a record made before actions
    assert Commit.from_partition(Partition("2024-01-03", "file:/t/r", older)).action == "merge"
    st.commits["2024-01-03"] = replayed
    assert [c["action"] for c in model.commit_log(st, 3)] == ["replay", "merge", "merge"]


def test_a_correction_is_in_the_commit_log_after_its_dates_commit():
    st = state("2024-01-01", "2024-01-02")
    record = Correction(
        "run-c",
        "delete",
        "test rows",
        "ann",
        "2024-01-03T09:00:00+00:00",
        "2024-01-01",
        where="`src` = 'test'",
        counts={"removed": 3},
    )
    st.open_partition.params.update(record.params())
    log = model.commit_log(st, 3)
    assert [(c["ds"], c["action"]) for c in log] == [
        ("2024-01-02", "merge"),
        ("2024-01-01", "correct"),
        ("2024-01-01", "merge"),
    ]
    assert log[1]["what"] == "correction run-c (delete where `src` = 'test'; reason: 'test rows')"
    assert log[1]["by"] == "ann" and log[1]["counts"] == {"removed": 3}
