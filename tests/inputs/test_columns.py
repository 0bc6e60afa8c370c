"""Schema evolution (added, missing and widened columns) and the other input formats (csv with
`schema:`, orc, a Hive table's partition), on a real Hive table."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.support import TableFixture, day, initialized_with_a_day_folder, table_rows
from zipper.core import errors, faults, fs
from zipper.core.errors import InputError
from zipper.inputs import column_checks, csv_values, dated, metrics
from zipper.jobs import merge, rebuild, replay
from zipper.jobs.init import init_table
from zipper.table import catalog, check, state
from zipper.tablespec.loader import load_spec_file

OPEN = "9999-12-31"


def columns_of(spark, t):
    return [(f.name, f.dataType.simpleString()) for f in spark.table(t.table).schema]


def test_a_csv_value_that_does_not_parse_names_its_column_value_file_and_row(spark, tmp_path, unique_name):
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, name string, level int",
        source={"format": "csv", "options": {"sep": ";"}},
    )
    t.write_base(spark, [(1, "ann", 1), (2, "bob", 2)])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    runs_before = sorted(d for d, _ in fs.list_dirs(state.versions_root(state.read_state(spark, t.spec))))
    t.increment_dir(day(1)).mkdir(parents=True)
    # a quoted separator, then a value the int column cannot hold, on the third record
    (t.increment_dir(day(1)) / "part 7.csv").write_text('id;name;level\n1;"ann; jr";3\n2;bob;2\n3;cy;x9\n')
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {t.increment_dir(day(1))}: file part 7.csv:"
        " column 'level' (int) cannot hold 'x9' (row with id=3)"
    )
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    assert sorted(d for d, _ in fs.list_dirs(state.versions_root(state.read_state(spark, t.spec)))) == runs_before

    # a bad key and a bad attribute in one record: both named, the row by its text
    (t.increment_dir(day(1)) / "part 7.csv").write_text("id;name;level\n1;ann;3\nB2;bob;two\n")
    with pytest.raises(
        InputError,
        match=r"file part 7.csv: column 'id' \(bigint\) cannot hold 'B2'; column 'level'"
        r" \(int\) cannot hold 'two' \(row with id=B2\)$",
    ):
        merge.merge_date(spark, t.spec, day(1))

    (t.increment_dir(day(1)) / "part 7.csv").write_text("id;name;level\n1;ann;3\n")
    assert merge.merge_date(spark, t.spec, day(1)).counts["changed"] == 1
    t.increment_dir(day(2)).mkdir(parents=True)
    (t.increment_dir(day(2)) / "part-0.csv").write_text("id;name;level\n2;bob;5\n")
    merge.merge_date(spark, t.spec, day(2))

    # A rerun checks every date's input before it changes anything: a bad value in a column its
    # key check does not read still fails there (Spark's CSV column pruning is off).
    (t.increment_dir(day(1)) / "part 7.csv").write_text("id;name;level\n1;ann;4\n")
    (t.increment_dir(day(2)) / "part-0.csv").write_text("id;name;level\n2;bob;high\n")
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    with pytest.raises(
        InputError,
        match=rf"^{t.table} {day(2)}: increment .*ds={day(2)}: file part-0.csv: column"
        r" 'level' \(int\) cannot hold 'high' \(row with id=2\); nothing was changed$",
    ):
        replay.rerun(spark, t.spec, day(1))
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    assert state.read_state(spark, t.spec).replay is None


def test_a_csv_header_that_repeats_a_column_names_the_file_and_the_column(spark, tmp_path, unique_name):
    """Spark renames repeated header names (name1, name2), so this failed as a header that "does
    not conform to the schema", or on a rerun as columns the table lacks, naming neither."""
    t = TableFixture(tmp_path, unique_name, source={"format": "csv", "options": {"sep": ";"}})
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    for k in (1, 2):
        t.increment_dir(day(k)).mkdir(parents=True)
        (t.increment_dir(day(k)) / "part-0.csv").write_text(f"id;name;city\n1;n{k};Oslo\n")
        merge.merge_date(spark, t.spec, day(k))
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))

    folder = t.increment_dir(day(3))
    folder.mkdir(parents=True)
    (folder / "part-0.csv").write_text("id;name;city\n2;bob;Rome\n")
    (folder / "part-1.csv").write_text('id;name;"name"\n3;cid;Nice\n')  # quoted: the same name
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(3))
    assert str(raised.value) == (
        f"{t.table} {day(3)}: increment {folder}: file part-1.csv has column 'name' more than once in its header"
    )

    # names differing only in case clash too (zipper matches columns in any case), in every file
    # the header is the first line neither a comment nor blank, as Spark takes it
    (folder / "part-0.csv").write_text("# exported\n\nID;city;CITY\n2;Rome;Roma\n")
    (folder / "part-1.csv").write_text("id;Name;name;city;city\n3;cid;c;Nice;Nizza\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(
            spark,
            t.spec.model_copy(
                update={"source": t.spec.source.model_copy(update={"options": {"sep": ";", "comment": "#"}})}
            ),
            day(3),
        )
    assert str(raised.value) == (
        f"{t.table} {day(3)}: increment {folder}: file part-0.csv has column 'city' more"
        " than once in its header ('city', 'CITY': column names are matched in any case)"
        " (and 1 more file)"
    )

    # a replayed date: the rerun checks every date's input before it changes anything
    (t.increment_dir(day(2)) / "part-0.csv").write_text("id;Name;name\n1;x;y\n")
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(2)}: increment {t.increment_dir(day(2))}: file part-0.csv has column"
        " 'Name' more than once in its header ('Name', 'name': column names are matched in"
        " any case); nothing was changed"
    )
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    assert state.read_state(spark, t.spec).replay is None

    # the first merge of a table without a base, which takes its columns from the input
    first = TableFixture(tmp_path, unique_name + "_new", base=False, source={"format": "csv"})
    first.increment_dir(day(1)).mkdir(parents=True)
    (first.increment_dir(day(1)) / "part-0.csv").write_text("id,name,name\n1,ann,x\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, first.spec, day(1))
    assert str(raised.value) == (
        f"{first.table} {day(1)}: increment {first.increment_dir(day(1))}: file part-0.csv"
        " has column 'name' more than once in its header"
    )


def test_csv_files_whose_headers_differ_name_the_file_and_both_headers(spark, tmp_path, unique_name):
    """Spark reads one input's CSV files with one header: a file listing its columns in another
    order failed as a header that "does not conform to the schema", naming the other file."""
    t = TableFixture(tmp_path, unique_name, source={"format": "csv"})
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    first = TableFixture(tmp_path, unique_name + "_new", base=False, source={"format": "csv"})
    for table in (t, first):  # typed by the table, and the first merge of a table without a base
        folder = table.increment_dir(day(1))
        folder.mkdir(parents=True)
        (folder / "part-0.csv").write_text("id,name,city\n1,ann,Rome\n")
        (folder / "part-1.csv").write_text("id,city,name\n2,Rome,bob\n")
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, table.spec, day(1))
        assert str(raised.value) == (
            f"{table.table} {day(1)}: increment {folder}: file part-1.csv has the header"
            " id,city,name, file part-0.csv id,name,city: the CSV files of one input are"
            " read with one header, so each must list the same columns in the same order"
        )
    assert table_rows(spark, t.table) == [(1, "ann", "Oslo", "2023-12-31", OPEN)]
    (t.increment_dir(day(1)) / "part-1.csv").write_text("ID,Name,City\n2,bob,Rome\n")  # names in any case
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 1


