"""mode: cdc (an operation column: 0 insert or update, 1 delete) and sequence_by, on a real Hive table."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core import fs
from zipper.core.errors import InputError, SpecError, StateError
from zipper.jobs import merge, replay
from zipper.jobs.init import init_table
from zipper.table import catalog, check, state

OPEN = "9999-12-31"
CDC = "id bigint, name string, city string, sys_op int"
SEQ = "id bigint, name string, city string, seq int, sys_op int"


def snapshot(spark, t):
    """What a reader or the next run could observe, and the run directories on disk."""
    st = state.read_state(spark, t.spec)
    return (
        table_rows(spark, t.table),
        [(p.end, p.location) for p in catalog.list_partitions(spark, t.spec)],
        st.last_committed,
        sorted(d for d, _ in fs.list_dirs(state.versions_root(st))),
    )


@pytest.fixture
def cdc(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, source={"mode": "cdc"})
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)])
    init_table(spark, t.spec)
    return t


def test_upserts_deletes_and_deletes_of_keys_not_open(spark, cdc):
    cdc.write_increment(
        spark,
        day(1),
        [
            (1, "ann", "Bergen", 0),  # update
            (2, "bob", "Rome", 1),  # delete, every column equal to the open row
            (3, "cid", None, 1),  # delete, NULL = NULL
            (4, "dan", "Oslo", 0),  # insert
            (9, "zed", "Nice", 1),  # delete of a key that is not open: counted, not an error
        ],
        CDC,
    )
    result = merge.merge_date(spark, cdc.spec, day(1))
    assert result.counts == {
        "input": 5,
        "source_rows": 5,
        "new": 1,
        "changed": 1,
        "unchanged": 0,
        "updated_in_place": 0,
        "deleted": 2,
        "deletes_of_absent_keys": 1,
        "closed": 3,
        "open_before": 3,
        "open_after": 2,
    }
    assert [f.name for f in spark.table(cdc.table).schema] == ["id", "name", "city", "begin_dt", "end_dt"]
    assert table_rows(spark, cdc.table) == [
        (1, "ann", "Bergen", "2024-01-01", OPEN),
        (1, "ann", "Oslo", "2023-12-31", "2024-01-01"),
        (2, "bob", "Rome", "2023-12-31", "2024-01-01"),
        (3, "cid", None, "2023-12-31", "2024-01-01"),
        (4, "dan", "Oslo", "2024-01-01", OPEN),
    ]
    assert "2 deleted" in result.summary() and "1 delete of a key that was not open (ignored)" in result.summary()
    # a deleted key can come back: it opens a new version
    cdc.write_increment(spark, day(2), [(2, "bob", "Rome", 0)], CDC)
    assert merge.merge_date(spark, cdc.spec, day(2)).counts["new"] == 1
    assert (2, "bob", "Rome", "2024-01-02", OPEN) in table_rows(spark, cdc.table)
    assert check.run_checks(spark, cdc.spec)["ok"]


def test_a_delete_must_carry_the_open_row_unless_delete_match_is_key(spark, cdc, tmp_path):
    before = snapshot(spark, cdc)
    cdc.write_increment(spark, day(1), [(1, "ann", "Oslo", 1), (2, "bob", "Paris", 1), (3, "cyd", "Rome", 1)], CDC)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, cdc.spec, day(1))
    message = str(err.value)
    assert message.startswith(f"{cdc.table} 2024-01-01: increment {cdc.increment_dir(day(1))}")
    assert "2 delete rows whose values differ from the open row" in message
    assert "2 (columns city), 3 (columns name, city)" in message and "1 (" not in message
    assert snapshot(spark, cdc) == before

    by_key = TableFixture(tmp_path, cdc.name, source={"mode": "cdc", "delete_match": "key"})
    assert merge.merge_date(spark, by_key.spec, day(1)).counts["deleted"] == 3
    assert [r[-1] for r in table_rows(spark, cdc.table)] == ["2024-01-01"] * 3

    # a spec turning hard_deletes: new_record on for this table, made without the deleted column
    turned_on = TableFixture(tmp_path, cdc.name, source={"mode": "cdc", "hard_deletes": "new_record"})
    turned_on.write_increment(spark, day(2), [(4, "dan", "Oslo", 0)], CDC)
    before = snapshot(spark, cdc)
    with pytest.raises(SpecError) as err:
        merge.merge_date(spark, turned_on.spec, day(2))
    assert str(err.value).startswith(
        f"{cdc.table} 2024-01-02: {turned_on.path}: key 'source.hard_deletes': the table was made without the"
        " deleted column 'is_deleted' that new_record writes: load it again as a new table"
    )
    assert "\n" not in str(err.value) and snapshot(spark, cdc) == before


@pytest.mark.parametrize(
    "rows, schema, message",
    [
        (
            [(1, "ann", "Oslo", 2)],
            CDC,
            r"sys_op values other than 0 \(insert or update\) and 1 \(delete\): 2 in .*part-",
        ),
        ([(1, "ann", "Oslo", None)], CDC, "sys_op values other than 0.*: NULL in "),
        # 0.0 is not 0 to the check (a double's text): said with its type, once per value and file
        (
            [(1, "ann", "Oslo", 0.0), (2, "bob", "Rome", 0.0)],
            "id bigint, name string, city string, sys_op double",
            r"sys_op values other than 0 \(insert or update\) and 1 \(delete\): 0.0 \(double\) in part-[^;]*\.parquet$",
        ),
        (
            [(1, "ann", "Oslo")],
            "id bigint, name string, city string",
            r"has no operation column 'sys_op' .*files: part-",
        ),
        (
            [(1, "ann", "Oslo", 0), (1, "ann", "Rome", 1), (2, "b", "c", 0), (2, "b", "c", 0)],
            CDC,
            r"has 2 keys \['id'\] more than once \(4 rows\) in part-[^ ]*\.parquet: 1, 2$",
        ),
    ],
)
def test_bad_operations_and_repeated_keys_fail_naming_the_file_or_keys(spark, cdc, rows, schema, message):
    before = snapshot(spark, cdc)
    cdc.write_increment(spark, day(1), rows, schema)
    with pytest.raises(InputError, match=message) as err:
        merge.merge_date(spark, cdc.spec, day(1))
    assert f"{cdc.table} 2024-01-01" in str(err.value) and "\n" not in str(err.value)
    assert snapshot(spark, cdc) == before


def test_sequence_by_keeps_the_last_change_and_checks_deletes_against_the_previous_one(spark, tmp_path, unique_name):
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, name string, city string, seq int",
        source={"mode": "cdc", "sequence_by": "seq"},
        track_columns=["name", "city"],
    )
    t.write_base(spark, [(1, "ann", "Oslo", 0), (2, "bob", "Rome", 0), (3, "cid", "Nice", 0)])
    init_table(spark, t.spec)
    t.write_increment(
        spark,
        day(1),
        [
            (1, "ann", "Paris", 7, 0),
            (1, "ann", "Bergen", 3, 0),  # out of order: Paris (seq 7) wins, Bergen leaves no version
            (2, "bob", "Lyon", 1, 0),
            (2, "bob", "Lyon", 2, 1),  # update, then a delete carrying the updated row
            (3, "cid", "Nice", 1, 1),
            (3, "cid", "Nice", 2, 0),  # delete, then re-insert of the same data: no change
            (4, "dan", "Oslo", 1, 0),
            (4, "dan", "Oslo", 2, 1),  # insert then delete: nothing
            (5, "eve", None, 1, 1),
            (5, "eve", None, 2, 1),  # deletes of a key that is not open
        ],
        SEQ,
    )
    result = merge.merge_date(spark, t.spec, day(1))
    assert result.counts["source_rows"] == 10 and result.counts["input"] == 5
    assert (result.counts["changed"], result.counts["deleted"], result.counts["new"]) == (1, 1, 0)
    assert result.counts["updated_in_place"] == 1  # key 3: seq is not tracked
    assert result.counts["deletes_of_absent_keys"] == 2
    assert table_rows(spark, t.table) == [
        (1, "ann", "Oslo", 0, "2023-12-31", "2024-01-01"),
        (1, "ann", "Paris", 7, "2024-01-01", OPEN),
        (2, "bob", "Rome", 0, "2023-12-31", "2024-01-01"),
        (3, "cid", "Nice", 2, "2023-12-31", OPEN),
    ]


def test_ignore_null_updates_deletes_match_the_filled_state_in_merges_and_reruns(spark, tmp_path, unique_name):
    """With ignore_null_updates a delete is compared (delete_match: all_columns) with the key's
    state as its earlier changes filled it; the rerun's up-front check compares the same way."""
    from zipper.jobs import replay

    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, name string, city string, seq int",
        source={"mode": "cdc", "sequence_by": "seq", "ignore_null_updates": True},
    )
    t.write_base(spark, [(1, "ann", "Oslo", 0), (2, "bob", "Rome", 0)])
    init_table(spark, t.spec)
    t.write_increment(
        spark,
        day(1),
        [
            (1, None, "Lima", 1, 0),
            (1, "ann", "Lima", 2, 1),  # deletes the state the update left: ann from the open row
            (2, None, "Nice", 1, 0),  # bob moves, keeping his name
        ],
        SEQ,
    )
    expected = [
        (1, "ann", "Oslo", 0, "2023-12-31", "2024-01-01"),
        (2, "bob", "Nice", 1, "2024-01-01", OPEN),
        (2, "bob", "Rome", 0, "2023-12-31", "2024-01-01"),
    ]
    result = merge.merge_date(spark, t.spec, day(1))
    assert (result.counts["deleted"], result.counts["changed"]) == (1, 1)
    assert table_rows(spark, t.table) == expected
    assert replay.rerun(spark, t.spec, day(1)).action == "rerun"
    assert table_rows(spark, t.table) == expected


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [(1, "ann", "Oslo", 1, 0), (1, "ann", "Rome", 1, 0)],
            r"has 1 key \['id'\] with a repeated value in sequence_by column 'seq' \(2 rows\) in part-[^ ]*: 1 \(seq 1\)$",
        ),
        (
            [(1, "ann", "Oslo", None, 0)],
            r"has 1 key \['id'\] with NULL in sequence_by column 'seq' \(1 row\) in part-[^ ]*: 1$",
        ),
        # every problem of the day in one refusal, NULL keys first
        (
            [(None, "x", "y", 1, 0), (1, "ann", "Oslo", None, 0), (2, "bob", "Rome", 3, 0), (2, "bob", "Lyon", 3, 1)],
            r"has 1 row with NULL in key column 'id' in part-[^ ]*; 1 key \['id'\] with NULL in sequence_by"
            r" column 'seq' \(1 row\) in part-[^ ]*: 1; 1 key \['id'\] with a repeated value in sequence_by"
            r" column 'seq' \(2 rows\) in part-[^ ]*: 2 \(seq 3\)$",
        ),
        (
            [(1, "ann", "Rome", 1, 0), (1, "ann", "Oslo", 2, 1)],
            r"1 delete row whose values differ from the row they delete \(the key's previous change\).*: 1 \(columns city\)",
        ),
    ],
)
def test_sequence_errors_name_the_key(spark, tmp_path, unique_name, rows, message):
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, name string, city string, seq int",
        source={"mode": "cdc", "sequence_by": "seq"},
    )
    t.write_base(spark, [(1, "ann", "Oslo", 0)])
    init_table(spark, t.spec)
    before = snapshot(spark, t)
    t.write_increment(spark, day(1), rows, SEQ)
    with pytest.raises(InputError, match=message):
        merge.merge_date(spark, t.spec, day(1))
    assert snapshot(spark, t) == before


