"""The CLI's row output: what `slice` and `history` write."""

from __future__ import annotations

import json

from zipper.cli import output


def test_csv_keeps_null_and_empty_text_apart_as_spark_writes_them(spark, tmp_path):
    df = spark.createDataFrame([(1, None, "a,b"), (2, "", 'say "hi"')], "id bigint, city string, note string")
    out = tmp_path / "rows.csv"
    output.write_rows(df, "csv", str(out), "dw.dim")
    assert out.read_text() == 'id,city,note\n1,,"a,b"\n2,"","say ""hi"""\n'
    # Spark's own CSV writer (RFC 4180 quotes) writes the same bytes
    df.coalesce(1).write.options(header="true", escape='"').csv(str(tmp_path / "spark"))
    (written,) = (tmp_path / "spark").glob("part-*.csv")
    assert written.read_text() == out.read_text()


def test_every_column_type_is_written_as_json_and_csv(spark, tmp_path):
    """Nested values, binary and NaN used to fail `--format json` (`bytes is not JSON serializable`)
    and come out as Python's repr in CSV (`Row(a=1)`, `b'..'`, `nan`)."""
    df = spark.sql(
        "SELECT 1L AS id, X'00FF' AS raw, array(date'2024-01-02') AS days, map(1, 'a') AS m,"
        " named_struct('a', 1, 'b', array(1.5D)) AS st, double('NaN') AS d, true AS flag, CAST(1.50 AS decimal(5,2)) AS p"
    )
    out = tmp_path / "rows.json"
    output.write_rows(df, "json", str(out), "dw.dim")
    assert json.loads(out.read_text()) == {
        "id": 1,
        "raw": "AP8=",
        "days": ["2024-01-02"],
        "m": {"1": "a"},
        "st": {"a": 1, "b": [1.5]},
        "d": "NaN",
        "flag": True,
        "p": "1.50",
    }
    out = tmp_path / "rows.csv"
    output.write_rows(df, "csv", str(out), "dw.dim")
    assert out.read_text() == (
        "id,raw,days,m,st,d,flag,p\n"
        '1,AP8=,"[""2024-01-02""]","{""1"": ""a""}","{""a"": 1, ""b"": [1.5]}",NaN,true,1.50\n'
    )


def test_decimals_are_plain_text_at_their_scale(spark, tmp_path):
    """Python's `str` of a Decimal turned small values into exponents (`1.23E-8`, `0E-10`): the
    text must be what Spark SQL shows, at the column's scale, nested values included."""
    df = spark.sql(
        "SELECT CAST('0.0000000123' AS decimal(38,10)) AS a, CAST(0 AS decimal(20,10)) AS z,"
        " CAST('-0.0000000001' AS decimal(38,10)) AS n, array(CAST('0.00000001' AS decimal(10,8))) AS arr"
    )
    out = tmp_path / "rows.csv"
    output.write_rows(df, "csv", str(out), "dw.dim")
    assert out.read_text() == 'a,z,n,arr\n0.0000000123,0.0000000000,-0.0000000001,"[""0.00000001""]"\n'
    output.write_rows(df, "json", str(tmp_path / "rows.json"), "dw.dim")
    assert json.loads((tmp_path / "rows.json").read_text()) == {
        "a": "0.0000000123",
        "z": "0.0000000000",
        "n": "-0.0000000001",
        "arr": ["0.00000001"],
    }


def test_timestamps_are_the_session_time_zone_whatever_the_process_time_zone(spark, tmp_path, monkeypatch, capsys):
    """PySpark renders a collected timestamp in the Python process's local time zone (`TZ`), not
    the session's (UTC): with TZ=America/New_York the slice said 2024-03-09T21:30 for 02:30 UTC."""
    import time

    df = spark.sql(
        "SELECT TIMESTAMP'2024-03-10 02:30:00.123456' AS ts, array(TIMESTAMP'1900-01-01 00:00:00') AS arr,"
        " named_struct('at', TIMESTAMP'2024-11-03 01:30:00') AS st"
    )
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        output.write_rows(df, "json", str(tmp_path / "rows.json"), "dw.dim")
        output.print_table(df)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert json.loads((tmp_path / "rows.json").read_text()) == {
        "ts": "2024-03-10T02:30:00.123456",
        "arr": ["1900-01-01T00:00:00"],
        "st": {"at": "2024-11-03T01:30:00"},
    }
    assert "2024-03-10T02:30:00.123456" in capsys.readouterr().out


