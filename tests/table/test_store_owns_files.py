"""Only the table store reads and writes the table's files: a job hands it DataFrames and asks it
for rows, and a transform only takes and gives DataFrames. So a new table format is the store's
business (and `core/layout.py`'s), not every job's. Checked on the code's syntax, without Spark."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["jobs", "transforms"]
# a DataFrame reader or writer, or a table read by name: what touches the files or the catalog's rows
FILE_ACCESS = {"read", "write", "readStream", "writeStream", "table", "parquet", "orc", "saveAsTable", "insertInto"}
# modules whose functions of those names are the store's own answers (`store.read_rows`, ...)
OWNERS = {"store", "catalog", "fs", "layout", "state"}


def accesses(source: str) -> list[tuple[int, str]]:
    """(line, name) of each attribute in the code that reads or writes a DataFrame's files, in
    the order of the code: `spark.read`, `df.write`, `x.parquet(...)`, `spark.table(...)`; not a
    field named alike (`spec.table`) nor a call of one of the OWNERS."""
    tree = ast.parse(source)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in FILE_ACCESS:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in OWNERS:
            continue
        if node.attr == "table" and id(node) not in called:
            continue
        found.append((node.lineno, node.col_offset, node.attr))
    return [(line, name) for line, _, name in sorted(found)]


def test_no_job_or_transform_reads_or_writes_the_tables_files():
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line}: {name}"
        for package in PACKAGES
        for path in sorted((ROOT / "zipper" / package).rglob("*.py"))
        for line, name in accesses(path.read_text())
    ]
    assert found == [], "\n".join(found)


def test_the_check_finds_reads_and_writes_and_nothing_else():
    source = (
        "def step(spark, rows, spec, record):\n"
        "    old = spark.read.parquet('x')\n"
        "    rows.write.mode('overwrite').parquet('y')\n"
        "    table = spark.table(spec.table)\n"
        "    return store.read_rows(spark, None, 'z'), record.table, store.whole_table(spark, spec)\n"
    )
    assert [name for _, name in accesses(source)] == ["parquet", "read", "parquet", "write", "table"]
