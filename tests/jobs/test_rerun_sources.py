"""Reruns of the source modes that are not plain upserts: deletes, full snapshots, landing-zone
change files (whose kept copies a rerun must read again, even after the landing zone was
cleaned and a crash interrupted the replay), and column changes under a rebuild."""

from __future__ import annotations

import collections
import os
import shutil

import pyarrow as pa
import pytest

from tests.inputs.test_landing import EMPLOYEES, LandingZone
from tests.support import SharedTable, TableFixture, assert_equals_a_rebuild, day, table_rows
from zipper.core import faults
from zipper.core.errors import InputError, StateError
from zipper.inputs import dated, modes, reader
from zipper.jobs import merge, rebuild, replay
from zipper.jobs.init import init_table
from zipper.jobs.keys import resolve_keys
from zipper.table import catalog, check, state, vacuum
from zipper.transforms import keychecks
from zipper.transforms.timelines import DS

CDC = "id bigint, name string, city string, sys_op int"
BASE = [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)]


def partitions(spark, t):
    return [(p.end, p.location) for p in catalog.list_partitions(spark, t.spec)]


def daily_table(spark, root, name, source, days, schema=None):
    """The oracle: a fresh table merged date by date from `days`."""
    t = TableFixture(root, name, source=source)
    t.write_base(spark, BASE)
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows, schema)
    for n in days:
        merge.merge_date(spark, t.spec, day(n))
    return t


CDC_DAYS = {
    1: [(1, "ann", "Bergen", 0), (2, "bob", "Rome", 1), (4, "dan", "Oslo", 0)],
    2: [(3, "cid", None, 1), (2, "bob", "Nice", 0)],
    3: [(4, "dan", "Oslo", 1), (1, "ann", "Lyon", 0)],
}


@pytest.fixture(scope="module")
def cdc_built(spark, tmp_path_factory):
    """The cdc table of CDC_DAYS, merged once: each test of it gets a copy (`cdc_daily`)."""
    t = daily_table(spark, tmp_path_factory.mktemp("cdc"), f"cdc_{os.getpid()}", {"mode": "cdc"}, CDC_DAYS, CDC)
    return SharedTable(spark, t)


@pytest.fixture
def cdc_daily(cdc_built, tmp_path):
    with cdc_built.copy(tmp_path) as copy:
        yield copy


SNAPSHOT_DAYS = {
    1: [(1, "ann", "Bergen"), (2, "bob", "Rome")],
    2: [(1, "ann", "Bergen"), (3, "cid", "Nice"), (4, "dan", "Oslo")],
    3: [(3, "cid", "Nice"), (4, "dan", "Paris")],
}


@pytest.mark.parametrize("mode", ["cdc", "snapshot", "snapshot_new_record"])
def test_a_changed_past_input_is_replayed_to_the_table_daily_runs_give(spark, tmp_path, unique_name, mode, request):
    """With tombstones (`new_record`): keys dropped, back, still missing, dropped by the changed date
    instead; and a rerun whose inputs did not change changes nothing (no tombstone twice)."""
    source, days, schema = (
        ({"mode": "cdc"}, CDC_DAYS, CDC) if mode == "cdc" else ({"mode": "snapshot"}, SNAPSHOT_DAYS, None)
    )
    if mode == "snapshot_new_record":
        source = {"mode": "snapshot", "hard_deletes": "new_record"}
    if mode == "cdc":
        t = request.getfixturevalue("cdc_daily")
    else:
        t = daily_table(spark, tmp_path / "live", unique_name, source, days, schema)
    changed = dict(days)
    changed[2] = (
        [(3, "cid", "Bern", 0), (2, "bob", "Rome", 1)]
        if mode == "cdc"
        else [(1, "ann", "Oslo"), (2, "bob", "Rome"), (4, "dan", "Oslo")]
    )
    t.write_increment(spark, day(2), changed[2], schema)

    result = merge.merge_date(spark, t.spec, day(2))  # what clearing day 2 in the UI runs
    assert result.action == "replay"
    oracle = daily_table(spark, tmp_path / "oracle", unique_name + "_o", source, changed, schema)
    assert table_rows(spark, t.table) == table_rows(spark, oracle.table)
    assert {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()} == {
        d: c.counts for d, c in state.read_state(spark, oracle.spec).commits.items()
    }
    assert state.read_state(spark, t.spec).replay is None
    assert check.run_checks(spark, t.spec)["ok"]
    if mode == "snapshot_new_record":
        rows = table_rows(spark, t.table)
        assert [r[:4] for r in rows if r[3] and r[5] == "9999-12-31"] == [
            (1, "ann", "Oslo", True),
            (2, "bob", "Rome", True),
        ]
        assert replay.rerun(spark, t.spec, day(1)).counts["dates"] == 3
        assert table_rows(spark, t.table) == rows
        # a spec that turns new_record off would read the tombstones as live rows: refused
        turned_off = TableFixture(tmp_path / "live", unique_name, source={"mode": "snapshot"})
        with pytest.raises(StateError, match=r"\['is_deleted'\] are zipper's own .* no longer names them"):
            merge.merge_date(spark, turned_off.spec, day(4))
        assert table_rows(spark, t.table) == rows


