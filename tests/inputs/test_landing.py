"""mode: landing_zone (numbered change files with __rowMarker__ and _metadata.json), on a real Hive table.

The worked examples of the source document: an employee moving from Redmond to Bellevue, and a
key change done as a delete of the old key and an insert of the new one."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.inputs.test_cdc import at
from tests.support import day, table_rows
from zipper.core import fs
from zipper.core.errors import InputError, MissingInputError
from zipper.core.input_names import is_hidden
from zipper.inputs.modes.landing_zone import files as landing
from zipper.inputs.modes.landing_zone import locate
from zipper.jobs import merge, replay
from zipper.jobs.keys import resolve_keys
from zipper.table import catalog, inspect, state, vacuum
from zipper.tablespec.loader import load_spec_file

OPEN = "9999-12-31"
# change files with a time (`source.updated_at: ts`)
TIMED = pa.schema(
    [("__rowMarker__", pa.int32()), ("id", pa.string()), ("city", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))]
)
EMPLOYEES = pa.schema([("__rowMarker__", pa.int32()), ("EmployeeID", pa.string()), ("EmployeeLocation", pa.string())])


class LandingZone:
    """A landing-zone folder and a spec reading it."""

    def __init__(self, root, name, key_columns=("EmployeeID",), spec_options: dict | None = None, **source):
        self.folder = root / "landing" / "dbo.schema" / "Employees"
        self.folder.mkdir(parents=True)
        if key_columns is not None:
            self.set_keys(list(key_columns))
        raw = {
            "name": name,
            "table": f"db_{name}.{name}",
            "start_date": day(1).isoformat(),
            "source": {"mode": "landing_zone", "path": str(self.folder), **source},
            **(spec_options or {}),
        }
        (root / f"{name}.yaml").write_text(yaml.safe_dump(raw))
        self.spec = load_spec_file(root / f"{name}.yaml")
        self.table = self.spec.table

    def set_keys(self, keys):
        (self.folder / "_metadata.json").write_text(json.dumps({"keyColumns": keys}))

    def write(self, n: int, rows, schema=EMPLOYEES, compression="snappy", row_group_size=None):
        table = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
        pq.write_table(
            table, self.folder / landing.file_name(n), compression=compression, row_group_size=row_group_size
        )


def state_of(spark, zone):
    st = state.read_state(spark, zone.spec)
    return (
        table_rows(spark, zone.table),
        [(p.end, p.location) for p in catalog.list_partitions(spark, zone.spec)],
        st.last_committed,
    )


@pytest.fixture
def zone(tmp_path, unique_name):
    return LandingZone(tmp_path, unique_name)


def test_employee_moves_from_redmond_to_bellevue(spark, zone):
    """Keys from _metadata.json; every compression; a file whose rows must apply in order."""
    zone.write(1, [(0, "E0001", "Redmond"), (0, "E0002", "Redmond"), (0, "E0003", "Redmond")], compression="none")
    first = merge.merge_date(spark, zone.spec, day(1))  # creates the table from the files' columns
    assert first.counts["new"] == 3 and first.counts["files"] == 1
    zone.write(2, [(1, "E0001", "Bellevue")], compression="gzip")
    merge.merge_date(spark, zone.spec, day(2))
    spec = resolve_keys(spark, zone.spec)
    assert spec.keys == ["employeeid"]
    assert [
        (r.employeelocation, r.begin_dt, r.end_dt)
        for r in inspect.history(spark, spec, {"employeeid": "E0001"}).collect()
    ] == [("Redmond", "2024-01-01", "2024-01-02"), ("Bellevue", "2024-01-02", OPEN)]

    # One file, 3000 rows for one key in row groups of 100, read in several tasks: the last row wins.
    zone.write(3, [(1, "E0002", f"desk {i}") for i in range(3000)], compression="zstd", row_group_size=100)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        result = merge.merge_date(spark, zone.spec, day(3))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert (result.counts["source_rows"], result.counts["changed"]) == (3000, 1)
    assert [r.employeelocation for r in inspect.history(spark, spec, {"employeeid": "E0002"}).collect()] == [
        "Redmond",
        "desk 2999",
    ]


def test_a_data_column_named_metadata_is_a_column_like_any_other(spark, zone):
    """Rows are ordered by Spark's hidden `_metadata` column, which a data column of that name hid:
    the merge failed with `Can't extract a value from "_metadata"`."""
    schema = pa.schema([*EMPLOYEES, ("_metadata", pa.string())])
    zone.write(1, [(0, "E0001", "Redmond", "m1"), (0, "E0002", "Redmond", "m2")], schema=schema)
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "E0001", "Bellevue", "m3"), (1, "E0001", "Seattle", "m4")], schema=schema)
    merge.merge_date(spark, zone.spec, day(2))
    assert table_rows(spark, zone.table) == [
        ("E0001", "Redmond", "m1", "2024-01-01", "2024-01-02"),
        ("E0001", "Seattle", "m4", "2024-01-02", OPEN),
        ("E0002", "Redmond", "m2", "2024-01-01", OPEN),
    ]


def test_a_change_file_timestamp_without_time_zone_is_refused_naming_the_column(spark, zone):
    """A mirrored datetime2 written as a Parquet timestamp not adjusted to UTC reads as timestamp_ntz,
    which a Hive table cannot store: the table's creation failed with Hive's 'type expected at the
    position ...'."""
    schema = pa.schema([*EMPLOYEES, ("HiredAt", pa.timestamp("us"))])
    zone.write(1, [(0, "E0001", "Redmond", dt.datetime(2024, 1, 1, 8, 30))], schema=schema)
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, zone.spec, day(1))
    assert str(raised.value) == (
        f"{zone.table} {day(1)}: landing zone {zone.folder} column 'hiredat' has type timestamp_ntz, which a Hive"
        " table cannot store (a Parquet timestamp without a time zone, such as pandas' naive datetimes): write it"
        " adjusted to UTC"
    )
    assert not catalog.table_exists(spark, zone.spec)


