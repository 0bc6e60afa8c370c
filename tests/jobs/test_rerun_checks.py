"""A rerun's check of the replayed dates' inputs before its restore, for every source mode: a
replayed date whose input the table cannot take (a column of another type, files of one input
that disagree on a type) is refused while nothing has changed, naming the table, the date, the
input or file and the column, and ending `; nothing was changed`."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from tests.inputs.test_columns import replace_files, rewritten_alike, table_and_partitions
from tests.inputs.test_landing import LandingZone
from tests.jobs.test_merge import only_file
from tests.support import SharedTable, TableFixture, day, table_rows, write_parquet
from zipper.core.errors import InputError
from zipper.jobs import merge, rebuild, replay
from zipper.jobs.keys import resolve_keys
from zipper.table import inspect, state

NOTHING_CHANGED = "; nothing was changed"
ORDERED = "id bigint, name string, city string, seq bigint"
CANNOT_CHANGE = (
    "a column cannot change type (only int -> bigint and float -> double widen; a decimal input may have fewer digits)"
)


def ordered_table(spark, root, name, **source) -> TableFixture:
    """An upsert table ordered by `seq`, days 1..3 merged."""
    t = TableFixture(root, name, schema=ORDERED, source={"sequence_by": "seq", **source})
    t.write_base(spark, [(1, "ann", "Oslo", 0), (2, "bob", "Rome", 0)])
    days = {
        1: [(1, "ann", "Bergen", 1), (1, "ann", "Lyon", 2)],
        2: [(3, "cid", "Nice", 1)],
        3: [(2, "bob", "Bern", 5), (3, "cid", "Pisa", 2)],
    }
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows)
        merge.merge_date(spark, t.spec, day(n))
    return t


@pytest.fixture(scope="module")
def ordered_built(spark, tmp_path_factory):
    """`ordered_table`, built once: each test of it gets a copy (`ordered`)."""
    return SharedTable(spark, ordered_table(spark, tmp_path_factory.mktemp("ordered"), f"ordered_{os.getpid()}"))


@pytest.fixture
def ordered(ordered_built, tmp_path):
    with ordered_built.copy(tmp_path) as copy:
        yield copy


def refused_with_nothing_changed(spark, t, spec, first, last=None) -> str:
    """The rerun's refusal, after checking that it left the table, its partitions and its commit
    records as they were, with no replay pending."""
    before = table_and_partitions(spark, t)
    committed = state.read_state(spark, spec).last_committed
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, spec, first, last)
    assert table_and_partitions(spark, t) == before
    st = state.read_state(spark, spec)
    assert st.last_committed == committed and st.replay is None
    return str(raised.value)


def arrays(rows: list[tuple], types: dict) -> dict:
    return {name: pa.array([r[i] for r in rows], kind) for i, (name, kind) in enumerate(types.items())}


ORDERED_TYPES = {"id": pa.int64(), "name": pa.string(), "city": pa.string(), "seq": pa.int64()}


def test_an_ordered_upsert_rerun_refuses_a_replayed_column_of_another_type_before_anything_changes(spark, ordered):
    """With sequence_by the check before the restore read nothing: a later date whose input holds
    `city` as bigint (the table's is string) failed at its merge, after the restore, leaving a
    replay pending."""
    t = ordered
    t.write_increment(spark, day(3), [(2, "bob", 7, 5)], "id bigint, name string, city bigint, seq bigint")
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == (
        f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} column 'city' has type bigint, the"
        f" table has string; {CANNOT_CHANGE}{NOTHING_CHANGED}"
    )

    t.write_increment(spark, day(3), [(2, "bob", "Bern", 6)])  # mended: replayed
    assert replay.rerun(spark, t.spec, day(2)).counts["dates"] == 2
    assert (2, "bob", "Bern", 6, day(3).isoformat(), "9999-12-31") in table_rows(spark, t.table)


def test_an_ordered_upsert_rerun_refuses_files_of_a_replayed_date_that_disagree_on_a_type(spark, ordered):
    """Files of one input merged by Spark (mergeSchema, the default for several files) that type
    `city` differently: refused as the input is opened, which the check did not do."""
    t = ordered
    folder = t.increment_dir(day(3))
    replace_files(
        folder,
        [
            arrays([(2, "bob", "Bern", 5)], ORDERED_TYPES),
            arrays([(3, "cid", 7, 2)], {**ORDERED_TYPES, "city": pa.int64()}),
        ],
    )
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == (
        f"{t.table} {day(3)}: files of {folder} disagree on column types: city is string in"
        f" part-0.parquet, bigint in part-1.parquet{NOTHING_CHANGED}"
    )


def test_an_ordered_upsert_rerun_reads_the_footers_of_files_read_without_merging_schemas(spark, tmp_path, unique_name):
    """mergeSchema off: Spark reads a date's files with one file's schema; another file holding
    `city` as bigint is refused before the restore, naming it (or, read with that file's schema,
    the input's column type)."""
    t = ordered_table(spark, tmp_path, unique_name, options={"mergeSchema": False})
    folder = t.increment_dir(day(3))
    replace_files(
        folder,
        [
            arrays([(2, "bob", "Bern", 5)], ORDERED_TYPES),
            arrays([(3, "cid", 7, 2)], {**ORDERED_TYPES, "city": pa.int64()}),
        ],
    )
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message in (
        f"{t.table} {day(3)}: cannot read file part-1.parquet of {folder}: column 'city' is bigint in the file, but"
        f" read as string, its type in another file of the input; every file must give a column one type"
        f"{NOTHING_CHANGED}",
        f"{t.table} {day(3)}: increment {folder} column 'city' has type bigint, the table has string; {CANNOT_CHANGE}"
        f"{NOTHING_CHANGED}",
    )


@pytest.mark.parametrize("mode", ["upsert", "snapshot"])
def test_an_upsert_or_snapshot_reruns_type_refusal_says_nothing_was_changed(spark, tmp_path, unique_name, mode):
    """The check compares a plain upsert's or a snapshot's column types with the table's as it
    reads them; its refusal did not say that nothing had changed (a cdc input's does)."""
    t = TableFixture(tmp_path, unique_name, source={"mode": mode})
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    for n in (1, 2):
        t.write_increment(spark, day(n), [(1, "ann", "Bergen"), (2, "bob", "Rome")])
        merge.merge_date(spark, t.spec, day(n))
    t.write_increment(spark, day(2), [(1, "ann", 7), (2, "bob", 8)], "id bigint, name string, city bigint")
    message = refused_with_nothing_changed(spark, t, t.spec, day(1))
    assert message == (
        f"{t.table} {day(2)}: increment {t.increment_dir(day(2))} column 'city' has type bigint, the"
        f" table has string; {CANNOT_CHANGE}{NOTHING_CHANGED}"
    )


EMPLOYEES = {"__rowMarker__": pa.int32(), "EmployeeID": pa.string(), "EmployeeLocation": pa.string()}


def merged_zone(spark, tmp_path, name, **source) -> LandingZone:
    """A landing zone of three dates, merged; day 2 consumed files 2 and 3."""
    zone = LandingZone(tmp_path, name, **source)
    zone.write(1, [(0, "E1", "Redmond"), (0, "E2", "Redmond")])
    merge.merge_date(spark, zone.spec, day(1))
    zone.write(2, [(1, "E1", "Bellevue")])
    zone.write(3, [(0, "E3", "Seattle")])
    merge.merge_date(spark, zone.spec, day(2))
    zone.write(4, [(1, "E3", "Tacoma")])
    merge.merge_date(spark, zone.spec, day(3))
    return zone


def kept_copy(spark, zone, ds, name: str):
    from pathlib import Path

    kept = state.read_state(spark, resolve_keys(spark, zone.spec)).commits[ds.isoformat()].landing["kept"]
    return Path(kept.removeprefix("file:")) / name


@pytest.mark.parametrize("both_files", [True, False])
def test_a_landing_zone_rerun_refuses_a_replayed_column_of_another_type_before_anything_changes(
    spark, tmp_path, unique_name, both_files
):
    """A replayed date reads the copy its commit kept, checked by the files' names and sizes: one
    rewritten at its size with `EmployeeLocation` as bigint (the table's is string) failed at its
    date's merge, after the restore. Refused up front, as the input's type (both of the date's
    files) or as files that disagree (one of them)."""
    zone = merged_zone(spark, tmp_path, unique_name)
    spec = resolve_keys(spark, zone.spec)
    mistyped = {**EMPLOYEES, "EmployeeLocation": pa.int64()}
    names = ["00000000000000000002.parquet", "00000000000000000003.parquet"]
    rewritten = {names[0]: [(1, "E1", 7)], names[1]: [(0, "E3", 8)]}
    for name, rows in list(rewritten.items())[0 if both_files else 1 :]:
        path = kept_copy(spark, zone, day(2), name)
        rewritten_alike(path, arrays(rows, mistyped))
        (path.parent / f".{name}.crc").unlink(missing_ok=True)  # the copy's checksum, which Hadoop would check
    message = refused_with_nothing_changed(spark, zone, spec, day(1))
    described = f"landing zone {zone.folder} files {names[0][:20]}..{names[1][:20]} (kept copy)"
    if both_files:
        assert message == (
            f"{zone.table} {day(2)}: {described} column 'employeelocation' has type bigint, the table"
            f" has string; {CANNOT_CHANGE}{NOTHING_CHANGED}"
        )
    else:
        assert message == (
            f"{zone.table} {day(2)}: landing-zone column 'employeelocation' has type string in"
            f" {names[0]} and bigint in {names[1]}{NOTHING_CHANGED}"
        )


def write_orc(folder, columns_of_files: list[dict]) -> None:
    """`folder` holding one ORC file per dict of column -> pyarrow array: part-0.orc, part-1.orc, ..."""
    import pyarrow.orc as orc

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for n, columns in enumerate(columns_of_files):
        orc.write_table(pa.table(columns), str(folder / f"part-{n}.orc"))


def test_orc_files_read_without_merging_schemas_that_type_a_column_otherwise_are_refused(spark, tmp_path, unique_name):
    """mergeSchema off: Spark reads a date's ORC files with one file's schema, and ORC converted a
    column another file holds as string to double without a word ('x3.5' became NULL), in a merge
    and in a rerun alike. Each file's footer is compared with the schema read: the rerun refuses it
    before its restore, the merge before it writes."""
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, amount double",
        source={"format": "orc", "options": {"mergeSchema": False}},
    )
    t.write_base(spark, [(1, 1.5)])
    good = [{"id": pa.array([n], pa.int64()), "amount": pa.array([n + 0.5])} for n in (2, 3)]
    for n in (1, 2):
        write_orc(t.increment_dir(day(n)), good)
        merge.merge_date(spark, t.spec, day(n))
    folder = t.increment_dir(day(2))
    write_orc(folder, [good[0], {"id": pa.array([3], pa.int64()), "amount": pa.array(["x3.5"])}])
    message = refused_with_nothing_changed(spark, t, t.spec, day(1))

    def refusal(table, ds, folder, suffix):
        return {
            f"{table} {ds}: cannot read file {name} of {folder}: column 'amount' is {held} in the file, but read"
            f" as {read_as}, its type in another file of the input; every file must give a column one type{suffix}"
            for name, held, read_as in (("part-1.orc", "string", "double"), ("part-0.orc", "double", "string"))
        }

    assert message in refusal(t.table, day(2), folder, NOTHING_CHANGED)

    write_orc(t.increment_dir(day(3)), [good[0], {"id": pa.array([4], pa.int64()), "amount": pa.array(["4.5"])}])
    before = table_and_partitions(spark, t)
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(3))
    assert str(raised.value) in refusal(t.table, day(3), t.increment_dir(day(3)), "")
    assert table_and_partitions(spark, t) == before


