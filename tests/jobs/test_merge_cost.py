"""What a small day's merge costs, counted rather than timed: its Spark executions, and the two
ways a day is written (one job on a small open partition, two on a larger one) giving the same
table. A merge's time on a warm server is its count of jobs and round trips (docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core import fs
from zipper.core.errors import InputError
from zipper.jobs import apply, merge
from zipper.jobs.init import init_table
from zipper.runtime import profile
from zipper.runtime.session import is_connect
from zipper.table import state

BASE = [(i, f"n{i}", "c" if i % 3 else None) for i in range(40)]
DAYS = {  # changed, re-sent unchanged, new keys, a NULL becoming a value and back
    1: [(1, "n1-b", "c"), (2, "n2", "c"), (40, "new", None), (3, "n3", "x")],
    2: [(1, "n1-b", "c"), (3, "n3", None), (41, "new2", "y"), (5, "n5", None)],
    3: [(40, "new-b", "z"), (6, "n6", "c"), (7, "n7-b", None)],
}


def _table(spark, root, name, cdc: bool = False) -> TableFixture:
    source = {"mode": "cdc"} if cdc else None
    schema = "id bigint, name string, city string" + (", sys_op int" if cdc else "")
    t = TableFixture(root, name, schema=schema, source=source)
    t.write_base(spark, BASE, schema="id bigint, name string, city string")
    for n, rows in DAYS.items():
        if cdc:  # the same changes, and a delete of an open key (its row as it is) and of one that is not
            rows = [(*r, 0) for r in rows] + [(*BASE[10 + n], 1), (100 + n, "x", None, 1)]
        t.write_increment(spark, day(n), rows)
    init_table(spark, t.spec)
    return t


def test_a_small_upsert_day_is_one_spark_execution(spark, tmp_path, unique_name):
    t = _table(spark, tmp_path, unique_name)
    merge.merge_date(spark, t.spec, day(1))  # the table's first day: the plan of every later one
    with profile.recording(lambda: spark) as counted:
        result = merge.merge_date(spark, t.spec, day(2))
    assert result.counts["changed"] == 2 and result.counts["new"] == 1 and result.counts["unchanged"] == 1
    if is_connect(spark):  # a Spark Connect client counts its executions (a classic driver, its jobs)
        assert counted.tallies[profile.CallKind.EXECUTION].count == 1, counted.lines("the merge")
        assert [step for step, _ in counted.steps] == ["store.write_slots < apply._write_merge"]
    else:
        assert counted.tallies[profile.CallKind.SPARK_JOB].count >= 1


def test_a_repeated_key_found_by_the_write_is_refused_as_before_and_nothing_is_left(spark, tmp_path, unique_name):
    t = _table(spark, tmp_path, unique_name)
    t.write_increment(spark, day(1), [(1, "a", "c"), (1, "b", "c"), (None, "c", "c"), (2, "n2", "c")])
    before = state.read_state(spark, t.spec)
    with pytest.raises(InputError) as refused:
        merge.merge_date(spark, t.spec, day(1))
    line = str(refused.value)
    assert "1 row with NULL in key column 'id'" in line and "1 key ['id'] more than once (2 rows)" in line, line
    after = state.read_state(spark, t.spec)
    assert after.open_partition == before.open_partition and after.commits == before.commits
    runs = [fs.name_of(d) for d, _ in fs.list_dirs(spark, state.versions_root(after))]
    assert sorted(runs) == sorted([after.open_run, "empty"]), runs  # the init's: the refused day's is gone


@pytest.mark.parametrize("cdc", [False, True], ids=["upsert", "cdc"])
def test_one_job_and_two_jobs_write_the_same_days(spark, tmp_path, unique_name, monkeypatch, cdc):
    one, two = (_table(spark, tmp_path / side, f"{unique_name}{side}", cdc) for side in ("a", "b"))
    counts = {}
    for t, open_rows in ((one, apply.ONE_PASS_OPEN_ROWS), (two, 0)):
        monkeypatch.setattr(apply, "ONE_PASS_OPEN_ROWS", open_rows)
        counts[open_rows] = [merge.merge_date(spark, t.spec, day(n)).counts for n in DAYS]
    assert counts[0] == counts[apply.ONE_PASS_OPEN_ROWS]
    assert table_rows(spark, one.table) == table_rows(spark, two.table)
    assert counts[0][0]["changed"] == 2 and counts[0][0]["new"] == 1
