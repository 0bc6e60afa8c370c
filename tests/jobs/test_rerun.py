"""Reruns on a real Hive table: restore, serial replay, content-based merges of past dates,
crashes mid-replay, and the rebuild that all of them must equal."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.testing import assertDataFrameEqual

from tests.jobs.test_model import UPDATED, ValidityModel, ZipperModel, changed_at
from tests.support import SharedTable, TableFixture, assert_equals_a_rebuild, day, sorted_rows, table_rows
from zipper.core import faults
from zipper.core.errors import AuditError, InputError, StateError, ZipperError
from zipper.core.paths import local_path
from zipper.jobs import apply, merge, rebuild, replay
from zipper.jobs.handle import ZipperTable
from zipper.jobs.init import init_table
from zipper.jobs.result import RunResult
from zipper.table import catalog, check, inspect, state, vacuum
from zipper.table.catalog import Partition

OPEN = "9999-12-31"
BASE = [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)]
DAYS = {
    1: [(2, "bob", "Paris"), (4, "dan", "Oslo")],
    2: [(1, "ann", "Bergen")],
    3: [(2, "bob", "Lyon"), (4, "dan", "Nice"), (3, "cid", None)],
    4: [(3, "cid", "Oslo")],
}


def build(spark, t, days=DAYS, base=BASE):
    t.write_base(spark, base)
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows)
    for n in days:
        merge.merge_date(spark, t.spec, day(n))


def model_rows(t, days, base=BASE, tracked=None) -> list[tuple]:
    model = ZipperModel(t.spec.end_style, base, len(t.spec.keys), tracked)
    for n in sorted(days):
        model.merge(day(n), days[n])
    return model.rows()


def model_counts(t, days, base=BASE, tracked=None) -> dict[str, dict]:
    model = ZipperModel(t.spec.end_style, base, len(t.spec.keys), tracked)
    return {day(n).isoformat(): model.merge(day(n), days[n]) for n in sorted(days)}


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """A table of BASE and DAYS, built once: each test of it gets a copy (`t`)."""
    t = TableFixture(tmp_path_factory.mktemp("rerun"), f"rerun_{os.getpid()}")
    build(spark, t)
    return SharedTable(spark, t)


@pytest.fixture
def t(built, tmp_path):
    with built.copy(tmp_path) as copy:
        yield copy


@pytest.fixture(scope="module", params=["inputs", "in puts 100%"])  # Spark's message URL-encodes the path
def built_in_folder(request, spark, tmp_path_factory):
    """The same table with its inputs in a folder of that name."""
    t = TableFixture(tmp_path_factory.mktemp("rerun") / request.param, f"rerun_{os.getpid()}_{request.param_index}")
    build(spark, t)
    return SharedTable(spark, t)


@pytest.fixture
def t_in_folder(built_in_folder, tmp_path):
    with built_in_folder.copy(tmp_path) as copy:
        yield copy


def snapshot(spark, t):
    return (
        table_rows(spark, t.table),
        [(p.end, p.location, p.params.get(state.RUN_ID)) for p in catalog.list_partitions(spark, t.spec)],
    )


def assert_equals_what_a_rebuild_writes(spark, t):
    """The rebuild oracle, without publishing: the rows a rebuild would write are the table's."""
    assert sorted_rows(rebuild.rebuilt_rows(spark, t.spec)) == table_rows(spark, t.table)