def test_change_files_that_mix_a_float_and_a_double_key_are_refused(spark, tmp_path, unique_name):
    zone = LandingZone(tmp_path, unique_name, key_columns=("Id",))
    zone.write(
        1,
        [(0, 0.5, "Redmond")],
        schema=pa.schema([("__rowMarker__", pa.int32()), ("Id", pa.float32()), ("EmployeeLocation", pa.string())]),
    )
    zone.write(
        2,
        [(1, 0.1, "Bellevue")],
        schema=pa.schema([("__rowMarker__", pa.int32()), ("Id", pa.float64()), ("EmployeeLocation", pa.string())]),
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, zone.spec, day(1))
    assert str(raised.value) == (
        f"{zone.table} {day(1)}: landing-zone key column 'id' has type float in"
        f" {landing.file_name(1)} and double in {landing.file_name(2)}; a float key and a"
        " double key are different values"
    )
    assert not spark.catalog.tableExists(zone.table)


def test_key_change_is_a_delete_of_the_old_key_and_an_insert_of_the_new(spark, zone):
    zone.write(1, [(0, "E0001", "Bellevue")])
    merge.merge_date(spark, zone.spec, day(1))
    # Delete rows need only the key: this file's delete carries NULL for the location.
    zone.write(2, [(2, "E0001", None), (0, "E0002", "Bellevue")])
    result = merge.merge_date(spark, zone.spec, day(2))
    assert (result.counts["deleted"], result.counts["new"], result.counts["anomalies"]) == (1, 1, 0)
    assert table_rows(spark, zone.table) == [
        ("E0001", "Bellevue", "2024-01-01", "2024-01-02"),
        ("E0002", "Bellevue", "2024-01-02", OPEN),
    ]


