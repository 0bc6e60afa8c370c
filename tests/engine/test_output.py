"""The CLI's row output: what `slice` and `history` write."""

from __future__ import annotations

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