def test_rerun_and_rebuild_of_a_table_whose_columns_are_not_identifiers(spark, tmp_path, unique_name):
    """The restore's SQL quoted its columns as identifiers: a rerun of a table with a column `a-b`
    (or `1st`, `名前`, which a day could add) failed with "not an identifier: 'a-b'"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = TableFixture(tmp_path, unique_name, base=False)
    for n, (city, extra) in enumerate([("Oslo", "x"), ("Rome", "x"), ("Rome", "y")], start=1):
        folder = t.increment_dir(day(n))
        folder.mkdir(parents=True)
        pq.write_table(
            pa.table({"id": pa.array([1], pa.int64()), "city": [city], "a-b": [extra], "名前": ["n"]}),
            folder / "part-0.parquet",
        )
        merge.merge_date(spark, t.spec, day(n))
    before = table_rows(spark, t.table)
    assert len(before) == 3
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == before
    assert_equals_a_rebuild(spark, t)


def test_a_rerun_and_a_rebuild_over_a_date_skipped_for_want_of_input_keep_it_skipped(spark, tmp_path, unique_name):
    """on_missing_input: skip. Day 2 has no input: its merge commits it without changes, and a rerun
    over it and a rebuild give the history the model gives without that day, the day still skipped."""
    t = TableFixture(tmp_path, unique_name, source={"on_missing_input": "skip"})
    days = {n: rows for n, rows in DAYS.items() if n != 2}
    t.write_base(spark, BASE)
    for n in DAYS:
        if n in days:
            t.write_increment(spark, day(n), days[n])
        merge.merge_date(spark, t.spec, day(n))
    assert [d for d, c in state.read_state(spark, t.spec).commits.items() if c.skipped] == ["2024-01-02"]
    assert table_rows(spark, t.table) == model_rows(t, days)
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == model_rows(t, days)
    assert state.read_state(spark, t.spec).commits["2024-01-02"].counts["skipped"] == "no input"
    assert_equals_a_rebuild(spark, t)


@pytest.mark.parametrize("end_style", ["exclusive", "inclusive"])
def test_rerun_restores_the_day_before_and_replays_every_later_date(spark, tmp_path, unique_name, end_style, request):
    if end_style == "exclusive":  # the module's table, whose ends are exclusive
        t = request.getfixturevalue("t")
    else:
        t = TableFixture(tmp_path, unique_name, end_style=end_style)
        build(spark, t)
    st = state.read_state(spark, t.spec)
    columns = catalog.data_columns(spark, t.spec)
    for n in (1, 3, 4):  # the restored open partition is the table's slice as of the day before
        expected = inspect.slice_as_of(spark, t.spec, day(n - 1)).drop("end_dt")
        assertDataFrameEqual(
            replay.restored_open_rows(spark, t.spec, st, day(n), columns), expected, checkRowOrder=False
        )

    changed = {**DAYS, 2: [(1, "ann", "Tromso"), (5, "eve", None)]}
    t.write_increment(spark, day(2), changed[2])
    lines = []
    result = replay.rerun(spark, t.spec, day(2), progress=lines.append)
    assert result.action == "rerun" and result.ds == "2024-01-02..2024-01-04"
    assert table_rows(spark, t.table) == model_rows(t, changed)
    assert lines[0].startswith(f"{t.table}: restored to 2024-01-01: 4 open rows, 3 history partitions")
    assert [line.split(":")[0] for line in lines[1:]] == [f"{t.table} {day(n)}" for n in (2, 3, 4)]
    assert "1 new, 1 changed" in lines[1]
    st = state.read_state(spark, t.spec)
    assert st.last_committed == day(4) and st.replay is None
    assert {d: c.counts for d, c in st.commits.items()} == model_counts(t, changed)
    assert merge.merge_date(spark, t.spec, day(2)).action == "noop"  # recorded inputs are the current ones
    assert_equals_what_a_rebuild_writes(spark, t)


def test_a_rerun_that_would_leave_later_dates_uncommitted_needs_uncommit_later(spark, t):
    changed = {**DAYS, 2: [(1, "ann", "Tromso")]}
    t.write_increment(spark, day(2), changed[2])
    before = snapshot(spark, t)
    with pytest.raises(
        StateError,
        match=r"--to 2024-01-03 is before the last committed date 2024-01-04: 2024-01-04"
        r" would no longer be committed .*pass --uncommit-later",
    ):
        replay.rerun(spark, t.spec, day(2), day(3))
    assert snapshot(spark, t) == before

    lines = []
    replay.rerun(spark, t.spec, day(2), day(3), progress=lines.append, uncommit_later=True)
    assert "the table will be at 2024-01-03: 2024-01-04 will no longer be committed" in lines[0]
    assert state.read_state(spark, t.spec).last_committed == day(3)
    assert table_rows(spark, t.table) == model_rows(t, {n: changed[n] for n in (1, 2, 3)})
    assert merge.merge_date(spark, t.spec, day(4)).action == "merge"  # merged again, as the message says
    assert table_rows(spark, t.table) == model_rows(t, changed)


def test_bad_inputs_and_a_failed_restore_audit_change_nothing(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    build(spark, t, {n: DAYS[n] for n in (1, 2)})
    t.write_increment(spark, day(2), [(1, "ann", "Tromso")])
    before = snapshot(spark, t)
    with pytest.raises(
        InputError, match=r"2024-01-03: increments missing for 2024-01-03, 2024-01-04 \(increment not"
    ) as missing:
        replay.rerun(spark, t.spec, day(1), day(4))
    assert not missing.value.final  # another try may find them
    t.write_increment(spark, day(3), [(4, "dan", "Nice"), (4, "dan", "Rome")])
    with pytest.raises(
        InputError,
        match=r"2024-01-03: increment .*ds=2024-01-03 has 1 key \['id'\] more than once \(2 rows\) in part-[^ ]*: 4;",
    ) as bad:
        replay.rerun(spark, t.spec, day(1), day(3))
    assert bad.value.final  # the same files fail the same way
    t.write_increment(spark, day(3), [(4, "dan", 7)], "id bigint, name string, city int")
    with pytest.raises(InputError, match="2024-01-03: increment .* column 'city' has type int") as bad:
        replay.rerun(spark, t.spec, day(2), day(3))
    assert bad.value.final
    with pytest.raises(StateError, match="merge the missing dates first: 2024-01-03"):
        replay.rerun(spark, t.spec, day(4))
    with pytest.raises(StateError, match="before the spec's start_date 2024-01-01"):
        replay.rerun(spark, t.spec, day(0))
    assert snapshot(spark, t) == before

    # The restore is audited against the commit record of the date it goes back to.
    st = state.read_state(spark, t.spec)
    closed = next(p for p in st.closed if p.params[state.DS] == "2024-01-02")
    commit = st.commits["2024-01-02"]
    tampered = dataclasses.replace(commit, counts={**commit.counts, "open_before": 99})
    catalog.repoint(spark, t.spec, [Partition(closed.end, closed.location, tampered.params())], expected_run=None)
    before = snapshot(spark, t)
    with pytest.raises(AuditError, match="restored open rows 4 != 99 open before the run of 2024-01-02"):
        replay.rerun(spark, t.spec, day(2))
    assert snapshot(spark, t) == before


def test_past_merges_replay_changed_inputs_and_later_clears_are_noops(spark, t):
    """What clearing dates in the Airflow UI does: a content check, then a replay or a no-op."""
    unchanged = merge.merge_date(spark, t.spec, day(2))
    assert (
        unchanged.action == "noop"
        and "2024-01-02..2024-01-04 were committed with the same input" in unchanged.summary()
    )

    changed = {**DAYS, 3: [(2, "bob", "Lyon"), (6, "fay", "Oslo")]}
    t.write_increment(spark, day(3), changed[3])
    lines = []
    result = merge.merge_date(spark, t.spec, day(2), progress=lines.append)  # clearing day 2 and all later ones
    assert result.action == "replay" and "replayed 2024-01-03..2024-01-04" in result.summary()
    assert result.counts == {**model_counts(t, changed)["2024-01-02"], "dates_replayed": 2}  # for the audit task
    assert "the input of 2024-01-03 differs" in lines[0] and "restored to 2024-01-02" in lines[1]
    assert [line.split(":")[0] for line in lines[2:]] == [f"{t.table} {day(3)}", f"{t.table} {day(4)}"]
    for n in (3, 4):
        assert merge.merge_date(spark, t.spec, day(n)).action == "noop"
    assert table_rows(spark, t.table) == model_rows(t, changed)

    cautious = t.with_options(on_past_date="error")
    t.write_increment(spark, day(4), [(3, "cid", "Rome")])
    before = snapshot(spark, t)
    with pytest.raises(
        StateError, match=f"on_past_date: error, so replay it explicitly: `zipper rerun {t.name} --from 2024-01-04`"
    ):
        merge.merge_date(spark, cautious.spec, day(3))
    assert snapshot(spark, t) == before


def test_a_replaying_merge_says_why_first_and_what_came_of_it_last(spark, t):
    """The last line repeated the first one's reason before saying what was replayed."""
    t.write_increment(spark, day(3), [(2, "bob", "Lyon"), (6, "fay", "Oslo")])
    lines = []
    result = merge.merge_date(spark, t.spec, day(2), progress=lines.append)
    assert lines[0] == (
        f"{t.table} 2024-01-02: table is at 2024-01-04 and the input of 2024-01-03 differs from what was committed"
    )
    assert re.fullmatch(
        re.escape(f"{t.table} 2024-01-02: replayed 2024-01-03..2024-01-04 (2 dates); table at 2024-01-04; ")
        + r"\d+\.\d s",
        result.summary(),
    ), result.summary()


