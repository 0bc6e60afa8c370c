"""`ZipperTable`, the table handle: each verb runs its job or answers from the live table, as the CLI shows it."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core.errors import StateError
from zipper.core.reports import RunAction
from zipper.jobs.handle import ZipperTable
from zipper.table import catalog

OPEN = "9999-12-31"


@pytest.fixture
def moved_twice(spark, tmp_path, unique_name):
    """Bob moves Rome -> Paris -> Lyon over two days; the others stay."""
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    for n, city in ((1, "Paris"), (2, "Lyon")):
        t.write_increment(spark, day(n), [(2, "bob", city)])
        assert ZipperTable(spark, t.spec).merge(day(n)).action == RunAction.MERGE
    return t


def test_the_handle_reads_state_versions_and_slices(spark, moved_twice):
    table = ZipperTable(spark, moved_twice.spec)
    status = table.status()
    assert (status["last_committed"], status["open_rows"], status["closed_rows"]) == ("2024-01-02", 2, 2)
    assert [c["ds"] for c in table.status(recent=1)["recent_commits"]] == ["2024-01-02"]

    versions = table.history({"id": "2"}).collect()
    assert [(r.city, r.end_dt) for r in versions] == [("Rome", "2024-01-01"), ("Paris", "2024-01-02"), ("Lyon", OPEN)]
    assert sorted((r.id, r.city) for r in table.slice(day(1)).collect()) == [(1, "Oslo"), (2, "Paris")]
    with pytest.raises(StateError, match="only committed up to 2024-01-02"):
        table.slice(day(3))
    assert table.check()["ok"]


def test_the_handle_vacuums_what_no_partition_refers_to(spark, moved_twice):
    table = ZipperTable(spark, moved_twice.spec)
    before = table_rows(spark, moved_twice.table)
    assert table.vacuum()["removed"] == []  # everything is younger than the retention
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=8)
    planned = table.vacuum(dry_run=True, now=later)["removed"]
    assert len(planned) == 2  # the base's run directory and day 1's open directory
    assert [r["directory"] for r in table.vacuum(now=later)["removed"]] == [r["directory"] for r in planned]
    catalog.refresh(spark, moved_twice.spec)
    assert table_rows(spark, moved_twice.table) == before
    assert table.check()["ok"]