def test_a_cdc_rerun_reads_each_replayed_dates_input_once(spark, cdc_daily, tmp_path, unique_name, monkeypatch):
    """The rerun reads every date's input to check its operations before the restore; the merge
    of each date read it again (and checked the operations again) instead of taking that read."""
    t = cdc_daily
    changed = {**CDC_DAYS, 2: [(3, "cid", "Bern", 0), (2, "bob", "Rome", 1)]}
    t.write_increment(spark, day(2), changed[2], CDC)
    reads = collections.Counter()
    read = reader.read

    def counted(spark_, located, *args, **kwargs):
        reads[located.description] += 1
        return read(spark_, located, *args, **kwargs)

    monkeypatch.setattr(reader, "read", counted)
    assert replay.rerun(spark, t.spec, day(2)).counts["dates"] == 2
    assert reads == {str(t.increment_dir(day(n))): 1 for n in (2, 3)}
    monkeypatch.undo()
    oracle = daily_table(spark, tmp_path / "oracle", unique_name + "_o", {"mode": "cdc"}, changed, CDC)
    assert table_rows(spark, t.table) == table_rows(spark, oracle.table)


@pytest.mark.parametrize("mode", ["upsert", "snapshot"])
def test_an_upsert_or_snapshot_rerun_reads_and_checks_each_replayed_dates_input_once(
    spark, tmp_path, unique_name, monkeypatch, mode
):
    """The rerun reads every date's input to check the keys of all of them in one job before the
    restore; the merge of each date read the files again and checked its keys again."""
    t = daily_table(spark, tmp_path / "live", unique_name, {"mode": mode}, SNAPSHOT_DAYS)
    changed = {**SNAPSHOT_DAYS, 2: [(1, "ann", "Oslo"), (2, "bob", "Rome"), (4, "dan", "Oslo")]}
    t.write_increment(spark, day(2), changed[2])
    reads, key_checks = collections.Counter(), []
    read, key_offenders = reader.read, keychecks.key_offenders

    def counted(spark_, located, *args, **kwargs):
        reads[located.description] += 1
        return read(spark_, located, *args, **kwargs)

    def checked(rows, keys, *args, **kwargs):
        key_checks.append(list(rows.columns))
        return key_offenders(rows, keys, *args, **kwargs)

    monkeypatch.setattr(reader, "read", counted)
    monkeypatch.setattr(keychecks, "key_offenders", checked)
    assert replay.rerun(spark, t.spec, day(2)).counts["dates"] == 2
    assert reads == {str(t.increment_dir(day(n))): 1 for n in (2, 3)}
    assert len(key_checks) == 1 and DS in key_checks[0]  # the dates' keys together, up front
    monkeypatch.undo()
    oracle = daily_table(spark, tmp_path / "oracle", unique_name + "_o", {"mode": mode}, changed)
    assert table_rows(spark, t.table) == table_rows(spark, oracle.table)
    # the merges counted their input rows (and, for a snapshot, the unchanged ones) without their key check
    assert {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()} == {
        d: c.counts for d, c in state.read_state(spark, oracle.spec).commits.items()
    }