def test_a_crash_mid_replay_leaves_a_consistent_table_and_the_same_command_resumes(spark, t):
    changed = {**DAYS, 2: [(1, "ann", "Tromso")], 4: [(3, "cid", "Nice"), (7, "gus", None)]}
    for n in (2, 4):
        t.write_increment(spark, day(n), changed[n])

    with faults.crash_at("after_replayed_date", occurrence=2), pytest.raises(faults.SimulatedCrash):
        replay.rerun(spark, t.spec, day(2))
    st = state.read_state(spark, t.spec)
    assert st.last_committed == day(3) and (st.replay.first, st.replay.last) == (day(2), day(4))
    assert inspect.status(spark, t.spec)["replay_interrupted"]["to"] == "2024-01-04"
    assert table_rows(spark, t.table) == model_rows(t, {n: changed[n] for n in (1, 2, 3)})

    lines = []
    replay.rerun(spark, t.spec, day(2), progress=lines.append)
    assert "resuming the interrupted replay of 2024-01-02..2024-01-04 (table at 2024-01-03)" in lines[0]
    assert [line.split(":")[0] for line in lines[1:]] == [f"{t.table} {day(4)}"]
    assert table_rows(spark, t.table) == model_rows(t, changed)
    assert state.read_state(spark, t.spec).replay is None

    # Killed between the restore's publish and its drop: empty partitions without a commit record.
    t.write_increment(spark, day(3), [(2, "bob", "Lyon")])
    changed[3] = [(2, "bob", "Lyon")]
    with faults.crash_at("after_restore_publish"), pytest.raises(faults.SimulatedCrash):
        replay.rerun(spark, t.spec, day(3))
    st = state.read_state(spark, t.spec)
    assert st.last_committed == day(2) and [p.end for p in st.pending] == ["2024-01-03", "2024-01-04"]
    assert table_rows(spark, t.table) == model_rows(t, {n: changed[n] for n in (1, 2)})

    # A merge whose own input is missing fails before it resumes the replay, and says so.
    with pytest.raises(
        InputError,
        match=r"2024-01-05: increment not found: .*; the interrupted replay of"
        r" 2024-01-03\.\.2024-01-04 was not resumed",
    ) as missing:
        merge.merge_date(spark, t.spec, day(5))
    assert not missing.value.final
    st = state.read_state(spark, t.spec)
    assert st.last_committed == day(2) and (st.replay.first, st.replay.last) == (day(3), day(4))
    assert table_rows(spark, t.table) == model_rows(t, {n: changed[n] for n in (1, 2)})

    # The next scheduled merge finishes the interrupted replay first, then merges its own date.
    t.write_increment(spark, day(5), [(1, "ann", "Oslo")])
    changed[5] = [(1, "ann", "Oslo")]
    lines = []
    result = merge.merge_date(spark, t.spec, day(5), progress=lines.append)
    assert "a replay of 2024-01-03..2024-01-04 was interrupted with the table at 2024-01-02" in lines[0]
    assert result.action == "merge" and result.ds == "2024-01-05"
    assert table_rows(spark, t.table) == model_rows(t, changed)
    assert_equals_what_a_rebuild_writes(spark, t)