def test_several_changes_of_a_key_in_one_day_collapse_in_file_then_row_order(spark, zone):
    zone.write(1, [(0, "A", "x"), (0, "B", "x"), (0, "C", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(
        2,
        [
            (2, "A", None),
            (0, "A", "x"),  # delete then re-insert with equal data: no change
            (0, "N", "y"),
            (2, "N", None),  # insert then delete: nothing
            (4, "B", "y"),
        ],
    )  # upsert ...
    zone.write(3, [(1, "B", "z"), (2, "C", None)])  # ... then, in the next file, update; delete C
    result = merge.merge_date(spark, zone.spec, day(2))
    assert {
        k: result.counts[k] for k in ("files", "source_rows", "input", "changed", "unchanged", "deleted", "anomalies")
    } == {"files": 2, "source_rows": 7, "input": 4, "changed": 1, "unchanged": 1, "deleted": 1, "anomalies": 0}
    assert table_rows(spark, zone.table) == [
        ("A", "x", "2024-01-01", OPEN),
        ("B", "x", "2024-01-01", "2024-01-02"),
        ("B", "z", "2024-01-02", OPEN),
        ("C", "x", "2024-01-01", "2024-01-02"),
    ]


def test_ignore_null_updates_keeps_what_a_null_leaves_out_until_a_delete(spark, tmp_path, unique_name):
    """A NULL in an update keeps the open value, or the value the key's previous change of the day
    left; after a delete, and in an insert, NULLs stay NULL."""
    zone = LandingZone(tmp_path, unique_name, key_columns=("id",), ignore_null_updates=True)
    files = pa.schema(
        [("__rowMarker__", pa.int32()), ("id", pa.string()), ("name", pa.string()), ("city", pa.string())]
    )
    zone.write(1, [(0, "A", "ann", "Oslo"), (0, "B", "bob", "Rome"), (0, "C", "cid", "Nice")], schema=files)
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(
        2,
        [
            (1, "A", None, "Lima"),  # name kept
            (1, "B", None, None),  # changes nothing
            (2, "C", None, None),
            (0, "C", None, "Bergen"),  # deleted, then inserted: its NULL name stays
            (0, "D", "dan", None),
            (1, "D", None, "Oslo"),  # keeps the name its insert gave it that day
        ],
        schema=files,
    )
    result = merge.merge_date(spark, zone.spec, day(2))
    assert {k: result.counts[k] for k in ("changed", "unchanged", "new", "deleted", "anomalies")} == {
        "changed": 2,
        "unchanged": 1,
        "new": 1,
        "deleted": 0,
        "anomalies": 0,
    }
    assert table_rows(spark, zone.table) == [
        ("A", "ann", "Lima", "2024-01-02", OPEN),
        ("A", "ann", "Oslo", "2024-01-01", "2024-01-02"),
        ("B", "bob", "Rome", "2024-01-01", OPEN),
        ("C", None, "Bergen", "2024-01-02", OPEN),
        ("C", "cid", "Nice", "2024-01-01", "2024-01-02"),
        ("D", "dan", "Oslo", "2024-01-02", OPEN),
    ]


def test_updated_at_keeps_every_change_as_a_version_in_its_order_across_files(spark, tmp_path, unique_name):
    """source.updated_at: the day's changes of a key are versions in updated_at order, whatever file
    they came in; a delete ends the version at its own time and, with new_record, opens its tombstone
    then; with ignore_null_updates a NULL keeps the previous change's value. A change without its
    time is refused."""
    options = {"updated_at": "ts", "hard_deletes": "new_record", "ignore_null_updates": True}
    zone = LandingZone(tmp_path, unique_name, key_columns=("id",), **options)
    files = TIMED
    zone.write(1, [(0, "A", "Oslo", at(1, 1)), (0, "B", "Rome", at(1, 2))], schema=files)
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "A", "Lima", at(2, 10)), (2, "B", None, at(2, 9)), (1, "A", None, at(2, 11))], schema=files)
    # earlier than the file before's changes: A's; B's, whose NULL city keeps its open version's
    zone.write(3, [(1, "A", "Nice", at(2, 8)), (1, "B", None, at(2, 7))], schema=files)
    result = merge.merge_date(spark, zone.spec, day(2))
    counts = ("source_rows", "changed", "deleted", "tombstones", "versions_within_day", "closed", "open_after")
    assert [result.counts[k] for k in counts] == [5, 1, 1, 1, 3, 5, 2]
    d1, d2, end = day(1).isoformat(), day(2).isoformat(), dt.datetime(9999, 12, 31)
    assert table_rows(spark, zone.table) == [
        ("A", "Lima", at(2, 10), at(2, 10), at(2, 11), False, d2, d2),
        ("A", "Lima", at(2, 11), at(2, 11), end, False, d2, OPEN),  # its NULL city: Lima, from the change before
        ("A", "Nice", at(2, 8), at(2, 8), at(2, 10), False, d2, d2),
        ("A", "Oslo", at(1, 1), at(1, 1), at(2, 8), False, d1, d2),
        ("B", "Rome", at(1, 2), at(1, 2), at(2, 7), False, d1, d2),
        ("B", "Rome", at(2, 7), at(2, 7), at(2, 9), False, d2, d2),
        ("B", "Rome", at(2, 7), at(2, 9), end, True, d2, OPEN),  # the tombstone, from the delete's time
    ]
    history = table_rows(spark, zone.table)
    assert replay.rerun(spark, zone.spec, day(1)).counts["dates"] == 2  # from the kept copies: the same
    assert table_rows(spark, zone.table) == history
    zone.write(4, [(2, "A")], schema=pa.schema([("__rowMarker__", pa.int32()), ("id", pa.string())]))  # no ts
    with pytest.raises(InputError, match=r"NULL in updated_at column 'ts'"):
        merge.merge_date(spark, zone.spec, day(3))


