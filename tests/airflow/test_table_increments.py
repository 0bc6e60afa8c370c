"""The table-source increment check under the warehouse's metastore server: the partition is
asked of the server over thrift, wherever its directory is. A real server and a real Spark
session (the suite's, a client of its warehouse's server) create the source table."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from zipper.airflow.increments import check_increment, check_table
from zipper.tablespec.loader import load_spec_file

DS = dt.date(2024, 1, 2)


def table_spec(folder: Path, table: str, partition: str | None):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dim.yaml"
    source = {"format": "table", "table": table} | ({"partition": partition} if partition else {})
    path.write_text(
        yaml.safe_dump({"name": "dim", "table": "dw.dim", "keys": ["id"], "source": source, "start_date": "2024-01-01"})
    )
    return load_spec_file(path)


def test_the_partition_is_asked_of_the_metastore_server_wherever_its_directory_is(
    spark, warehouse, unique_name, tmp_path, monkeypatch
):
    monkeypatch.setenv("ZIPPER_METASTORE", "local")
    database = f"ods_{unique_name}"
    table = f"{database}.user_inc"
    spec = table_spec(tmp_path / "specs", table, "ds = '{{ ds }}'")
    # Given no such table yet: not ready, and the check says where it looked
    readiness = check_increment(spec, DS, warehouse)
    assert not readiness.ready and "no such table" in readiness.checked and "thrift://" in readiness.checked
    # Given the table, without the date's partition: not ready
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    assert not check_table(spec, DS, warehouse).ready
    # When the partition is added at a directory outside the table's folder (as a producer that
    # writes elsewhere and then registers the partition does)
    elsewhere = tmp_path / "landed elsewhere" / "user_inc_20240102"
    elsewhere.mkdir(parents=True)
    spark.sql(f"ALTER TABLE {table} ADD PARTITION (ds = '{DS}') LOCATION '{elsewhere.as_uri()}'")
    # Then it is ready, and the check names where the partition is
    readiness = check_table(spec, DS, warehouse)
    assert readiness.ready and str(elsewhere.name) in readiness.checked
    # A partition Spark writes in the default layout is there too; the next date still is not
    next_day = DS + dt.timedelta(days=1)
    assert not check_table(spec, next_day, warehouse).ready
    spark.sql(f"INSERT INTO {table} PARTITION (ds = '{next_day}') VALUES (1, 'ann')")
    assert check_table(spec, next_day, warehouse).ready


def test_partition_columns_the_table_does_not_have_are_refused_rather_than_waited_for(
    spark, warehouse, unique_name, tmp_path, monkeypatch
):
    monkeypatch.setenv("ZIPPER_METASTORE", "local")
    database = f"ods_{unique_name}"
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"CREATE TABLE {database}.inc (id BIGINT) PARTITIONED BY (dt STRING) STORED AS PARQUET")
    spec = table_spec(tmp_path / "specs", f"{database}.inc", "ds = '{{ ds }}'")
    with pytest.raises(ValueError, match=r"names \['ds'\], but .* is partitioned by \['dt'\]"):
        check_table(spec, DS, warehouse)
    # An unpartitioned source is ready once the table exists
    spark.sql(f"CREATE TABLE {database}.whole (id BIGINT) STORED AS PARQUET")
    whole = table_spec(tmp_path / "whole", f"{database}.whole", None)
    assert check_table(whole, DS, warehouse).ready