def without_seconds(lines: list[str]) -> list[str]:
    return [re.sub(r"; \d+\.\d s$", "", line) for line in lines]


def merge_lines(t, days, dates) -> list[str]:
    """The progress lines of merging `dates`, with the counts the model gives (no seconds)."""
    counts = model_counts(t, days)
    return [
        without_seconds([RunResult(t.table, d.isoformat(), "merge", "", counts[d.isoformat()]).summary()])[0]
        for d in dates
    ]


def test_a_merge_that_resumes_an_interrupted_replay_says_so_once(spark, t):
    """The merge's first line says it finishes the interrupted replay; the replay's own note
    ('resuming the interrupted replay of ...') said it again. What the merge cannot know, an
    input changed since its date was replayed, is still said."""
    changed = {**DAYS, 2: [(1, "ann", "Tromso")], 5: [(1, "ann", "Oslo")]}
    for n in (2, 5):
        t.write_increment(spark, day(n), changed[n])
    with faults.crash_at("after_replayed_date", occurrence=2), pytest.raises(faults.SimulatedCrash):
        replay.rerun(spark, t.spec, day(2))
    lines = []
    assert merge.merge_date(spark, t.spec, day(5), progress=lines.append).action == "merge"
    assert without_seconds(lines) == [
        f"{t.table} 2024-01-05: a replay of 2024-01-02..2024-01-04 was interrupted with the table at 2024-01-03;"
        " finishing it first",
        *merge_lines(t, changed, [day(4)]),
    ]

    # interrupted again, and the input of a date it had replayed changed since
    changed |= {2: [(1, "ann", "Bergen")], 6: [(2, "bob", "Oslo")]}
    t.write_increment(spark, day(2), [(1, "ann", "Narvik")])
    with faults.crash_at("after_replayed_date"), pytest.raises(faults.SimulatedCrash):
        replay.rerun(spark, t.spec, day(2))
    for n in (2, 6):
        t.write_increment(spark, day(n), changed[n])
    lines = []
    assert merge.merge_date(spark, t.spec, day(6), progress=lines.append).action == "merge"
    assert without_seconds(lines) == [
        f"{t.table} 2024-01-06: a replay of 2024-01-02..2024-01-05 was interrupted with the table at 2024-01-02;"
        " finishing it first",
        f"{t.table}: the input of 2024-01-02 changed since it was replayed",
        f"{t.table}: restored to 2024-01-01: 4 open rows, 1 history partitions (2024-01-02..2024-01-02) dropped",
        *merge_lines(t, changed, [day(n) for n in (2, 3, 4, 5)]),
    ]
    assert table_rows(spark, t.table) == model_rows(t, changed)