def test_a_replay_stopped_by_a_later_dates_bad_input_says_where_the_table_is(spark, cdc_daily):
    """cdc operations are checked for every date before the restore; what depends on the open
    rows (a delete whose columns do not match) only when its date's turn comes: a bad later date
    then stops the replay part way, and the error says the table's date and how to resume."""
    t = cdc_daily
    before = (table_rows(spark, t.table), partitions(spark, t))
    t.write_increment(spark, day(2), [(3, "cid", "Bern", 0)], CDC)
    t.write_increment(spark, day(3), [(4, "dan", "Oslo", 7)], CDC)  # 7: not an operation
    with pytest.raises(InputError, match=r"2024-01-03: .*sys_op values other than 0 .*: 7 in .*; nothing was changed$"):
        replay.rerun(spark, t.spec, day(2))
    assert (table_rows(spark, t.table), partitions(spark, t)) == before

    t.write_increment(spark, day(3), [(4, "dan", "Paris", 1)], CDC)  # dan is open in Oslo: not the row it deletes
    with pytest.raises(
        InputError,
        match=r"2024-01-03: .*; the table is at 2024-01-02,"
        r" the replay of 2024-01-02\.\.2024-01-03 pending: fix the input, then"
        r" `zipper rerun .* --from 2024-01-02`",
    ):
        replay.rerun(spark, t.spec, day(2))
    st = state.read_state(spark, t.spec)
    assert st.last_committed == day(2) and (st.replay.first, st.replay.last) == (day(2), day(3))


def test_a_cdc_rerun_refuses_a_later_dates_changed_column_type_before_it_changes_anything(spark, cdc_daily):
    """The check before the restore read a cdc input's operations only: a later date whose files
    all hold `city` as int (the table's is string) failed at its merge, after the restore and the
    earlier dates' merges. The types are compared up front, as the replayed dates change them: a
    column an earlier replayed date adds is that date's type for the later ones, and a safe
    widening still replays."""
    t = cdc_daily
    before = (table_rows(spark, t.table), partitions(spark, t))
    with_zip = "id bigint, name string, city string, zip int, sys_op int"
    t.write_increment(spark, day(2), [(3, "cid", "Bern", 3000, 0)], with_zip)  # adds zip int
    t.write_increment(spark, day(3), [(1, "ann", 69, 0)], "id bigint, name string, city int, sys_op int")
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(2))
    assert str(raised.value) == (
        f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} column 'city' has type int, the table has string; a"
        " column cannot change type (only int -> bigint and float -> double widen; a decimal input may have fewer"
        " digits); nothing was changed"
    )
    assert (table_rows(spark, t.table), partitions(spark, t)) == before
    assert state.read_state(spark, t.spec).replay is None

    # zip as day 2's replay adds it (int), not as the table has it now (not at all)
    t.write_increment(spark, day(3), [(1, "ann", "Lyon", "69000", 0)], with_zip.replace("zip int", "zip string"))
    with pytest.raises(
        InputError,
        match=rf"^{t.table} {day(3)}: .* column 'zip' has type string, the table has int;"
        r" .*; nothing was changed$",
    ):
        replay.rerun(spark, t.spec, day(2))
    assert (table_rows(spark, t.table), partitions(spark, t)) == before
    assert state.read_state(spark, t.spec).replay is None

    t.write_increment(spark, day(3), [(1, "ann", "Lyon", 69000, 0)], with_zip.replace("zip int", "zip bigint"))
    assert replay.rerun(spark, t.spec, day(2)).counts["dates"] == 2
    assert ("zip", "bigint") in [(f.name, f.dataType.simpleString()) for f in spark.table(t.table).schema]
    assert (1, "ann", "Lyon", day(3).isoformat(), 69000, "9999-12-31") in table_rows(spark, t.table)  # zip after begin


