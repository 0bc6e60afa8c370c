"""Dry runs of reruns and rebuilds (`preview.on_copy`): the job runs on a copy of the table's
metastore entry and is compared with the table; the table's rows, partitions, commits and files
stay as they were, and the copy is gone afterwards. What the dry run says would change is what the
real run then changes."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from tests.jobs.test_rerun import DAYS, build, model_counts, model_rows
from tests.support import SharedTable, TableFixture, day, table_rows
from zipper.core.errors import InputError
from zipper.core.paths import local_path
from zipper.jobs import merge
from zipper.jobs.handle import ZipperTable
from zipper.table import catalog, clone, state, vacuum

CHANGED = {**DAYS, 2: [(1, "ann", "Tromso"), (5, "eve", None)]}


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """The table of test_rerun's base and days, built once: each test gets a copy of it."""
    t = TableFixture(tmp_path_factory.mktemp("dry_run"), f"dry_{os.getpid()}")
    build(spark, t)
    return SharedTable(spark, t)


@pytest.fixture
def t(built, tmp_path):
    with built.copy(tmp_path) as copy:
        yield copy


def _seen(spark, t) -> tuple:
    """Everything a dry run must leave as it was: rows, partitions with their parameters, the
    table's properties, the files under its location and its partitions' (a copy's partitions
    point at another table's directories), and the database's tables."""
    st = state.read_state(spark, t.spec)
    partitions = catalog.list_partitions(spark, t.spec)
    files = sorted(
        {
            os.path.join(folder, name)
            for top in [st.location, *(p.location for p in partitions)]
            for folder, dirs, names in os.walk(local_path(top))
            for name in dirs + names
        }
    )
    return (
        table_rows(spark, t.table),
        [(p.end, p.location, p.params) for p in partitions],
        catalog.table_properties(spark, t.spec),
        files,
        sorted(catalog.tables_named(spark, t.spec.database, "*")),
    )


def _versions(rows: list[tuple], key: int) -> list[tuple]:
    """One key's versions as text, as a dry run's sample shows them (id, name, city, begin, end)."""
    return sorted(tuple("NULL" if v is None else str(v) for v in row) for row in rows if row[0] == key)


def _shown(entry: dict, side: str) -> list[tuple]:
    return sorted(tuple(v.values()) for v in entry[side])


def test_a_dry_run_rerun_shows_what_the_rerun_then_does_and_changes_nothing(spark, t):
    t.write_increment(spark, day(2), CHANGED[2])  # day 2's input changed since it was merged
    before = _seen(spark, t)
    lines = []
    result = ZipperTable(spark, t.spec).rerun(day(2), progress=lines.append, dry_run=True)

    assert _seen(spark, t) == before  # rows, partitions, properties, files, no copy left
    assert lines[0].startswith(f"{t.table}: dry run, on a copy of the table's metastore entry")
    assert lines[1].startswith(f"{t.table}: restored to 2024-01-01: 4 open rows, 3 history partitions")
    assert all(clone.SUFFIX not in line for line in lines[1:]), lines  # the copy is not named again
    assert result.table == t.table and result.message.startswith("dry run: replayed 2024-01-02..2024-01-04")
    counts = {r.ds: {k: v for k, v in r.counts.items() if k not in ("dry_run", "guard")} for r in result.replayed}
    expected = {d: c for d, c in model_counts(t, CHANGED).items() if d >= day(2).isoformat()}
    assert counts == expected  # what the rerun would commit, date by date
    assert all(r.counts["dry_run"] and r.counts["guard"] == "passes" for r in result.replayed)
    assert result.counts["guard"] == "passes"

    now, then = table_rows(spark, t.table), model_rows(t, CHANGED)
    differing = sorted(k for k in {r[0] for r in now + then} if _versions(now, k) != _versions(then, k))
    sample = result.counts["sample"]
    assert [int(s["key"]["id"]) for s in sample] == differing
    ZipperTable(spark, t.spec).rerun(day(2))  # the real rerun: the table becomes what the dry run showed
    after = table_rows(spark, t.table)
    assert after == then
    for entry in sample:
        key = int(entry["key"]["id"])
        assert _shown(entry, "before") == _versions(now, key)
        assert _shown(entry, "after") == _versions(after, key)


def test_a_dry_run_rebuild_shows_what_the_rebuild_then_does_and_changes_nothing(spark, t):
    t.write_increment(spark, day(3), [(2, "bob", "Lyon"), (4, "dan", "Nice"), (3, "cid", "Bergen")])
    before = _seen(spark, t)
    result = ZipperTable(spark, t.spec).rebuild(dry_run=True)
    assert _seen(spark, t) == before
    assert result.counts["dry_run"] is True and result.counts["guard"] == ""  # a rebuild is not guarded
    assert [s["key"] for s in result.counts["sample"]] == [{"id": "3"}]
    ZipperTable(spark, t.spec).rebuild()
    assert _shown(result.counts["sample"][0], "after") == _versions(table_rows(spark, t.table), 3)