def test_an_upsert_rerun_replays_a_changed_date_that_adds_or_widens_a_column_as_its_merge_would(
    spark, tmp_path, unique_name
):
    """The check of a plain upsert's dates compared each input with the table's columns as they
    are, and refused a changed date that adds a column or widens one (`has columns not in the table
    ['email']; merge its date first`), a date its merge would take: the rerun could not replay it.
    Each date's types are now compared with the table's as the dates before it leave them."""
    schema, changed = "id int, name string, level int", "id bigint, name string, level bigint, email string"
    days = {1: ([(2, "bob", 1)], schema), 2: ([(1, "ann", 2), (2, "bob", 1)], schema)}

    def merged(root, name, days):
        t = TableFixture(root, name, schema=schema)
        t.write_base(spark, [(1, "ann", 1)])
        for n, (rows, kind) in days.items():
            t.write_increment(spark, day(n), rows, kind)
            merge.merge_date(spark, t.spec, day(n))
        return t

    t = merged(tmp_path / "live", unique_name, days)
    days[1] = ([(2, "bob", 3, "b@x"), (3000000000, "cid", 1, None)], changed)
    t.write_increment(spark, day(1), *days[1])
    assert replay.rerun(spark, t.spec, day(1)).counts["dates"] == 2
    oracle = merged(tmp_path / "oracle", unique_name + "_o", days)
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(t.table).schema] == [
        (f.name, f.dataType.simpleString()) for f in spark.table(oracle.table).schema
    ]
    assert table_rows(spark, t.table) == table_rows(spark, oracle.table)


