"""Float-precision columns: a float column widened to double, or a double column fed floats,
compares values as floats (0.1 stored as a float reads 0.10000000149011612 as a double, the same
value less precisely), on a real Hive table. A column always double and fed doubles compares exactly."""

from __future__ import annotations

import struct

import pytest
from pyspark.sql import functions as F

from tests.support import TableFixture, day, table_rows
from zipper.core.errors import InputError
from zipper.jobs import merge, replay
from zipper.jobs.init import init_table
from zipper.table import state
from zipper.table.catalog import Partition
from zipper.transforms.equality import equal_at_float_precision

OPEN = "9999-12-31"
BASE = "2023-12-31"
INF = float("inf")
KINDS = ("new", "changed", "updated_in_place", "unchanged")


def as_float(x: float) -> float:
    """x as a float column stores it, read as a double."""
    return struct.unpack("f", struct.pack("f", x))[0]


def kinds(result) -> dict:
    return {k: result.counts[k] for k in KINDS}


def ordered(rows):
    return sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r))


@pytest.mark.parametrize(
    "old, new, equal",
    [
        (as_float(0.1), 0.1, True),  # the old value is the float
        (0.1, as_float(0.1), True),  # the new value is the float
        (0.1, 0.1000000001, False),  # neither is a float
        (as_float(0.3), 0.31, False),
        (0.5, 0.5, True),
        (1e300, 2e300, False),  # both Infinity as floats
        (INF, 1e300, False),
        (INF, INF, True),
        (float("nan"), float("nan"), True),
        (float("nan"), 1.0, False),
        (None, None, True),
        (None, 0.1, False),
    ],
)
def test_equal_at_float_precision(spark, old, new, equal):
    df = spark.createDataFrame([(old, new)], "old double, new double")
    assert df.select(equal_at_float_precision(F.col("old"), F.col("new"))).first()[0] is equal


def test_columns_widened_from_float_come_from_the_commits_and_the_open_partition():
    """Tables widened before the open partition recorded them have only their commits' counts."""

    def commit(ds, widened):
        return state.Commit(ds, "r", "t", "f", {"columns_widened": widened}, 0, ds)

    st = state.TableState(
        exists=True,
        open_partition=Partition(OPEN, "/open", {state.FLOAT_COLUMNS: '["cost"]'}),
        commits={
            "2024-01-01": commit("2024-01-01", ["price float -> double", "level int -> bigint"]),
            "2024-01-02": commit("2024-01-02", ["ratio int -> double"]),
        },
    )
    assert st.widened_from_float == {"price", "cost"}
    assert st.float_columns_params({"rate"}) == {state.FLOAT_COLUMNS: '["cost", "price", "rate"]'}
    assert state.TableState(exists=True, open_partition=Partition(OPEN, "/open", {})).float_columns_params() == {}