def break_first_page(t, ds, column: int) -> None:
    """Overwrite the start of `column`'s first data page in the date's Parquet file: the footer
    stays readable, the column's values do not."""
    part = next(t.increment_dir(ds).glob("*.parquet"))
    page = pq.ParquetFile(part).metadata.row_group(0).column(column).data_page_offset
    data = bytearray(part.read_bytes())
    data[page : page + 16] = b"\xff" * 16
    part.write_bytes(bytes(data))


def test_a_replay_that_fails_for_another_cause_than_its_input_does_not_blame_the_input(spark, t, monkeypatch):
    """A warehouse that cannot be written (a full disk, say; not reproducible as root here, so
    the write's failure is raised in its place) is not the input's fault."""
    t.write_increment(spark, day(2), [(1, "ann", "Tromso")])
    apply_date = apply.apply_date

    def failing_on_day_3(run, ds, *args, **kwargs):
        if ds == day(3):
            raise RuntimeError("Mkdirs failed to create file:/warehouse/versions/x")
        return apply_date(run, ds, *args, **kwargs)

    monkeypatch.setattr(apply, "apply_date", failing_on_day_3)
    with pytest.raises(ZipperError) as err:
        replay.rerun(spark, t.spec, day(2))
    assert str(err.value).endswith(
        f"the table is at {day(2)}, the replay of {day(2)}..{day(4)} pending: fix the"
        f" cause, then `zipper rerun {t.spec.name} --from {day(2)}` (or the next merge)"
        " resumes it"
    )
    monkeypatch.setattr(apply, "apply_date", apply_date)
    assert replay.rerun(spark, t.spec, day(2)).ds.endswith(str(day(4)))


def test_a_file_spark_cannot_read_mid_replay_names_its_date_and_where_the_table_is(spark, t_in_folder):
    """The up-front check reads only the key columns of Parquet; a broken page of another column
    fails the replay at its date, after the restore: the message must say so."""
    t = t_in_folder
    t.write_increment(spark, day(2), [(1, "ann", "Tromso")])
    break_first_page(t, day(3), column=1)  # `name`, not the key
    with pytest.raises(ZipperError) as err:
        replay.rerun(spark, t.spec, day(2))
    message = str(err.value)
    assert message.startswith(f"{t.table} {day(3)}: cannot read file ") and f"ds={day(3)}/" in message, message
    assert f"{t.data}/" in message, message  # the folder's name as it is
    assert message.endswith(
        f"the table is at {day(2)}, the replay of {day(2)}..{day(4)} pending: fix the input,"
        f" then `zipper rerun {t.spec.name} --from {day(2)}` (or the next merge) resumes it"
    )
    assert state.read_state(spark, t.spec).last_committed == day(2)


def test_a_file_the_up_front_check_cannot_read_names_its_date_and_changes_nothing(spark, t_in_folder):
    t = t_in_folder
    before = table_rows(spark, t.table)
    break_first_page(t, day(3), column=0)  # the key, which the check reads
    with pytest.raises(ZipperError) as err:
        replay.rerun(spark, t.spec, day(2))
    message = str(err.value)
    assert message.startswith(f"{t.table} {day(3)}: cannot read file ") and f"{t.increment_dir(day(3))}/" in message, (
        message
    )
    assert message.endswith("; nothing was changed"), message
    assert table_rows(spark, t.table) == before


def test_untracked_columns_are_restored_as_they_were_before_the_date(spark, tmp_path, unique_name):
    """The open row holds the latest in-place update; the restore must not carry it back in time."""
    t = TableFixture(tmp_path, unique_name, track_columns=["city"])
    days = {1: [(1, "anna", "Oslo")], 2: [(1, "annie", "Oslo")], 3: [(1, "annie", "Rome")]}
    build(spark, t, days, base=[(1, "ann", "Oslo")])
    st = state.read_state(spark, t.spec)
    restored = replay.restored_open_rows(spark, t.spec, st, day(2), catalog.data_columns(spark, t.spec))
    assert [tuple(r) for r in restored.collect()] == [(1, "anna", "Oslo", "2023-12-31")]

    days[2] = []  # re-delivered without the rename
    t.write_increment(spark, day(2), days[2])
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == [
        (1, "anna", "Oslo", "2023-12-31", "2024-01-03"),
        (1, "annie", "Rome", "2024-01-03", OPEN),
    ]
    assert table_rows(spark, t.table) == model_rows(t, days, [(1, "ann", "Oslo")], tracked=(1,))
    assert_equals_a_rebuild(spark, t)

    t.write_increment(spark, day(1), [(1, "ana", "Oslo")])
    before = snapshot(spark, t)
    with pytest.raises(StateError, match=r"input of 2024-01-01 differs .* rerun from 2024-01-01 instead"):
        replay.rerun(spark, t.spec, day(3))
    assert snapshot(spark, t) == before


