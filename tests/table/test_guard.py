"""The change-volume guard's rule on its own: both limits must be passed (on a table's first days,
before its median means anything, the share alone), small days and dates committed without input
do not count, and an accepted day passes."""

from __future__ import annotations

import datetime as dt

import pytest

from zipper.core.errors import LargeChangeError
from zipper.core.reports import SKIPPED
from zipper.table import guard
from zipper.table.state import Commit, TableState
from zipper.tablespec.model import TableSpec

SPEC = TableSpec.model_validate(
    {
        "name": "dim",
        "table": "dw.dim",
        "keys": ["id"],
        "source": {"mode": "snapshot", "format": "parquet", "path": "/data/ds={{ ds }}"},
        "start_date": "2024-01-01",
    }
)
DS = dt.date(2024, 2, 1)


def history(*changed: int, skipped: tuple[int, ...] = ()) -> TableState:
    """A table whose committed days (in January) each changed `changed[i]` open rows; `skipped`:
    the days committed without input."""
    commits = {}
    for i, n in enumerate(changed):
        ds = (dt.date(2024, 1, 1) + dt.timedelta(days=i)).isoformat()
        counts = {"changed": n, "deleted": 0, "updated_in_place": 0}
        if i in skipped:
            counts[SKIPPED] = "no input"
        commits[ds] = Commit(ds, f"run-{ds}", "", "fp", counts, n, ds)
    return TableState(exists=True, commits=commits)


def day(changed: int, open_before: int = 1000, deleted: int = 0, updated: int = 0) -> dict:
    return {"changed": changed, "deleted": deleted, "updated_in_place": updated, "open_before": open_before}


def refused(st: TableState, counts: dict, spec: TableSpec = SPEC) -> str | None:
    return guard.refusal(spec, guard.volume(spec, st, DS, counts))


def test_a_day_is_refused_only_when_it_passes_both_limits():
    usual = history(10, 12, 8, 11, 9)  # median 10
    assert refused(usual, day(200, deleted=200)) == (
        "the day closes, deletes or updates 400 of 1,000 open rows (40%; limit 30%), 40.0x the median of its last"
        " 5 committed days (10; limit 10x)"
    )
    assert refused(usual, day(250)) is None  # 25% of the open rows: under the share
    # a table whose days are always large: 50% is its usual, not an accident
    assert refused(history(500, 480, 520, 510, 490), day(600)) is None


def test_first_days_are_held_to_the_share_alone_and_small_days_and_days_without_input_do_not_count():
    # four committed days (or none: the first day after init): no usual yet, the share alone decides
    assert refused(history(1, 1, 1, 1), day(900)) == (
        "the day closes, deletes or updates 900 of 1,000 open rows (90%; limit 30%); with 4 committed days the"
        " table has no usual day yet (its median needs 5), so the share alone decides"
    )
    assert refused(history(), day(600, open_before=1000)) is not None
    assert refused(history(1), day(300, open_before=1000)) is None  # 30%: not over the share
    assert refused(history(0, 0, 0, 0, 0), day(99, open_before=100)) is None  # under min_rows
    assert refused(history(0, 0, 0, 0, 0), day(100, open_before=100)) is not None
    # days committed without input are not usual days: four counted, no median yet
    assert "with 4 committed days" in refused(history(1, 1, 1, 1, 0, skipped=(4,)), day(900))
    # the median of the latest recent_days only
    spec = SPEC.model_copy(update={"guard": SPEC.guard.model_copy(update={"recent_days": 5})})
    assert refused(history(900, 900, 900, 900, 900, 1, 1, 1, 1, 1), day(900), spec) is not None  # median 1
    assert refused(history(900, 900, 900, 900, 900, 1, 1, 1, 1, 1), day(900)) is None  # median of all ten: 450.5


def test_an_accepted_day_or_a_guard_turned_off_passes():
    usual, large = history(10, 10, 10, 10, 10), day(900)
    with pytest.raises(LargeChangeError, match=r"^dw.dim 2024-02-01: change-volume guard: .* accept it: CMD$"):
        guard.check(SPEC, usual, DS, large, accepted=False, accept="CMD")
    guard.check(SPEC, usual, DS, large, accepted=True, accept="CMD")
    off = SPEC.model_copy(update={"guard": SPEC.guard.model_copy(update={"enabled": False})})
    guard.check(off, usual, DS, large, accepted=False, accept="CMD")
