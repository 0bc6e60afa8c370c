"""`zipper correct`: erase keys from every version, fix values in past versions, delete versions,
each published in one metastore transaction with its record in the commit log."""

from __future__ import annotations

import json
import os

import pytest

from tests.support import TableFixture, day, table_rows
from zipper.core import faults
from zipper.core.errors import InputError, StateError
from zipper.inputs.modes import mode_of
from zipper.jobs import apply, correct, merge, rebuild, replay
from zipper.jobs.context import Run
from zipper.table import catalog, check, state, status
from zipper.table.state import read_state

OPEN = "9999-12-31"
BASE = day(0).isoformat()


def request(kind: str, **options) -> correct.Request:
    return correct.Request(kind=kind, reason=options.pop("reason", "ticket 42"), by="tester", **options)


@pytest.fixture(scope="module")
def people_made(spark, tmp_path_factory) -> tuple[TableFixture, state.TableState]:
    """Three days of changes: ann moves Oslo -> Paris -> Oslo; bob moves once; cy arrives on day 2.
    Merged once for the module; each test starts from this state (`people`)."""
    t = TableFixture(tmp_path_factory.mktemp("people"), f"people_{os.getpid()}")
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    increments = {
        1: [(1, "ann", "Paris")],
        2: [(2, "bob", "Lyon"), (3, "cy", "Nice")],
        3: [(1, "ann", "Oslo")],
    }
    for n, rows in increments.items():
        t.write_increment(spark, day(n), rows)
        merge.merge_date(spark, t.spec, day(n))
    return t, read_state(spark, t.spec)


@pytest.fixture
def people(spark, people_made) -> TableFixture:
    """The module's table as the merges left it: a correction writes fresh directories and never
    changes the ones it supersedes, so pointing the partitions back at them undoes it."""
    t, made = people_made
    now = read_state(spark, t.spec)
    kept = {p.end for p in made.closed}
    catalog.repoint(spark, t.spec, [made.open_partition, *made.closed], expected_run=None)
    catalog.drop_partitions(spark, t.spec, [p.end for p in now.closed + now.pending if p.end not in kept])
    return t


def versions(spark, t: TableFixture) -> list[tuple]:
    return table_rows(spark, t.table)


BEFORE = [
    (1, "ann", "Oslo", BASE, day(1).isoformat()),
    (1, "ann", "Oslo", day(3).isoformat(), OPEN),
    (1, "ann", "Paris", day(1).isoformat(), day(3).isoformat()),
    (2, "bob", "Lyon", day(2).isoformat(), OPEN),
    (2, "bob", "Rome", BASE, day(2).isoformat()),
    (3, "cy", "Nice", day(2).isoformat(), OPEN),
]


def locations(spark, t: TableFixture) -> dict[str, str]:
    st = read_state(spark, t.spec)
    return {p.end: p.location for p in [st.open_partition, *st.closed]}


def test_the_fixture_table_is_as_the_merges_made_it(spark, people):
    assert versions(spark, people) == BEFORE


def test_an_erasure_removes_every_version_of_the_key_and_records_only_a_salted_hash(spark, people):
    before = locations(spark, people)
    result = correct.correct(spark, people.spec, request("erase", erase_keys=("id=2",)))
    assert result.action == "correct"
    assert result.counts["removed"] == 2 and result.counts["partitions"] == 2
    assert versions(spark, people) == [row for row in BEFORE if row[0] != 2]
    after = locations(spark, people)
    # the partitions that held bob were rewritten; ann's partitions were not
    assert {end for end in before if before[end] != after[end]} == {OPEN, day(2).isoformat()}
    st = read_state(spark, people.spec)
    [record] = st.corrections
    assert (record.kind, record.keys, record.reason, record.by) == ("erase", 1, "ticket 42", "tester")
    assert record.hashes and record.salt
    every_param = json.dumps([p.params for p in [st.open_partition, *st.closed]])
    assert "bob" not in every_param and '"id": 2' not in every_param
    hashes = {r.key_hash for r in spark.read.parquet(record.hashes).collect()}
    assert len(hashes) == 1 and all(len(h) == 64 for h in hashes)
    assert check.run_checks(spark, people.spec)["ok"]
    listed = status.report(st, people.spec)["corrections"]
    assert [(c["kind"], c["reason"], c["counts"]["removed"]) for c in listed] == [("erase", "ticket 42", 2)]


