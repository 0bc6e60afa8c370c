"""`zipper adopt`: a zipper table written by hand in Hive SQL (the article's design) taken over with
its history, committed through a date, continued by the next daily merge; a table whose rows are
not one chain of versions per key refused in one line naming the keys, nothing made."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.inputs.test_cdc import END, UPDATED, at
from tests.support import TableFixture, day, table_rows
from zipper.core.alter import AlterKind, AlterRequest
from zipper.core.errors import InputError, SpecError, StateError
from zipper.jobs import adopt, alter, merge, rebuild, replay
from zipper.table import check, inspect, state, vacuum

OPEN = "9999-12-31"
THROUGH = day(0)  # 2023-12-31: the next merge is day(1)


def legacy_table(spark, name: str, ddl: str, rows, table_name: str = "dim_user_zip") -> str:
    """A table as hand-written zipper SQL leaves it, in its own database."""
    table = f"legacy_{name}.{table_name}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS legacy_{name}")
    spark.createDataFrame(rows, ddl).write.format("parquet").saveAsTable(table)
    return table


ARTICLE_DDL = "user_id bigint, name string, phone string, start_date string, end_date string"


def articles_table(spark, tmp_path, name: str, rows, **options) -> tuple[str, TableFixture]:
    """The article's table of `rows` (inclusive ends, text dates, 9999-12-31 open) as written by
    hand, and a spec adopting it (`options` added)."""
    legacy = legacy_table(spark, name, ARTICLE_DDL, rows)
    adopted = {"table": legacy, "begin_column": "start_date", "end_column": "end_date", "end_style": "inclusive"}
    t = TableFixture(tmp_path, name, keys=("user_id",), schema="user_id bigint, name string, phone string")
    return legacy, t.with_options(adopt=adopted, keys=["user_id"], **options)


def test_the_articles_table_is_adopted_with_its_history_and_the_next_merge_continues_it(spark, tmp_path, unique_name):
    # the article's table: key 3 deleted on 12-08
    rows = [
        (1, "zhang", "136", "2023-12-01", "2023-12-01"),
        (1, "zhang", "137", "2023-12-02", "2023-12-09"),
        (1, "zhang", "147", "2023-12-10", "9999-12-31"),
        (2, "li", "150", "2023-12-05", "9999-12-31"),
        (3, "wang", "139", "2023-12-03", "2023-12-07"),
    ]
    legacy, t = articles_table(spark, tmp_path, unique_name, rows)

    # the hand-written table named as the spec's own: refused, the table as it was
    with pytest.raises(SpecError, match="adopt.table is the spec's own table"):
        adopt.adopt(spark, t.with_options(table=legacy).spec, THROUGH)
    other = legacy_table(spark, unique_name, ARTICLE_DDL, rows[:1], "other")  # a table zipper did not make
    with pytest.raises(StateError, match="table exists and was not created by zipper; refusing to change it"):
        adopt.adopt(spark, t.with_options(table=other).spec, THROUGH)
    assert spark.table(other).count() == 1
    dry = adopt.adopt(spark, t.spec, THROUGH, dry_run=True)
    assert dry.message == (
        f"dry run: would adopt 2 open rows, 3 closed rows in 3 history partitions from {legacy}; nothing was written"
    )
    assert not state.read_state(spark, t.spec).exists

    result = adopt.adopt(spark, t.spec, THROUGH)
    assert result.message.startswith(f"adopted 2 open rows, 3 closed rows in 3 history partitions from {legacy};")
    # zipper's form: exclusive ends (the spec's), a history partition per closing date
    assert table_rows(spark, t.table) == [
        (1, "zhang", "136", "2023-12-01", "2023-12-02"),
        (1, "zhang", "137", "2023-12-02", "2023-12-10"),
        (1, "zhang", "147", "2023-12-10", OPEN),
        (2, "li", "150", "2023-12-05", OPEN),
        (3, "wang", "139", "2023-12-03", "2023-12-08"),
    ]
    st = state.read_state(spark, t.spec)
    assert (st.init_ds, st.last_committed, st.adopted_from) == (THROUGH, THROUGH, legacy)
    assert sorted(st.commits) == ["2023-12-02", "2023-12-08", "2023-12-10"]
    assert {c.action for c in st.commits.values()} == {state.CommitAction.ADOPT}
    assert check.run_checks(spark, t.spec)["failed"] == []
    # a slice before the adoption date: the history is there
    as_of = inspect.slice_as_of(spark, t.spec, day(-26))  # 2023-12-05
    assert sorted((r.user_id, r.phone) for r in as_of.collect()) == [(1, "137"), (2, "150"), (3, "139")]

    # the next day's merge continues it; the adopted table is as it was
    t.write_increment(spark, day(1), [(2, "li", "151"), (4, "zhao", "188")])
    merge.merge_date(spark, t.spec, day(1))
    assert [r for r in table_rows(spark, t.table) if r[0] in (2, 4)] == [
        (2, "li", "150", "2023-12-05", day(1).isoformat()),
        (2, "li", "151", day(1).isoformat(), OPEN),
        (4, "zhao", "188", day(1).isoformat(), OPEN),
    ]
    assert sorted(tuple(r) for r in spark.table(legacy).collect()) == sorted(rows)
    # a rerun of that date restores the adopted state and replays it: the same table
    merged = table_rows(spark, t.table)
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == merged
    with pytest.raises(StateError, match="date is before the spec's start_date 2024-01-01"):
        replay.rerun(spark, t.spec, THROUGH)

    # what cannot be done on an adopted table says so in one line
    with pytest.raises(StateError, match=f"history up to {THROUGH} was adopted from {legacy}, and a rebuild"):
        rebuild.rebuild(spark, t.spec)
    with pytest.raises(StateError, match="the table exists already .* adopt makes a new table"):
        adopt.adopt(spark, t.spec, THROUGH)


def test_a_table_whose_rows_are_not_one_chain_per_key_is_refused_naming_the_keys(spark, tmp_path, unique_name):
    # exclusive ends, NULL for the open end, a whole copy per dt (the copy of THROUGH is adopted),
    # a deleted flag (key 2 deleted on day -1: its open version is its tombstone)
    ddl = "id bigint, city string, valid_begin date, valid_end date, dt string, gone int"
    at = THROUGH.isoformat()
    good = [
        (1, "Oslo", day(-9), day(-5), at, 0),
        (1, "Rome", day(-5), None, at, 0),
        (2, "Pau", day(-3), day(-1), at, 0),
        (2, "Pau", day(-1), None, at, 1),
    ]
    bad = [
        (5, "Nice", day(-9), None, at, 0),  # two open versions
        (5, "Lyon", day(-4), None, at, 0),
        (6, "Bonn", day(-9), day(-2), at, 0),  # overlapping
        (6, "Kiel", day(-4), None, at, 0),
        (7, "Graz", day(-9), day(-7), at, 0),  # a gap: deleted on day -7, back on day -3
        (7, "Graz", day(-3), None, at, 0),
        (8, "Vic", day(-2), day(3), at, 0),  # closed after --through
    ]
    older = [(1, "Oslo", day(-9), None, day(-6).isoformat(), 0)]  # an earlier copy: not read
    legacy = legacy_table(spark, unique_name, ddl, good + bad + older)
    adopted = {
        "table": legacy,
        "begin_column": "valid_begin",
        "end_column": "valid_end",
        "end_style": "exclusive",
        "open_end": None,
        "snapshot_column": "dt",
        "deleted_column": "gone",
    }
    tombstones = {"mode": "snapshot", "hard_deletes": "new_record"}
    t = TableFixture(tmp_path, unique_name, schema="id bigint, city string", source=tombstones, adopt=adopted)

    with pytest.raises(InputError) as refused:
        adopt.adopt(spark, t.spec, THROUGH)
    assert str(refused.value) == (
        f"{t.table} {THROUGH}: adopted table {legacy}, keys ['id']: 1 key with a version that begins or ends after"
        " --through: 8; 1 key with more than one open version: 5; 1 key with versions that overlap: 6;"
        " 1 key with a gap between versions: 7 (pass --allow-gaps to keep gaps: a key deleted, then back);"
        " nothing was changed"
    )
    assert not state.read_state(spark, t.spec).exists

    kept = [r for r in good + bad + older if r[0] not in (5, 6, 8)]
    t = t.with_options(adopt=adopted | {"table": legacy_table(spark, unique_name, ddl, kept, "dim_user_zip_kept")})
    with pytest.raises(InputError, match="1 key with a gap between versions: 7"):
        adopt.adopt(spark, t.spec, THROUGH)
    result = adopt.adopt(spark, t.spec, THROUGH, allow_gaps=True)
    assert (
        "3 open rows, 3 closed rows in 3 history partitions" in result.message and "1 key with gaps" in result.message
    )
    # zipper's deleted column from the flag: key 2's open version is its tombstone
    assert table_rows(spark, t.table) == [
        (1, "Oslo", False, day(-9).isoformat(), day(-5).isoformat()),
        (1, "Rome", False, day(-5).isoformat(), OPEN),
        (2, "Pau", False, day(-3).isoformat(), day(-1).isoformat()),
        (2, "Pau", True, day(-1).isoformat(), OPEN),
        (7, "Graz", False, day(-9).isoformat(), day(-7).isoformat()),
        (7, "Graz", False, day(-3).isoformat(), OPEN),
    ]
    assert check.run_checks(spark, t.spec)["failed"] == []


def test_a_table_with_validity_times_keeps_versions_within_a_day_and_merges_go_on_with_updated_at(
    spark, tmp_path, unique_name
):
    # exclusive date ends, dates as dates, 3000-12-31 as the open end, a validity pair; key 1's Rome
    # lived within day 1
    ddl = "id bigint, city string, b date, e date, vf timestamp, vt timestamp"
    far = day(0).replace(year=3000, month=12, day=31)
    rows = [
        (1, "Oslo", day(0), day(1), at(0, 9), at(1, 10)),
        (1, "Rome", day(1), day(1), at(1, 10), at(1, 11)),
        (1, "Lyon", day(1), far, at(1, 11), None),
        (2, "Pau", day(0), far, at(0, 8), None),
        (3, "Kiel", day(1), day(1), at(1, 12), at(1, 12)),  # valid for no time: refused
    ]
    legacy = legacy_table(spark, unique_name, ddl, rows)
    adopted = {"table": legacy, "begin_column": "b", "end_column": "e", "end_style": "exclusive"}
    adopted |= {"open_end": "3000-12-31", "valid_from_column": "vf", "valid_to_column": "vt"}
    t = TableFixture(tmp_path, unique_name, schema=UPDATED, source={"updated_at": "ts"}, adopt=adopted)
    with pytest.raises(InputError, match="1 key with a version that ends before it begins: 3;"):
        adopt.adopt(spark, t.spec, day(1))

    t = t.with_options(adopt=adopted | {"table": legacy_table(spark, unique_name, ddl, rows[:-1], "kept")})
    adopt.adopt(spark, t.spec, day(1))
    d0, d1, d2 = (day(n).isoformat() for n in (0, 1, 2))
    # the updated_at column the table lacked is its valid-from; open versions valid until the open end
    expected = [
        (1, "Lyon", at(1, 11), at(1, 11), END, d1, OPEN),
        (1, "Oslo", at(0, 9), at(0, 9), at(1, 10), d0, d1),
        (1, "Rome", at(1, 10), at(1, 10), at(1, 11), d1, d1),
        (2, "Pau", at(0, 8), at(0, 8), END, d0, OPEN),
    ]
    assert table_rows(spark, t.table) == expected
    assert check.run_checks(spark, t.spec)["failed"] == []

    t.write_increment(spark, day(2), [(2, "Vic", at(2, 6))])
    merge.merge_date(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == [
        *expected[:3],
        (2, "Pau", at(0, 8), at(0, 8), at(2, 6), d0, d2),
        (2, "Vic", at(2, 6), at(2, 6), END, d2, OPEN),
    ]


def test_text_and_number_dates_in_another_format_are_read_with_the_specs_date_format(spark, tmp_path, unique_name):
    # the way many hand-written tables keep dates: yyyyMMdd text begin/end, 99991231 open, a bigint dt copy
    ddl = "id bigint, city string, start_dt string, end_dt string, dt bigint"
    rows = [
        (1, "Oslo", "20231201", "20231209", 20231231),
        (1, "Rome", "20231210", "99991231", 20231231),
        (2, "Pau", "20231205", "99991231", 20231231),
        (2, "Pau", "20231205", "99991231", 20231230),  # the day before's copy: not read
    ]
    legacy = legacy_table(spark, unique_name, ddl, rows)
    adopted = {"table": legacy, "begin_column": "start_dt", "end_column": "end_dt", "end_style": "inclusive"}
    adopted |= {"snapshot_column": "dt"}
    t = TableFixture(tmp_path, unique_name, schema="id bigint, city string", adopt=adopted)
    # without the format: refused, naming the columns and the setting that reads them
    with pytest.raises(InputError) as refused:
        adopt.adopt(spark, t.spec, THROUGH)
    assert str(refused.value) == (
        f"{t.table} {THROUGH}: adopted table {legacy}: the columns ['dt bigint'] must be dates or YYYY-MM-DD text"
        " (name adopt.date_format for others, such as yyyyMMdd)"
    )
    with pytest.raises(SpecError, match="date_format 'yyyyMM' must write a whole date"):
        t.with_options(adopt=adopted | {"date_format": "yyyyMM"})

    t = t.with_options(adopt=adopted | {"date_format": "yyyyMMdd"})
    adopt.adopt(spark, t.spec, THROUGH)
    assert table_rows(spark, t.table) == [
        (1, "Oslo", "2023-12-01", "2023-12-10"),
        (1, "Rome", "2023-12-10", OPEN),
        (2, "Pau", "2023-12-05", OPEN),
    ]
    assert check.run_checks(spark, t.spec)["failed"] == []

    # a text that is no date in that format: refused naming the key
    bad = legacy_table(spark, unique_name, ddl, [*rows[:2], (3, "Vic", "20231305", "99991231", 20231231)], "bad")
    u = TableFixture(tmp_path, f"{unique_name}_bad", schema="id bigint, city string")
    u = u.with_options(adopt=adopted | {"table": bad, "date_format": "yyyyMMdd"})
    with pytest.raises(InputError, match=r"keys \['id'\]: 1 key with a begin that is not a date: 3; nothing"):
        adopt.adopt(spark, u.spec, THROUGH)
    assert not state.read_state(spark, u.spec).exists


def test_untracked_columns_are_adopted_and_reruns_take_them_from_the_runs_open_rows(spark, tmp_path, unique_name):
    """name untracked: the adopted history keeps its versions, merges update it in place, and a rerun
    from the day after --through takes it from the adoption's open rows (the table has no base and
    no inputs before it), a later rerun from the open rows of the run of the day before."""
    rows = [
        (1, "zhang", "136", "2023-12-01", "2023-12-09"),
        (1, "zhang", "147", "2023-12-10", "9999-12-31"),
        (2, "li", "150", "2023-12-05", "9999-12-31"),
    ]
    _, t = articles_table(spark, tmp_path, unique_name, rows, track_columns=["phone"])
    adopt.adopt(spark, t.spec, THROUGH)
    t.write_increment(spark, day(1), [(1, "zhang_san", "147")])  # in place
    t.write_increment(spark, day(2), [(2, "li", "151")])
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    history = [(1, "zhang", "136", "2023-12-01", "2023-12-10"), (2, "li", "150", "2023-12-05", day(2).isoformat())]
    assert table_rows(spark, t.table) == [
        history[0],
        (1, "zhang_san", "147", "2023-12-10", OPEN),
        history[1],
        (2, "li", "151", day(2).isoformat(), OPEN),
    ]

    t.write_increment(spark, day(1), [])  # re-delivered without the rename: the adopted name again
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    assert vacuum.vacuum(spark, t.spec, retention_days=0, now=later)["removed"]  # the adopted open rows kept
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table) == [
        history[0],
        (1, "zhang", "147", "2023-12-10", OPEN),
        history[1],
        (2, "li", "151", day(2).isoformat(), OPEN),
    ]
    rerun = table_rows(spark, t.table)
    replay.rerun(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == rerun

    # renamed since the rows of the day before were written: read by the name they had
    alter.alter_table(spark, t.spec, AlterRequest(AlterKind.RENAME, "name", "full_name"))
    renamed = "user_id bigint, full_name string, phone string"
    t.write_increment(spark, day(3), [(1, "zhang_3", "147")], schema=renamed)
    merge.merge_date(spark, t.spec, day(3))
    t.write_increment(spark, day(3), [], schema=renamed)  # re-delivered without it
    replay.rerun(spark, t.spec, day(3))
    assert table_rows(spark, t.table) == rerun
    assert check.run_checks(spark, t.spec)["failed"] == []