def test_untracked_updated_at_is_restored_from_the_open_rows_of_the_run_before(spark, tmp_path, unique_name):
    """With `source.updated_at` a rebuild cannot compute the state before a date, so the restore
    takes the untracked ts from the open rows the run of the date before wrote; once vacuum has
    removed them the rerun is refused, naming why; from the first date after the base, the base."""
    t = TableFixture(tmp_path, unique_name, source={"updated_at": "ts"}, track_columns=["name", "score"], **UPDATED)
    base = [(1, "ann", 1, changed_at(day(0), 0)), (2, "bob", 2, changed_at(day(0), 0))]
    days = {
        1: [(1, "ann", 1, changed_at(day(1), 5))],  # in place: only ts moves
        2: [(1, "ann", 1, changed_at(day(2), 5)), (2, "bob", 3, changed_at(day(2), 6))],
        3: [(2, "bob", 4, changed_at(day(3), 1))],
    }

    def modelled(days):
        model = ValidityModel(t.spec.end_style, base)
        for n in sorted(days):
            model.merge_versions(day(n), [(row, "upsert") for row in days[n]], deletes=False)
        return sorted_rows_of(model.rows())

    build(spark, t, days, base)
    assert table_rows(spark, t.table) == modelled(days)
    days[2] = days[2][1:]  # re-delivered without key 1's row: its ts goes back to day 1's
    t.write_increment(spark, day(2), days[2])
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == modelled(days)
    assert [r[3] for r in table_rows(spark, t.table) if r[0] == 1] == [changed_at(day(1), 5)]

    replay.rerun(spark, t.spec, day(1))  # from the base
    assert table_rows(spark, t.table) == modelled(days)

    # a rebuild replays every date on a copy of the table and publishes it once; its dry run shows it
    days[3] = [(2, "bob", 5, changed_at(day(3), 1))]
    t.write_increment(spark, day(3), days[3])
    preview = ZipperTable(spark, t.spec).rebuild(dry_run=True)
    assert [(k["key"], [v["score"] for v in k["after"]]) for k in preview.preview.sample] == [
        ({"id": "2"}, ["2", "3", "5"])
    ]
    assert table_rows(spark, t.table) != modelled(days)
    assert rebuild.rebuild(spark, t.spec).counts == {"open_after": 2, "closed": 2, "dates": 3}
    assert table_rows(spark, t.table) == modelled(days)
    assert not [n for n in spark.catalog.listTables(t.spec.database) if "__zipper_" in n.name]
    # re-delivered with a new column: the table takes the copy's column with its rows
    noted = [(2, "bob", 5, changed_at(day(3), 1), "vip")]
    t.write_increment(spark, day(3), noted, schema=UPDATED["schema"] + ", note string")
    rebuild.rebuild(spark, t.spec)
    assert "note" in dict(catalog.data_columns(spark, t.spec))
    assert [tuple(r) for r in spark.table(t.table).where("note IS NOT NULL").select("id", "note").collect()] == [
        (2, "vip")
    ]

    # once vacuum removed the open rows of day 2, a rerun from day 3 replays days 1..2 on a copy for them
    ts_of_1 = f"SELECT ts FROM {t.table} WHERE id = 1 AND valid_to > current_timestamp()"
    t.write_increment(
        spark, day(3), [(1, "ann", 1, changed_at(day(3), 2), None), *noted], schema=UPDATED["schema"] + ", note string"
    )
    replay.rerun(spark, t.spec, day(3))
    assert [r[0] for r in spark.sql(ts_of_1).collect()] == [changed_at(day(3), 2)]
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    assert vacuum.vacuum(spark, t.spec, retention_days=0, now=later)["removed"]
    t.write_increment(spark, day(3), noted, schema=UPDATED["schema"] + ", note string")
    said = []
    replay.rerun(spark, t.spec, day(3), progress=said.append)
    assert any("the open rows of 2024-01-02 are gone: replaying 2024-01-01..2024-01-02 on a copy" in s for s in said)
    assert [r[0] for r in spark.sql(ts_of_1).collect()] == [changed_at(day(1), 5)]
    assert not [n for n in spark.catalog.listTables(t.spec.database) if "__zipper_" in n.name]
    # that replay needs the inputs that were committed
    t.write_increment(spark, day(1), [(1, "ann", 2, changed_at(day(1), 5))])
    before = snapshot(spark, t)
    with pytest.raises(StateError, match=r"restoring it to 2024-01-02 replays the dates up to it from the base"):
        replay.rerun(spark, t.spec, day(3))
    assert snapshot(spark, t) == before


