"""Generated bad input: hypothesis builds a bad day's input for a table merged once (NULL and
repeated keys, columns of another type, a missing key, the table's own or reserved column names,
names differing only in case, a map key, a timestamp without a time zone, a file that is not
Parquet, a truncated or empty file beside a good one) and runs the merge of its date. Every case
must end in one line that names the table and the date and says what is wrong, with no Java
trace, and leave the table as it was. The figure (cases tried, every one refused so) is on the
limitations page."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.support import TableFixture, day, table_rows
from zipper.cli import failures
from zipper.core.errors import ZipperError
from zipper.jobs import merge
from zipper.table import catalog, state

BASE = [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)]
GOOD = {"id": pa.array([1, 4], pa.int64()), "name": pa.array(["ann", "dan"]), "city": pa.array(["Lima", "Nice"])}
JAVA = ("java.", "org.apache.", "Traceback", "\tat ", "py4j", "Caused by")


@pytest.fixture(scope="module")
def merged(spark, tmp_path_factory):
    """An upsert table with its base and one date merged; each example writes the next date's input."""
    t = TableFixture(tmp_path_factory.mktemp("bad"), f"bad_{os.getpid()}")
    t.write_base(spark, BASE)
    t.write_increment(spark, day(1), [(2, "bob", "Nice")])
    merge.merge_date(spark, t.spec, day(1))
    return t


def _columns(**changed) -> dict:
    """The good input's columns with some replaced (None: left out)."""
    return {k: v for k, v in {**GOOD, **changed}.items() if v is not None}


def _retyped(draw) -> tuple[str, dict, str]:
    column = draw(st.sampled_from(["id", "name", "city"]))
    kinds = {
        "id": [pa.array(["1", "4"]), pa.array([1.0, 4.0]), pa.array([True, False])],
        "name": [pa.array([1, 2], pa.int64()), pa.array([True, False]), pa.array([1.5, 2.5])],
        "city": [pa.array([1, 2], pa.int32()), pa.array([True, False]), pa.array([[1], [2]])],
    }
    values = draw(st.sampled_from(kinds[column]))
    return "another type", _columns(**{column: values}), column


TABLE_FAULTS = [
    "null key", "repeated key", "another type", "no key", "own column", "reserved name", "case clash",
    "map key", "naive timestamp", "padded name", "dotted name", "long name",
]  # fmt: skip
FILE_FAULTS = ["not parquet", "truncated", "empty"]
CSV_FAULTS = ["unparsable key", "unparsable quote", "no key header", "null key", "repeated key", "binary"]


def bad_table(draw, kind: str) -> tuple[dict, str]:
    """(the input's columns, a word the refusal must hold) for a fault of `kind`."""
    if kind == "another type":
        column = draw(st.sampled_from(["id", "name", "city"]))
        kinds = {
            "id": [pa.array(["1", "4"]), pa.array([1.0, 4.0]), pa.array([True, False])],
            "name": [pa.array([1, 2], pa.int64()), pa.array([True, False]), pa.array([1.5, 2.5])],
            "city": [pa.array([1, 2], pa.int32()), pa.array([True, False]), pa.array([[1], [2]])],
        }
        return _columns(**{column: draw(st.sampled_from(kinds[column]))}), column
    if kind == "null key":
        n = draw(st.integers(1, 3))
        return _columns(**{c: pa.array([None] * n + v.to_pylist()[:1], v.type) for c, v in GOOD.items()}), "NULL"
    if kind == "repeated key":
        n = draw(st.integers(2, 4))
        return {c: pa.array(v.to_pylist()[:1] * n, v.type) for c, v in GOOD.items()}, "more than once"
    if kind == "no key":
        return _columns(id=None), "lacks key columns ['id']"
    if kind == "own column":
        column = draw(st.sampled_from(["begin_dt", "end_dt"]))
        return _columns(**{column: pa.array(["2024-01-01", "9999-12-31"])}), column
    if kind == "reserved name":
        column = "zipper_" + draw(st.sampled_from(["op", "slot", "kind", "x"]))
        return _columns(**{column: pa.array(["delete", "delete"])}), column
    if kind == "case clash":
        return _columns(**{draw(st.sampled_from(["City", "NAME", "iD"])): pa.array(["a", "b"])}), "differ only in case"
    if kind == "map key":
        keys = pa.array([[("a", 1)], [("b", 2)]], pa.map_(pa.string(), pa.int64()))
        return _columns(id=keys), "map"
    if kind == "naive timestamp":
        return _columns(seen=pa.array([0, 1], pa.timestamp(draw(st.sampled_from(["ms", "us"]))))), "timestamp_ntz"
    if kind == "long name":
        return _columns(**{"n" * draw(st.integers(768, 2000)): pa.array([1, 2])}), "more than the metastore's 767"
    name = draw(st.text(st.sampled_from("aé名_"), min_size=1, max_size=4))
    if kind == "padded name":
        return _columns(
            **{draw(st.sampled_from([f" {name}", f"{name} ", f"{name}\t"])): pa.array([1, 2])}
        ), "white space"
    return _columns(**{f"{name}.{name}": pa.array([1, 2])}), "a dot"