def test_a_csv_header_with_a_quoted_line_end_is_read_whole_under_multiline(spark, tmp_path, unique_name):
    """The header check read the first line only: `id,name,"id<line end>x"` was refused as naming
    'id' twice, and headers that differ after the line end passed it."""
    t = TableFixture(tmp_path, unique_name, source={"format": "csv", "options": {"multiLine": "true"}})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", "Oslo")])
    (folder / "part-0.csv").write_text('id,name,"id\nx"\n1,ann,a\n')
    with pytest.raises(InputError) as raised:  # what Spark reads: a name a Hive table cannot take
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} has columns a Hive table cannot take:"
        " 'id\\nx' (white space, which Hive's Parquet reader cannot parse); rename them in"
        " the source"
    )
    (folder / "part-0.csv").write_text('id,name,"ci\nty"\n1,ann,a\n')
    (folder / "part-1.csv").write_text('id,name,"ci\nxx"\n2,bob,b\n')
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-1.csv has the header"
        " id,name,ci\\nxx, file part-0.csv id,name,ci\\nty: the CSV files of one input are"
        " read with one header, so each must list the same columns in the same order"
    )
    # a quoted line end in a value: the header is its first line alone
    (folder / "part-0.csv").write_text('id,name,city\n1,ann,"Ro\nme"\n')
    (folder / "part-1.csv").write_text('id,name,city\n"2",bob,Oslo\n')
    assert merge.merge_date(spark, t.spec, day(1)).counts["changed"] == 1
    assert table_rows(spark, t.table)[1] == (1, "ann", "Ro\nme", "2024-01-01", OPEN)


def test_csv_files_a_file_filter_leaves_out_are_not_checked_and_the_files_it_keeps_are(spark, tmp_path, unique_name):
    """Source options that filter files (pathGlobFilter, modifiedBefore, modifiedAfter) turned the
    header and left-out file checks off: a kept file with another header failed as Spark's
    header that "does not conform to the schema", and a kept file in a subfolder was left out."""
    import os

    t = TableFixture(
        tmp_path,
        unique_name,
        source={"format": "csv", "options": {"pathGlobFilter": "*.csv", "modifiedAfter": "2020-01-01T00:00:00"}},
    )
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    init_table(spark, t.spec)
    folder = t.increment_dir(day(1))
    (folder / "sub").mkdir(parents=True)
    (folder / "part-0.csv").write_text("id,name,city\n1,ann,Lima\n")
    (folder / "notes.txt").write_text("exported by,on\nnightly job,2024-01-01\n")  # not *.csv
    (folder / "sub" / "notes.txt").write_text("exported by,on\nnightly job,2024-01-01\n")
    (folder / "old.csv").write_text("city,id\nOslo,9\n")
    os.utime(folder / "old.csv", (1546300800, 1546300800))  # 2019: not modified after 2020
    (folder / "part-1.csv").write_text("id,city,name\n2,Nice,bob\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-1.csv has the header"
        " id,city,name, file part-0.csv id,name,city: the CSV files of one input are read"
        " with one header, so each must list the same columns in the same order"
    )
    (folder / "part-1.csv").unlink()
    (folder / "sub" / "part-1.csv").write_text("id,name,city\n2,bob,Nice\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: {folder} has files in subfolders, which Spark would leave out"
        " without a word: sub/part-1.csv; move them away, or set the source option"
        " recursiveFileLookup: 'true' to read them too"
    )
    assert state.read_state(spark, t.spec).last_committed == day(0)
    (folder / "sub" / "part-1.csv").rename(folder / "sub" / "part-1.csv.done")
    assert merge.merge_date(spark, t.spec, day(1)).counts["changed"] == 1
    assert [
        tuple(r) for r in spark.table(t.table).where(f"end_dt = '{OPEN}'").select("id", "city").orderBy("id").collect()
    ] == [(1, "Lima"), (2, "Rome")]


def test_added_missing_and_widened_columns(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, city string, level int")
    t.write_base(spark, [(1, "ann", "Oslo", 1), (2, "bob", None, 1), (3, "cid", "Rome", 1)])
    # day 1: a new column; level arrives as bigint (widens the table's int)
    t.write_increment(
        spark,
        day(1),
        [(1, "ann", "Oslo", 5_000_000_000, "555"), (4, "dan", "Nice", 1, None)],
        "id bigint, name string, city string, level bigint, phone string",
    )
    first = merge.merge_date(spark, t.spec, day(1))
    assert first.counts["columns_added"] == ["phone string"] and first.counts["columns_widened"] == [
        "level int -> bigint"
    ]
    assert "columns added: phone string; columns widened: level int -> bigint" in first.summary()
    assert columns_of(spark, t) == [
        ("id", "bigint"),
        ("name", "string"),
        ("city", "string"),
        ("level", "bigint"),
        ("begin_dt", "string"),
        ("phone", "string"),
        ("end_dt", "string"),
    ]
    # day 2: city is missing: NULL in the new versions; a change only where it was not NULL
    t.write_increment(
        spark, day(2), [(2, "bob", 1, None), (3, "cid", 1, None)], "id bigint, name string, level int, phone string"
    )
    second = merge.merge_date(spark, t.spec, day(2))
    assert second.counts["columns_missing"] == ["city"]
    assert (second.counts["unchanged"], second.counts["changed"]) == (1, 1)
    assert table_rows(spark, t.table) == [
        (1, "ann", "Oslo", 1, "2023-12-31", None, "2024-01-01"),
        (1, "ann", "Oslo", 5_000_000_000, "2024-01-01", "555", OPEN),
        (2, "bob", None, 1, "2023-12-31", None, OPEN),
        (3, "cid", None, 1, "2024-01-02", None, OPEN),
        (3, "cid", "Rome", 1, "2023-12-31", None, "2024-01-02"),
        (4, "dan", "Nice", 1, "2024-01-01", None, OPEN),
    ]
    assert check.run_checks(spark, t.spec)["ok"]


@pytest.mark.parametrize("table_type, input_type", [("float", "double"), ("double", "float")])
def test_a_float_key_and_a_double_key_do_not_mix(spark, tmp_path, unique_name, table_type, input_type):
    """float -> double widens a value column exactly, but not a key: 0.1 stored as float reads
    0.10000000149011612 as double, so the input's 0.1 would open a second version of key 0.1
    beside the first (and a float input for a double key the same the other way round)."""
    t = TableFixture(tmp_path, unique_name, schema=f"id {table_type}, name string, city string")
    t.write_base(spark, [(0.1, "ann", "Oslo")])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), columns_of(spark, t))
    t.write_increment(spark, day(1), [(0.1, "ann", "Rome")], f"id {input_type}, name string, city string")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {t.increment_dir(day(1))} key column 'id' has type {input_type}, the table"
        f" has {table_type}; a float key and a double key are different values (0.1 as a float is"
        f" 0.10000000149011612 as a double): send the key as {table_type}"
    )
    assert (table_rows(spark, t.table), columns_of(spark, t)) == before


