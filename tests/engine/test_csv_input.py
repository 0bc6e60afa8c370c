"""Reading CSV inputs: values Spark's parser would change without a word, the header check's
reads, and failures that are not the input's (a bug is not taken for an unreadable file)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.engine.test_merge import counted_jvm_calls
from tests.support import TableFixture, day
from zipper.engine import csv_header, merge, state
from zipper.errors import InputError

OPEN = "9999-12-31"


def initialized_with_a_day_folder(spark, t: TableFixture, base_rows) -> Path:
    t.write_base(spark, base_rows)
    merge.init_table(spark, t.spec)
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    return folder


def open_values(spark, t: TableFixture, *columns: str) -> list[tuple]:
    return [tuple(r) for r in spark.table(t.table).where(f"end_dt = '{OPEN}'").orderBy("id").select("id", *columns)
            .collect()]


def test_a_csv_float_or_double_out_of_its_range_is_refused_not_made_infinity_or_0(spark, tmp_path, unique_name):
    """Spark's CSV parser read 1e400 into a double (1e39 into a float) as Infinity, and 1e-400 as
    0, without a word; a value written as infinity or NaN is one, and kept."""
    t = TableFixture(tmp_path, unique_name, schema="id bigint, name string, score double, ratio float",
                     source={"format": "csv"})
    folder = initialized_with_a_day_folder(spark, t, [(1, "ann", None, None)])
    (folder / "part-0.csv").write_text("id,name,score,ratio\n1,ann,Infinity,-Infinity\n2,bob,-Inf,Inf\n"
                                       "3,cid,NaN,NaN\n4,dan,-0.0,0e-999\n5,eve,1e308,3.4e38\n6,fay,4.9e-324,1.4e-45\n"
                                       "7,gus,0.000e-500,1e38\n")
    for column, value, loss in [("score", "1e400", "overflowing it to infinity"),
                                ("score", "-1e400", "overflowing it to infinity"),
                                ("ratio", "1e39", "overflowing it to infinity"),
                                ("score", "1e-400", "underflowing it to 0"),
                                ("score", "-2.5E-999", "underflowing it to 0"),
                                ("ratio", "1e-50", "underflowing it to 0")]:
        kind = "double" if column == "score" else "float"
        row = {"score": "1.5", "ratio": "2.5", column: value}
        (folder / "part-1.csv").write_text(f"id,name,score,ratio\n8,hal,{row['score']},{row['ratio']}\n")
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(1))
        assert str(raised.value) == (f"{t.table} {day(1)}: increment {folder}: file part-1.csv: column {column!r}"
                                     f" ({kind}) cannot hold {value!r} without {loss} (row with id=8)")
        assert state.read_state(spark, t.spec).last_committed == day(0)
    (folder / "part-1.csv").unlink()
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 6
    values = open_values(spark, t, "score", "ratio")
    assert values[:2] == [(1, math.inf, -math.inf), (2, -math.inf, math.inf)]
    assert values[2][0] == 3 and math.isnan(values[2][1]) and math.isnan(values[2][2])
    assert values[3:] == [(4, -0.0, 0.0), (5, 1e308, pytest.approx(3.4e38)), (6, 5e-324, pytest.approx(1.4e-45)),
                          (7, 0.0, pytest.approx(1e38))]

    # the first merge of a table without a base: the column typed by Spark's inference
    inferred = TableFixture(tmp_path, unique_name + "_new", base=False, source={"format": "csv"})
    inferred.increment_dir(day(1)).mkdir(parents=True)
    (inferred.increment_dir(day(1)) / "part-0.csv").write_text("id,score\n1,2.5\n2,1e400\n")
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, inferred.spec, day(1))
    assert str(raised.value).endswith("file part-0.csv: column 'score' (double) cannot hold '1e400' without"
                                      " overflowing it to infinity (row with id=2)")
