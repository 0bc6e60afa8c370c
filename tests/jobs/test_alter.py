"""`zipper alter`: a column renamed or dropped in every version, published in one metastore
transaction with its record; refused in one line for a key, zipper's own columns and a column the
spec still names."""

from __future__ import annotations

import datetime as dt
import os
import re

import pytest
import yaml
from pymetastore.hive_metastore.ttypes import InvalidOperationException

from tests.support import TableFixture, day, table_rows
from tests.table.test_hive_reader import hive_serde_reads
from zipper.core import faults
from zipper.core.alter import AlterKind, AlterRequest
from zipper.core.errors import InputError
from zipper.jobs import alter, merge, replay
from zipper.table import catalog, check, status
from zipper.table.session_metastore import session_metastore
from zipper.table.state import read_state
from zipper.tablespec.loader import load_spec_file

OPEN = "9999-12-31"
BASE = day(0).isoformat()


def people(spark, tmp_path, name: str, **options) -> TableFixture:
    """ann moves Oslo -> Paris on day 1 (her name unchanged); bob is renamed on day 2 in Rome."""
    t = TableFixture(tmp_path, f"{name}_{os.getpid()}", **options)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    t.write_increment(spark, day(1), [(1, "ann", "Paris")])
    t.write_increment(spark, day(2), [(2, "rob", "Rome")])
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    return t


BEFORE = [
    (1, "ann", "Oslo", BASE, day(1).isoformat()),
    (1, "ann", "Paris", day(1).isoformat(), OPEN),
    (2, "bob", "Rome", BASE, day(2).isoformat()),
    (2, "rob", "Rome", day(2).isoformat(), OPEN),
]


def test_a_rename_killed_between_its_publish_and_the_column_change_is_completed_by_the_next_run(spark, tmp_path):
    t = people(spark, tmp_path, "renamed")
    request = AlterRequest(AlterKind.RENAME, "city", "town", reason="crm naming", by="tester")
    for step in faults.ALTER_STEPS[:2]:  # killed before the publish: the table as it was
        with faults.crash_at(step), pytest.raises(faults.SimulatedCrash):
            alter.alter_table(spark, t.spec, request)
        assert [name for name, _ in catalog.data_columns(spark, t.spec)] == ["id", "name", "city"]
        assert table_rows(spark, t.table) == BEFORE and not read_state(spark, t.spec).alters
    with faults.crash_at("before_alter_columns"), pytest.raises(faults.SimulatedCrash):
        alter.alter_table(spark, t.spec, request)
    # the partitions are published under the new name; the table's columns are not yet
    assert catalog.data_columns(spark, t.spec)[2][0] == "city"
    merge.merge_date(spark, t.spec, day(2))  # the next run (a no-op here) first completes the column change
    assert [name for name, _ in catalog.data_columns(spark, t.spec)] == ["id", "name", "town"]
    assert table_rows(spark, t.table) == BEFORE  # history, slice and status the same but for the name
    with hive_serde_reads(spark):  # Hive's own Parquet reader (ParquetHiveSerDe) reads the new names too
        spark.catalog.refreshTable(t.table)
        assert "Scan hive" in spark.sql(f"EXPLAIN SELECT * FROM {t.table}").first()[0]
        assert table_rows(spark, t.table) == BEFORE
    with catalog._metastore(spark) as metastore:  # each partition's own column list, as Hive keeps it
        parts = metastore.partitions(t.spec.database, t.spec.table_name)
    assert {tuple(c.name for c in p.sd.cols if c.name in ("city", "town")) for p in parts} == {("town",)}
    assert check.run_checks(spark, t.spec)["ok"]
    [record] = status.report(read_state(spark, t.spec), t.spec)["alters"]
    assert (record["kind"], record["column"], record["new_name"], record["reason"]) == (
        "rename",
        "city",
        "town",
        "crm naming",
    )
    assert record["counts"]["rows_before"] == record["counts"]["rows_after"] == 4

    # the source sends the new name from now on: merged as ever, no column added
    t.write_increment(spark, day(3), [(1, "ann", "Nice")], schema="id bigint, name string, town string")
    merge.merge_date(spark, t.spec, day(3))
    assert (1, "ann", "Nice", day(3).isoformat(), OPEN) in table_rows(spark, t.table)
    assert len(spark.table(t.table).columns) == 5
    assert len(status.report(read_state(spark, t.spec), t.spec)["alters"]) == 1  # carried by the merge
    after = table_rows(spark, t.table)
    replay.rerun(spark, t.spec, day(3))  # a date after the alter replays from the renamed table
    assert table_rows(spark, t.table) == after
    assert len(read_state(spark, t.spec).alters) == 1  # and by the rerun


