"""Corrections on a table with every option at once: cdc with `source.updated_at` (validity
columns), `hard_deletes: new_record` (tombstones) and `ignore_null_updates`. An erasure, a fix
and a delete publish as on a plain table and `zipper check` passes after each; a fix of a
deleted key's last version and its tombstone keeps the two apart, and one that joins versions
keeps the first one's valid_from; zipper's own
columns and the updated_at column are refused to `--set` in one line; the corrections survive
a later date and a rerun after them, and a rerun undoing them keeps the erasure."""

from __future__ import annotations

import pytest

from tests.inputs.test_cdc import CDC_UPDATED, END, UPDATED, at
from tests.support import TableFixture, day, table_rows
from zipper.core.errors import InputError
from zipper.jobs import correct, merge, replay
from zipper.jobs.init import init_table
from zipper.table import check

OPEN = "9999-12-31"
D0, D1, D2, D3 = (day(n).isoformat() for n in range(4))


def ask(kind: str, **options) -> correct.Request:
    return correct.Request(kind, reason="ticket 7", by="tester", **options)


def test_corrections_on_a_table_with_validity_tombstones_and_ignored_nulls(spark, tmp_path, unique_name):
    source = {"mode": "cdc", "updated_at": "ts", "hard_deletes": "new_record", "ignore_null_updates": True}
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source=source)
    t.write_base(spark, [(1, "Oslo", at(0, 9)), (2, "Rome", at(0, 9)), (3, "Pau", at(0, 8))])
    init_table(spark, t.spec)
    # day 1: key 1 moves, key 2 is deleted (a tombstone), key 3's NULL city keeps Pau (a version: ts moved)
    day1 = [(1, "Nice", at(1, 10), 0), (2, "Rome", at(1, 11), 1), (3, None, at(1, 12), 0)]
    t.write_increment(spark, day(1), day1, CDC_UPDATED)
    t.write_increment(spark, day(2), [(1, "Lima", at(2, 9), 0), (2, "Roma", at(2, 10), 0)], CDC_UPDATED)
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    tombstone = (2, "Rome", at(0, 9), at(1, 11), at(2, 10), True, D1, D2)
    assert tombstone in table_rows(spark, t.table)

    correct.correct(spark, t.spec, ask("set", where="city = 'Nice'", assignments=("city=Bern",)))
    correct.correct(spark, t.spec, ask("delete", where=f"id = 3 AND end_dt <> '{OPEN}'"))
    # a fix of a deleted key's last version and its tombstone (equal values): two versions still, the key
    # live until its delete; a fix never makes one version of a live one and a tombstone
    correct.correct(spark, t.spec, ask("set", where=f"id = 2 AND end_dt <> '{OPEN}'", assignments=("city=Lyon",)))
    assert [row for row in table_rows(spark, t.table) if row[0] == 2] == [
        (2, "Lyon", at(0, 9), at(0, 9), at(1, 11), False, D0, D1),
        (2, "Lyon", at(0, 9), at(1, 11), at(2, 10), True, D1, D2),
        (2, "Roma", at(2, 10), at(2, 10), END, False, D2, OPEN),
    ]
    correct.correct(spark, t.spec, ask("erase", erase_keys=("id=2",)))  # its tombstone too
    corrected = [
        (1, "Bern", at(1, 10), at(1, 10), at(2, 9), False, D1, D2),
        (1, "Lima", at(2, 9), at(2, 9), END, False, D2, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), False, D0, D1),
        (3, "Pau", at(1, 12), at(1, 12), END, False, D1, OPEN),
    ]
    assert table_rows(spark, t.table) == corrected
    assert check.run_checks(spark, t.spec)["failed"] == []

    for column, why in [
        ("valid_from", "zipper's own validity column"),
        ("valid_to", "zipper's own validity column"),
        ("is_deleted", "zipper's own column marking the tombstones"),
        ("ts", "the updated_at column, whose values are the versions' valid_from"),
    ]:
        with pytest.raises(InputError) as refused:
            correct.correct(spark, t.spec, ask("set", where="id = 1", assignments=(f"{column}=NULL",)))
        said = str(refused.value)
        assert said.startswith(f"{t.table} {D2}: --set '{column}': {why}") and "\n" not in said, said
    assert table_rows(spark, t.table) == corrected

    # a later date, then a rerun of it: the corrections stay; key 2 comes back as a new key
    t.write_increment(spark, day(3), [(1, "Kiel", at(3, 9), 0), (2, "Rome", at(3, 9), 0)], CDC_UPDATED)
    merge.merge_date(spark, t.spec, day(3))
    replay.rerun(spark, t.spec, day(3))
    later = [
        (1, "Kiel", at(3, 9), at(3, 9), END, False, D3, OPEN),
        (1, "Lima", at(2, 9), at(2, 9), at(3, 9), False, D2, D3),
        *[row for row in corrected if row[1] != "Lima"],
        (2, "Rome", at(3, 9), at(3, 9), END, False, D3, OPEN),
    ]
    assert table_rows(spark, t.table) == sorted(later)

    # a rerun from day 1 undoing the fix and the delete replays the inputs from day 1 as they are,
    # less the erased key, on the versions valid on day 0 as the table has them: the fix is undone;
    # key 3's deleted version stays deleted, so its NULL update meets no open version and fills nothing
    replay.rerun(spark, t.spec, day(1), undo_corrections=True)
    undone = [row for row in later if row[0] != 3 and row[1] != "Bern"] + [
        (1, "Nice", at(1, 10), at(1, 10), at(2, 9), False, D1, D2),
        (3, None, at(1, 12), at(1, 12), END, False, D1, OPEN),
    ]
    assert table_rows(spark, t.table) == sorted(undone)
    assert check.run_checks(spark, t.spec)["failed"] == []


def test_a_fix_that_joins_versions_keeps_the_first_ones_validity(spark, tmp_path, unique_name):
    # updated_at untracked: its moves update a version in place, so a fix can make versions equal
    source = {"mode": "cdc", "updated_at": "ts"}
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source=source, track_columns_except=["ts"])
    t.write_base(spark, [(1, "Oslo", at(0, 9))])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(1, "Nice", at(1, 10), 0)], CDC_UPDATED)
    t.write_increment(spark, day(2), [(1, "Oslo", at(2, 10), 0)], CDC_UPDATED)
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    correct.correct(spark, t.spec, ask("set", where="city = 'Nice'", assignments=("city=Oslo",)))
    # one version, valid from its first change as it begins on its first date (the merges, fed Oslo on
    # day 1, would have updated it in place: the latest ts, the first valid_from)
    assert table_rows(spark, t.table) == [(1, "Oslo", at(2, 10), at(0, 9), END, D0, OPEN)]
    assert check.run_checks(spark, t.spec)["failed"] == []

    # two changes on day 3: Lima lived within the day and shares its begin with Kiel, which follows it
    t.write_increment(spark, day(3), [(1, "Lima", at(3, 9), 0), (1, "Kiel", at(3, 10), 0)], CDC_UPDATED)
    merge.merge_date(spark, t.spec, day(3))
    correct.correct(spark, t.spec, ask("set", where="city = 'Lima'", assignments=("city=Kiel",)))
    assert table_rows(spark, t.table) == [
        (1, "Kiel", at(3, 10), at(3, 9), END, D3, OPEN),
        (1, "Oslo", at(2, 10), at(0, 9), at(3, 9), D0, D3),
    ]
    assert check.run_checks(spark, t.spec)["failed"] == []