def test_a_new_table_takes_column_names_that_are_not_identifiers(spark, tmp_path, unique_name):
    """A hyphen, a leading digit or a non-ASCII letter: Hive (its Parquet reader too) and Spark take
    them, and a later day could already add such a column; the table's first columns must be
    quoted the same way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.table.test_hive_reader import hive_serde_reads

    t = TableFixture(tmp_path, unique_name, base=False)
    names = ["id", "a-b", "1st", "名前"]
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64()), "a-b": ["x", "y"], "1st": ["ann", "bob"], "名前": ["n1", "n2"]}),
        folder / "part-0.parquet",
    )
    merge.merge_date(spark, t.spec, day(1))
    assert [name for name, _ in columns_of(spark, t)] == [*names, "begin_dt", "end_dt"]
    expected = [(1, "x", "ann", "n1", "2024-01-01", OPEN), (2, "y", "bob", "n2", "2024-01-01", OPEN)]
    assert table_rows(spark, t.table) == expected
    with hive_serde_reads(spark):
        assert table_rows(spark, t.table) == expected


@pytest.mark.parametrize(
    "name, reason", [("first name", "white space"), ("a,b", "','"), ("x=y", "'='"), ("f(x)", "'('")]
)
def test_a_column_name_hives_parquet_reader_cannot_parse_is_refused(spark, tmp_path, unique_name, name, reason):
    """Spark writes and reads such a column, Hive's Parquet reader fails on the whole table
    (`expected ';' but got 'name'`, an IndexOutOfBoundsException for a comma)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), columns_of(spark, t))
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": pa.array([1], pa.int64()), "name": ["ann"], "city": ["Rome"], name: ["x"]}),
        folder / "part-0.parquet",
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} has columns a Hive table cannot take:"
        f" {name!r} ({reason}, which Hive's Parquet reader cannot parse); rename them in"
        " the source"
    )
    assert (table_rows(spark, t.table), columns_of(spark, t)) == before


def test_a_timestamp_without_time_zone_is_refused_naming_the_column(spark, tmp_path, unique_name):
    """pandas' naive datetimes, written by pyarrow, read as timestamp_ntz, which a Hive table
    cannot store: the table's creation failed with Hive's 'type expected at the position 7'."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    t = TableFixture(tmp_path, unique_name, base=False)
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {"id": pa.array([1], pa.int64()), "seen": pa.array([dt.datetime(2024, 1, 1, 8, 30)], pa.timestamp("us"))}
        ),
        folder / "part-0.parquet",
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} column 'seen' has type timestamp_ntz, which a Hive table cannot"
        " store (a Parquet timestamp without a time zone, such as pandas' naive datetimes): write it adjusted to UTC"
    )
    assert not catalog.table_exists(spark, t.spec)


def test_a_key_column_that_holds_a_map_is_refused_naming_it(spark, tmp_path, unique_name):
    """Spark can neither group nor join on a map: the merge failed on a sort order deep in its plan."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = TableFixture(tmp_path, unique_name, keys=("k",), base=False)
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table({"k": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64())), "v": ["x"]}), folder / "part-0.parquet"
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} key column 'k' has type map<string,bigint>:"
        " a key cannot hold a map (Spark cannot compare maps)"
    )


def test_a_column_name_with_white_space_around_it_is_refused(spark, tmp_path, unique_name):
    """A CSV header `id, name, city` names ' name' and ' city': the day added those as new columns
    and wrote NULL into name and city of every version it opened."""
    t = TableFixture(tmp_path, unique_name, source={"format": "csv", "options": {"header": "true"}})
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), columns_of(spark, t))
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    (folder / "part-0.csv").write_text("id, name, city\n1,ann,Rome\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder} has columns with white space before or after their names:"
        " [' name', ' city']; rename them in the source (a CSV header is read as written: 'id, name' names ' name')"
    )
    assert (table_rows(spark, t.table), columns_of(spark, t)) == before


def test_a_csv_column_named_corrupt_record_is_a_column_like_any_other(spark, tmp_path, unique_name):
    """Spark's CSV reader takes a column `_corrupt_record` for its own (the text of a malformed
    row): a file with such a column failed with 'Number of column in CSV header is not equal to
    number of fields in the schema'."""
    t = TableFixture(tmp_path, unique_name, base=False, source={"format": "csv", "options": {"header": "true"}})
    for n, text in ((1, "id,_corrupt_record,name\n1,x,ann\n"), (2, "id,_corrupt_record,name\n1,y,ann\n")):
        t.increment_dir(day(n)).mkdir(parents=True)
        (t.increment_dir(day(n)) / "part-0.csv").write_text(text)
        merge.merge_date(spark, t.spec, day(n))
    assert table_rows(spark, t.table) == [
        (1, "x", "ann", "2024-01-01", "2024-01-02"),
        (1, "y", "ann", "2024-01-02", OPEN),
    ]