@pytest.mark.parametrize("first", [1, 2])
def test_a_rerun_refuses_a_replayed_parquet_file_spark_cannot_read_saying_nothing_was_changed(
    spark, tmp_path, unique_name, first
):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    for n in (1, 2):
        t.write_increment(spark, day(n), [(n + 1, "bob", "Rome")])
        merge.merge_date(spark, t.spec, day(n))
    part = sorted(t.increment_dir(day(2)).glob("*.parquet"))[0]
    whole = part.read_bytes()
    part.write_bytes(whole[:4] + whole[-8:])  # its footer's length points before the file's start
    message = refused_with_nothing_changed(spark, t, t.spec, day(first))
    assert message.startswith(f"{t.table} {day(2)}: ") and part.name in message, message
    assert message.endswith(NOTHING_CHANGED), message


ORDERED_CDC = "id bigint, name string, city string, seq bigint, sys_op int"


def ordered_cdc_table(spark, root, name, **source) -> TableFixture:
    """A cdc table (ordered by `seq` unless `source` says otherwise), days 1..3 merged."""
    t = TableFixture(root, name, schema=ORDERED, source={"mode": "cdc", "sequence_by": "seq", **source})
    t.write_base(spark, [(1, "ann", "Oslo", 0), (2, "bob", "Rome", 0)])
    days = {1: [(1, "ann", "Bergen", 1, 0)], 2: [(3, "cid", "Nice", 1, 0)], 3: [(2, "bob", "Bern", 5, 0)]}
    for n, rows in days.items():
        t.write_increment(spark, day(n), rows, ORDERED_CDC)
        merge.merge_date(spark, t.spec, day(n))
    return t