def test_a_drop_merges_the_versions_that_only_the_column_made_and_refusals_change_nothing(spark, tmp_path):
    t = people(spark, tmp_path, "dropped", track_columns=["name", "city"])
    refusals = [
        (AlterRequest(AlterKind.DROP, "id"), "'id' is a key column"),
        (AlterRequest(AlterKind.DROP, "end_dt"), "zipper's own column"),
        (AlterRequest(AlterKind.DROP, "zip"), "the table has no column 'zip' (its data columns: id, name, city)"),
        (AlterRequest(AlterKind.DROP, "city"), "the spec still names 'city' (track_columns); edit the spec first"),
        (AlterRequest(AlterKind.RENAME, "city", "name"), "the spec still names 'city'"),
    ]
    for request, fragment in refusals:
        with pytest.raises(
            InputError, match=f"^{re.escape(t.table)} {day(2)}: .*{re.escape(fragment)}.*nothing was changed$"
        ):
            alter.alter_table(spark, t.spec, request)
    assert table_rows(spark, t.table) == BEFORE

    t.raw["track_columns"] = ["name"]
    t.path.write_text(yaml.safe_dump(t.raw, sort_keys=False))
    spec = load_spec_file(t.path)
    result = alter.alter_table(spark, spec, AlterRequest(AlterKind.DROP, "city"))
    assert "dropped column city, 1 version merged into the next in 3 partitions (4 rows before, 3 after)" in (
        result.summary()
    )
    assert table_rows(spark, t.table) == [
        (1, "ann", BASE, OPEN),
        (2, "bob", BASE, day(2).isoformat()),
        (2, "rob", day(2).isoformat(), OPEN),
    ]
    assert check.run_checks(spark, spec)["ok"]


def test_a_drop_that_moves_a_column_of_another_type_into_its_place_passes_the_metastores_check(spark, tmp_path):
    """The validity columns (timestamps) follow the data columns, and `begin_dt` (text) follows
    them: dropping a text column moves a timestamp into its place. The metastore compares types
    place by place and refuses that in one call (its check is on, and Hive 2 lets no client turn it
    off): the drop makes it two calls the check passes. Killed between them, the next run completes
    the columns; every reader, Hive's own Parquet reader too, reads the table by name afterwards."""
    t = TableFixture(
        tmp_path,
        f"timed_{os.getpid()}",
        schema="id bigint, city string, phone string, ts timestamp",
        source={"updated_at": "ts"},
    )
    t.write_base(spark, [(1, "Oslo", "1", at(0, 9))])
    t.write_increment(spark, day(1), [(1, "Oslo", "2", at(1, 10))])
    merge.merge_date(spark, t.spec, day(1))
    with session_metastore(spark) as metastore:  # the check is on: one call moving the types is refused
        table = metastore.table(t.spec.database, t.spec.table_name)
        table.sd.cols = [c for c in table.sd.cols if c.name != "phone"]
        with pytest.raises(InvalidOperationException, match="incompatible with the existing columns"):
            metastore.alter_table(t.spec.database, t.spec.table_name, table)
        # raised through a context manager (which marks it), the refusal is still itself, not a TypeError
        with pytest.raises(InvalidOperationException, match="incompatible with the existing columns"):
            with metastore.without_positional_type_check():
                metastore.alter_table(t.spec.database, t.spec.table_name, table)
    with faults.crash_at("between_column_calls"), pytest.raises(faults.SimulatedCrash):
        alter.alter_table(spark, t.spec, AlterRequest(AlterKind.DROP, "phone"))
    with session_metastore(spark) as metastore:  # the first call made: the columns before the moved place
        assert [c.name for c in metastore.table(t.spec.database, t.spec.table_name).sd.cols] == ["id", "city"]
    merge.merge_date(spark, t.spec, day(1))  # the next run (a no-op) first completes the columns
    d0, d1 = BASE, day(1).isoformat()
    after = [
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Oslo", at(1, 10), at(1, 10), dt.datetime(9999, 12, 31), d1, OPEN),
    ]
    assert table_rows(spark, t.table) == after
    with hive_serde_reads(spark):
        spark.catalog.refreshTable(t.table)
        assert table_rows(spark, t.table) == after
    assert check.run_checks(spark, t.spec)["ok"]


def at(day_number: int, hour: int) -> dt.datetime:
    return dt.datetime.combine(day(day_number), dt.time(hour))