def test_a_late_change_file_is_put_in_place_in_the_keys_history_and_a_rerun_keeps_it(spark, tmp_path, unique_name):
    """source.updated_at: a file delivered late holds changes older than their keys' latest
    versions. One inside a closed version splits it (the late version in that version's
    partition, begin = end = its end day); one before a key's first version goes in the day's own
    partition. Only those partitions are written; a rerun of the day gives the same history."""
    zone = LandingZone(tmp_path, unique_name, key_columns=("id",), updated_at="ts")
    files = TIMED
    zone.write(1, [(0, "A", "Oslo", at(1, 1)), (0, "B", "Rome", at(1, 2))], schema=files)
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "A", "Lima", at(2, 10))], schema=files)
    merge.merge_date(spark, zone.spec, day(2))
    zone.write(3, [(1, "A", "Nice", at(1, 5)), (1, "B", "Pisa", at(1, 1))], schema=files)  # delivered late
    result = merge.merge_date(spark, zone.spec, day(3))
    assert (result.counts["late_changes"], result.counts["partitions_rewritten"]) == (2, 1)
    d1, d2, d3, end = day(1).isoformat(), day(2).isoformat(), day(3).isoformat(), dt.datetime(9999, 12, 31)
    expected = [
        ("A", "Lima", at(2, 10), at(2, 10), end, d2, OPEN),
        ("A", "Nice", at(1, 5), at(1, 5), at(2, 10), d2, d2),  # splits Oslo, in its partition
        ("A", "Oslo", at(1, 1), at(1, 1), at(1, 5), d1, d2),
        ("B", "Pisa", at(1, 1), at(1, 1), at(1, 2), d3, d3),  # before B's first version: the day's partition
        ("B", "Rome", at(1, 2), at(1, 2), end, d1, OPEN),
    ]
    assert table_rows(spark, zone.table) == expected
    replay.rerun(spark, zone.spec, day(3))  # from the kept copy of file 3
    assert table_rows(spark, zone.table) == expected