def test_a_keys_file_erases_many_keys_and_one_not_of_the_key_type_is_refused(spark, people, tmp_path):
    keys = tmp_path / "keys.csv"
    keys.write_text("id,why\n1,gdpr\n3,gdpr\n")
    correct.correct(spark, people.spec, request("erase", keys_file=str(keys)))
    assert versions(spark, people) == [row for row in BEFORE if row[0] == 2]

    keys.write_text("id\nseven\n")
    with pytest.raises(
        InputError, match=r"--keys-file .*keys.csv: keys that are not of the key columns' types: id='seven'"
    ):
        correct.correct(spark, people.spec, request("erase", keys_file=str(keys)))


def test_a_fix_that_makes_consecutive_versions_equal_makes_them_one(spark, people):
    """ann was never in Paris: fixed, her three versions are equal and become one, as daily merges
    would have made them."""
    before = locations(spark, people)
    result = correct.correct(
        spark, people.spec, request("set", assignments=("city=Oslo",), where="id = 1 AND city = 'Paris'")
    )
    assert (result.counts["changed"], result.counts["coalesced"]) == (1, 2)
    assert versions(spark, people) == [
        (1, "ann", "Oslo", BASE, OPEN),
        *[row for row in BEFORE if row[0] != 1],
    ]
    after = locations(spark, people)
    assert {end for end in before if before[end] != after[end]} == {OPEN, day(1).isoformat(), day(3).isoformat()}
    assert check.run_checks(spark, people.spec)["ok"]
    [record] = read_state(spark, people.spec).corrections
    assert record.where == "`city` = 'Paris' AND `id` = 1" or "Paris" in record.where
    assert record.assignments == {"city": "Oslo"}


def test_a_fix_within_dates_changes_only_the_versions_valid_then_and_never_opens_one(spark, people):
    correct.correct(
        spark,
        people.spec,
        request("set", assignments=("name=Bob",), where="id = 2", first=day(0), last=day(1)),
    )
    assert versions(spark, people) == sorted(
        [row for row in BEFORE if row[0] != 2]
        + [(2, "bob", "Lyon", day(2).isoformat(), OPEN), (2, "Bob", "Rome", BASE, day(2).isoformat())]
    )


def test_a_delete_removes_the_matching_versions_and_leaves_a_gap(spark, people):
    correct.correct(spark, people.spec, request("delete", where="city = 'Paris'"))
    assert versions(spark, people) == [row for row in BEFORE if row[2] != "Paris"]
    assert check.run_checks(spark, people.spec)["ok"]


def test_a_dry_run_shows_the_matches_and_changes_nothing(spark, people):
    st = read_state(spark, people.spec)
    lines: list[str] = []
    result = correct.correct(
        spark, people.spec, request("delete", where="city IN ('Rome', 'Lyon')", dry_run=True), progress=lines.append
    )
    assert result.counts == {"matched": 2, "partitions": 2, "dry_run": True}
    assert lines[0].endswith("2 versions matched in 2 partitions; nothing was written")
    assert sorted(lines[1:3]) == [f"  end_dt={day(2)}: 1 version", f"  end_dt={OPEN}: 1 version"]
    assert len(lines) == 5 and all("bob" in line for line in lines[3:])
    assert read_state(spark, people.spec).open_partition == st.open_partition
    assert versions(spark, people) == BEFORE


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"where": "city = 'Tokyo'"}, "matches no version of the table; nothing was changed"),
        ({"where": "town = 'Oslo'"}, "town"),
        ({"where": "id = 'abc'"}, "id = 'abc' (bigint)"),
        ({"where": "id = 1", "assignments": ("id=5",)}, "a key column or the begin/end dates cannot be set"),
        ({"where": "id = 1", "assignments": ("city=Oslo",)}, None),
    ],
)
def test_a_correction_that_cannot_apply_is_one_clear_line_and_changes_nothing(spark, people, options, message):
    st = read_state(spark, people.spec)
    kind = "set" if "assignments" in options else "delete"
    if message is None:  # ann's open version is in Oslo already: the fix changes nothing
        options["where"] = "id = 1 AND city = 'Oslo' AND end_dt = '9999-12-31'"
        message = "already hold those values; nothing was changed"
    with pytest.raises(InputError) as raised:
        correct.correct(spark, people.spec, request(kind, **options))
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert read_state(spark, people.spec).open_partition == st.open_partition
    assert versions(spark, people) == BEFORE