def test_cdc_rebuilds_in_one_pass_and_refuses_what_its_merges_refuse(spark, cdc_daily):
    """cdc without sequence_by in one pass: deletes, a key back after its delete, a delete of a key
    that is not there (counted). A delete whose values differ from the row it deletes, and an
    operation other than 0 and 1, fail the rebuild as they fail their date's merge; nothing changed."""
    t = cdc_daily
    t.write_increment(spark, day(4), [(3, "cid", "Bern", 0), (5, "eve", None, 1), (2, "bob", "Nice", 1)], CDC)
    assert merge.merge_date(spark, t.spec, day(4)).counts["deletes_of_absent_keys"] == 1
    assert_equals_a_rebuild(spark, t)
    before = table_rows(spark, t.table), partitions(spark, t)

    t.write_increment(spark, day(4), [(3, "cid", "Bern", 0), (5, "eve", None, 1), (2, "bob", "Rome", 1)], CDC)
    with pytest.raises(InputError) as raised:
        rebuild.rebuild(spark, t.spec)
    assert str(raised.value) == (
        f"{t.table} {day(4)}: increment {t.increment_dir(day(4))} has 1 delete row whose values differ from the open"
        " row (delete_match: all_columns); keys ['id']: 2; nothing was changed"
    )
    t.write_increment(spark, day(2), [(3, "cid", None, 2), (2, "bob", "Nice", 0)], CDC)
    with pytest.raises(InputError, match=rf"^{t.table} {day(2)}: increment .* has sys_op values other than 0"):
        rebuild.rebuild(spark, t.spec)
    assert (table_rows(spark, t.table), partitions(spark, t)) == before


def test_snapshots_rerun_and_rebuild_in_one_pass_with_tombstones_an_untracked_column_and_a_skipped_date(
    spark, tmp_path, unique_name
):
    """A year of snapshots is one pass: `zipper rebuild` of a snapshot table (tombstones, `name`
    updated in place, a date without a snapshot skipped) gives the rows and counts its merges
    gave, and a rerun restores the state its untracked column had from the same one pass."""
    t = TableFixture(
        tmp_path,
        unique_name,
        source={"mode": "snapshot", "hard_deletes": "new_record", "on_missing_input": "skip"},
        deleted_column="is_deleted",
        track_columns=["city"],
    )
    t.write_base(spark, BASE)
    snapshots = {
        1: [(1, "ANN", "Oslo"), (2, "bob", "Paris"), (4, "dan", None)],  # 1 updated in place, 3 dropped
        3: [(1, "ANN", "Oslo"), (3, "cid", None), (4, "Dan", None)],  # 2 dropped, 3 back; day 2 has none
        4: [(1, "ann", "Bergen"), (3, "cid", None)],  # 4 dropped
    }
    for n, rows in snapshots.items():
        t.write_increment(spark, day(n), rows)
    for n in range(1, 5):
        merge.merge_date(spark, t.spec, day(n))
    merged = table_rows(spark, t.table)
    assert (3, "cid", None, False, day(3).isoformat(), "9999-12-31") in merged  # back from its tombstone
    assert state.read_state(spark, t.spec).commits[day(2).isoformat()].skipped
    assert_equals_a_rebuild(spark, t)

    t.write_increment(spark, day(4), [(1, "ann", "Bergen"), (3, "cid", None), (4, "DAN", None)])
    replay.rerun(spark, t.spec, day(4))  # restores day 3's open rows (4 as "Dan") from the one pass
    assert (4, "DAN", None, False, day(1).isoformat(), "9999-12-31") in table_rows(spark, t.table)
    assert_equals_a_rebuild(spark, t)


def test_rebuild_across_an_added_column_equals_the_incremental_table(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, BASE)
    t.write_increment(spark, day(1), [(1, "ann", "Bergen")])
    t.write_increment(
        spark,
        day(2),
        [(2, "bob", "Rome", "a@x"), (4, "dan", "Oslo", None)],
        "id bigint, name string, city string, email string",
    )
    t.write_increment(spark, day(3), [(1, "ann", "Lyon", "ann@x")], "id bigint, name string, city string, email string")
    for n in (1, 2, 3):
        merge.merge_date(spark, t.spec, day(n))
    before = table_rows(spark, t.table)
    counts = {d: c.counts["open_after"] for d, c in state.read_state(spark, t.spec).commits.items()}
    rebuild.rebuild(spark, t.spec)
    assert table_rows(spark, t.table) == before
    assert {d: c.counts["open_after"] for d, c in state.read_state(spark, t.spec).commits.items()} == counts
    assert check.run_checks(spark, t.spec)["ok"]


