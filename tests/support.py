"""Helpers for tests: build specs and write increments as real Parquet files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml

from zipper.spec.loader import load_spec_file

D1 = dt.date(2024, 1, 1)


def day(n: int) -> dt.date:
    """Day n of the test calendar; day 1 is 2024-01-01, day 0 is the base date."""
    return D1 + dt.timedelta(days=n - 1)


class TableFixture:
    """A spec file plus the folders holding its base and increments."""

    def __init__(self, root: Path, name: str, *, keys=("id",), schema="id bigint, name string, city string",
                 base=True, source=None, **spec_options):
        self.root = root
        self.name = name
        self.schema = schema
        self.data = root / "data" / name
        self.specs = root / "specs"
        self.specs.mkdir(parents=True, exist_ok=True)
        raw = {
            "name": name,
            "table": f"db_{name}.{name}",
            "keys": list(keys),
            "source": {"mode": "upsert", "format": "parquet", "path": str(self.data / "incr" / "ds={{ ds }}")},
            "start_date": D1.isoformat(),
        }
        if base:
            raw["base"] = {"format": "parquet", "path": str(self.data / "base")}
        # mode and its options; None removes a key (format: table has no path)
        raw["source"] = {k: v for k, v in {**raw["source"], **(source or {})}.items() if v is not None}
        raw.update(spec_options)
        self.raw = raw
        self.path = self.specs / f"{name}.yaml"
        self.path.write_text(yaml.safe_dump(raw, sort_keys=False))
        self.spec = load_spec_file(self.path)

    @property
    def table(self) -> str:
        return self.spec.table

    def increment_dir(self, ds: dt.date) -> Path:
        return self.data / "incr" / f"ds={ds.isoformat()}"

    def write_base(self, spark, rows, schema=None) -> None:
        spark.createDataFrame(rows, schema or self.schema).coalesce(1).write.mode("overwrite").parquet(
            str(self.data / "base"))

    def write_increment(self, spark, ds: dt.date, rows, schema=None) -> None:
        spark.createDataFrame(rows, schema or self.schema).coalesce(1).write.mode("overwrite").parquet(
            str(self.increment_dir(ds)))


def table_rows(spark, table: str, order=None) -> list[tuple]:
    """All rows of a table as sorted tuples (data columns, begin, end)."""
    return sorted_rows(spark.table(table))


def sorted_rows(df) -> list[tuple]:
    """All rows of a DataFrame as tuples, in the order table_rows uses."""
    return sorted((tuple(r) for r in df.collect()), key=lambda r: tuple("" if v is None else str(v) for v in r))
