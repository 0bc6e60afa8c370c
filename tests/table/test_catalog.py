"""Metastore operations on a real Hive table: listing and re-pointing partitions."""

from __future__ import annotations

from zipper.table import catalog, state
from zipper.table.catalog import Partition
from zipper.tablespec.model import TableSpec


def _table(spark, tmp_path, name, ends):
    spec = TableSpec.model_validate(
        dict(name=name, table=f"db_{name}.{name}", keys=["id"], source=dict(path="/nowhere"), start_date="2024-01-01")
    )
    catalog.create_table(spark, spec, [("id", "bigint")], str(tmp_path / name), {state.P_SPEC_NAME: name})
    catalog.add_partitions(spark, spec, {end: str(tmp_path / "old" / end) for end in ends})
    return spec


def _storage(spark, spec, end):
    part = catalog._external_catalog(spark).getPartition(
        spec.database, spec.table_name, catalog._scala_map(spark, {spec.end_column: end})
    )
    storage = part.storage()
    return storage.inputFormat().get(), storage.outputFormat().get(), storage.serde().get(), part.createTime()


def test_repoint_many_partitions_in_one_call_keeps_storage_and_foreign_parameters(spark, tmp_path, unique_name):
    ends = [f"2024-01-{d:02d}" for d in range(1, 31)]
    spec = _table(spark, tmp_path, unique_name, ends)
    # a parameter another tool set on one partition
    catalog.repoint(
        spark,
        spec,
        [Partition("2024-01-05", str(tmp_path / "old" / "2024-01-05"), {"owner.note": "keep me"})],
        expected_run=None,
    )
    before = {end: _storage(spark, spec, end) for end in ("2024-01-01", "2024-01-05")}

    catalog.repoint(
        spark,
        spec,
        [
            Partition(end, str(tmp_path / "new" / end), {state.DS: end, state.ROWS: str(i)})
            for i, end in enumerate(ends)
        ],
        expected_run=None,
    )

    listed = {p.end: p for p in catalog.list_partitions(spark, spec)}
    assert sorted(listed) == ends
    for i, end in enumerate(ends):
        assert listed[end].location == f"file:{tmp_path}/new/{end}"
        assert listed[end].params[state.DS] == end and listed[end].params[state.ROWS] == str(i)
    assert listed["2024-01-05"].params["owner.note"] == "keep me"
    assert {end: _storage(spark, spec, end) for end in before} == before


def test_repoint_replaces_zipper_parameters_and_drops_stale_statistics(spark, tmp_path, unique_name):
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01"])
    catalog.repoint(
        spark,
        spec,
        [Partition("2024-01-01", str(tmp_path / "a"), {state.DS: "x", state.RUN_ID: "r1", "numRows": "5"})],
        expected_run=None,
    )
    catalog.repoint(spark, spec, [Partition("2024-01-01", str(tmp_path / "b"), {state.DS: "y"})], expected_run=None)
    params = catalog.list_partitions(spark, spec)[0].params
    assert params[state.DS] == "y" and state.RUN_ID not in params and "numRows" not in params