def test_landing_zone_rerun_reads_the_kept_copies_after_the_zone_was_cleaned(spark, tmp_path, unique_name):
    zone = LandingZone(tmp_path, unique_name)
    zone.write(1, [(0, "E1", "Redmond"), (0, "E2", "Redmond")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "E1", "Bellevue"), (0, "E3", "Seattle")])
    merge.merge_date(spark, zone.spec, day(2))
    zone.write(3, [(2, "E2", None), (1, "E3", "Tacoma")])
    zone.write(4, [(0, "E4", "Redmond")])
    merge.merge_date(spark, zone.spec, day(3))  # consumes files 3 and 4
    before = table_rows(spark, zone.table)
    consumed = {d: c.landing["first"] for d, c in state.read_state(spark, zone.spec).commits.items()}
    for f in zone.folder.glob("*.parquet"):  # the landing zone is cleaned
        f.unlink()

    replay.rerun(spark, zone.spec, day(2))
    assert table_rows(spark, zone.table) == before
    assert {d: c.landing["first"] for d, c in state.read_state(spark, zone.spec).commits.items()} == consumed
    assert check.run_checks(spark, resolve_keys(spark, zone.spec))["ok"]


def test_landing_zone_rerun_with_an_untracked_column_restores_it_from_the_day_befores_open_rows(
    spark, tmp_path, unique_name
):
    """A landing zone's state before a date is not rebuilt from its files: the title (untracked)
    the open versions held then comes from the open rows the commit of the day before left."""
    titled = pa.schema([*EMPLOYEES, ("Title", pa.string())])
    zone = LandingZone(tmp_path, unique_name, spec_options={"track_columns": ["employeelocation"]})
    files = {
        1: [(0, "E1", "Redmond", "dev"), (0, "E2", "Redmond", "dev")],
        2: [(1, "E1", "Redmond", "lead")],  # in place
        3: [(1, "E1", "Seattle", "lead"), (1, "E2", "Redmond", "lead")],
    }
    for n, rows in files.items():  # a date consumes the files landed since the one before
        zone.write(n, rows, schema=titled)
        merge.merge_date(spark, zone.spec, day(n))
    before = table_rows(spark, zone.table)
    assert before == [
        ("E1", "Redmond", "lead", day(1).isoformat(), day(3).isoformat()),
        ("E1", "Seattle", "lead", day(3).isoformat(), "9999-12-31"),
        ("E2", "Redmond", "lead", day(1).isoformat(), "9999-12-31"),
    ]
    replay.rerun(spark, zone.spec, day(3))
    assert table_rows(spark, zone.table) == before