# a later date's input (day 3) that its merge refuses, by the keys or the sequence, and the merge's refusal
# (`{part}`: the input's one file)
NULL_SEQUENCE = "1 key ['id'] with NULL in sequence_by column 'seq' (1 row) in {part}: 2"
REPEATED_SEQUENCE = "1 key ['id'] with a repeated value in sequence_by column 'seq' (2 rows) in {part}"
ORDER_REFUSALS = {
    "null_sequence": ([(2, "bob", "Bern", None), (3, "cid", "Pisa", 2)], f"has {NULL_SEQUENCE}"),
    "null_key": ([(None, "bob", "Bern", 5), (3, "cid", "Pisa", 2)], "has 1 row with NULL in key column 'id' in {part}"),
    "repeated_sequence": (
        [(2, "bob", "Bern", 5), (2, "bob", "Genf", 5), (3, "cid", "Pisa", 2)],
        f"has {REPEATED_SEQUENCE}: 2 (seq 5)",
    ),
    # every problem at once, NULL keys first
    "all": (
        [(None, "eve", "Bern", 5), (2, "bob", "Bern", None), (3, "cid", "Pisa", 2), (3, "cid", "Genf", 2)],
        f"has 1 row with NULL in key column 'id' in {{part}}; {NULL_SEQUENCE}; {REPEATED_SEQUENCE}: 3 (seq 2)",
    ),
}


