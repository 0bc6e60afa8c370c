"""The table store's writes and reads: slots as Spark's partitionBy writes them, the modes the jobs
rely on (a fresh directory is never overwritten; a run appends to its own slots), one file when
asked, and a write's count."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException
from pyspark.testing import assertDataFrameEqual

from zipper.core import layout
from zipper.inputs import metrics
from zipper.table import store

SCHEMA = "id bigint, name string"
ROWS = [(1, "ann", "open"), (2, "bob", "closed"), (3, "cy", "open")]


def slotted(spark, rows=ROWS):
    return spark.createDataFrame(rows, f"{SCHEMA}, {layout.SLOT} string")


def in_slot(spark, run_root: str, slot: str):
    return store.read_rows(spark, SCHEMA, layout.slot_dir(run_root, slot))


def test_write_slots_writes_one_folder_per_slot_and_reads_back_equal(spark, tmp_path):
    run_root = str(tmp_path / "run")
    store.write_slots(slotted(spark), run_root)
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir()) == [
        f"{layout.SLOT}=closed",
        f"{layout.SLOT}=open",
    ]
    for slot in ("open", "closed"):
        expected = spark.createDataFrame([r[:2] for r in ROWS if r[2] == slot], SCHEMA)
        assertDataFrameEqual(in_slot(spark, run_root, slot), expected)


def test_write_slots_refuses_an_existing_directory_unless_appending(spark, tmp_path):
    run_root = str(tmp_path / "run")
    store.write_slots(slotted(spark), run_root)
    with pytest.raises(AnalysisException):
        store.write_slots(slotted(spark), run_root)
    store.write_slots(slotted(spark, [(4, "dan", "closed")]), run_root, append=True)
    assert store.rows_in(layout.slot_dir(run_root, "closed")) == 2
    assert store.rows_in(layout.slot_dir(run_root, "open")) == 2


def test_write_rows_in_one_file_when_asked(spark, tmp_path):
    rows = spark.createDataFrame([(n, f"k{n}") for n in range(40)], SCHEMA).repartition(4)
    store.write_rows(rows, str(tmp_path / "one"), single_file=True)
    assert len(list((tmp_path / "one").glob("*.parquet"))) == 1
    assertDataFrameEqual(store.read_rows(spark, SCHEMA, str(tmp_path / "one")), rows)
    with pytest.raises(AnalysisException):
        store.write_rows(rows, str(tmp_path / "one"))


def test_write_counted_counts_the_rows_it_writes(spark, tmp_path):
    rows = spark.createDataFrame([(n, f"k{n}") for n in range(7)], SCHEMA)
    directory = str(tmp_path / "counted")
    observation = store.write_counted(rows, directory, "test")
    assert metrics.observed_metrics(observation)["rows"] == 7
    assert store.rows_in(directory) == 7


def test_read_rows_of_an_empty_directory_is_no_rows_with_the_schema(spark, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    read = store.read_rows(spark, SCHEMA, str(empty))
    assert read.columns == ["id", "name"]
    assert read.count() == 0