def test_consumed_range_is_committed_and_kept_for_a_rerun(spark, zone):
    zone.write(1, [(0, "A", "x")])
    zone.write(2, [(0, "B", "x")])
    merge.merge_date(spark, zone.spec, day(1))  # consumes 1..2, the highest present
    st = state.read_state(spark, zone.spec)
    record = st.commits["2024-01-01"].landing
    assert (record["first"], record["last"], record["files"]) == (1, 2, 2)
    kept = record["kept"]
    assert sorted(fs.name_of(f.path) for f in fs.list_files(kept) if not is_hidden(fs.name_of(f.path))) == [
        landing.file_name(1),
        landing.file_name(2),
    ]

    empty = merge.merge_date(spark, zone.spec, day(2))  # nothing new: a day without change
    assert (empty.counts["files"], empty.counts["input"]) == (0, 0)
    assert state.read_state(spark, zone.spec).commits["2024-01-02"].landing["last"] == 2

    # The landing zone is cleaned (the service keeps the last file); a rerun reads the kept copy.
    (zone.folder / landing.file_name(1)).unlink()
    again = merge.merge_date(spark, zone.spec, day(1))
    assert again.action == "noop" and "same input" in again.summary()
    st = state.read_state(spark, zone.spec)
    located = locate.locate(spark, resolve_keys(spark, zone.spec), st, day(1))
    assert located.landing.kept == kept and located.fingerprint == st.commits["2024-01-01"].fingerprint
    assert [fs.name_of(p) for p in located.paths] == [landing.file_name(1), landing.file_name(2)]

    # vacuum never removes a copy that a commit names
    later = vacuum.vacuum(
        spark, resolve_keys(spark, zone.spec), retention_days=0, now=dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    )
    assert all("zipper_landing" not in r["directory"] for r in later["removed"])
    assert fs.exists(kept)

    zone.write(4, [(0, "C", "x")])  # 3 is missing
    before = state_of(spark, zone)
    with pytest.raises(
        InputError,
        match=r"numbering has a gap after 00000000000000000002.parquet: missing 00000000000000000003.parquet",
    ):
        merge.merge_date(spark, zone.spec, day(3))
    assert state_of(spark, zone) == before


def test_a_reset_zone_is_refused_and_a_touched_file_is_not(spark, tmp_path, unique_name):
    zone = LandingZone(tmp_path, unique_name)
    zone.write(1, [(0, "A", "x")])
    zone.write(2, [(0, "B", "x")])
    merge.merge_date(spark, zone.spec, day(1))  # consumes 1..2
    consumed_size = (zone.folder / landing.file_name(1)).stat().st_size

    # only touched (a copy of the zone, a backup restore): same size, newer time; the next date goes on
    later = (zone.folder / landing.file_name(2)).stat().st_mtime + 60
    os.utime(zone.folder / landing.file_name(1), (later, later))
    assert merge.merge_date(spark, zone.spec, day(2)).counts["files"] == 0

    # the producer started over: file 1 written again with other contents
    zone.write(1, [(0, "A", "a much longer location than before"), (0, "Z", "y")])
    os.utime(zone.folder / landing.file_name(1), (later + 60, later + 60))
    new_size = (zone.folder / landing.file_name(1)).stat().st_size
    before = state_of(spark, zone)
    with pytest.raises(
        InputError,
        match=(
            rf"landing zone .*Employees: 00000000000000000001.parquet was written again after it was consumed"
            rf" \({new_size} bytes now; the table consumed it on 2024-01-01 with {consumed_size} bytes\): the zone"
            rf" was reset or rewritten; nothing was changed"
        ),
    ) as refused:
        merge.merge_date(spark, zone.spec, day(3))
    assert (refused.value.table, refused.value.ds) == (zone.table, "2024-01-03")
    assert state_of(spark, zone) == before

    # the producer started over in a cleaned folder: its files end before the last one consumed
    for n in (1, 2):
        (zone.folder / landing.file_name(n)).unlink()
    zone.write(1, [(0, "A", "x")])
    with pytest.raises(
        InputError,
        match=r"ends at 00000000000000000001.parquet, but the table has consumed files"
        r" up to 00000000000000000002.parquet: the zone was reset",
    ):
        merge.merge_date(spark, zone.spec, day(3))
    assert state_of(spark, zone) == before