@pytest.mark.parametrize("how", ["rerun", "merge"])
@pytest.mark.parametrize("bad", list(ORDER_REFUSALS))
def test_an_ordered_upsert_rerun_refuses_a_later_dates_null_key_or_sequence_before_anything_changes(
    spark, ordered, bad, how
):
    """NULL keys, and NULL or repeated sequence values of one key, were checked date by date in the
    merge, after the restore: a bad later date left the table restored and the replay half done.
    Checked for every replayed date up front (a rerun, or a merge of a changed past date), refused
    as the date's merge refuses it, and nothing changed; the status says so too."""
    t = ordered
    rows, refusal = ORDER_REFUSALS[bad]
    t.write_increment(spark, day(3), rows)
    refusal = refusal.format(part=only_file(t.increment_dir(day(3))))
    t.write_increment(spark, day(2), [(3, "cid", "Nice", 1), (4, "dan", "Oslo", 1)])  # changed: replayed
    status = inspect.status(spark, t.spec)
    if how == "rerun":
        message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    else:
        before = table_and_partitions(spark, t)
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(2))
        message = str(raised.value)
        assert table_and_partitions(spark, t) == before
    assert message == f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} {refusal}{NOTHING_CHANGED}"
    assert inspect.status(spark, t.spec) == status

    if how == "rerun":  # the merge of that date refuses it in the same words
        replay.rerun(spark, t.spec, day(2), day(2), uncommit_later=True)
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(3))
        assert str(raised.value) + NOTHING_CHANGED == message


def write_files(folder, files: dict[str, list[tuple]], schema: str) -> None:
    """`folder` holding one Parquet file per name in `files`, with its rows."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, rows in files.items():
        scratch = folder.parent / f".scratch-{name}"
        write_parquet(scratch, rows, schema)
        shutil.move(scratch / only_file(scratch), folder / name)
        scratch.rmdir()


def test_a_rerun_refuses_the_earliest_bad_date_naming_all_its_key_problems_and_their_files(
    spark, tmp_path, unique_name
):
    """The check of every replayed date in one job named the earliest bad date's NULL keys, and
    only once they were fixed its repeated keys. Now every problem of that date at once, each with
    the files that hold it; a later bad date is named at its own turn."""
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    for n in (1, 2, 3):
        t.write_increment(spark, day(n), [(n + 1, "bob", "Rome")])
        merge.merge_date(spark, t.spec, day(n))
    write_files(
        t.increment_dir(day(2)),
        {
            "a.parquet": [(1, "ann", "Bergen"), (3, "cid", "Nice")],
            "b.parquet": [(1, "ann", "Lyon"), (None, "x", "y"), (3, "cid", "Pisa")],
        },
        t.schema,
    )
    t.write_increment(spark, day(3), [(5, "eve", "Bern"), (5, "eve", "Genf")])
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == (
        f"{t.table} {day(2)}: increment {t.increment_dir(day(2))} has 1 row with NULL in key column 'id' in"
        f" b.parquet; 2 keys ['id'] more than once (4 rows) in a.parquet and b.parquet: 1, 3{NOTHING_CHANGED}"
    )
    # a rebuild finds them in its marking's own sort, then names them in the same words
    assert rebuild_refused(spark, t) == message

    t.write_increment(spark, day(2), [(3, "cid", "Nice")])  # the earliest mended: the next one is named
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == (
        f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} has 1 key ['id'] more than once (2 rows)"
        f" in {only_file(t.increment_dir(day(3)))}: 5{NOTHING_CHANGED}"
    )
    assert rebuild_refused(spark, t) == message


def rebuild_refused(spark, t) -> str:
    """The rebuild's refusal, after checking that it left the table and its commits as they were."""
    before = table_and_partitions(spark, t), state.read_state(spark, t.spec).commits
    with pytest.raises(InputError) as raised:
        rebuild.rebuild(spark, t.spec)
    assert (table_and_partitions(spark, t), state.read_state(spark, t.spec).commits) == before
    return str(raised.value)


