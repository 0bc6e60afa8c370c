"""What a small day's merge costs, counted rather than timed: its Spark executions, each with the
step that asked for it. A merge's time on a warm server is its count of jobs and round trips
(docs/performance.md)."""

from __future__ import annotations

import pytest

from tests.support import TableFixture, day
from zipper.core import fs
from zipper.core.errors import InputError
from zipper.jobs import merge
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


WRITES = [
    "store.write_slots < write_day._route",
    "store.write_slots < write_day._write_merge",
]  # the big pass, the small job


def _steps(spark, t, ds):
    """The merge of `ds`: its counts, and the steps of its Spark executions (None on a classic driver,
    which counts jobs instead: at least one)."""
    with profile.recording(lambda: spark) as counted:
        result = merge.merge_date(spark, t.spec, ds)
    if not is_connect(spark):
        assert counted.tallies[profile.CallKind.SPARK_JOB].count >= 1
        return result.counts, None
    return result.counts, [step for step, _ in counted.steps]


def test_a_small_upsert_day_is_its_two_writes_and_nothing_else(spark, tmp_path, unique_name):
    """The key check and its counts are in the small job; the publish makes no Spark call."""
    t = _table(spark, tmp_path, unique_name)
    merge.merge_date(spark, t.spec, day(1))  # the table's first day: the plan of every later one
    counts, steps = _steps(spark, t, day(2))
    assert counts["changed"] == 2 and counts["new"] == 1 and counts["unchanged"] == 1
    assert steps in (None, WRITES), steps


def test_a_small_cdc_day_checks_its_first_actions_in_its_small_job(spark, tmp_path, unique_name):
    """The operations and the keys are checked by a pass over the input, the change set is written
    once, and the deletes against the open rows are counted by the small job."""
    t = _table(spark, tmp_path, unique_name, cdc=True)
    merge.merge_date(spark, t.spec, day(1))
    counts, steps = _steps(spark, t, day(2))
    assert counts["deleted"] == 1 and counts["deletes_of_absent_keys"] == 1 and counts["changed"] == 2
    checks = ["cdc.check_operations < base.change_set", "refusals.validate_keys < base.seen"]
    assert steps in (None, [*checks, "store.write_rows < store.kept", *WRITES]), steps


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
    runs = [fs.name_of(d) for d, _ in fs.list_dirs(state.versions_root(after))]
    assert sorted(runs) == sorted([after.open_run, "empty"]), runs  # the init's: the refused day's is gone
