"""mode: snapshot (the day's input is the complete current source), on a real Hive table."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core.errors import InputError, LargeChangeError
from zipper.core.paths import local_path
from zipper.jobs import merge, replay
from zipper.jobs.init import init_table
from zipper.table import catalog, state

OPEN = "9999-12-31"


@pytest.fixture(params=["invalidate", "ignore"])
def extract(request, spark, tmp_path, unique_name):
    options = {"mode": "snapshot"} if request.param == "invalidate" else {"mode": "snapshot", "hard_deletes": "ignore"}
    t = TableFixture(tmp_path, unique_name, source=options)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)])
    t.hard_deletes = request.param
    return t


def test_missing_keys_close_or_stay_changed_keys_get_a_version(spark, extract):
    extract.write_increment(spark, day(1), [(1, "ann", "Oslo"), (2, "bob", "Paris"), (4, "dan", None)])
    result = merge.merge_date(spark, extract.spec, day(1))
    invalidate = extract.hard_deletes == "invalidate"
    assert {
        k: result.counts[k] for k in ("source_rows", "input", "new", "changed", "unchanged", "deleted", "closed")
    } == {
        "source_rows": 3,
        "input": 3 if invalidate else 2,
        "new": 1,
        "changed": 1,
        "unchanged": 1,
        "deleted": 1 if invalidate else 0,
        "closed": 2 if invalidate else 1,
    }
    cid = (3, "cid", None, "2023-12-31", "2024-01-01" if invalidate else OPEN)
    assert table_rows(spark, extract.table) == sorted(
        [
            (1, "ann", "Oslo", "2023-12-31", OPEN),
            (2, "bob", "Paris", "2024-01-01", OPEN),
            (2, "bob", "Rome", "2023-12-31", "2024-01-01"),
            cid,
            (4, "dan", None, "2024-01-01", OPEN),
        ],
        key=lambda r: tuple("" if v is None else str(v) for v in r),
    )

    # the same extract again: nothing to do; a closed key that comes back opens a new version
    extract.write_increment(spark, day(2), [(1, "ann", "Oslo"), (2, "bob", "Paris"), (4, "dan", None)])
    again = merge.merge_date(spark, extract.spec, day(2))
    assert (again.counts["input"], again.counts["unchanged"], again.counts["closed"]) == (0, 3, 0)
    if invalidate:
        extract.write_increment(spark, day(3), [(3, "cid", None)])
        back = merge.merge_date(spark, extract.spec, day(3))
        assert (back.counts["new"], back.counts["deleted"], back.counts["open_after"]) == (1, 3, 1)
        assert [r for r in table_rows(spark, extract.table) if r[-1] == OPEN] == [(3, "cid", None, "2024-01-03", OPEN)]


def test_snapshot_without_files_or_with_repeated_keys_fails(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, source={"mode": "snapshot"})
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    os.makedirs(t.increment_dir(day(1)))
    with pytest.raises(InputError, match="has no files; an empty source must still be a file"):
        merge.merge_date(spark, t.spec, day(1))
    t.write_increment(spark, day(1), [(1, "ann", "Oslo"), (1, "ann", "Rome")])
    with pytest.raises(InputError, match=r"has 1 key \['id'\] more than once \(2 rows\) in part-[^ ]*: 1$"):
        merge.merge_date(spark, t.spec, day(1))
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    # a snapshot file with no rows: every key closes
    t.write_increment(spark, day(1), [])
    assert merge.merge_date(spark, t.spec, day(1)).counts["deleted"] == 1
    assert state.read_state(spark, t.spec).open_rows == 0


def test_updated_at_versions_and_tombstones_of_snapshots(spark, tmp_path, unique_name):
    """source.updated_at (a date column) with hard_deletes: new_record: a changed key's version begins
    at its row's updated_at; a missing key is deleted at the end of the day the snapshot describes
    (ds + 1 for a date), its tombstone open from then until the key comes back; a row older than its
    key's open version, or as old with other values, is refused and nothing changes."""
    source = {"mode": "snapshot", "updated_at": "upd", "hard_deletes": "new_record"}
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, upd date", source=source)
    t.write_base(spark, [(1, "ann", day(-5)), (2, "bob", day(-3)), (3, "cid", day(-1))])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(1, "ann", day(-5)), (2, "bea", day(1))])  # 3 is missing
    first = merge.merge_date(spark, t.spec, day(1))
    counts = ("input", "new", "changed", "unchanged", "deleted", "tombstones", "closed", "open_after")
    assert [first.counts[k] for k in counts] == [2, 0, 1, 1, 1, 1, 2, 3]
    t.write_increment(spark, day(2), [(1, "ann", day(-5)), (2, "bea", day(1)), (3, "cat", day(2))])  # 3 is back
    second = merge.merge_date(spark, t.spec, day(2))
    assert [second.counts[k] for k in ("changed", "unchanged", "tombstones", "closed")] == [1, 2, 0, 1]
    d0, d1, d2, end = "2023-12-31", day(1).isoformat(), day(2).isoformat(), dt.date(9999, 12, 31)
    expected = [
        (1, "ann", day(-5), day(-5), end, False, d0, OPEN),
        (2, "bea", day(1), day(1), end, False, d1, OPEN),
        (2, "bob", day(-3), day(-3), day(1), False, d0, d1),
        (3, "cat", day(2), day(2), end, False, d2, OPEN),
        (3, "cid", day(-1), day(-1), day(2), False, d0, d1),
        (3, "cid", day(-1), day(2), day(2), True, d1, d2),  # the tombstone, until the key came back
    ]
    assert table_rows(spark, t.table) == expected
    assert replay.rerun(spark, t.spec, day(1)).counts["dates"] == 2  # the same moments again
    assert table_rows(spark, t.table) == expected
    t.write_increment(spark, day(3), [(1, "ann", day(-6)), (2, "bex", day(1)), (3, "cat", day(2))])
    with pytest.raises(InputError) as refused:
        merge.merge_date(spark, t.spec, day(3))
    assert str(refused.value).startswith(f"{t.table} {day(3)}: increment ")
    assert str(refused.value).endswith(
        "has rows whose upd is NULL, older than their key's open version (valid_from), or as old with other"
        " values; a snapshot holds each key's current row, not its history; keys ['id']: 1 at 2023-12-25,"
        " open since 2023-12-26; 2 at 2024-01-01, open since 2024-01-01; nothing was changed"
    )
    assert table_rows(spark, t.table) == expected