@pytest.mark.parametrize("sequence_by", ["seq", None])
def test_a_cdc_rerun_refuses_a_later_dates_null_key_or_sequence_before_anything_changes(
    spark, tmp_path, unique_name, sequence_by
):
    """As for ordered upserts: a cdc input's keys (and sequence values) were checked in its date's
    merge, after the restore; now for every replayed date before it."""
    t = ordered_cdc_table(spark, tmp_path, unique_name, sequence_by=sequence_by)
    if sequence_by:
        t.write_increment(spark, day(3), [(2, "bob", "Bern", None, 0)], ORDERED_CDC)
        refusal = f"has {NULL_SEQUENCE}"
    else:
        t.write_increment(spark, day(3), [(2, "bob", "Bern", 5, 0), (2, "bob", "Genf", 6, 0)], ORDERED_CDC)
        refusal = "has 1 key ['id'] more than once (2 rows) in {part}: 2"
    refusal = refusal.format(part=only_file(t.increment_dir(day(3))))
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == f"{t.table} {day(3)}: increment {t.increment_dir(day(3))} {refusal}{NOTHING_CHANGED}"


MARKERS = "has __rowMarker__ values other than 0 insert, 1 update, 2 delete, 4 upsert"
# a landing zone's rows its merge refuses (the file's rows, the refusal after the input's description)
LANDING_REFUSALS = {
    "marker": ([(9, "E2", "Everett")], f"{MARKERS}: 9 in 00000000000000000005.parquet row 1"),
    "null_key": (
        [(1, "E2", "Everett"), (0, None, "Everett")],
        "has 1 row with NULL in key column 'employeeid' in 00000000000000000005.parquet",
    ),
    "partial_update": (
        [(1, "E2")],
        ": file 00000000000000000005.parquet has update or upsert rows (which carry the"
        " full row) but lacks columns ['employeelocation']",
    ),
}


@pytest.mark.parametrize("bad", list(LANDING_REFUSALS))
def test_a_landing_zone_rerun_past_the_last_committed_date_refuses_its_new_files_rows_before_anything_changes(
    spark, tmp_path, unique_name, bad
):
    """`--to` past the last committed date: the first new date consumes the zone's new files, which
    were located, and their rows checked, only at its turn, after the restore and the replay of
    the committed dates: a bad marker, a NULL key or an update without every column left the
    replay pending. They are checked up front, as that date's merge checks them."""
    zone = merged_zone(spark, tmp_path, unique_name)
    spec = resolve_keys(spark, zone.spec)
    rows, refusal = LANDING_REFUSALS[bad]
    columns = EMPLOYEES if bad != "partial_update" else {"__rowMarker__": pa.int32(), "EmployeeID": pa.string()}
    zone.write(5, rows, schema=pa.schema(list(columns.items())))
    message = refused_with_nothing_changed(spark, zone, spec, day(2), day(4))
    described = f"landing zone {zone.folder} files {'0' * 19}5..{'0' * 19}5"
    separator = "" if refusal.startswith(":") else " "
    assert message == f"{zone.table} {day(4)}: {described}{separator}{refusal}{NOTHING_CHANGED}"
    with pytest.raises(InputError) as raised:  # the date's merge refuses it in the same words
        merge.merge_date(spark, spec, day(4))
    assert str(raised.value) + NOTHING_CHANGED == message


