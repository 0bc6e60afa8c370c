"""Analysts on Hive read the tables with Hive's own Parquet reader (ParquetHiveSerDe), not Spark's:
every column type zipper writes must decode there too. Spark bundles Hive 2.3's SerDe and uses it
for a Hive table when `spark.sql.hive.convertMetastoreParquet` is off, so the test reads through it."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from decimal import Decimal

from pyspark.testing import assertDataFrameEqual

from tests.support import D1, TableFixture, plan_section
from zipper.jobs import merge
from zipper.jobs.init import init_table

COLUMNS = {
    "id": "bigint",
    "name": "string",
    "flag": "boolean",
    "tiny": "tinyint",
    "small": "smallint",
    "num": "int",
    "ratio": "float",
    "score": "double",
    "price": "decimal(5,2)",
    "balance": "decimal(12,2)",
    "total": "decimal(30,4)",
    "born": "date",
    "seen": "timestamp",
    "raw": "binary",
    "tags": "array<string>",
    "attrs": "map<string,int>",
    "address": "struct<city:string,zip:decimal(9,0)>",
    "history": "array<struct<at:date,amount:decimal(10,2)>>",
}
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())


def _row(key: int, version: int) -> tuple:
    return (
        key,
        f"n{key}.{version}",
        key % 2 == 0,
        key + version,
        300 + key,
        70000 + key,
        1.5 + version,
        2.25 * key,
        Decimal(f"{key}.{version}5"),
        Decimal(f"123456789.{version}{key}"),
        Decimal(f"12345678901234567890.{version:04d}"),
        dt.date(1990, 1, key),
        dt.datetime(2024, 1, key, 8, version),
        bytes([key, version]),
        [f"t{key}", f"v{version}"],
        {"a": key, "b": version},
        (f"city{key}", Decimal(100000 + key)),
        [(dt.date(2023, 12, key), Decimal(f"{version}.{key}0"))],
    )


@contextmanager
def hive_serde_reads(spark):
    previous = spark.conf.get("spark.sql.hive.convertMetastoreParquet")
    spark.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.hive.convertMetastoreParquet", previous)


def test_hives_own_parquet_reader_reads_every_column_type_of_open_and_closed_rows(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, schema=SCHEMA, columns=COLUMNS)
    t.write_base(spark, [_row(1, 0), _row(2, 0), _row(3, 0)])
    t.write_increment(spark, D1, [_row(2, 1), _row(4, 0)])
    init_table(spark, t.spec, D1 - dt.timedelta(days=1))
    merge.merge_date(spark, t.spec, D1)

    by_spark = spark.table(t.table).collect()
    with hive_serde_reads(spark):
        plan = plan_section(spark.table(t.table), "Physical Plan")
        by_hive = spark.table(t.table).collect()

    assert plan.startswith("Scan hive ")  # Hive's reader, not Spark's converted Parquet scan
    assert len(by_spark) == 5  # 4 open rows, 1 closed
    assertDataFrameEqual(by_hive, by_spark)