def test_a_changed_type_fails_naming_the_column_and_both_types(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    before = (table_rows(spark, t.table), columns_of(spark, t), catalog.list_partitions(spark, t.spec))
    t.write_increment(spark, day(1), [(1, "ann", 3.5, "x")], "id bigint, name string, city double, phone string")
    with pytest.raises(
        InputError, match="column 'city' has type double, the table has string; a column cannot change type"
    ):
        merge.merge_date(spark, t.spec, day(1))
    assert (table_rows(spark, t.table), columns_of(spark, t), catalog.list_partitions(spark, t.spec)) == before


def test_a_file_typing_a_column_otherwise_than_the_input_is_read_names_the_file_the_column_and_both_types(
    spark, tmp_path, unique_name
):
    """Where Spark reads files with one schema without merging theirs (the reader option mergeSchema
    off, a source table's partition), a file holding `amount` as string failed naming Spark's
    reader class, SchemaColumnConvertNotSupportedException, and Parquet's BINARY, and was retried."""
    t = TableFixture(
        tmp_path, unique_name, schema="id bigint, amount double", source={"options": {"mergeSchema": False}}
    )
    folder = initialized_with_a_day_folder(spark, t, [(1, 1.5)])
    for key, amount in ((2, pa.array([2.5])), (3, pa.array(["3.5"]))):
        pq.write_table(
            pa.table({"id": pa.array([key], pa.int64()), "amount": amount}), folder / f"part-{key - 2}.parquet"
        )
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    # Spark reads the folder with one file's schema, whichever it lists first: the other one fails
    read_as = {"part-0.parquet": ("double", "string"), "part-1.parquet": ("string", "double")}
    failed = next(name for name in read_as if f"file {name} " in str(raised.value))
    held, expected = read_as[failed]
    assert str(raised.value) == (
        f"{t.table} {day(1)}: cannot read file {failed} of {folder}: column 'amount' is {held} in the file, but read"
        f" as {expected}, its type in another file of the input; every file must give a column one type"
    )
    assert raised.value.final  # the same file fails the same way on every try: not retried
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    # elsewhere (a rerun's check, init's base) the CLI's line of the same failure, without Spark's class name
    with pytest.raises(Exception) as spark_failure:
        spark.read.option("mergeSchema", "false").parquet(str(folder)).collect()
    parquet_type = {"string": "BINARY", "double": "DOUBLE"}[held]
    assert errors.summarize_failure(spark_failure.value) == (
        f"cannot read file {folder / failed}: column 'amount' is Parquet {parquet_type} in the file, but read as"
        f" {expected}"
    )

    # a source table's partition whose file holds the column as another type than the table declares
    spark.sql(f"CREATE DATABASE IF NOT EXISTS ods_{unique_name}")
    spark.sql(
        f"CREATE TABLE ods_{unique_name}.fact_inc (id bigint, amount double) PARTITIONED BY (ds string)"
        " STORED AS PARQUET"
    )
    partition = tmp_path / "fact_inc" / f"ds={day(1)}"
    partition.mkdir(parents=True)
    pq.write_table(
        pa.table({"id": pa.array([2], pa.int64()), "amount": pa.array([7], pa.int64())}), partition / "part-0.parquet"
    )
    spark.sql(f"ALTER TABLE ods_{unique_name}.fact_inc ADD PARTITION (ds = '{day(1)}') LOCATION '{partition}'")
    hive = TableFixture(
        tmp_path,
        unique_name + "_tbl",
        schema="id bigint, amount double",
        source={
            "format": "table",
            "path": None,
            "table": f"ods_{unique_name}.fact_inc",
            "partition": "ds = '{{ ds }}'",
        },
    )
    hive.write_base(spark, [(1, 1.5)])
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, hive.spec, day(1))
    assert str(raised.value) == (
        f"{hive.table} {day(1)}: cannot read file part-0.parquet of ods_{unique_name}.fact_inc partition"
        f" {{'ds': '{day(1)}'}}: column 'amount' is bigint in the file, but read as double, the type the table"
        f" ods_{unique_name}.fact_inc declares"
    )
    assert not spark.catalog.tableExists(hive.table)  # its first merge created the table; dropped again


def write_files(folder, columns_of_files: list[dict]) -> None:
    """One Parquet file per dict of column -> pyarrow array, part-0.parquet, part-1.parquet, ...
    (Spark reads a folder without merging its schemas with the first file's, by path)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, columns in enumerate(columns_of_files):
        pq.write_table(pa.table(columns), folder / f"part-{n}.parquet")


def replace_files(folder, columns_of_files: list[dict]) -> None:
    """`folder`'s files replaced by those `write_files` makes."""
    for old in folder.iterdir():
        old.unlink()
    write_files(folder, columns_of_files)


def merged_twice_read_without_merging_schemas(spark, tmp_path, unique_name) -> TableFixture:
    """A table of (id, amount) whose inputs Spark reads with one file's schema (the reader option
    mergeSchema off), with days 1 and 2 merged."""
    t = TableFixture(
        tmp_path, unique_name, schema="id bigint, amount double", source={"options": {"mergeSchema": False}}
    )
    t.write_base(spark, [(1, 1.5)])
    for n in (1, 2):
        t.write_increment(spark, day(n), [(n + 1, n + 0.5)])
        merge.merge_date(spark, t.spec, day(n))
    return t


def test_a_file_typing_a_key_otherwise_fails_a_rerun_and_a_rebuild_naming_it_before_anything_changes(
    spark, tmp_path, unique_name
):
    """The rerun's check of every date (and the rebuild's) reads the keys; a file holding `id` as
    string failed there with Parquet's BINARY, as an unreadable file another try might read."""
    t = merged_twice_read_without_merging_schemas(spark, tmp_path, unique_name)
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    folder = t.increment_dir(day(1))
    replace_files(
        folder,
        [
            {"id": pa.array([2], pa.int64()), "amount": pa.array([2.5])},
            {"id": pa.array(["3"]), "amount": pa.array([3.5])},
        ],
    )
    explained = (
        f"{t.table} {day(1)}: cannot read file part-1.parquet of {folder}: column 'id' is string in the"
        " file, but read as bigint, its type in another file of the input; every file must give a column"
        " one type"
    )
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(1))
    assert str(raised.value) == explained + "; nothing was changed"
    assert raised.value.final
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    with pytest.raises(InputError) as raised:
        rebuild.rebuild(spark, t.spec)
    assert str(raised.value) == explained and raised.value.final
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before


def table_and_partitions(spark, t: TableFixture) -> tuple:
    """The table's rows, and each partition's end, location and parameters (commit records, replay)."""
    return table_rows(spark, t.table), [(p.end, p.location, p.params) for p in catalog.list_partitions(spark, t.spec)]


def source_table(spark, tmp_path, name: str, days: dict[int, dict]) -> str:
    """A Parquet source table `(id bigint, name string, amount double) PARTITIONED BY (ds)`, a
    partition a day, each of one file written with pyarrow from `days[n]` (column -> array)."""
    table = f"ods_{name}.fact_inc"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS ods_{name}")
    spark.sql(
        f"CREATE TABLE {table} (id bigint, name string, amount double) PARTITIONED BY (ds string) STORED AS PARQUET"
    )
    for n, columns in days.items():
        folder = tmp_path / "fact_inc" / f"ds={day(n)}"
        write_files(folder, [columns])
        spark.sql(f"ALTER TABLE {table} ADD PARTITION (ds = '{day(n)}') LOCATION '{folder}'")
    return table