def test_key_columns_must_match_and_cannot_change(spark, tmp_path, unique_name):
    zone = LandingZone(tmp_path, unique_name)
    zone.write(1, [(0, "A", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.set_keys(["EmployeeID", "EmployeeLocation"])
    zone.write(2, [(0, "B", "x")])
    before = state_of(spark, zone)
    with pytest.raises(
        InputError,
        match=r"keyColumns \['employeeid', 'employeelocation'\] differ from the table's keys \['employeeid'\]",
    ):
        merge.merge_date(spark, zone.spec, day(2))
    assert state_of(spark, zone) == before

    other = LandingZone(tmp_path / "other", unique_name + "_b")
    spec = other.spec.with_keys(["employeelocation"])
    other.write(1, [(0, "A", "x")])
    with pytest.raises(
        InputError, match=r"keyColumns \['employeeid'\] differ from the spec's keys \['employeelocation'\]"
    ):
        merge.merge_date(spark, spec, day(1))


def test_anomalies_are_applied_and_counted_or_fail_with_on_anomaly_error(spark, tmp_path, unique_name):
    zone = LandingZone(tmp_path, unique_name)
    zone.write(1, [(0, "A", "x"), (0, "B", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(
        2,
        [
            (0, "A", "y"),  # insert of an open key: applied as an upsert
            (1, "U", "u"),  # update of a key that is not open: applied as an upsert
            (2, "D", None),  # delete of a key that is not open: ignored
            (0, "B", "x"),
            (0, "B", "z"),
        ],
    )  # a second insert the same day: applied as an upsert
    spec = zone.spec.model_copy(update={"source": zone.spec.source.model_copy(update={"on_anomaly": "error"})})
    before = state_of(spark, zone)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, spec, day(2))
    assert "(on_anomaly: error): 1 insert of a key that is open: B" in str(err.value)  # within the day first
    assert state_of(spark, zone) == before

    result = merge.merge_date(spark, zone.spec, day(2))
    assert {
        k: result.counts[k]
        for k in (
            "anomalies",
            "inserts_of_open_keys",
            "updates_of_absent_keys",
            "deletes_of_absent_keys",
            "new",
            "changed",
        )
    } == {
        "anomalies": 5,
        "inserts_of_open_keys": 3,
        "updates_of_absent_keys": 1,
        "deletes_of_absent_keys": 1,
        "new": 1,
        "changed": 2,
    }
    assert (
        "5 anomalies (3 inserts of keys that are open, 1 update of a key that is not open,"
        " 1 delete of a key that is not open)"
    ) in result.summary()
    assert [r for r in table_rows(spark, zone.table) if r[-1] == OPEN] == [
        ("A", "y", "2024-01-02", OPEN),
        ("B", "z", "2024-01-02", OPEN),
        ("U", "u", "2024-01-02", OPEN),
    ]

    # one of a kind is said in the singular, in the error and in the summary
    zone.write(3, [(1, "V", "v")])
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, spec, day(3))
    assert str(err.value).endswith("(on_anomaly: error): 1 update of a key that is not open: V"), str(err.value)
    assert "1 anomaly (1 update of a key that is not open)" in merge.merge_date(spark, zone.spec, day(3)).summary()


def test_new_record_keeps_a_tombstone_until_the_key_comes_back(spark, tmp_path, unique_name):
    """hard_deletes: new_record: a delete (key only) closes the version and opens a tombstone with its
    last values; an insert of the tombstoned key is no anomaly and opens a new version even with the
    same values; a delete of a tombstone is a delete of a key that is not open."""
    zone = LandingZone(tmp_path, unique_name, hard_deletes="new_record", on_anomaly="error")
    zone.write(1, [(0, "A", "x"), (0, "B", "x"), (0, "C", "x")])
    merge.merge_date(spark, zone.spec, day(1))  # creates the table, with its deleted column
    zone.write(2, [(2, "A", None), (2, "B", None), (1, "C", "y"), (2, "C", None), (0, "C", "z")])
    second = merge.merge_date(spark, zone.spec, day(2))
    assert [second.counts[k] for k in ("deleted", "tombstones", "changed", "closed", "open_after")] == [2, 2, 1, 3, 3]
    assert "2 deleted (2 tombstones)" in second.summary()
    zone.write(3, [(0, "A", "x")])  # back, as it was: an insert, no anomaly
    third = merge.merge_date(spark, zone.spec, day(3))
    assert [third.counts[k] for k in ("anomalies", "new", "changed", "tombstones", "closed")] == [0, 0, 1, 0, 1]
    zone.write(4, [(2, "B", None)])  # a delete of a tombstone
    with pytest.raises(InputError, match="1 delete of a key that is not open: B"):
        merge.merge_date(spark, zone.spec, day(4))
    warned = zone.spec.model_copy(update={"source": zone.spec.source.model_copy(update={"on_anomaly": "warn"})})
    zone.write(5, [(2, "A", None), (2, "A", None), (4, "B", "w")])  # deleted, then again; B back by an upsert
    fourth = merge.merge_date(spark, warned, day(4))
    assert [fourth.counts[k] for k in ("deletes_of_absent_keys", "deleted", "tombstones", "changed")] == [2, 1, 1, 1]
    d1, d2, d3, d4 = (day(n).isoformat() for n in range(1, 5))
    assert [f.name for f in spark.table(zone.table).schema][-3:] == ["is_deleted", "begin_dt", "end_dt"]
    assert table_rows(spark, zone.table) == [
        ("A", "x", False, d1, d2),
        ("A", "x", False, d3, d4),
        ("A", "x", True, d2, d3),
        ("A", "x", True, d4, OPEN),
        ("B", "w", False, d4, OPEN),
        ("B", "x", False, d1, d2),
        ("B", "x", True, d2, d4),
        ("C", "x", False, d1, d2),
        ("C", "z", False, d2, OPEN),
    ]


def test_bad_change_files_fail_naming_the_file(spark, zone):
    zone.write(1, [(0, "A", "x"), (0, "B", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    before = state_of(spark, zone)
    keys_only = pa.schema([("__rowMarker__", pa.int32()), ("EmployeeID", pa.string())])

    zone.write(2, [(0, "C", "x"), (3, "A", "y")])
    with pytest.raises(
        InputError,
        match=r"__rowMarker__ values other than 0 insert, 1 update, 2 delete, 4 upsert: 3 in 00000000000000000002.parquet row 2",
    ):
        merge.merge_date(spark, zone.spec, day(2))
    text_marker = pa.schema(
        [("__rowMarker__", pa.string()), ("EmployeeID", pa.string()), ("EmployeeLocation", pa.string())]
    )
    zone.write(2, [("0", "C", "x"), ("X", "A", "y")], text_marker)
    with pytest.raises(
        InputError, match=r"__rowMarker__ values other than .*: X in 00000000000000000002.parquet row 2"
    ):
        merge.merge_date(spark, zone.spec, day(2))
    zone.write(2, [(2, "A"), (1, "B")], keys_only)
    with pytest.raises(
        InputError,
        match=r"file 00000000000000000002.parquet has update or upsert rows .* lacks columns \['employeelocation'\]",
    ):
        merge.merge_date(spark, zone.spec, day(2))
    zone.write(
        2,
        [(0, "A", 7)],
        pa.schema([("__rowMarker__", pa.int32()), ("EmployeeID", pa.string()), ("EmployeeLocation", pa.int64())]),
    )
    with pytest.raises(InputError, match="column 'employeelocation' has type bigint, the table has string"):
        merge.merge_date(spark, zone.spec, day(2))
    assert state_of(spark, zone) == before

    # deletes need only the key; a file without __rowMarker__ is all inserts; a new column is added
    zone.write(2, [(2, "A")], keys_only)
    zone.write(
        3,
        [("C", "x", 3)],
        pa.schema([("EmployeeID", pa.string()), ("EmployeeLocation", pa.string()), ("Floor", pa.int32())]),
    )
    result = merge.merge_date(spark, zone.spec, day(2))
    assert (result.counts["deleted"], result.counts["new"], result.counts["columns_added"]) == (1, 1, ["floor int"])
    assert table_rows(spark, zone.table) == [
        ("A", "x", "2024-01-01", None, "2024-01-02"),
        ("B", "x", "2024-01-01", None, OPEN),
        ("C", "x", "2024-01-02", 3, OPEN),
    ]
    shutil.rmtree(zone.folder)
    with pytest.raises(InputError, match="landing zone not found"):
        merge.merge_date(spark, zone.spec, day(3))


def test_a_change_file_that_is_not_parquet_is_named_in_the_zone(spark, zone):
    """The merge reads its kept copy of the consumed files; the message names the zone's file."""
    zone.write(1, [(0, "A", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    (zone.folder / "00000000000000000002.parquet").write_text("not parquet")
    with pytest.raises(
        InputError, match=rf"cannot read landing-zone file 00000000000000000002\.parquet of {zone.folder}: "
    ):
        merge.merge_date(spark, zone.spec, day(2))


def test_an_empty_change_file_is_named_in_the_zone_as_likely_unfinished_and_may_be_tried_again(spark, zone):
    """A change file of 0 bytes was refused as unreadable, as the plain inputs' once were: it is
    most likely one its writer is still at work on (or died writing). If its writer died, the
    advice is to write it again, not to delete it (as it was): that leaves a gap in the numbering."""
    zone.write(1, [(0, "A", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    before = state_of(spark, zone)
    (zone.folder / landing.file_name(2)).write_bytes(b"")
    with pytest.raises(MissingInputError) as err:
        merge.merge_date(spark, zone.spec, day(2))
    assert str(err.value) == (
        f"{zone.table} {day(2)}: landing zone {zone.folder}: file 00000000000000000002.parquet"
        " is empty (0 bytes), which no Parquet file is: it is likely still being written, or"
        " its writer died; merge once it is complete (if its writer died, write it again;"
        " deleting it leaves a gap in the numbering, which the merge refuses)"
    )
    (zone.folder / landing.file_name(2)).unlink()  # deleted, as that advice said
    zone.write(3, [(1, "A", "z")])
    with pytest.raises(
        MissingInputError,
        match="numbering has a gap after 00000000000000000001.parquet: missing 00000000000000000002.parquet",
    ):
        merge.merge_date(spark, zone.spec, day(2))
    (zone.folder / landing.file_name(3)).unlink()
    (zone.folder / landing.file_name(2)).write_bytes(b"")
    assert not err.value.final  # another try, once the writer has finished, may pass
    assert state_of(spark, zone) == before
    zone.write(2, [(1, "A", "y")])  # the writer finished
    assert merge.merge_date(spark, zone.spec, day(2)).counts["changed"] == 1


def test_a_change_file_spark_cannot_type_is_named_without_java_names(spark, zone):
    """pyarrow reads the footer, Spark refuses a nanosecond timestamp: one line, Spark's words without its codes."""
    zone.write(1, [(0, "A", "x")])
    merge.merge_date(spark, zone.spec, day(1))
    nanos = pa.schema([*EMPLOYEES, ("ChangedAt", pa.timestamp("ns"))])
    table = pa.Table.from_pylist(
        [{"__rowMarker__": 1, "EmployeeID": "B", "EmployeeLocation": "y", "ChangedAt": dt.datetime(2024, 1, 2)}],
        schema=nanos,
    )
    pq.write_table(table, zone.folder / landing.file_name(2), version="2.6", coerce_timestamps=None)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, zone.spec, day(2))
    message = str(err.value)
    assert message.startswith(
        f"{zone.table} {day(2)}: cannot read landing-zone file 00000000000000000002.parquet of {zone.folder}: "
    ), message
    assert message.endswith(": Illegal Parquet type: INT64 (TIMESTAMP(NANOS,false))"), (
        message
    )  # no error class, SQLSTATE