def test_a_merge_that_read_the_table_before_a_correction_publishes_nothing(spark, people):
    stale = read_state(spark, people.spec)
    people.write_increment(spark, day(4), [(2, "bob", "Oslo")])
    correct.correct(spark, people.spec, request("erase", erase_keys=("id=3",)))
    located = mode_of(people.spec).locate(spark, people.spec, stale, day(4))
    with pytest.raises(catalog.ConcurrentChange):
        apply.apply_date(Run(spark, people.spec, stale), day(4), located)
    assert versions(spark, people) == [row for row in BEFORE if row[0] != 3]
    merge.merge_date(spark, people.spec, day(4))  # the retry plans from the corrected table
    assert (2, "bob", "Oslo", day(4).isoformat(), OPEN) in versions(spark, people)
    assert 3 not in {row[0] for row in versions(spark, people)}


@pytest.mark.parametrize("step", faults.CORRECT_STEPS)
def test_a_crash_at_each_step_leaves_the_old_or_the_new_table(spark, people, step):
    erased = [row for row in BEFORE if row[0] != 2]
    with faults.crash_at(step), pytest.raises(faults.SimulatedCrash):
        correct.correct(spark, people.spec, request("erase", erase_keys=("id=2",)))
    published = step == "after_correct_publish"
    assert versions(spark, people) == (erased if published else BEFORE)
    assert len(read_state(spark, people.spec).corrections) == int(published)
    if not published:  # the same command, run again, converges
        correct.correct(spark, people.spec, request("erase", erase_keys=("id=2",)))
        assert versions(spark, people) == erased
    assert check.run_checks(spark, people.spec)["ok"]
    assert state.read_state(spark, people.spec).corrections[-1].kind == "erase"


def test_an_erased_key_stays_out_of_reruns_and_rebuilds_and_comes_back_only_as_new_data(spark, people):
    """The inputs of day 0 (the base) and day 2 still hold bob: neither a rerun nor a rebuild brings
    him back. A later date's input that sends him again is new data."""
    correct.correct(spark, people.spec, request("erase", erase_keys=("id=2",)))
    erased = [row for row in BEFORE if row[0] != 2]
    replay.rerun(spark, people.spec, day(1))  # the restore to day 0 expects the open rows less bob's
    assert versions(spark, people) == erased
    rebuild.rebuild(spark, people.spec)
    assert versions(spark, people) == erased
    people.write_increment(spark, day(4), [(2, "bob", "Oslo")])
    merge.merge_date(spark, people.spec, day(4))
    assert versions(spark, people) == sorted(erased + [(2, "bob", "Oslo", day(4).isoformat(), OPEN)])
    assert check.run_checks(spark, people.spec)["ok"]


def test_a_rerun_or_rebuild_that_would_undo_a_value_fix_is_refused_until_told_to_undo_it(spark, people):
    correct.correct(spark, people.spec, request("set", assignments=("city=Milan",), where="city = 'Rome'"))
    fixed = versions(spark, people)
    assert (2, "bob", "Milan", BASE, day(2).isoformat()) in fixed
    [record] = read_state(spark, people.spec).corrections
    assert record.touched_last == day(1).isoformat()  # bob's fixed version was valid up to day 1

    for run in (
        lambda **o: replay.rerun(spark, people.spec, day(1), **o),
        lambda **o: rebuild.rebuild(spark, people.spec, **o),
    ):
        with pytest.raises(StateError) as refused:
            run()
        line = str(refused.value)
        assert f"correction {record.run_id} (set city=Milan where" in line and "--undo-corrections" in line
        assert "zipper correct" in line and "--set city=Milan" in line and "nothing was changed" in line
        assert versions(spark, people) == fixed

    replay.rerun(spark, people.spec, day(2))  # replays only versions after the fix's: not in its way
    assert versions(spark, people) == fixed

    replay.rerun(spark, people.spec, day(1), undo_corrections=True)
    # the version valid before day 1 is restored from the table, fix included; day 2's input closes it
    assert versions(spark, people) == fixed
    [record] = read_state(spark, people.spec).corrections
    assert record.undone_by
    rebuild.rebuild(spark, people.spec)  # undone already: nothing in the way; every version from the inputs
    assert versions(spark, people) == BEFORE