def test_a_dry_run_rerun_of_nothing_different_shows_no_key(spark, t):
    before = _seen(spark, t)
    result = ZipperTable(spark, t.spec).rerun(day(3), dry_run=True)
    assert result.counts["sample"] == [] and len(result.replayed) == 2
    assert _seen(spark, t) == before


def test_a_dry_run_that_fails_names_the_table_says_it_is_unchanged_and_leaves_no_copy(spark, t):
    t.write_increment(spark, day(3), [(2, "bob", "Lyon"), (2, "bob", "Nice")])  # a repeated key
    before = _seen(spark, t)
    with pytest.raises(InputError) as failed:
        ZipperTable(spark, t.spec).rerun(day(2), dry_run=True)
    said = str(failed.value)
    assert failed.value.table == t.table and clone.SUFFIX not in said, said
    assert said.endswith("this was a dry run: the table is not changed"), said
    assert "resumes it" not in said  # no replay is left pending on the table
    assert _seen(spark, t) == before


def test_a_dry_run_shows_the_guards_verdict_of_each_date_instead_of_stopping(spark, built, tmp_path):
    guard = {"max_fraction": 0.3, "max_median_multiple": 1.5, "min_rows": 0, "min_days": 3}
    with built.copy(tmp_path, guard=guard) as t:  # the guard's settings are read when a day runs
        t.write_increment(
            spark, day(4), [(1, "ann", "Lima"), (2, "bob", "Lima"), (3, "cid", "Lima"), (4, "dan", "Lima")]
        )
        result = ZipperTable(spark, t.spec).rerun(day(4), dry_run=True)
        assert result.replayed[0].counts["guard"].startswith("would refuse: the day closes, deletes or updates 4 of 4")
        assert result.counts["guard"].startswith("2024-01-04: would refuse: ")
        assert result.replayed[0].counts["changed"] == 4  # the date was replayed on the copy, not stopped


def test_a_copy_a_killed_dry_run_left_is_dropped_by_the_next_once_an_hour_old(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    build(spark, t, days={1: DAYS[1]})
    st = state.read_state(spark, t.spec)
    left = [clone.make(spark, t.spec, st, state.new_run_id()).table_name for _ in range(2)]
    assert sorted(catalog.tables_named(spark, t.spec.database, "*")) == sorted([t.spec.table_name, *left])
    now = dt.datetime.now(dt.UTC)
    assert clone.drop_leftovers(spark, t.spec, now=now + clone.LEFTOVER_AGE / 2) == []  # young: may be running
    assert sorted(clone.drop_leftovers(spark, t.spec, now=now + clone.LEFTOVER_AGE * 2)) == sorted(left)
    assert sorted(catalog.tables_named(spark, t.spec.database, "*")) == [t.spec.table_name]
    assert table_rows(spark, t.table) == model_rows(t, {1: DAYS[1]})  # the table and its files intact


def test_what_killed_dry_runs_left_is_cleared_alike_by_the_next_dry_run_and_by_vacuum(spark, t):
    """A merge's dry run and a rerun's leave the same thing when killed: a run directory named as a
    dry run's (a rerun's also a copy of the table's entry). The next dry run of either kind clears
    the ones an hour old; vacuum too, whatever the retention; a live run's directory waits for it."""
    st = state.read_state(spark, t.spec)
    now = dt.datetime.now(dt.UTC)
    hour_ago = now - clone.LEFTOVER_AGE

    def left(run_id: str) -> str:
        directory = state.run_dir(st, run_id)
        os.makedirs(f"{local_path(directory)}/zipper_slot=open")
        return local_path(directory)

    merge_left, live_left = left(state.new_run_id(hour_ago, dry_run=True)), left(state.new_run_id(hour_ago))
    t.write_increment(spark, day(5), [(5, "eve", "Rome")])
    assert merge.merge_date(spark, t.spec, day(5), dry_run=True).counts["dry_run"] is True
    assert not os.path.exists(merge_left) and os.path.exists(live_left)  # cleared by a merge's dry run
    rerun_id = state.new_run_id(now, dry_run=True)
    rerun_copy = clone.make(spark, t.spec, st, rerun_id).table_name  # a rerun's dry run killed just now
    assert rerun_copy in catalog.tables_named(spark, t.spec.database, "*")  # young: may be running
    later = now + clone.LEFTOVER_AGE * 2
    report = vacuum.vacuum(spark, t.spec, now=later)
    assert report["dry_run_copies"] == [rerun_copy]
    assert rerun_copy not in catalog.tables_named(spark, t.spec.database, "*")
    assert not os.path.exists(local_path(state.run_dir(st, rerun_id))) and os.path.exists(live_left)
    assert state.is_dry_run_id(rerun_id) and not state.is_dry_run_id(state.new_run_id())