def test_a_snapshot_that_lost_most_keys_is_refused_by_the_guard_until_accepted(spark, tmp_path, unique_name):
    """A half-loaded extract would close most of the table with exit 0. The guard refuses the day
    in one line with its figures and how to accept it; nothing is published or left behind. The
    merge and the rerun that replays it publish it once accepted."""
    t = TableFixture(tmp_path, unique_name, source={"mode": "snapshot"})
    rows = [(k, f"user{k}", "Oslo") for k in range(1, 201)]
    t.write_base(spark, rows)
    for n in range(1, 6):  # ordinary days: five keys move each day (exempt or not, never refused)
        rows = [(k, name, f"city{n}" if k % 40 == n else city) for k, name, city in rows]
        t.write_increment(spark, day(n), rows)
        assert merge.merge_date(spark, t.spec, day(n)).counts["changed"] == 5
    t.write_increment(spark, day(6), rows[:80])  # the extract stopped at key 80
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    location = local_path(state.read_state(spark, t.spec).location)
    runs_before = sorted(os.listdir(location))
    with pytest.raises(LargeChangeError) as refused:
        merge.merge_date(spark, t.spec, day(6))
    message = str(refused.value)
    assert message.startswith(f"{t.table} {day(6)}: change-volume guard: the day closes, deletes or updates 120 of")
    assert "200 open rows (60%; limit 30%), 24.0x the median of its last 5 committed days (5; limit 10x)" in message
    assert message.endswith(f"zipper merge {t.name} --ds {day(6)} --accept-large-change (in Airflow, then clear the"
                            " failed task: the date is committed)")  # fmt: skip
    assert "\n" not in message and refused.value.final  # a scheduler does not retry it
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    assert sorted(os.listdir(location)) == runs_before  # nothing left behind

    accepted = merge.merge_date(spark, t.spec, day(6), accept_large_change=True)
    assert (accepted.counts["deleted"], accepted.counts["open_after"]) == (120, 80)
    # a rerun replays the day: refused again, then published once accepted, with the same history
    after = table_rows(spark, t.table)
    with pytest.raises(LargeChangeError, match="run the same merge or rerun again with --accept-large-change"):
        replay.rerun(spark, t.spec, day(6))
    replay.rerun(spark, t.spec, day(6), accept_large_change=True)
    assert table_rows(spark, t.table) == after
    # with the guard off, nothing is refused
    off = t.spec.model_copy(update={"guard": t.spec.guard.model_copy(update={"enabled": False})})
    replay.rerun(spark, off, day(6))
    assert table_rows(spark, t.table) == after
