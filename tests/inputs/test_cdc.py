"""mode: cdc (an operation column: 0 insert or update, 1 delete) and sequence_by, on a real Hive table."""

from __future__ import annotations

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core import fs
from zipper.core.errors import InputError
from zipper.jobs import merge
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
        sorted(d for d, _ in fs.list_dirs(spark, state.versions_root(st))),
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