def test_upsert_mode_sequence_by(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, city string, seq int", source={"sequence_by": "seq"})
    t.write_base(spark, [(1, "Oslo", 0)])
    t.write_increment(spark, day(1), [(1, "Rome", 2), (1, "Nice", 5), (1, "Lyon", 4), (2, "Pau", 1)])
    result = merge.merge_date(spark, t.spec, day(1))
    assert (result.counts["source_rows"], result.counts["input"], result.counts["changed"]) == (4, 2, 1)
    assert table_rows(spark, t.table) == [
        (1, "Nice", 5, "2024-01-01", OPEN),
        (1, "Oslo", 0, "2023-12-31", "2024-01-01"),
        (2, "Pau", 1, "2024-01-01", OPEN),
    ]


def test_a_sequence_by_column_that_holds_a_map_is_refused_naming_it(spark, tmp_path, unique_name):
    """A map has no order: the merge failed on Spark's 'sortorder does not support ordering on type MAP'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = TableFixture(tmp_path, unique_name, base=False, source={"sequence_by": "seq"})
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 1], pa.int64()),
                "seq": pa.array([[("a", 1)], [("b", 2)]], pa.map_(pa.string(), pa.int64())),
            }
        ),
        folder / "part-0.parquet",
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} sequence_by column 'seq' has type"
        " map<string,bigint>, which has no order"
    )


UPDATED = "id bigint, city string, ts timestamp"
CDC_UPDATED = "id bigint, city string, ts timestamp, sys_op int"
END = dt.datetime(9999, 12, 31)


def at(day_number: int, hour: int) -> dt.datetime:
    """A time of day `day_number` of the test calendar."""
    return dt.datetime.combine(day(day_number), dt.time(hour))


def test_updated_at_keeps_every_change_of_a_day_as_a_version_and_a_rerun_makes_them_again(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source={"updated_at": "ts"})
    t.write_base(spark, [(1, "Oslo", at(0, 9)), (2, "Rome", at(0, 9)), (3, "Pau", at(0, 8))])
    init_table(spark, t.spec)
    t.write_increment(
        spark,
        day(1),
        [
            (1, "Nice", at(1, 12)),
            (1, "Rome", at(1, 10)),  # out of order: Rome (10:00), Lyon, then Nice (12:00)
            (1, "Lyon", at(1, 11)),
            (2, "Rome", at(1, 10)),  # the same city later: a version (ts is tracked, as sequence_by is)
            (4, "Bonn", at(1, 7)),
            (4, "Bonn", at(1, 8)),
        ],
    )
    t.write_increment(spark, day(2), [(3, "Pau", at(0, 8)), (4, "Graz", at(2, 6))])  # 3: re-sent as it is
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    counts = state.read_state(spark, t.spec).commits[day(1).isoformat()].counts
    assert (counts["input"], counts["new"], counts["changed"], counts["closed"]) == (6, 1, 2, 5)
    assert counts["versions_within_day"] == 3  # Rome and Lyon of key 1, the first Bonn
    d0, d1, d2 = (day(n).isoformat() for n in (0, 1, 2))
    expected = [
        (1, "Lyon", at(1, 11), at(1, 11), at(1, 12), d1, d1),
        (1, "Nice", at(1, 12), at(1, 12), END, d1, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Rome", at(1, 10), at(1, 10), at(1, 11), d1, d1),
        (2, "Rome", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (2, "Rome", at(1, 10), at(1, 10), END, d1, OPEN),
        (3, "Pau", at(0, 8), at(0, 8), END, d0, OPEN),
        (4, "Bonn", at(1, 7), at(1, 7), at(1, 8), d1, d1),
        (4, "Bonn", at(1, 8), at(1, 8), at(2, 6), d1, d2),
        (4, "Graz", at(2, 6), at(2, 6), END, d2, OPEN),
    ]
    assert table_rows(spark, t.table) == expected
    # the slice of a day is as without updated_at: a version that lived within day 1 is in none
    assert spark.table(t.table).where(f"begin_dt <= '{d1}' AND '{d1}' < end_dt").count() == 4

    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == expected
    assert check.run_checks(spark, t.spec)["failed"] == []  # versions within a day are no empty intervals

    # a late change at the moment a version begins, with other values: refused
    t.write_increment(spark, day(3), [(1, "Oslo", at(1, 11)), (2, "Rome", at(1, 9)), (3, "Vic", at(3, 1))])
    before = snapshot(spark, t)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, t.spec, day(3))
    assert str(err.value) == (
        f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} has late changes at the moment a version of"
        " their key begins, with other values (ts equal to its valid_from); keys ['id']: 1 at 2024-01-01 11:00:00;"
        " nothing was changed"
    )
    assert snapshot(spark, t) == before

    # late changes put in place: Bern splits Oslo (in Oslo's partition, d1); Rome at 9:00 splits key 2's
    # first version (ts is tracked); Kiel, before key 3's first version, goes in the day's partition;
    # Vic follows as usual. Only partition d1 is written again.
    t.write_increment(
        spark,
        day(3),
        [(1, "Bern", at(0, 12)), (2, "Rome", at(1, 9)), (3, "Kiel", at(0, 7)), (3, "Vic", at(3, 1))],
    )
    merge.merge_date(spark, t.spec, day(3))
    d3 = day(3).isoformat()
    counts = state.read_state(spark, t.spec).commits[d3].counts
    assert (counts["late_changes"], counts["partitions_rewritten"], counts["changed"], counts["closed"]) == (3, 1, 1, 2)
    expected = [
        (1, "Bern", at(0, 12), at(0, 12), at(1, 10), d1, d1),
        (1, "Lyon", at(1, 11), at(1, 11), at(1, 12), d1, d1),
        (1, "Nice", at(1, 12), at(1, 12), END, d1, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(0, 12), d0, d1),
        (1, "Rome", at(1, 10), at(1, 10), at(1, 11), d1, d1),
        (2, "Rome", at(0, 9), at(0, 9), at(1, 9), d0, d1),
        (2, "Rome", at(1, 9), at(1, 9), at(1, 10), d1, d1),
        (2, "Rome", at(1, 10), at(1, 10), END, d1, OPEN),
        (3, "Kiel", at(0, 7), at(0, 7), at(0, 8), d3, d3),
        (3, "Pau", at(0, 8), at(0, 8), at(3, 1), d0, d3),
        (3, "Vic", at(3, 1), at(3, 1), END, d3, OPEN),
        (4, "Bonn", at(1, 7), at(1, 7), at(1, 8), d1, d1),
        (4, "Bonn", at(1, 8), at(1, 8), at(2, 6), d1, d2),
        (4, "Graz", at(2, 6), at(2, 6), END, d2, OPEN),
    ]
    assert table_rows(spark, t.table) == expected
    assert spark.table(t.table).where(f"begin_dt <= '{d1}' AND '{d1}' < end_dt").count() == 4  # day slices as before
    assert check.run_checks(spark, t.spec)["failed"] == []
    # a rerun from day 3 gives the same history, the late changes found in place already
    replay.rerun(spark, t.spec, day(3))
    assert table_rows(spark, t.table) == expected

    # day 3's input without its late changes: a rerun from day 3 cannot take them out of d1's
    # partition, and says where to start; from there, the history is as if they never came
    t.write_increment(spark, day(3), [(3, "Vic", at(3, 1))])
    before = snapshot(spark, t)
    with pytest.raises(StateError) as err:
        replay.rerun(spark, t.spec, day(3))
    assert str(err.value) == (
        f"{t.table} {d3}: the late changes of {d3} were put in place in history partitions before {d3}, and that"
        f" input changed since (or the rerun would leave it uncommitted): a rerun from {d3} cannot take them out;"
        f" rerun from {d1} instead (`zipper rerun {t.spec.name} --from {d1}`)"
    )
    assert snapshot(spark, t) == before
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == [
        (1, "Lyon", at(1, 11), at(1, 11), at(1, 12), d1, d1),
        (1, "Nice", at(1, 12), at(1, 12), END, d1, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Rome", at(1, 10), at(1, 10), at(1, 11), d1, d1),
        (2, "Rome", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (2, "Rome", at(1, 10), at(1, 10), END, d1, OPEN),
        (3, "Pau", at(0, 8), at(0, 8), at(3, 1), d0, d3),
        (3, "Vic", at(3, 1), at(3, 1), END, d3, OPEN),
        (4, "Bonn", at(1, 7), at(1, 7), at(1, 8), d1, d1),
        (4, "Bonn", at(1, 8), at(1, 8), at(2, 6), d1, d2),
        (4, "Graz", at(2, 6), at(2, 6), END, d2, OPEN),
    ]


def test_updated_at_on_cdc_a_delete_ends_the_chain_late_changes_go_before_it_and_a_table_made_without_it_is_refused(
    spark, tmp_path, unique_name
):
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source={"mode": "cdc", "updated_at": "ts"})
    t.write_base(spark, [(1, "Oslo", at(0, 9)), (2, "Rome", at(0, 9))])
    init_table(spark, t.spec)
    events = [
        (1, "Paris", at(1, 12), 0),
        (1, "Bergen", at(1, 11), 1),  # the delete carries the change before it, Bergen
        (1, "Bergen", at(1, 10), 0),
        (2, "Rome", at(1, 10), 1),
        (3, "Nice", at(1, 9), 1),  # inserted at 8:00, deleted at 9:00: one version within the day
        (3, "Nice", at(1, 8), 0),
    ]
    t.write_increment(spark, day(1), events, CDC_UPDATED)
    result = merge.merge_date(spark, t.spec, day(1))
    assert {k: result.counts[k] for k in ("input", "new", "changed", "deleted", "closed", "versions_within_day")} == {
        "input": 6,
        "new": 0,
        "changed": 1,
        "deleted": 1,
        "closed": 4,
        "versions_within_day": 2,
    }
    d0, d1 = day(0).isoformat(), day(1).isoformat()
    assert table_rows(spark, t.table) == [
        (1, "Bergen", at(1, 10), at(1, 10), at(1, 11), d1, d1),  # ended by the delete
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Paris", at(1, 12), at(1, 12), END, d1, OPEN),
        (2, "Rome", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (3, "Nice", at(1, 8), at(1, 8), at(1, 9), d1, d1),
    ]

    # late changes: Pisa is older than the delete that closed key 2, so it splits Rome; Lund splits
    # Bergen and leaves Oslo, in the same partition, as it was; Gent falls in key 1's gap after
    # its delete, so it goes in the day's partition
    half = dt.timedelta(minutes=30)
    late = [(2, "Pisa", at(0, 12), 0), (1, "Lund", at(1, 10) + half, 0), (1, "Gent", at(1, 11) + half, 0)]
    t.write_increment(spark, day(2), late, CDC_UPDATED)
    result = merge.merge_date(spark, t.spec, day(2))
    assert (result.counts["late_changes"], result.counts["partitions_rewritten"]) == (3, 1)
    d2 = day(2).isoformat()
    expected = [
        (1, "Bergen", at(1, 10), at(1, 10), at(1, 10) + half, d1, d1),
        (1, "Gent", at(1, 11) + half, at(1, 11) + half, at(1, 12), d2, d2),
        (1, "Lund", at(1, 10) + half, at(1, 10) + half, at(1, 11), d1, d1),
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Paris", at(1, 12), at(1, 12), END, d1, OPEN),
        (2, "Pisa", at(0, 12), at(0, 12), at(1, 10), d1, d1),
        (2, "Rome", at(0, 9), at(0, 9), at(0, 12), d0, d1),
        (3, "Nice", at(1, 8), at(1, 8), at(1, 9), d1, d1),
    ]
    assert table_rows(spark, t.table) == expected
    assert check.run_checks(spark, t.spec)["failed"] == []
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == expected

    # the same table's spec without updated_at, then a new table of the old spec turning it on
    plain = TableFixture(tmp_path, unique_name + "_plain", schema=UPDATED, source={"mode": "cdc"})
    plain.write_base(spark, [(1, "Oslo", at(0, 9))])
    init_table(spark, plain.spec)
    turned_on = TableFixture(
        tmp_path, unique_name + "_plain", schema=UPDATED, source={"mode": "cdc", "updated_at": "ts"}
    )
    turned_on.write_increment(spark, day(1), [(1, "Rome", at(1, 9), 0)], CDC_UPDATED)
    with pytest.raises(SpecError, match=r"key 'source.updated_at': the table was made without the columns"):
        merge.merge_date(spark, turned_on.spec, day(1))
    assert state.read_state(spark, plain.spec).last_committed == day(0)


def test_updated_at_must_be_a_date_or_timestamp_and_never_null(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source={"updated_at": "ts"})
    t.write_base(spark, [(1, "Oslo", at(0, 9)), (2, "Rome", None)])
    with pytest.raises(
        InputError, match=r"base .* has NULL in updated_at column 'ts' \(a version's valid_from\); keys \['id'\]: 2$"
    ):
        init_table(spark, t.spec)
    typed = TableFixture(
        tmp_path, unique_name + "_s", base=False, schema="id bigint, ts string", source={"updated_at": "ts"}
    )
    typed.write_increment(spark, day(1), [(1, "today")])
    with pytest.raises(
        InputError, match=r"increment .* updated_at column 'ts' has type string; it must be a date or timestamp$"
    ):
        merge.merge_date(spark, typed.spec, day(1))
    assert not spark.catalog.tableExists(typed.table)
    twice = TableFixture(tmp_path, unique_name + "_t", base=False, schema=UPDATED, source={"updated_at": "ts"})
    twice.write_increment(spark, day(1), [(1, "Oslo", at(1, 9)), (1, "Rome", at(1, 9))])
    with pytest.raises(InputError, match=r"1 key \['id'\] with a repeated value in updated_at column 'ts' \(2 rows\)"):
        merge.merge_date(spark, twice.spec, day(1))


def test_late_deletes_changes_and_reinserts_beside_tombstones_are_put_in_place(spark, tmp_path, unique_name):
    """hard_deletes: new_record with updated_at: a late delete opens a tombstone inside the version
    it splits, a late change before a tombstone gives the tombstone its values, a late re-insert
    ends a late tombstone; the history is the one of the changes in time order, and a rerun of
    the late day makes it again."""
    source = {"mode": "cdc", "updated_at": "ts", "hard_deletes": "new_record"}
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source=source)
    t.write_base(spark, [(1, "Oslo", at(0, 9)), (2, "Rome", at(0, 9)), (3, "Nice", at(0, 9))])
    init_table(spark, t.spec)
    t.write_increment(
        spark,
        day(1),
        [(1, "Bergen", at(1, 10), 0), (2, "Rome", at(1, 10), 1), (3, "Lund", at(1, 10), 0)],
        CDC_UPDATED,
    )
    merge.merge_date(spark, t.spec, day(1))
    late = [
        (1, "Oslo", at(0, 12), 1),  # a late delete inside Oslo's version, then a late re-insert
        (1, "Pisa", at(0, 15), 0),
        (2, "Milan", at(0, 12), 0),  # a late change before key 2's tombstone: the tombstone is Milan's
        (3, "Nice", at(1, 8), 1),  # a late delete before Lund: a tombstone of Nice in between
        (4, "Graz", at(2, 9), 0),  # on time
    ]
    t.write_increment(spark, day(2), late, CDC_UPDATED)
    counts = merge.merge_date(spark, t.spec, day(2)).counts
    assert counts["late_changes"] == 4
    d0, d1, d2 = (day(n).isoformat() for n in range(3))
    expected = [
        (1, "Bergen", at(1, 10), at(1, 10), END, False, d1, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(0, 12), False, d0, d1),
        (1, "Oslo", at(0, 9), at(0, 12), at(0, 15), True, d1, d1),
        (1, "Pisa", at(0, 15), at(0, 15), at(1, 10), False, d1, d1),
        (2, "Milan", at(0, 12), at(0, 12), at(1, 10), False, d1, d1),
        (2, "Milan", at(0, 12), at(1, 10), END, True, d1, OPEN),
        (2, "Rome", at(0, 9), at(0, 9), at(0, 12), False, d0, d1),
        (3, "Lund", at(1, 10), at(1, 10), END, False, d1, OPEN),
        (3, "Nice", at(0, 9), at(0, 9), at(1, 8), False, d0, d1),
        (3, "Nice", at(0, 9), at(1, 8), at(1, 10), True, d1, d1),
        (4, "Graz", at(2, 9), at(2, 9), END, False, d2, OPEN),
    ]
    assert table_rows(spark, t.table) == expected
    assert check.run_checks(spark, t.spec)["failed"] == []
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == expected


def test_late_partial_updates_take_and_pass_on_values_as_the_updates_in_time_order(spark, tmp_path, unique_name):
    """ignore_null_updates with updated_at: a late change's NULLs take the values of the version it
    splits; a later version's value equal to the one before the late change is taken as carried,
    so it takes the late change's value; a NULL after a late delete stays NULL."""
    schema = "id bigint, city string, score int, ts timestamp"
    source = {"mode": "cdc", "updated_at": "ts", "ignore_null_updates": True}
    t = TableFixture(tmp_path, unique_name, schema=schema, source=source)
    t.write_base(spark, [(1, "Oslo", 5, at(0, 9)), (2, "Rome", 1, at(0, 9))])
    init_table(spark, t.spec)
    cdc = schema + ", sys_op int"
    t.write_increment(spark, day(1), [(1, None, 6, at(1, 10), 0), (2, "Pisa", None, at(1, 10), 0)], cdc)
    merge.merge_date(spark, t.spec, day(1))
    late = [
        (1, "Bergen", None, at(0, 12), 0),  # city from 12:00; the 10:00 version's Oslo was carried
        (2, "Rome", 1, at(0, 11), 1),  # a late delete, then a re-insert whose NULL stays NULL
        (2, None, 3, at(0, 12), 0),
        (1, None, 7, at(2, 9), 0),  # on time: its city is Bergen's, as the late change leaves it
    ]
    t.write_increment(spark, day(2), late, cdc)
    counts = merge.merge_date(spark, t.spec, day(2)).counts
    assert counts["late_changes"] == 3
    d0, d1, d2 = (day(n).isoformat() for n in range(3))
    expected = [
        (1, "Oslo", 5, at(0, 9), at(0, 9), at(0, 12), d0, d1),
        (1, "Bergen", 5, at(0, 12), at(0, 12), at(1, 10), d1, d1),
        (1, "Bergen", 6, at(1, 10), at(1, 10), at(2, 9), d1, d2),
        (1, "Bergen", 7, at(2, 9), at(2, 9), END, d2, OPEN),
        (2, "Rome", 1, at(0, 9), at(0, 9), at(0, 11), d0, d1),
        (2, None, 3, at(0, 12), at(0, 12), at(1, 10), d2, d2),  # after a delete: in the day's partition
        (2, "Pisa", 3, at(1, 10), at(1, 10), END, d1, OPEN),
    ]
    assert sorted(table_rows(spark, t.table), key=lambda r: (r[0], r[4])) == expected
    assert check.run_checks(spark, t.spec)["failed"] == []
    replay.rerun(spark, t.spec, day(2))
    assert sorted(table_rows(spark, t.table), key=lambda r: (r[0], r[4])) == expected