def test_a_landing_zone_rerun_refuses_a_replayed_kept_copys_bad_marker_before_anything_changes(
    spark, tmp_path, unique_name
):
    """A replayed date reads the copy its commit kept, checked by the files' names and sizes: one
    rewritten at its size with a marker that is no operation failed at its date's merge, after the
    restore."""
    zone = merged_zone(spark, tmp_path, unique_name)
    spec = resolve_keys(spark, zone.spec)
    name = "00000000000000000002.parquet"
    path = kept_copy(spark, zone, day(2), name)
    rewritten_alike(path, arrays([(7, "E1", "Bellevue")], EMPLOYEES))
    (path.parent / f".{name}.crc").unlink(missing_ok=True)
    message = refused_with_nothing_changed(spark, zone, spec, day(1))
    described = f"landing zone {zone.folder} files {name[:20]}..{'0' * 19}3 (kept copy)"
    assert message == f"{zone.table} {day(2)}: {described} {MARKERS}: 7 in {name} row 1{NOTHING_CHANGED}"


@pytest.mark.parametrize("mode", ["upsert", "cdc"])
def test_an_ordered_csv_rerun_refuses_a_later_dates_value_that_does_not_parse_before_anything_changes(
    spark, tmp_path, unique_name, mode
):
    """The check before the restore read only the keys and sequence values of ordered changes: a CSV value in
    another column that does not parse failed at its date's merge, after the restore (a plain upsert's check
    reads every column)."""
    schema = "id bigint, name string, amount double, seq bigint"
    t = TableFixture(
        tmp_path,
        unique_name,
        schema=schema,
        source={"mode": mode, "format": "csv", "sequence_by": "seq", "options": {"header": True}},
    )
    t.write_base(spark, [(1, "ann", 1.5, 0), (2, "bob", 2.5, 0)])
    header = "id,name,amount,seq" + (",sys_op" if mode == "cdc" else "")
    op = ",0" if mode == "cdc" else ""

    def write_csv(n: int, lines: list[str]) -> None:
        folder = t.increment_dir(day(n))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "part-0.csv").write_text("\n".join([header, *[line + op for line in lines]]) + "\n")

    for n in (1, 2, 3):
        write_csv(n, [f"1,ann,{n}.5,{n}"])
        merge.merge_date(spark, t.spec, day(n))
    write_csv(3, ["1,ann,3.5,3", "2,bob,x3.5,4"])
    message = refused_with_nothing_changed(spark, t, t.spec, day(2))
    assert message == (
        f"{t.table} {day(3)}: increment {t.increment_dir(day(3))}: file part-0.csv: column 'amount'"
        f" (double) cannot hold 'x3.5' (row with id=2){NOTHING_CHANGED}"
    )

    write_csv(3, ["1,ann,3.5,3", "2,bob,4.5,4"])  # mended: replayed
    assert replay.rerun(spark, t.spec, day(2)).counts["dates"] == 2
    assert (2, "bob", 4.5, 4, day(3).isoformat(), "9999-12-31") in table_rows(spark, t.table)


ANOMALY = "has changes that do not fit the key's previous change that day (on_anomaly: error)"