def fed_by(tmp_path, name: str, table: str, **options) -> TableFixture:
    return TableFixture(
        tmp_path,
        name,
        schema="id bigint, name string, amount double",
        source={"format": "table", "path": None, "table": table, "partition": "ds = '{{ ds }}'"},
        **options,
    )


def row(key: int, name: str, amount) -> dict:
    return {"id": pa.array([key], pa.int64()), "name": pa.array([name]), "amount": pa.array([amount])}


def test_a_rerun_refuses_a_replayed_file_typing_another_column_otherwise_before_anything_changes(
    spark, tmp_path, unique_name
):
    """The rerun's check reads the keys of every replayed date; a file of a later date holding
    `amount` as bigint where its table declares double failed only at that date's merge, after
    the restore was published, leaving a replay pending. Its footer says so up front."""
    table = source_table(spark, tmp_path, unique_name, {1: row(2, "bob", 2.5), 2: row(3, "cid", 3.5)})
    t = fed_by(tmp_path, unique_name, table)
    t.write_base(spark, [(1, "ann", 1.5)])
    for n in (1, 2):
        merge.merge_date(spark, t.spec, day(n))
    before = table_and_partitions(spark, t)
    write_files(tmp_path / "fact_inc" / f"ds={day(2)}", [row(3, "cid", 4)])
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(2)}: cannot read file part-0.parquet of {table} partition {{'ds': '{day(2)}'}}: column"
        f" 'amount' is bigint in the file, but read as double, the type the table {table} declares; nothing was"
        " changed"
    )
    assert raised.value.final
    after = table_and_partitions(spark, t)
    assert after == before and state.read_state(spark, t.spec).replay is None

    write_files(tmp_path / "fact_inc" / f"ds={day(2)}", [row(3, "cid", 4.0)])  # mended: replayed
    replay.rerun(spark, t.spec, day(1))
    assert table_rows(spark, t.table)[-1] == (3, "cid", 4.0, day(2).isoformat(), OPEN)


def test_a_replayed_folder_read_without_merging_schemas_is_checked_file_by_file(spark, tmp_path, unique_name):
    """mergeSchema off: Spark reads a date's files with one file's schema; another file holding
    `amount` as string fails the rerun before the restore, naming it (the folder read with the
    string file's schema fails as a changed column type, also before anything changes, which that
    refusal did not say)."""
    t = merged_twice_read_without_merging_schemas(spark, tmp_path, unique_name)
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))
    folder = t.increment_dir(day(2))
    replace_files(
        folder,
        [
            {"id": pa.array([3], pa.int64()), "amount": pa.array([2.5])},
            {"id": pa.array([4], pa.int64()), "amount": pa.array(["3.5"])},
        ],
    )
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(1))
    assert str(raised.value) in (
        f"{t.table} {day(2)}: cannot read file part-1.parquet of {folder}: column 'amount' is string in the file, but"
        " read as double, its type in another file of the input; every file must give a column one type; nothing"
        " was changed",
        f"{t.table} {day(2)}: increment {folder} column 'amount' has type string, the table has double; a column"
        " cannot change type (only int -> bigint and float -> double widen; a decimal input may have fewer digits);"
        " nothing was changed",
    )
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before
    assert state.read_state(spark, t.spec).replay is None


def rewritten_alike(path: Path, columns: dict) -> None:
    """`path` rewritten with `columns` (one array each, of any length), at its size and modification
    time (padded with a column its table does not declare): a change no fingerprint of names, sizes
    and times sees."""
    size, times = path.stat().st_size, (path.stat().st_atime_ns, path.stat().st_mtime_ns)
    for pad in range(4096):
        written = pa.BufferOutputStream()
        padding = pa.array(["x" * pad] + [""] * (len(next(iter(columns.values()))) - 1))
        pq.write_table(
            pa.table({**columns, "pad": padding}),
            written,
            store_schema=False,
            compression="none",
            use_dictionary=False,
            write_statistics=False,
        )
        if written.getvalue().size == size:
            path.write_bytes(written.getvalue().to_pybytes())
            os.utime(path, ns=times)
            return
    raise AssertionError(f"no padding gives {size} bytes")


def test_a_restore_of_untracked_columns_names_an_earlier_file_its_input_cannot_be_read_as(spark, tmp_path, unique_name):
    """With an untracked column the restore rebuilds the open rows from the base and the earlier
    increments; one of their files holding `amount` as bigint where its table declares double
    failed with Spark's SchemaColumnConvertNotSupportedException and Parquet's INT64."""
    table = source_table(spark, tmp_path, unique_name, {n: row(n + 1, f"n{n}", n + 0.5) for n in (1, 2, 3)})
    t = fed_by(tmp_path, unique_name, table, track_columns=["name"])
    t.write_base(spark, [(1, "ann", 1.5)])
    for n in (1, 2, 3):
        merge.merge_date(spark, t.spec, day(n))
    before = table_and_partitions(spark, t)
    rewritten_alike(
        tmp_path / "fact_inc" / f"ds={day(1)}" / "part-0.parquet",
        {"id": pa.array([2], pa.int64()), "name": pa.array(["n1"]), "amount": pa.array([7], pa.int64())},
    )
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(3))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: cannot read file part-0.parquet of {table} partition {{'ds': '{day(1)}'}}: column"
        f" 'amount' is bigint in the file, but read as double, the type the table {table} declares; nothing was"
        " changed"
    )
    after = table_and_partitions(spark, t)
    assert after == before