def test_a_float_column_widened_by_doubles_opens_no_spurious_versions(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, price float, name string")
    t.write_base(spark, [(1, 0.1, "a"), (2, 0.5, "b"), (3, 0.3, "c"), (4, 0.7, "d"), (5, INF, "e")])
    init_table(spark, t.spec)
    doubles = "id bigint, price double, name string"
    t.write_increment(
        spark, day(1), [(1, 0.1, "a"), (2, 0.5, "b"), (3, 0.31, "c"), (5, 1e300, "e"), (6, 1e300, "f")], doubles
    )
    first = merge.merge_date(spark, t.spec, day(1))
    # 1: re-sent, updated in place to the more precise value; 2: exactly equal; 3: a real change;
    # 5: Infinity as a float is not 1e300
    assert kinds(first) == {"new": 1, "changed": 2, "updated_in_place": 1, "unchanged": 1}
    assert first.counts["columns_widened"] == ["price float -> double"]
    d1 = day(1).isoformat()
    assert table_rows(spark, t.table) == ordered(
        [
            (1, 0.1, "a", BASE, OPEN),
            (2, 0.5, "b", BASE, OPEN),
            (3, as_float(0.3), "c", BASE, d1),
            (3, 0.31, "c", d1, OPEN),
            (4, as_float(0.7), "d", BASE, OPEN),
            (5, INF, "e", BASE, d1),
            (5, 1e300, "e", d1, OPEN),
            (6, 1e300, "f", d1, OPEN),
        ]
    )

    # a later day: key 4's open version still holds the float; 1e300 -> 2e300 is a change
    t.write_increment(spark, day(2), [(1, 0.1, "a"), (4, 0.7, "d"), (6, 2e300, "f")], doubles)
    second = merge.merge_date(spark, t.spec, day(2))
    assert kinds(second) == {"new": 0, "changed": 1, "updated_in_place": 1, "unchanged": 1}
    after = table_rows(spark, t.table)
    assert (4, 0.7, "d", BASE, OPEN) in after and (6, 2e300, "f", day(2).isoformat(), OPEN) in after

    # a replay restores to before the widening: the column is still compared as it was widened from float
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == after
    st = state.read_state(spark, t.spec)
    assert st.widened_from_float == {"price"}
    # the same versions; the restore takes the open versions as they are now, with the values
    # updated in place, so the replayed days find keys 1 and 4 unchanged
    for n, result in ((1, first), (2, second)):
        replayed = st.commits[day(n).isoformat()].counts
        assert (replayed["new"], replayed["changed"]) == (result.counts["new"], result.counts["changed"])
        assert replayed["updated_in_place"] == 0


@pytest.mark.parametrize("track", ["all", ["name"]])
def test_a_double_column_fed_floats_keeps_its_values_and_stays_exact_for_doubles(spark, tmp_path, unique_name, track):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, price double, name string", track_columns=track)
    t.write_base(spark, [(1, 0.1, "a"), (2, 0.25, "b"), (3, 0.1, "c")])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(1, 0.1, "a"), (2, 0.3, "b")], "id bigint, price float, name string")
    first = merge.merge_date(spark, t.spec, day(1))
    tracked = track == "all"
    assert kinds(first) == {"new": 0, "changed": int(tracked), "updated_in_place": int(not tracked), "unchanged": 1}
    assert "columns_widened" not in first.counts
    rows = table_rows(spark, t.table)
    assert (1, 0.1, "a", BASE, OPEN) in rows  # the float 0.1 is the same value, less precisely: kept
    assert (2, as_float(0.3), "b", day(1).isoformat() if tracked else BASE, OPEN) in rows

    # born double, fed doubles: exact, even where the new value is the float of the old one
    t.write_increment(spark, day(2), [(1, 0.1, "a"), (3, as_float(0.1), "c")], "id bigint, price double, name string")
    second = merge.merge_date(spark, t.spec, day(2))
    assert kinds(second) == {"new": 0, "changed": int(tracked), "updated_in_place": int(not tracked), "unchanged": 1}
    assert (3, as_float(0.1), "c", day(2).isoformat() if tracked else BASE, OPEN) in table_rows(spark, t.table)
    assert state.read_state(spark, t.spec).widened_from_float == frozenset()


def test_a_snapshot_of_a_widened_float_column_updates_in_place_once(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, price float, name string", source={"mode": "snapshot"})
    t.write_base(spark, [(1, 0.1, "a"), (2, 0.5, "b"), (3, 0.3, "c")])
    init_table(spark, t.spec)
    extract = [(1, 0.1, "a"), (2, 0.5, "b"), (3, 0.3, "c")]
    t.write_increment(spark, day(1), extract, "id bigint, price double, name string")
    first = merge.merge_date(spark, t.spec, day(1))
    assert (first.counts["input"], kinds(first)) == (2, {"new": 0, "changed": 0, "updated_in_place": 2, "unchanged": 1})
    expected = [(1, 0.1, "a", BASE, OPEN), (2, 0.5, "b", BASE, OPEN), (3, 0.3, "c", BASE, OPEN)]
    assert table_rows(spark, t.table) == expected

    t.write_increment(spark, day(2), extract, "id bigint, price double, name string")
    second = merge.merge_date(spark, t.spec, day(2))
    assert (second.counts["input"], kinds(second)) == (
        0,
        {"new": 0, "changed": 0, "updated_in_place": 0, "unchanged": 3},
    )
    # the same extract as floats: the open values are the more precise, and stay
    t.write_increment(spark, day(3), extract, "id bigint, price float, name string")
    third = merge.merge_date(spark, t.spec, day(3))
    assert (third.counts["input"], kinds(third)) == (0, {"new": 0, "changed": 0, "updated_in_place": 0, "unchanged": 3})
    assert table_rows(spark, t.table) == expected


def test_a_cdc_delete_matches_a_widened_float_column_at_float_precision(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, price float, name string", source={"mode": "cdc"})
    t.write_base(spark, [(1, 0.1, "a"), (2, 0.3, "b")])
    init_table(spark, t.spec)
    cdc = "id bigint, price double, name string, sys_op int"
    t.write_increment(spark, day(1), [(1, 0.1, "a", 1), (2, 0.31, "b", 1)], cdc)
    mismatch = r"1 delete row whose values differ from the open row .*: 2 \(columns price\)$"
    with pytest.raises(InputError, match=mismatch):
        merge.merge_date(spark, t.spec, day(1))
    t.write_increment(spark, day(1), [(1, 0.1, "a", 1), (2, 0.3, "b", 0)], cdc)
    result = merge.merge_date(spark, t.spec, day(1))
    assert (result.counts["deleted"], result.counts["updated_in_place"]) == (1, 1)
    assert table_rows(spark, t.table) == [(1, as_float(0.1), "a", BASE, day(1).isoformat()), (2, 0.3, "b", BASE, OPEN)]