def bad_file(draw, kind: str) -> bytes:
    """The bytes of a file that is not whole Parquet."""
    if kind == "empty":
        return b""
    if kind == "not parquet":
        return draw(st.binary(min_size=1, max_size=64)) + b"PAR1"
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(GOOD), sink)
    whole = sink.getvalue().to_pybytes()
    return whole[: draw(st.integers(1, len(whole) - 1))]


def bad_csv(draw, kind: str) -> tuple[bytes, str]:
    """(a CSV file's bytes, a word the refusal must hold)."""
    if kind == "unparsable key":
        return f"id,name,city\n{draw(st.sampled_from(['abc', '1.5', '1e3', '9' * 25]))},ann,Oslo\n".encode(), "id"
    if kind == "unparsable quote":
        return b'id,name,city\n5,"ann,Oslo\n6,bob,Rome\n', "part-1.csv"
    if kind == "no key header":  # in every file of the input (each must list the same columns)
        return b"name,city\nann,Oslo\n", "lacks key columns ['id']"
    if kind == "null key":
        return b"id,name,city\n,ann,Oslo\n", "NULL"
    if kind == "repeated key":
        return b"id,name,city\n7,ann,Oslo\n7,bob,Rome\n", "more than once"
    # bytes after an x, so that the key never parses (a line of NUL bytes alone reads as a blank line)
    garbage = b"x" + draw(st.binary(min_size=3, max_size=32)).replace(b"\n", b"\x00").replace(b"\r", b"\x00")
    return b"id,name,city\n" + garbage + b"\n", "part-1.csv"


def _seen(spark, t) -> tuple:
    return (
        table_rows(spark, t.table),
        [(p.end, p.location) for p in catalog.list_partitions(spark, t.spec)],
        state.read_state(spark, t.spec).last_committed,
    )


def _refused_in_one_line(spark, t, kind: str, word: str) -> None:
    """The merge of day 2 fails in one line naming table, date and `word`; the table unchanged."""
    before = _seen(spark, t)
    with pytest.raises(ZipperError) as raised:
        merge.merge_date(spark, t.spec, day(2))
    line = failures.one_line(raised.value)
    assert "\n" not in line and not any(marker in line for marker in JAVA), (kind, line)
    assert line.startswith(f"{t.table} {day(2)}: "), (kind, line)
    assert word in line, (kind, word, line)
    assert _seen(spark, t) == before, kind
    event(kind)


SETTINGS = settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _fresh(folder):
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("kind", TABLE_FAULTS)
@SETTINGS
@given(data=st.data())
def test_generated_bad_columns_and_keys_are_refused_in_one_line_and_change_nothing(spark, merged, kind, data):
    columns, word = bad_table(data.draw, kind)
    folder = _fresh(merged.increment_dir(day(2)))
    pq.write_table(pa.table(columns), folder / "part-0.parquet")
    _refused_in_one_line(spark, merged, kind, word)


@pytest.mark.parametrize("kind", FILE_FAULTS)
@SETTINGS
@given(data=st.data())
def test_generated_broken_files_beside_a_good_one_are_refused_naming_the_file(spark, merged, kind, data):
    folder = _fresh(merged.increment_dir(day(2)))
    pq.write_table(pa.table(GOOD), folder / "part-0.parquet")
    (folder / "part-1.parquet").write_bytes(bad_file(data.draw, kind))
    _refused_in_one_line(spark, merged, kind, "part-1.parquet")


@pytest.fixture(scope="module")
def merged_csv(spark, tmp_path_factory):
    """A table whose increments are CSV, with its base and one date merged."""
    t = TableFixture(tmp_path_factory.mktemp("badcsv"), f"badcsv_{os.getpid()}", source={"format": "csv"})
    t.write_base(spark, BASE)
    (_fresh(t.increment_dir(day(1))) / "part-0.csv").write_text("id,name,city\n2,bob,Nice\n")
    merge.merge_date(spark, t.spec, day(1))
    return t


@pytest.mark.parametrize("kind", CSV_FAULTS)
@SETTINGS
@given(data=st.data())
def test_generated_bad_csv_is_refused_in_one_line_and_changes_nothing(spark, merged_csv, kind, data):
    content, word = bad_csv(data.draw, kind)
    folder = _fresh(merged_csv.increment_dir(day(2)))
    if kind != "no key header":
        (folder / "part-0.csv").write_text("id,name,city\n1,ann,Lima\n")
    (folder / "part-1.csv").write_bytes(content)
    _refused_in_one_line(spark, merged_csv, kind, word)
