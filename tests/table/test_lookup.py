"""The key lookup of the Airflow view: every version of a key read from the table's Parquet files
with pyarrow, equal to what `zipper history` reads through Spark, and bounded."""

from __future__ import annotations

import pytest

from tests.support import TableFixture, day
from zipper.core.errors import InputError
from zipper.jobs import merge
from zipper.table import inspect, lookup
from zipper.table.state import read_state


@pytest.fixture
def evolving(spark, tmp_path, unique_name):
    """Bob moves twice; on day 3 a column is added (older partitions do not have it) and Cy arrives."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, city string")
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    t.write_increment(spark, day(1), [(2, "bob", "Paris")])
    t.write_increment(spark, day(2), [(2, "bob", "Lyon"), (1, "ann", "Oslo")])
    t.write_increment(
        spark, day(3), [(3, "cy", "Nice", 7), (2, "bob", "Lyon", 4)], "id bigint, name string, city string, floor int"
    )
    for n in (1, 2, 3):
        merge.merge_date(spark, t.spec, day(n))
    return t


def as_spark_reads(spark, spec, key: dict) -> list[dict]:
    rows = inspect.history(spark, spec, key).collect()
    return [{k: v for k, v in row.asDict().items()} for row in rows]


@pytest.mark.parametrize("key", ["1", "2", "3"])
def test_every_version_of_a_key_equals_the_spark_history(spark, evolving, key):
    spec = evolving.spec
    found = lookup.key_versions(spec, read_state(spark, spec), {"id": key})
    expected = as_spark_reads(spark, spec, {"id": key})
    assert len(found) == len(expected) > 0
    for got, want in zip(found, expected, strict=True):
        # a partition written before `floor` existed has no such column: Spark reads NULL there
        assert {k: got.get(k) for k in want} == want


def test_bob_has_four_versions_with_their_ends(spark, evolving):
    spec = evolving.spec
    found = lookup.key_versions(spec, read_state(spark, spec), {"id": "2"})
    assert [(v["city"], v["begin_dt"], v["end_dt"]) for v in found] == [
        ("Rome", day(0).isoformat(), day(1).isoformat()),
        ("Paris", day(1).isoformat(), day(2).isoformat()),
        ("Lyon", day(2).isoformat(), day(3).isoformat()),
        ("Lyon", day(3).isoformat(), "9999-12-31"),  # floor 4 arrived: a new version
    ]
    assert found[-1]["floor"] == 4


def test_an_unknown_key_has_no_version_and_a_bad_key_is_refused(spark, evolving):
    spec, st = evolving.spec, read_state(spark, evolving.spec)
    assert lookup.key_versions(spec, st, {"id": "99"}) == []
    with pytest.raises(InputError, match=r"key id='x' is not a int64 value"):
        lookup.key_versions(spec, st, {"id": "x"})
    with pytest.raises(InputError, match="every key column once: id"):
        lookup.key_versions(spec, st, {"name": "bob"})


def test_a_table_too_large_for_a_lookup_here_names_zipper_history(spark, evolving):
    spec, st = evolving.spec, read_state(spark, evolving.spec)
    command = f"run `zipper history {spec.name} --key id=2`"
    with pytest.raises(lookup.LookupRefused, match=r"has \d+ files\): " + command):
        lookup.key_versions(spec, st, {"id": "2"}, lookup.Limits(max_files=1))
    with pytest.raises(lookup.LookupRefused, match=r"holds 0\.0 GiB\): " + command):
        lookup.key_versions(spec, st, {"id": "2"}, lookup.Limits(max_bytes=10))
    with pytest.raises(lookup.LookupRefused, match="took over -1 s"):
        lookup.key_versions(spec, st, {"id": "2"}, lookup.Limits(max_seconds=-1))