def test_landing_zone_replay_killed_mid_way_resumes_from_the_same_files(spark, tmp_path, unique_name):
    """After the restore the replayed dates have no commit record; the replay marker names the
    files each consumed, so a resumed replay does not swallow later files into the next date."""
    zone = LandingZone(tmp_path, unique_name)
    for n, rows in enumerate(
        [
            [(0, "E1", "Redmond"), (0, "E2", "Redmond")],
            [(1, "E1", "Bellevue"), (0, "E3", "Seattle")],
            [(2, "E2", None), (1, "E3", "Tacoma")],
        ],
        start=1,
    ):
        zone.write(n, rows)
        merge.merge_date(spark, zone.spec, day(n))
    before = table_rows(spark, zone.table)
    (zone.folder / "00000000000000000002.parquet").unlink()  # the zone is partly cleaned

    with faults.crash_at("after_replayed_date"), pytest.raises(faults.SimulatedCrash):
        replay.rerun(spark, zone.spec, day(2))
    st = state.read_state(spark, zone.spec)
    assert (
        st.last_committed == day(2) and st.replay is not None and set(st.replay.landing) == {"2024-01-02", "2024-01-03"}
    )
    zone.write(4, [(0, "E4", "Redmond")])  # a new file arrives meanwhile: it belongs to day 4
    vacuum.vacuum(spark, zone.spec, retention_days=0)  # keeps the copies the marker names

    replay.rerun(spark, zone.spec, day(2))
    assert table_rows(spark, zone.table) == before
    st = state.read_state(spark, zone.spec)
    assert st.replay is None and st.commits["2024-01-03"].landing["last"] == 3
    # a rebuild replays every date on a copy of the table, from the same kept files, published once
    landing = {d: c.landing for d, c in st.commits.items()}
    with faults.crash_at("before_rebuild_publish"), pytest.raises(faults.SimulatedCrash):
        rebuild.rebuild(spark, zone.spec)
    assert table_rows(spark, zone.table) == before and state.read_state(spark, zone.spec).open_run == st.open_run
    result = rebuild.rebuild(spark, zone.spec)
    assert result.message.startswith(f"rebuilt from the base of {day(0)} and 3 increments up to {day(3)}, replayed")
    assert table_rows(spark, zone.table) == before
    rebuilt = state.read_state(spark, zone.spec)
    assert [(d, c.action, c.landing["first"], c.landing["last"]) for d, c in sorted(rebuilt.commits.items())] == [
        (d, state.CommitAction.REPLAY, landing[d]["first"], landing[d]["last"]) for d in sorted(landing)
    ]
    assert not [t for t in spark.catalog.listTables(zone.spec.database) if "__zipper_" in t.name]  # no copy left
    assert merge.merge_date(spark, zone.spec, day(4)).counts["new"] == 1


def test_landing_zone_rerun_past_the_last_commit_refuses_a_missing_zone_and_changes_nothing(
    spark, tmp_path, unique_name
):
    """The dates it never consumed are read from the zone itself; without it the rerun stops
    before the restore, so the table keeps its dates and no replay is left pending."""
    zone = LandingZone(tmp_path, unique_name)
    zone.write(1, [(0, "E1", "Redmond"), (0, "E2", "Redmond")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "E1", "Bellevue"), (0, "E3", "Seattle")])
    merge.merge_date(spark, zone.spec, day(2))
    before = table_rows(spark, zone.table), partitions(spark, zone)
    shutil.rmtree(zone.folder)

    with pytest.raises(InputError, match=r"landing zone not found: .*Employees; nothing was changed"):
        replay.rerun(spark, zone.spec, day(2), day(3))
    assert (table_rows(spark, zone.table), partitions(spark, zone)) == before
    st = state.read_state(spark, zone.spec)
    assert st.last_committed == day(2) and st.replay is None


def test_the_dates_parquet_inputs_are_read_in_one_scan_each_row_tagged_with_the_date_of_its_file(
    spark, tmp_path, unique_name
):
    """A rebuild's increments of one schema are one scan, not one per date: each row takes the date
    of the file it comes from (in a folder whose name Spark's URIs escape), none is lost or read
    twice. A date whose columns differ (one it lacks) leaves every date to a scan of its own."""
    t = TableFixture(tmp_path, unique_name, data=tmp_path / "in puts")
    t.write_base(spark, BASE)
    days = {n: [(n, f"n{n}", "Oslo"), (10 + n, "x", None)] for n in (1, 2, 3)}
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows)
    init_table(spark, t.spec)
    columns = catalog.data_columns(spark, t.spec)

    def scanned():
        located = modes.locate_dates(spark, t.spec, [day(n) for n in days])
        read = {
            d: dated.read_checked(spark, t.spec, located[d], t.spec.source, columns, d, "increment") for d in located
        }
        return dated._in_one_scan(spark, t.spec, located, read)

    rows, dates = scanned()
    assert dates == {day(n) for n in days}
    expected = sorted((*r, day(n).isoformat()) for n, rs in days.items() for r in rs)
    assert sorted(tuple(r) for r in rows.select("id", "name", "city", DS).collect()) == expected

    t.write_increment(spark, day(2), [(2, "n2")], "id bigint, name string")  # city NULL: read on its own
    assert scanned() == (None, set())