def sorted_rows_of(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r))


def test_track_columns_except_and_partial_updates_rerun_and_rebuild_as_merged(spark, tmp_path, unique_name):
    """Every column but `track_columns_except` (name) versions; a NULL keeps the value
    (`ignore_null_updates`). The rebuild, and a rerun whose restore rebuilds the open rows before
    its date from the inputs (name is updated in place), give the daily merges' history."""
    t = TableFixture(tmp_path, unique_name, source={"ignore_null_updates": True}, track_columns_except=["name"])
    base = [(1, "ann", "Oslo"), (2, "bob", None)]
    days = {
        1: [(1, None, "Lima"), (2, "bobby", None)],  # a new city; a new name in place, the NULL city stays NULL
        2: [(1, "anna", None), (3, None, "Rome")],  # name in place, city kept; a new key keeps its NULL
        3: [(2, None, "Lyon"), (1, None, None)],  # bobby moves; a NULL-only update changes nothing
    }

    def modelled(days):
        model = ZipperModel(t.spec.end_style, base, 1, tracked=(1,), ignore_nulls=True)
        return [model.merge(day(n), days[n]) for n in sorted(days)], model.rows()

    build(spark, t, days, base)
    counts, rows = modelled(days)
    assert table_rows(spark, t.table) == rows
    assert [r for r in rows if r[0] == 1] == [
        (1, "ann", "Oslo", "2023-12-31", "2024-01-01"),
        (1, "anna", "Lima", "2024-01-01", OPEN),
    ]
    committed = state.read_state(spark, t.spec).commits
    assert [committed[day(n).isoformat()].counts["unchanged"] for n in days] == [c["unchanged"] for c in counts]
    assert_equals_a_rebuild(spark, t)

    days[2] = [(1, None, "Nice"), (3, "cid", None)]  # re-delivered: key 1 keeps the name the restore gives it
    t.write_increment(spark, day(2), days[2])
    assert replay.rerun(spark, t.spec, day(2)).action == "rerun"
    assert table_rows(spark, t.table) == modelled(days)[1]
    assert_equals_a_rebuild(spark, t)


def test_rebuild_equals_the_incremental_table_and_later_merges_continue_it(spark, tmp_path, unique_name):
    shape = {"keys": ("tenant", "id"), "schema": "tenant string, id bigint, name string, city string"}
    t = TableFixture(tmp_path, unique_name, end_style="inclusive", track_columns=["city"], **shape)
    base = [("a", 1, "ann", "Oslo"), ("b", 1, "bob", None)]
    days = {
        1: [("a", 1, "Ann", "Oslo"), ("b", 2, "cid", "Rome")],
        2: [("a", 1, "Ann", "Nice"), ("b", 1, "bob", None)],
        3: [],
        4: [("a", 1, "Ann", "Oslo"), ("b", 2, "Cid", "Rome")],
    }
    build(spark, t, {n: days[n] for n in (1, 2, 3)}, base)
    t.write_increment(spark, day(4), days[4])

    fresh = TableFixture(
        tmp_path, unique_name + "_r", end_style="inclusive", track_columns=["city"], source=t.raw["source"], **shape
    )  # the same increments
    fresh.write_base(spark, base)
    with pytest.raises(StateError, match="table does not exist yet; give the last date"):
        rebuild.rebuild(spark, fresh.spec)
    with faults.crash_at("before_rebuild_publish"), pytest.raises(faults.SimulatedCrash):
        rebuild.rebuild(spark, fresh.spec, day(3))  # created, base loaded, partitions added: not published
    st = state.read_state(spark, fresh.spec)
    assert (
        st.last_committed == day(0)
        and len(st.pending) == 3
        and table_rows(spark, fresh.table)
        == [("a", 1, "ann", "Oslo", "2023-12-31", OPEN), ("b", 1, "bob", None, "2023-12-31", OPEN)]
    )
    result = rebuild.rebuild(spark, fresh.spec, day(3))
    assert "3 increments up to 2024-01-03: 3 open rows, 1 closed rows" in result.summary()
    assert table_rows(spark, fresh.table) == table_rows(spark, t.table)
    ours, theirs = state.read_state(spark, fresh.spec), state.read_state(spark, t.spec)
    assert {d: (c.counts, c.fingerprint) for d, c in ours.commits.items()} == {
        d: (c.counts, c.fingerprint) for d, c in theirs.commits.items()
    }
    for table in (t, fresh):
        merge.merge_date(spark, table.spec, day(4))
    assert table_rows(spark, fresh.table) == table_rows(spark, t.table)
    assert table_rows(spark, t.table) == model_rows(t, days, base, tracked=(1,))  # attrs (name, city)

    # Back to day 2 drops days 3 and 4: refused unless asked for, as for a rerun (it did so without a word)
    before = snapshot(spark, fresh)
    with pytest.raises(StateError) as refused:
        rebuild.rebuild(spark, fresh.spec, day(2))
    assert str(refused.value) == (
        f"{fresh.table} {day(2)}: --to {day(2)} is before the last committed date {day(4)}: {day(3)}, {day(4)} would"
        " no longer be committed (their history dropped, and their done runs would have to run again); pass"
        f" --uncommit-later to do that, or leave out --to to rebuild up to {day(4)}; nothing was changed"
    )
    assert snapshot(spark, fresh) == before
    # The later partitions go. Killed between the publish and their drop: empty, no commit record.
    with faults.crash_at("after_rebuild_publish"), pytest.raises(faults.SimulatedCrash):
        rebuild.rebuild(spark, fresh.spec, day(2), uncommit_later=True)
    st = state.read_state(spark, fresh.spec)
    assert st.last_committed == day(2) and [p.end for p in st.pending] == ["2024-01-02", "2024-01-03"]
    assert table_rows(spark, fresh.table) == model_rows(fresh, {n: days[n] for n in (1, 2)}, base, tracked=(1,))
    rebuild.rebuild(spark, fresh.spec, day(2))
    st = state.read_state(spark, fresh.spec)
    assert st.last_committed == day(2) and sorted(st.commits) == ["2024-01-01", "2024-01-02"] and not st.pending
    assert table_rows(spark, fresh.table) == model_rows(fresh, {n: days[n] for n in (1, 2)}, base, tracked=(1,))
    assert check.run_checks(spark, fresh.spec)["ok"]

    t.write_increment(spark, day(3), [("a", 9, "x", None), ("a", 9, "y", None)])
    before = snapshot(spark, fresh)
    with pytest.raises(
        InputError,
        match=r"2024-01-03: increment .* has 1 key \['tenant', 'id'\] more than once \(2 rows\) in .*: \(a, 9\)",
    ):
        rebuild.rebuild(spark, fresh.spec, day(4))
    assert snapshot(spark, fresh) == before