def test_a_bug_inside_a_reruns_check_is_raised_as_itself(spark, tmp_path, unique_name, monkeypatch):
    """The check took any failure for a file Spark cannot read: a bug was reported as an
    unreadable input (`KeyError: ...; nothing was changed`)."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, amount double")
    t.write_base(spark, [(1, 1.5)])
    t.write_increment(spark, day(1), [(2, 2.5)])
    merge.merge_date(spark, t.spec, day(1))
    before = (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec))

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(dated, "check_keys", broken)
    with pytest.raises(KeyError, match="a bug"):
        replay.rerun(spark, t.spec, day(1))
    assert (table_rows(spark, t.table), catalog.list_partitions(spark, t.spec)) == before


def test_the_explanations_of_spark_failures_raise_a_bug_as_itself(spark, tmp_path, unique_name, monkeypatch):
    """They caught any exception: a bug in a diagnosis hid behind Spark's failure, or became an
    input's error (a nested type's names), and an Observation never observed read as no metrics."""
    import pyspark.sql.types
    from pyspark.errors import PySparkAssertionError
    from pyspark.sql import Observation

    with pytest.raises(PySparkAssertionError):
        metrics.observed_metrics(Observation(f"zipper_never_{unique_name}"))

    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, level int", source={"format": "csv"})
    df = spark.createDataFrame([(1, (2,))], "id bigint, s struct<f:int>")
    original = pyspark.sql.types._parse_datatype_string

    def parse_failing_on_structs(text: str):
        if text.startswith("struct<"):
            raise KeyError("a bug")
        return original(text)

    with monkeypatch.context() as patched:
        patched.setattr(pyspark.sql.types, "_parse_datatype_string", parse_failing_on_structs)
        with pytest.raises(KeyError, match="a bug"):
            column_checks.refuse_unwritable_types(df, t.spec, day(1).isoformat(), "increment")

    t.write_base(spark, [(1, "ann", 1)])
    init_table(spark, t.spec)
    t.increment_dir(day(1)).mkdir(parents=True)
    (t.increment_dir(day(1)) / "part-0.csv").write_text("id,name,level\n1,ann,x9\n")
    monkeypatch.setattr(csv_values, "_bad_record", lambda *args: {}["a bug"])
    with pytest.raises(KeyError, match="a bug"):
        merge.merge_date(spark, t.spec, day(1))


def test_a_base_file_typing_a_column_otherwise_fails_init_naming_it(spark, tmp_path, unique_name):
    """A base read with mergeSchema off takes the first file's columns; a later file with `amount`
    as string failed the init's write with Parquet's BINARY, as a failure another try might mend."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, amount double")
    t.raw["base"]["options"] = {"mergeSchema": False}
    t.path.write_text(yaml.safe_dump(t.raw, sort_keys=False))
    spec = load_spec_file(t.path)
    base = t.data / "base"
    write_files(
        base,
        [
            {"id": pa.array([1], pa.int64()), "amount": pa.array([1.5])},
            {"id": pa.array([2], pa.int64()), "amount": pa.array(["2.5"])},
        ],
    )
    with pytest.raises(InputError) as raised:
        init_table(spark, spec)
    assert str(raised.value) == (
        f"{t.table} {day(0)}: cannot read file part-1.parquet of {base}: column 'amount' is string in the file, but"
        " read as double, its type in another file of the input; every file must give a column one type"
    )
    assert raised.value.final
    assert not state.read_state(spark, spec).initialized
    write_files(
        base,
        [
            {"id": pa.array([1], pa.int64()), "amount": pa.array([1.5])},
            {"id": pa.array([2], pa.int64()), "amount": pa.array([2.5])},
        ],
    )
    init_table(spark, spec)  # the mended base loads
    assert [r[:2] for r in table_rows(spark, t.table)] == [(1, 1.5), (2, 2.5)]