def test_a_failed_write_leaves_out_as_it_was(spark, tmp_path):
    """A slice that fails half-way (here `raise_error`; in life an unreadable file of the table)
    truncated an existing --out CSV and left an empty Parquet folder that refused the retry."""
    import pytest

    failing = spark.sql("SELECT id, IF(id = 3, raise_error('unreadable'), 'x') AS v FROM range(5)")
    out = tmp_path / "slice.csv"
    out.write_text("yesterday's slice\n")
    for fmt in ("csv", "json"):
        with pytest.raises(Exception, match="unreadable"):
            output.write_rows(failing, fmt, str(out), "dw.dim")
        assert out.read_text() == "yesterday's slice\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["slice.csv"]
    with pytest.raises(Exception, match="unreadable"):
        output.write_rows(failing, "parquet", str(tmp_path / "pq"), "dw.dim")
    assert not (tmp_path / "pq").exists()

    # a link is written through to its file, whose permissions stay
    out.chmod(0o640)
    link = tmp_path / "latest.csv"
    link.symlink_to(out)
    output.write_rows(spark.sql("SELECT 1 AS id"), "csv", str(link), "dw.dim")
    assert link.is_symlink() and out.read_text() == "id\n1\n" and out.stat().st_mode & 0o777 == 0o640
    output.write_rows(spark.sql("SELECT 1 AS id"), "json", "/dev/null", "dw.dim")  # not a file: written as it is


def test_out_paths_that_cannot_be_written_are_one_clear_error(spark, tmp_path):
    import pytest

    from zipper.core.errors import InputError

    df = spark.sql("SELECT 1 AS id")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"^dw.dim: --out .*/folder: cannot write the file: Is a directory$"):
        output.write_rows(df, "csv", str(tmp_path / "folder"), "dw.dim")
    with pytest.raises(InputError, match=r"^dw.dim: --out .*/file/x.csv: .*/file is a file, not a directory$"):
        output.write_rows(df, "json", str(tmp_path / "file" / "x.csv"), "dw.dim")
    with pytest.raises(InputError, match=r"^dw.dim: --out .*/file/pq/x: .*/file is a file, not a directory$"):
        output.write_rows(df, "parquet", str(tmp_path / "file" / "pq" / "x"), "dw.dim")
    output.write_rows(df, "parquet", str(tmp_path / "new" / "pq"), "dw.dim")  # missing folders are made
    assert (tmp_path / "new" / "pq" / "_SUCCESS").exists()


def test_table_rows_stay_on_one_line(spark, capsys):
    """`history`'s default table: a line break in a value split its row over several lines."""
    df = spark.createDataFrame(
        [(1, "line1\nline2\r\nend", "a\tb\\c", None, "NULL")], "id bigint, s string, t string, n string, text string"
    )
    output.print_table(df, noun=("version", "versions"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[-1] == "(1 version)"
    # SQL NULL is `\N`, apart from the text `NULL` (both were `NULL`)
    assert lines[2].split() == ["1", "line1\\nline2\\r\\nend", "a\\tb\\\\c", "\\N", "NULL"]


def test_table_columns_line_up_after_wide_characters(spark, capsys):
    """A Chinese name takes two terminal columns per character: counted as one, every later
    column of its row stood left of the others."""
    df = spark.createDataFrame(
        [(1, "张伟", "Beijing"), (2, "ann", "Oslo"), (3, "e\u0301", "Nice")], "id bigint, name string, city string"
    )
    output.print_table(df)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "id  name  city   ",
        "--  ----  -------",
        "1   张伟  Beijing",
        "2   ann   Oslo   ",
        "3   e\u0301     Nice   ",
    ]


def test_floats_are_written_as_spark_shows_them(spark, tmp_path):
    """A float column came out as the exact value of the float (0.10000000149011612 for 0.1)."""
    df = spark.sql(
        "SELECT CAST(0.1 AS float) AS f, array(CAST(1.1 AS float)) AS arr, CAST('NaN' AS float) AS nan,"
        " CAST(0.1 AS double) AS d"
    )
    out = tmp_path / "rows.csv"
    output.write_rows(df, "csv", str(out), "dw.dim")
    assert out.read_text() == "f,arr,nan,d\n0.1,[1.1],NaN,0.1\n"
    output.write_rows(df, "json", str(tmp_path / "rows.json"), "dw.dim")
    assert json.loads((tmp_path / "rows.json").read_text()) == {"f": 0.1, "arr": [1.1], "nan": "NaN", "d": 0.1}
