"""Reading CSV inputs: values Spark's parser would change without a word, the header check's
reads, and failures that are not the input's (a bug is not taken for an unreadable file)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.jobs.test_merge import counted_jvm_calls
from tests.support import TableFixture, day, initialized_with_a_day_folder
from zipper.core.errors import InputError
from zipper.inputs import csv_header
from zipper.jobs import merge
from zipper.table import state

OPEN = "9999-12-31"


def open_values(spark, t: TableFixture, *columns: str) -> list[tuple]:
    return [
        tuple(r)
        for r in spark.table(t.table).where(f"end_dt = '{OPEN}'").orderBy("id").select("id", *columns).collect()
    ]


def test_a_csv_float_or_double_out_of_its_range_is_refused_not_made_infinity_or_0(spark, tmp_path, unique_name):
    """Spark's CSV parser read 1e400 into a double (1e39 into a float) as Infinity, and 1e-400 as
    0, without a word; a value written as infinity or NaN is one, and kept."""
    t = TableFixture(
        tmp_path, unique_name, schema="id bigint, name string, score double, ratio float", source={"format": "csv"}
    )
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", None, None)])
    (folder / "part-0.csv").write_text(
        "id,name,score,ratio\n1,ann,Infinity,-Infinity\n2,bob,-Inf,Inf\n"
        "3,cid,NaN,NaN\n4,dan,-0.0,0e-999\n5,eve,1e308,3.4e38\n6,fay,4.9e-324,1.4e-45\n"
        "7,gus,0.000e-500,1e38\n"
    )
    for column, value, loss in [
        ("score", "1e400", "overflowing it to infinity"),
        ("score", "-1e400", "overflowing it to infinity"),
        ("ratio", "1e39", "overflowing it to infinity"),
        ("score", "1e-400", "underflowing it to 0"),
        ("score", "-2.5E-999", "underflowing it to 0"),
        ("ratio", "1e-50", "underflowing it to 0"),
    ]:
        kind = "double" if column == "score" else "float"
        row = {"score": "1.5", "ratio": "2.5", column: value}
        (folder / "part-1.csv").write_text(f"id,name,score,ratio\n8,hal,{row['score']},{row['ratio']}\n")
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(1))
        assert str(raised.value) == (
            f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column {column!r}"
            f" ({kind}) cannot hold {value!r} without {loss} (row with id=8)"
        )
        assert state.read_state(spark, t.spec).last_committed == day(0)
    (folder / "part-1.csv").unlink()
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 6
    values = open_values(spark, t, "score", "ratio")
    assert values[:2] == [(1, math.inf, -math.inf), (2, -math.inf, math.inf)]
    assert values[2][0] == 3 and math.isnan(values[2][1]) and math.isnan(values[2][2])
    assert values[3:] == [
        (4, -0.0, 0.0),
        (5, 1e308, pytest.approx(3.4e38)),
        (6, 5e-324, pytest.approx(1.4e-45)),
        (7, 0.0, pytest.approx(1e38)),
    ]

    # the first merge of a table without a base: the column typed by Spark's inference
    inferred = TableFixture(tmp_path, unique_name + "_new", base=False, source={"format": "csv"})
    inferred.increment_dir(day(1)).mkdir(parents=True)
    (inferred.increment_dir(day(1)) / "part-0.csv").write_text("id,score\n1,2.5\n2,1e400\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, inferred.spec, day(1))
    assert str(raised.value).endswith(
        "file part-0.csv: column 'score' (double) cannot hold '1e400' without"
        " overflowing it to infinity (row with id=2)"
    )


def write_csv_files(folder: Path, count: int, header: str = "id,name,city") -> list[str]:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"part-{i:03d}.csv").write_text(f"{header}\n{i},n{i},c{i}\n")
    return [f"file:{folder}/part-{i:03d}.csv" for i in range(count)]


def test_the_csv_header_check_reads_each_file_in_four_jvm_calls(spark, tmp_path, monkeypatch):
    """Each file's header took about twelve py4j calls (file system, codec, three readers, lines);
    it takes four (path, open, read, close), the file system and codec once for files alike."""
    one = write_csv_files(tmp_path / "one", 1)
    many = write_csv_files(tmp_path / "many", 30)
    calls = counted_jvm_calls(spark, monkeypatch)

    def calls_to_check(paths):
        calls.clear()
        csv_header.check(spark, paths, {}, "increment")
        return len(calls)

    counted = {"one": calls_to_check(one), "many": calls_to_check(many)}
    monkeypatch.undo()
    assert counted["many"] - counted["one"] <= 4 * (len(many) - len(one))
    assert counted["one"] <= 8
    # every file's header is still read: the last one's differs
    (tmp_path / "many" / "part-029.csv").write_text("id,city,name\n1,a,b\n")
    with pytest.raises(
        InputError,
        match=r"^increment: file part-029.csv has the header id,city,name, file"
        r" part-000.csv id,name,city: ",
    ):
        csv_header.check(spark, many, {}, "increment")


def test_a_csv_header_is_found_as_spark_finds_it_with_a_line_separator_compression_or_charset(
    spark, tmp_path, unique_name
):
    """Under the `lineSep` option the header was the first of Java's lines, cut at the separator:
    a first record that was a comment or empty hid the header (neither check ran)."""
    t = TableFixture(tmp_path, unique_name, source={"format": "csv", "options": {"lineSep": ";", "comment": "#"}})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", "Oslo")])
    (folder / "part-0.csv").write_text("#exported;id,name,name;1,ann,x;")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value) == (
        f"{t.table} {day(1)}: increment {folder}: file part-0.csv has column 'name' more than once in its header"
    )
    (folder / "part-0.csv").write_text(";id,name,city;1,ann,Rome;")
    (folder / "part-1.csv").write_text("#exported\n;id,city,name;2,Rome,bob;")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value).endswith(
        "file part-1.csv has the header id,city,name, file part-0.csv id,name,city:"
        " the CSV files of one input are read with one header, so each must list the"
        " same columns in the same order"
    )
    (folder / "part-1.csv").write_text("#exported\n;id,name,city;2,bob,Rome;")
    counts = merge.merge_date(spark, t.spec, day(1)).counts
    assert (counts["changed"], counts["new"]) == (1, 1)
    assert open_values(spark, t, "name", "city") == [(1, "ann", "Rome"), (2, "bob", "Rome")]

    # Windows line ends as the separator; a gzipped file; a header in another charset
    import gzip

    for name, options, write in [
        ("crlf", {"lineSep": "\r\n"}, lambda p, text: p.write_bytes(text.replace("\n", "\r\n").encode())),
        ("gz", {}, lambda p, text: p.with_name(p.name + ".gz").write_bytes(gzip.compress(text.encode()))),
        (
            "utf16",
            {"encoding": "UTF-16", "multiLine": "true"},  # Spark reads UTF-16 under multiLine only
            lambda p, text: p.write_bytes(text.encode("utf-16")),
        ),
        ("latin1", {"encoding": "ISO-8859-1"}, lambda p, text: p.write_bytes(text.encode("latin-1"))),
    ]:
        other = TableFixture(
            tmp_path,
            f"{unique_name}_{name}",
            schema="id bigint, name string, città string",
            source={"format": "csv", "options": options},
        )
        folder = initialized_with_a_day_folder(spark, other, [(1, "ann", "Oslo")])
        write(folder / "part-0.csv", "id,name,città\n2,bob,Rome\n")
        write(folder / "part-1.csv", "id,città,CITTÀ\n3,Nice,Nizza\n")
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, other.spec, day(1))
        assert "has column 'città' more than once in its header ('città', 'CITTÀ'" in str(raised.value), name
        (folder / ("part-1.csv.gz" if name == "gz" else "part-1.csv")).unlink()
        assert merge.merge_date(spark, other.spec, day(1)).counts["new"] == 1, name


def test_a_bug_while_reading_an_input_is_raised_as_itself_not_as_an_unreadable_file(
    spark, tmp_path, unique_name, monkeypatch
):
    """Every failure to read was taken for the input's: a bug in zipper (or in its use of a
    library) was reported as an unreadable file, or its header left unchecked, without a trace."""
    import pyarrow.parquet as pq

    from zipper.core import fs
    from zipper.inputs import footers

    t = TableFixture(tmp_path, unique_name, source={"format": "csv"})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", "Oslo")])
    (folder / "part-0.csv").write_text("id,name,city\n2,bob,Rome\n")

    def bug(*args, **kwargs):
        raise KeyError("a bug")

    # a classic session's reader, or a Spark Connect client's
    for where, name in [(fs.FileHeads, "read"), (type(spark.read), "load")]:
        with monkeypatch.context() as patched:
            patched.setattr(where, name, bug)
            with pytest.raises(KeyError, match="a bug"):
                merge.merge_date(spark, t.spec, day(1))
    assert state.read_state(spark, t.spec).last_committed == day(0)

    not_parquet = tmp_path / "part-0.parquet"
    not_parquet.write_text("id\n1\n")
    assert footers.nanosecond_columns(str(not_parquet)) == []  # unreadable: Spark's message stands alone
    assert footers.nanosecond_columns(str(tmp_path / "gone.parquet")) == []
    monkeypatch.setattr(pq, "read_schema", bug)
    with pytest.raises(KeyError, match="a bug"):
        footers.nanosecond_columns(str(not_parquet))


def test_a_reader_option_zipper_defaults_is_the_users_in_any_case(spark, tmp_path, unique_name):
    """Spark reads option names in any case and keeps the spelling given last: zipper's default
    `inferSchema: true`, set after a user's `inferschema: false`, won over it."""
    t = TableFixture(tmp_path, unique_name, base=False, source={"format": "csv", "options": {"inferschema": False}})
    t.increment_dir(day(1)).mkdir(parents=True)
    (t.increment_dir(day(1)) / "part-0.csv").write_text("id,score\n1,2.5\n2,007\n")
    merge.merge_date(spark, t.spec, day(1))
    assert dict(spark.table(t.table).dtypes)["score"] == "string"
    assert sorted(tuple(r) for r in spark.table(t.table).select("id", "score").collect()) == [
        ("1", "2.5"),
        ("2", "007"),
    ]


def test_a_csv_empty_string_is_kept_apart_from_null_with_the_null_value_option(spark, tmp_path, unique_name):
    """Spark reads an empty field and `""` alike, as NULL; the remedy docs/columns.md gives, `nullValue` set to
    a text the files never hold, reads `""` as an empty string through zipper's checks too."""
    t = TableFixture(
        tmp_path,
        unique_name,
        schema="id bigint, name string, score double",
        source={"format": "csv", "options": {"nullValue": "\\N"}},
    )
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", 1.0)])
    (folder / "part-0.csv").write_text('id,name,score\n1,"",1.0\n2,,2.5\n3,"\\N",\n')
    merge.merge_date(spark, t.spec, day(1))
    assert open_values(spark, t, "name", "score") == [(1, "", 1.0), (2, None, 2.5), (3, None, None)]