def test_a_decimal_input_with_fewer_digits_is_read_into_the_tables_decimal(spark, tmp_path, unique_name):
    """decimal(5,1) fits decimal(10,2) exactly: read as the table's type, the table unchanged; an
    input with more places or more integer digits than the table's column is refused."""
    from decimal import Decimal

    t = TableFixture(tmp_path, unique_name, schema="id bigint, amount decimal(10,2)")
    t.write_base(spark, [(1, Decimal("1.50")), (2, Decimal("2.00"))], "id bigint, amount decimal(10,2)")
    init_table(spark, t.spec)
    t.write_increment(
        spark,
        day(1),
        [(1, Decimal("1.5")), (2, Decimal("2.1")), (3, Decimal("9999.9"))],
        "id bigint, amount decimal(5,1)",
    )
    result = merge.merge_date(spark, t.spec, day(1))
    assert (result.counts["unchanged"], result.counts["changed"], result.counts["new"]) == (1, 1, 1)
    assert not result.counts.get("columns_widened")
    assert columns_of(spark, t)[1] == ("amount", "decimal(10,2)")
    assert table_rows(spark, t.table) == [
        (1, Decimal("1.50"), "2023-12-31", OPEN),
        (2, Decimal("2.00"), "2023-12-31", "2024-01-01"),
        (2, Decimal("2.10"), "2024-01-01", OPEN),
        (3, Decimal("9999.90"), "2024-01-01", OPEN),
    ]
    before = table_rows(spark, t.table)
    for wider in ("decimal(10,3)", "decimal(11,2)"):
        t.write_increment(spark, day(2), [(1, Decimal("1.5"))], f"id bigint, amount {wider}")
        with pytest.raises(
            InputError, match=rf"column 'amount' has type {re.escape(wider)}, the table has decimal\(10,2\)"
        ):
            merge.merge_date(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == before


def test_columns_are_added_after_the_publish_and_a_crash_in_between_is_completed(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo")])
    t.write_increment(spark, day(1), [(1, "ann", "Rome", "555")], "id bigint, name string, city string, phone string")
    with faults.crash_at("before_add_columns"), pytest.raises(faults.SimulatedCrash):
        merge.merge_date(spark, t.spec, day(1))
    # published, the new column not visible yet: readers see the day's data without it
    assert state.read_state(spark, t.spec).last_committed == day(1)
    assert [c for c, _ in columns_of(spark, t)] == ["id", "name", "city", "begin_dt", "end_dt"]
    assert table_rows(spark, t.table) == [
        (1, "ann", "Oslo", "2023-12-31", "2024-01-01"),
        (1, "ann", "Rome", "2024-01-01", OPEN),
    ]
    # the next run completes the change before anything else
    assert merge.merge_date(spark, t.spec, day(1)).action == "noop"
    assert table_rows(spark, t.table) == [
        (1, "ann", "Oslo", "2023-12-31", None, "2024-01-01"),
        (1, "ann", "Rome", "2024-01-01", "555", OPEN),
    ]


def test_a_csv_decimal_with_more_places_than_its_column_is_refused_not_rounded(spark, tmp_path, unique_name):
    """Spark's CSV parser read 1.239 into decimal(7,2) as 1.24, without a word."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, amt decimal(7,2)", source={"format": "csv"})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", None)])
    (folder / "part-0.csv").write_text("id,name,amt\n1,ann,1.50\n2,bob,-3.240000\n3,cid,12.5\n")
    (folder / "part-1.csv").write_text("id,name,amt\n7,gus,1.239\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column 'amt'"
        " (decimal(7,2)) cannot hold '1.239' without rounding it (row with id=7)"
    )
    assert state.read_state(spark, t.spec).last_committed == day(0)
    (folder / "part-1.csv").write_text("id,name,amt\n7,gus,1.2300\n")  # trailing zeros round nothing
    merge.merge_date(spark, t.spec, day(1))
    assert [(r.id, str(r.amt)) for r in spark.table(t.table).where(f"end_dt = '{OPEN}'").orderBy("id").collect()] == [
        (1, "1.50"),
        (2, "-3.24"),
        (3, "12.50"),
        (7, "1.23"),
    ]


def test_a_csv_decimal_in_exponent_form_or_with_grouping_marks_is_refused_where_it_would_round(
    spark, tmp_path, unique_name
):
    """Places counted only after a plain point: Spark's parser read 1.239e0 and 12391E-4 into
    decimal(7,2) as 1.24, and 1,234.567 (it drops the commas) as 1234.57, without a word."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, amt decimal(7,2)", source={"format": "csv"})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", None)])
    (folder / "part-0.csv").write_text(
        "id,name,amt\n1,ann,1.5E+1\n2,bob,12300E-4\n3,cid,-1.2e-1\n4,dan,0.000e-9\n"
        '5,eve,"1,234.5"\n6,fay,"-12,345.6e-1"\n'
    )
    for value in ("1.239e0", "12391E-4", "5e-3", "1,234.567"):
        (folder / "part-1.csv").write_text(f'id,name,amt\n7,gus,"{value}"\n')
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(1))
        assert str(raised.value) == (
            f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column 'amt'"
            f" (decimal(7,2)) cannot hold '{value}' without rounding it (row with id=7)"
        )
    # a comma that does not group thousands: Spark's parser drops it (1,5 read 15, 1,2,3 read 123)
    for value in ("1,5", "1,2,3", "12,34.5", "1234,567"):
        (folder / "part-1.csv").write_text(f'id,name,amt\n7,gus,"{value}"\n')
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(1))
        assert str(raised.value) == (
            f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column 'amt'"
            f" (decimal(7,2)) cannot hold '{value}' without dropping its ','"
            " (read as a thousands mark) (row with id=7)"
        )
    # more integer digits than the column holds: Spark refuses it, named as a value that does not parse
    (folder / "part-1.csv").write_text("id,name,amt\n7,gus,1e10\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column 'amt'"
        " (decimal(7,2)) cannot hold '1e10' (row with id=7)"
    )
    assert state.read_state(spark, t.spec).last_committed == day(0)
    (folder / "part-1.csv").unlink()
    merge.merge_date(spark, t.spec, day(1))
    assert [(r.id, str(r.amt)) for r in spark.table(t.table).where(f"end_dt = '{OPEN}'").orderBy("id").collect()] == [
        (1, "15.00"),
        (2, "1.23"),
        (3, "-0.12"),
        (4, "0.00"),
        (5, "1234.50"),
        (6, "-1234.56"),
    ]

    # another locale's marks (de-DE: 1.234,5), as Spark's parser reads them
    german = TableFixture(
        tmp_path,
        unique_name + "_de",
        schema="id bigint, name string, amt decimal(7,2)",
        source={"format": "csv", "options": {"sep": ";", "locale": "de-DE"}},
    )
    folder = initialized_with_a_day_folder(spark, german, [(1, "ann", None)])
    (folder / "part-0.csv").write_text("id;name;amt\n1;ann;1.234,5\n7;gus;1,239\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, german.spec, day(1))
    assert str(raised.value).endswith(
        "file part-0.csv: column 'amt' (decimal(7,2)) cannot hold '1,239' without rounding it (row with id=7)"
    )
    (folder / "part-0.csv").write_text("id;name;amt\n1;ann;1.234,5\n7;gus;1,2300\n")
    merge.merge_date(spark, german.spec, day(1))
    assert [
        (r.id, str(r.amt)) for r in spark.table(german.table).where(f"end_dt = '{OPEN}'").orderBy("id").collect()
    ] == [(1, "1234.50"), (7, "1.23")]


def test_a_csv_timestamp_with_more_than_microseconds_is_refused_not_truncated(spark, tmp_path, unique_name):
    """SQL Server's datetime2 writes 7 fractional digits; Spark's CSV parser cut 00:00:00.1234567 to
    .123456 without a word, so a change in the 7th digit was taken for a re-sent unchanged row."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, seen timestamp", source={"format": "csv"})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", None)])
    (folder / "part-0.csv").write_text(
        "id,name,seen\n1,ann,2024-01-01 08:00:00.1234560\n"
        "2,bob,2024-01-01T08:00:00.000001Z\n3,cid,2024-01-01 08:00:00\n"
    )
    (folder / "part-1.csv").write_text("id,name,seen\n7,gus,2024-01-01 08:00:00.1234567+02:00\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column 'seen' (timestamp)"
        " cannot hold '2024-01-01 08:00:00.1234567+02:00' without truncating it to"
        " microseconds (row with id=7)"
    )
    (folder / "part-1.csv").unlink()
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 2


def test_csv_with_schema_orc_and_hive_table_partition(spark, tmp_path, unique_name):
    csv = TableFixture(
        tmp_path,
        unique_name + "_csv",
        schema="id bigint, name string, score decimal(5,2)",
        source={"format": "csv", "schema": {"score": "decimal(5,2)"}},
    )
    csv.write_base(spark, [(1, "ann", None)])
    csv.increment_dir(day(1)).mkdir(parents=True)
    # columns in another order than the table's, and a new one typed string
    (csv.increment_dir(day(1)) / "part-0.csv").write_text("Score,ID,name,note\n1.50,1,ann,hi\n2.25,2,bob,\n")
    result = merge.merge_date(spark, csv.spec, day(1))
    assert (result.counts["changed"], result.counts["new"], result.counts["columns_added"]) == (1, 1, ["note string"])
    assert [
        (r.id, str(r.score), r.note) for r in spark.table(csv.table).where(f"end_dt = '{OPEN}'").orderBy("id").collect()
    ] == [(1, "1.50", "hi"), (2, "2.25", None)]

    orc = TableFixture(tmp_path, unique_name + "_orc", source={"format": "orc"})
    orc.write_base(spark, [(1, "ann", "Oslo")])
    spark.createDataFrame([(1, "ann", "Rome")], orc.schema).write.orc(str(orc.increment_dir(day(1))))
    assert merge.merge_date(spark, orc.spec, day(1)).counts["changed"] == 1

    spark.sql(f"CREATE DATABASE IF NOT EXISTS ods_{unique_name}")
    spark.sql(
        f"CREATE TABLE ods_{unique_name}.user_inc (id bigint, name string, city string) PARTITIONED BY (ds string)"
        " STORED AS PARQUET"
    )
    spark.sql(
        f"INSERT INTO ods_{unique_name}.user_inc PARTITION (ds = '2024-01-01') VALUES (1, 'ann', 'Lyon'), (5, 'eve', 'Pau')"
    )
    spark.sql(f"INSERT INTO ods_{unique_name}.user_inc PARTITION (ds = '2024-01-02') VALUES (9, 'zed', 'Pau')")
    hive = TableFixture(
        tmp_path,
        unique_name + "_tbl",
        source={
            "format": "table",
            "path": None,
            "table": f"ods_{unique_name}.user_inc",
            "partition": "ds = '{{ ds }}'",
        },
    )
    hive.write_base(spark, [(1, "ann", "Oslo")])
    result = merge.merge_date(spark, hive.spec, day(1))
    assert (result.counts["changed"], result.counts["new"], result.counts["open_after"]) == (1, 1, 2)

    merge.merge_date(spark, hive.spec, day(2))
    missing = hive.spec.table + " " + day(3).isoformat()
    with pytest.raises(InputError, match=rf"^{missing}: increment not found: ods_{unique_name}.user_inc partition"):
        merge.merge_date(spark, hive.spec, day(3))  # no such partition: the message names the table
    # with on_missing_input: skip, an absent partition is a date without input: committed as skipped
    skipping = hive.spec.model_copy(update={"source": hive.spec.source.model_copy(update={"on_missing_input": "skip"})})
    skipped = merge.merge_date(spark, skipping, day(3))
    assert (skipped.counts["skipped"], skipped.counts["open_after"]) == ("no input", 3)
    assert skipped.message == f"no input: ods_{unique_name}.user_inc partition {{'ds': '2024-01-03'}} not found"
    for partition, said in (
        ("dt = '{{ ds }}'", "but ods_{0}.user_inc is partitioned by ['ds']: name each of them"),
        ("ds = '{{ ds }}' AND src = 'a'", "names ['ds', 'src'], but"),
    ):
        wrong = TableFixture(
            tmp_path,
            unique_name + "_w",
            source={"format": "table", "path": None, "table": f"ods_{unique_name}.user_inc", "partition": partition},
        )
        with pytest.raises(InputError) as err:  # before anything is created
            merge.merge_date(spark, wrong.spec, day(1))
        assert str(err.value).startswith(f"{wrong.spec.table} {day(1)}: source.partition names ")
        assert said.format(unique_name) in str(err.value) and not spark.catalog.tableExists(wrong.spec.table)


def test_a_past_day_resent_with_a_new_or_wider_column_replays_and_a_later_conflicting_type_fails_first(
    spark, tmp_path, unique_name
):
    """A re-sent past day that adds a column (or widens one) replays: its merge alters the
    table. The rerun's up-front check refused it ("merge its date first", which is what the
    merge of a past date does, through that same replay), leaving no way to replay it."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, level int")
    t.write_base(spark, [(1, "ann", 1), (2, "bob", 1)])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(1, "ann", 2)])
    t.write_increment(spark, day(2), [(2, "bob", 3)])
    merge.merge_date(spark, t.spec, day(1))
    merge.merge_date(spark, t.spec, day(2))

    # day 1 re-sent: a new column, and level as bigint
    t.write_increment(
        spark, day(1), [(1, "ann", 5_000_000_000, "555")], "id bigint, name string, level bigint, phone string"
    )
    result = merge.merge_date(spark, t.spec, day(1))
    assert result.action == "replay" and result.counts["columns_added"] == ["phone string"]
    assert result.counts["columns_widened"] == ["level int -> bigint"]
    assert columns_of(spark, t) == [
        ("id", "bigint"),
        ("name", "string"),
        ("level", "bigint"),
        ("begin_dt", "string"),
        ("phone", "string"),
        ("end_dt", "string"),
    ]
    assert table_rows(spark, t.table) == [
        (1, "ann", 1, "2023-12-31", None, "2024-01-01"),
        (1, "ann", 5_000_000_000, "2024-01-01", "555", OPEN),
        (2, "bob", 1, "2023-12-31", None, "2024-01-02"),
        (2, "bob", 3, "2024-01-02", None, OPEN),
    ]
    assert check.run_checks(spark, t.spec)["ok"]

    # a column one replayed date adds, typed otherwise by a later one: refused before the restore
    before = (table_rows(spark, t.table), columns_of(spark, t), catalog.list_partitions(spark, t.spec))
    t.write_increment(
        spark, day(1), [(1, "ann", 2, "555", "a@x")], "id bigint, name string, level bigint, phone string, email string"
    )
    t.write_increment(
        spark, day(2), [(2, "bob", 3, None, 1.5)], "id bigint, name string, level bigint, phone string, email double"
    )
    with pytest.raises(InputError) as raised:
        replay.rerun(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(2)}: increment {t.increment_dir(day(2))} column 'email' has type double, the table has string;"
        " a column cannot change type (only int -> bigint and float -> double widen; a decimal input may have fewer"
        " digits); nothing was changed"
    )
    assert (table_rows(spark, t.table), columns_of(spark, t), catalog.list_partitions(spark, t.spec)) == before