def test_a_rebuild_of_a_small_table_writes_one_file_per_partition_whatever_the_shuffle_partitions(
    spark, tmp_path, unique_name
):
    t = TableFixture(tmp_path, unique_name)
    build(spark, t)
    before = table_rows(spark, t.table)
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")  # Spark's default (the tests' session uses 4)
    try:
        rebuild.rebuild(spark, t.spec)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    files = {
        p.end: len(list(Path(local_path(p.location)).glob("*.parquet"))) for p in catalog.list_partitions(spark, t.spec)
    }
    assert files == {end: 1 for end in files} and len(files) == 1 + len(DAYS), files
    assert table_rows(spark, t.table) == before


def test_a_version_keeps_its_values_when_a_re_send_only_compares_equal_so_a_rerun_equals_a_rebuild(
    spark, tmp_path, unique_name
):
    """-0.0 equals 0.0 as Spark compares: re-sending it is no change, and the version keeps the
    0.0 it began with. Before, the open row took the re-sent -0.0, and a rerun that removed that
    re-send restored -0.0, a value only the discarded input had."""
    schema = "id bigint, name string, d double"
    t = TableFixture(tmp_path, unique_name, schema=schema)
    t.write_base(spark, [(1, "ann", 1.0)])
    init_table(spark, t.spec, day(0))
    days = {1: [(2, "bob", 0.0)], 2: [(2, "bob", -0.0), (1, "ann", 2.0)], 3: [(1, "ann", 3.0)], 4: [(2, "bob", 9.0)]}
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows)
        merge.merge_date(spark, t.spec, day(n))

    def bob():  # the text of d tells -0.0 from 0.0
        return sorted(
            tuple(r)
            for r in spark.table(t.table)
            .where("id = 2")
            .selectExpr("CAST(d AS STRING)", "begin_dt", "end_dt")
            .collect()
        )

    assert bob() == [("0.0", "2024-01-01", "2024-01-04"), ("9.0", "2024-01-04", OPEN)]
    assert bob() == sorted(
        tuple(r)
        for r in rebuild.rebuilt_rows(spark, t.spec)
        .where("id = 2")
        .selectExpr("CAST(d AS STRING)", "begin_dt", "end_dt")
        .collect()
    )
    t.write_increment(spark, day(2), [(1, "ann", 2.0)])  # the re-send of bob withdrawn
    replay.rerun(spark, t.spec, day(2))
    assert bob() == [("0.0", "2024-01-01", "2024-01-04"), ("9.0", "2024-01-04", OPEN)]
    assert_equals_what_a_rebuild_writes(spark, t)
