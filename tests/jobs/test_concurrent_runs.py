"""Two runs of one table at once (with an external metastore nothing serializes a rerun and a
scheduled merge): the run that publishes second finds the table changed since it read its
state and publishes nothing. Interleaved here by running the other run inside the first one's
last step before its publish."""

from __future__ import annotations

import contextlib
import os

import pytest

from tests.jobs.test_rerun import DAYS, build, model_rows, snapshot
from tests.support import SharedTable, TableFixture, day, table_rows
from zipper.core import faults
from zipper.core.errors import StateError
from zipper.jobs import merge, replay
from zipper.table import catalog, check, state

CHANGED_DAY_2 = [(1, "ann", "Tromso")]


@contextlib.contextmanager
def other_run_at(monkeypatch, step: str, other):
    """Run `other()` once, the first time this process reaches checkpoint `step`."""
    pending = [other]
    original = faults.checkpoint

    def checkpoint(name: str) -> None:
        if name == step and pending:
            pending.pop()()
        original(name)

    monkeypatch.setattr(faults, "checkpoint", checkpoint)
    yield
    assert not pending, f"the run never reached {step}"


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """The table of test_rerun at day 3, day 4's input waiting, built once: each test gets a copy
    (`table`), whose runs write their directories under the copy's own location."""
    t = TableFixture(tmp_path_factory.mktemp("concurrent"), f"concurrent_{os.getpid()}")
    build(spark, t, days={n: DAYS[n] for n in (1, 2, 3)})
    t.write_increment(spark, day(4), DAYS[4])
    return SharedTable(spark, t)


@pytest.fixture
def table(built, tmp_path):
    with built.copy(tmp_path) as copy:
        yield copy


def run_dirs(spark, t) -> set[str]:
    from zipper.core import fs

    return {d for d, _ in fs.list_dirs(state.versions_root(state.read_state(spark, t.spec)))}


def test_a_merge_that_another_merge_of_its_date_overtook_publishes_nothing(spark, table, monkeypatch):
    other = {}
    before = run_dirs(spark, table)
    with other_run_at(
        monkeypatch,
        "before_publish",
        lambda: other.update(result=merge.merge_date(spark, table.spec, day(4)), after=snapshot(spark, table)),
    ):
        with pytest.raises(catalog.ConcurrentChange) as err:
            merge.merge_date(spark, table.spec, day(4))

    assert str(err.value) == (
        f"{table.table} {day(4)}: another run ({other['result'].run_id}, table now at {day(4)}) published to the"
        " table while this one was running; nothing of this run was published. Run it again: it plans from the"
        " table as it is now (a date already committed is a no-op)"
    )
    assert isinstance(err.value, StateError)
    assert snapshot(spark, table) == other["after"]
    assert table_rows(spark, table.table) == model_rows(table, DAYS)
    # the overtaken run's files are removed: the only new run directory is the other run's
    assert {d.rstrip("/").rsplit("/", 1)[-1] for d in run_dirs(spark, table) - before} == {other["result"].run_id}
    assert merge.merge_date(spark, table.spec, day(4)).action == "noop"


def test_a_merge_overtaken_by_a_rerun_publishes_nothing_and_the_next_merge_applies(spark, table, monkeypatch):
    other = {}

    def on_call_fixes_day_2_and_reruns():
        table.write_increment(spark, day(2), CHANGED_DAY_2)
        other.update(result=replay.rerun(spark, table.spec, day(2)), after=snapshot(spark, table))

    with other_run_at(monkeypatch, "before_publish", on_call_fixes_day_2_and_reruns):
        with pytest.raises(catalog.ConcurrentChange, match=rf"table now at {day(3)}\) published"):
            merge.merge_date(spark, table.spec, day(4))

    fixed = {**{n: DAYS[n] for n in (1, 3)}, 2: CHANGED_DAY_2}
    assert snapshot(spark, table) == other["after"]
    assert table_rows(spark, table.table) == model_rows(table, fixed)  # not day 4 on top of the old day 2
    monkeypatch.undo()
    assert merge.merge_date(spark, table.spec, day(4)).action == "merge"
    assert table_rows(spark, table.table) == model_rows(table, {**fixed, 4: DAYS[4]})
    assert check.run_checks(spark, table.spec)["ok"]


def test_a_rerun_overtaken_by_a_merge_restores_nothing(spark, table, monkeypatch):
    other = {}
    with other_run_at(
        monkeypatch,
        "after_restore_write",
        lambda: other.update(result=merge.merge_date(spark, table.spec, day(4)), after=snapshot(spark, table)),
    ):
        with pytest.raises(catalog.ConcurrentChange, match=rf"^{table.table} {day(2)}: another run"):
            replay.rerun(spark, table.spec, day(2))

    assert snapshot(spark, table) == other["after"]
    assert table_rows(spark, table.table) == model_rows(table, DAYS)  # day 4, as the merge published it
    st = state.read_state(spark, table.spec)
    assert st.last_committed == day(4) and st.replay is None


def test_a_merge_overtaken_before_its_widening_leaves_the_column_type_alone(spark, table, monkeypatch):
    """A widening is applied just before the publish; an overtaken run must not apply it."""
    table.write_increment(spark, day(4), [(3, "cid", "Oslo", 1)], schema="id bigint, name string, city string, n int")
    table.write_increment(
        spark, day(5), [(1, "ann", "Oslo", 2**40)], schema="id bigint, name string, city string, n bigint"
    )
    merge.merge_date(spark, table.spec, day(4))  # adds n int
    with other_run_at(monkeypatch, "before_publish", lambda: replay.rerun(spark, table.spec, day(3))):
        with pytest.raises(catalog.ConcurrentChange):
            merge.merge_date(spark, table.spec, day(5))
    assert dict(catalog.data_columns(spark, table.spec))["n"] == "int"
    assert state.read_state(spark, table.spec).last_committed == day(4)