def test_an_orc_source_tables_file_whose_column_orc_would_convert_losing_values_is_refused(
    spark, tmp_path, unique_name
):
    """Spark reads an ORC table's files with the table's types and ORC converts what a file holds
    otherwise without a word: 'x3.5' in a double column was merged as NULL. Conversions that keep
    every value (Hive's ALTER TABLE ... CHANGE: int read as bigint) are taken."""
    import pyarrow.orc as orc

    table = f"ods_{unique_name}.fact_orc"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS ods_{unique_name}")
    spark.sql(f"CREATE TABLE {table} (id bigint, amount double, n bigint) PARTITIONED BY (ds string) STORED AS ORC")
    partition = tmp_path / "fact_orc" / f"ds={day(1)}"
    partition.mkdir(parents=True)
    orc.write_table(
        pa.table(
            {"id": pa.array([2, 3], pa.int64()), "amount": pa.array(["x3.5", "4.5"]), "n": pa.array([1, 2], pa.int32())}
        ),
        str(partition / "part-0.orc"),
    )
    spark.sql(f"ALTER TABLE {table} ADD PARTITION (ds = '{day(1)}') LOCATION '{partition}'")
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, amount double, n bigint",
        source={"format": "table", "path": None, "table": table, "partition": "ds = '{{ ds }}'"},
    )
    t.write_base(spark, [(1, 1.5, 0)])
    init_table(spark, t.spec, day(0))
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: cannot read file part-0.orc of {table} partition {{'ds': '{day(1)}'}}: column 'amount'"
        " is string in the file, but the table reads it as double, which ORC converts without a word, losing the"
        " values that do not parse (as NULL); rewrite the file with the table's types"
    )
    assert state.read_state(spark, t.spec).last_committed == day(0)

    orc.write_table(
        pa.table(
            {"id": pa.array([2, 3], pa.int64()), "amount": pa.array([3.5, 4.5]), "n": pa.array([1, 2], pa.int32())}
        ),
        str(partition / "part-0.orc"),
    )
    merge.merge_date(spark, t.spec, day(1))
    assert sorted(
        tuple(r) for r in spark.table(t.table).where("end_dt = '9999-12-31'").select("id", "amount", "n").collect()
    ) == [(1, 1.5, 0), (2, 3.5, 1), (3, 4.5, 2)]