@pytest.mark.parametrize("where", ["replayed", "new"])
def test_a_landing_zone_rerun_refuses_a_later_dates_anomaly_within_the_day_before_anything_changes(
    spark, tmp_path, unique_name, where
):
    """With on_anomaly: error, the changes of one key within a day (an update after its delete, a
    second insert) were checked only in the date's merge, after the restore: a bad later date left
    the table restored and the replay half done. They do not depend on the open rows, so they are
    checked up front, for a replayed date's kept copy as for the new files of a date past the last
    committed one, refused as the date's merge refuses them."""
    zone = merged_zone(spark, tmp_path, unique_name, on_anomaly="error")
    spec = resolve_keys(spark, zone.spec)
    if where == "replayed":  # day 3's kept copy: E3 deleted, then updated
        name = "00000000000000000004.parquet"
        path = kept_copy(spark, zone, day(3), name)
        rewritten_alike(path, arrays([(2, "E3", None), (1, "E3", "Tacoma")], EMPLOYEES))
        (path.parent / f".{name}.crc").unlink(missing_ok=True)
        bad, last, described = day(3), None, f"landing zone {zone.folder} files {name[:20]}..{name[:20]} (kept copy)"
        refusal = "1 update of a key that is not open: E3"
    else:  # day 4 consumes file 5: E9 inserted twice
        zone.write(5, [(0, "E9", "Everett"), (1, "E2", "Everett"), (0, "E9", "Kent")])
        bad, last, described = day(4), day(4), f"landing zone {zone.folder} files {'0' * 19}5..{'0' * 19}5"
        refusal = "1 insert of a key that is open: E9"
    message = refused_with_nothing_changed(spark, zone, spec, day(1), last)
    assert message == f"{zone.table} {bad}: {described} {ANOMALY}: {refusal}{NOTHING_CHANGED}"

    if where == "new":  # the date's merge refuses it in the same words
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, spec, day(4))
        assert str(raised.value) + NOTHING_CHANGED == message
        zone.write(5, [(0, "E9", "Everett"), (1, "E2", "Everett"), (2, "E9", None), (0, "E9", "Kent")])  # mended
        assert replay.rerun(spark, spec, day(1), day(4)).counts["dates"] == 4
        assert ("E9", "Kent", day(4).isoformat(), "9999-12-31") in table_rows(spark, zone.table)


@pytest.mark.parametrize("bad_dates", [(3,), (2, 3)])
def test_a_cdc_rerun_refuses_a_later_dates_delete_that_does_not_match_the_keys_previous_change_before_anything_changes(
    spark, tmp_path, unique_name, bad_dates
):
    """delete_match: all_columns: a delete whose values differ from the key's previous change that
    day (not the open row) was refused only in its date's merge, after the restore. Checked up
    front for every replayed date in one job; the earliest bad date is refused as its merge refuses it."""
    t = ordered_cdc_table(spark, tmp_path, unique_name)
    if 2 in bad_dates:
        t.write_increment(spark, day(2), [(3, "cid", "Nice", 1, 0), (3, "cid", "Metz", 2, 1)], ORDERED_CDC)
    t.write_increment(
        spark, day(3), [(2, "bob", "Bern", 5, 0), (2, "bob", "Genf", 6, 1), (4, "dan", "Oslo", 1, 0)], ORDERED_CDC
    )
    message = refused_with_nothing_changed(spark, t, t.spec, day(1))
    bad = day(bad_dates[0])
    key = 3 if bad == day(2) else 2
    assert message == (
        f"{t.table} {bad}: increment {t.increment_dir(bad)} has 1 delete row whose values differ from"
        " the row they delete (the key's previous change) (delete_match: all_columns); keys ['id']:"
        f" {key} (columns city){NOTHING_CHANGED}"
    )

    if bad == day(3):  # the merge of that date refuses it in the same words
        replay.rerun(spark, t.spec, day(1), day(2), uncommit_later=True)
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(3))
        assert str(raised.value) + NOTHING_CHANGED == message
    t.write_increment(spark, day(2), [(3, "cid", "Nice", 1, 0), (3, "cid", "Nice", 2, 1)], ORDERED_CDC)  # mended
    t.write_increment(
        spark, day(3), [(2, "bob", "Bern", 5, 0), (2, "bob", "Bern", 6, 1), (4, "dan", "Oslo", 1, 0)], ORDERED_CDC
    )
    replay.rerun(spark, t.spec, day(1), day(3))
    assert [r[0] for r in table_rows(spark, t.table) if r[-1] == "9999-12-31"] == [1, 4]
