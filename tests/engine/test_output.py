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
        " named_struct('a', 1, 'b', array(1.5D)) AS st, double('NaN') AS d, true AS flag, CAST(1.50 AS decimal(5,2)) AS p")
    out = tmp_path / "rows.json"
    output.write_rows(df, "json", str(out), "dw.dim")
    assert json.loads(out.read_text()) == {"id": 1, "raw": "AP8=", "days": ["2024-01-02"], "m": {"1": "a"},
                                           "st": {"a": 1, "b": [1.5]}, "d": "NaN", "flag": True, "p": "1.50"}
    out = tmp_path / "rows.csv"
    output.write_rows(df, "csv", str(out), "dw.dim")
    assert out.read_text() == ('id,raw,days,m,st,d,flag,p\n'
                               '1,AP8=,"[""2024-01-02""]","{""1"": ""a""}","{""a"": 1, ""b"": [1.5]}",NaN,true,1.50\n')
