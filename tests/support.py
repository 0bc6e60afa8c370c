"""Helpers for tests: build specs and write increments as real Parquet files."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from zipper.tablespec.loader import load_spec_file

D1 = dt.date(2024, 1, 1)


def day(n: int) -> dt.date:
    """Day n of the test calendar; day 1 is 2024-01-01, day 0 is the base date."""
    return D1 + dt.timedelta(days=n - 1)


class TableFixture:
    """A spec file plus the folders holding its base and increments (`data`: another table's, which
    a copy of it reads, see SharedTable; `table=` in `spec_options` names another table)."""

    def __init__(
        self,
        root: Path,
        name: str,
        *,
        keys=("id",),
        schema="id bigint, name string, city string",
        base=True,
        source=None,
        data: Path | None = None,
        **spec_options,
    ):
        self.root = root
        self.name = name
        self.schema = schema
        self.options = {"keys": keys, "schema": schema, "base": base, "source": source, **spec_options}
        self.data = data or root / "data" / name  # the base's and the increments' folder
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

    def with_options(self, **spec_options) -> TableFixture:
        """The same table and inputs under a spec with other options (a spec file of its own)."""
        return TableFixture(self.root, self.name, data=self.data, **{**self.options, **spec_options})

    def increment_dir(self, ds: dt.date) -> Path:
        return self.data / "incr" / f"ds={ds.isoformat()}"

    def write_base(self, spark, rows, schema=None) -> None:
        write_parquet(self.data / "base", rows, schema or self.schema, spark)

    def write_increment(self, spark, ds: dt.date, rows, schema=None) -> None:
        write_parquet(self.increment_dir(ds), rows, schema or self.schema, spark)


# Spark SQL types of the test schemas and the Parquet (Arrow) types Spark writes for them.
_ARROW_TYPES = {
    "int": pa.int32(),
    "bigint": pa.int64(),
    "string": pa.string(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),  # naive datetimes are taken as UTC
}


def _arrow_schema(ddl: str) -> pa.Schema | None:
    """'id bigint, name string' as an Arrow schema; None for types not in _ARROW_TYPES."""
    fields = []
    for column in ddl.split(","):
        name, _, kind = column.strip().partition(" ")
        if kind.strip().lower() not in _ARROW_TYPES:
            return None
        fields.append(pa.field(name, _ARROW_TYPES[kind.strip().lower()]))
    return pa.schema(fields)


def write_parquet(folder: Path, rows, schema: str, spark=None) -> None:
    """Replace `folder` with one Parquet file holding `rows` (tuples in `schema`'s column order).

    Written with pyarrow, as Spark would write it (same Parquet types, nullable columns, one file
    under a new name each time), which costs milliseconds instead of a Spark job; other types
    (decimal) are written by Spark, so they need `spark`."""
    arrow = _arrow_schema(schema)
    if arrow is None:
        assert spark is not None, f"{schema!r} has types pyarrow is not told about: pass a SparkSession"
        spark.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(str(folder))
        return
    rows = list(rows)
    assert all(len(r) == len(arrow) for r in rows), (schema, rows)
    table = pa.Table.from_arrays(
        [pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(arrow)], schema=arrow
    )
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pq.write_table(table, folder / f"part-00000-{uuid.uuid4()}-c000.snappy.parquet", compression="snappy")


def table_rows(spark, table: str, order=None) -> list[tuple]:
    """All rows of a table as sorted tuples (data columns, begin, end)."""
    return sorted_rows(spark.table(table))


def sorted_rows(df) -> list[tuple]:
    """All rows of a DataFrame as tuples, in the order table_rows uses."""
    return sorted((tuple(r) for r in df.collect()), key=lambda r: tuple("" if v is None else str(v) for v in r))


def initialized_with_a_day_folder(spark, t: TableFixture, base_rows) -> Path:
    """`t` initialized from a base of `base_rows`, and the (empty) folder of its day 1 increment."""
    from zipper.jobs.init import init_table

    t.write_base(spark, base_rows)
    init_table(spark, t.spec)
    folder = t.increment_dir(day(1))
    folder.mkdir(parents=True)
    return folder


def plan_section(df, section: str) -> str:
    """One section of `df`'s plan as `explain(extended=True)` prints it ("Analyzed Logical Plan",
    "Physical Plan"): the same text on a classic session and on a Spark Connect client, which
    has no `_jdf` to ask."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        df.explain(extended=True)
    text = printed.getvalue()
    start = text.index(f"== {section} ==\n") + len(f"== {section} ==\n")
    end = text.find("\n== ", start)
    return text[start : end if end >= 0 else len(text)].strip()


class SharedTable:
    """A table built once for a module's tests (its init and the merges they share), each of which
    gets a metastore copy of it (`copy`): the table's entry and every partition under another name,
    pointing at the same directories, no file copied (as a dry run's, `zipper.table.clone`). A
    job run on the copy writes into the copy's own folder and re-points only the copy's partitions.

    A copy reads the table's own input folder (its inputs' fingerprints hold their paths, so the
    dates committed would look changed elsewhere); what a test writes there is undone after it (the
    folder as built, file times included). After each test the copy is dropped and the table
    checked: its partitions, properties and files as they were built. A test that lists, vacuums or
    checks the table's own files, or needs another spec, builds its own."""

    def __init__(self, spark, table: TableFixture):
        self.spark = spark
        self.table = table
        self._built = table.root / "inputs_as_built"
        shutil.copytree(table.data, self._built, copy_function=shutil.copy2)
        self._as_built = self._state()
        self._copies = itertools.count()

    def _state(self) -> tuple:
        """The table as no copy may change it: partitions (end, location, parameters), properties,
        and every file under its location (path, size, modification time)."""
        from zipper.core.paths import local_path
        from zipper.table import catalog

        spec = self.table.spec
        location = local_path(catalog.table_location(self.spark, spec))
        files = sorted(
            (os.path.relpath(os.path.join(folder, name), location), os.stat(os.path.join(folder, name)).st_size)
            + (os.stat(os.path.join(folder, name)).st_mtime_ns,)
            for folder, dirs, names in os.walk(location)
            for name in names
        )
        partitions = [(p.end, p.location, p.params) for p in catalog.list_partitions(self.spark, spec)]
        return partitions, catalog.table_properties(self.spark, spec), files

    @contextlib.contextmanager
    def copy(self, root: Path, **spec_options) -> Iterator[TableFixture]:
        """A copy of the table for one test (`root`: its folder, where the copy's spec and writes go),
        as a TableFixture naming the copy (`spec_options`: changed for the copy; such options are
        read when a job runs, so the table need not have been built with them)."""
        from zipper.core import layout
        from zipper.table import catalog

        spec = self.table.spec
        name = f"{spec.table_name}_c{next(self._copies)}"
        location = root / "copy_of_table"
        # the folders a table's location holds from its init: its versions and the empty one pending partitions use
        Path(layout.empty_dir(str(location))).mkdir(parents=True)
        catalog.copy_table(self.spark, spec, name, str(location), {})
        options = {**self.table.options, **spec_options, "table": f"{spec.database}.{name}"}
        try:
            yield TableFixture(root, self.table.name, data=self.table.data, **options)
        finally:
            catalog.drop_entry(self.spark, spec.database, name)
            shutil.rmtree(self.table.data)
            shutil.copytree(self._built, self.table.data, copy_function=shutil.copy2)
        assert self._state() == self._as_built, f"a test changed {spec.table}, not only its copy {name}"


def assert_a_rerun_changes_nothing(spark, t, first):
    """A rerun from `first` of `t`'s table, its inputs unchanged, changes no row and no recorded count."""
    from zipper.jobs import replay
    from zipper.table import state

    before = table_rows(spark, t.table)
    counts = {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()}
    assert replay.rerun(spark, t.spec, first).action == "rerun"
    assert table_rows(spark, t.table) == before
    assert {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()} == counts


def assert_equals_a_rebuild(spark, t):
    """The rebuild oracle: rebuilding `t`'s table in place changes no row and no recorded count."""
    from zipper.jobs import rebuild
    from zipper.table import check, state

    before = table_rows(spark, t.table)
    counts = {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()}
    rebuild.rebuild(spark, t.spec)
    assert table_rows(spark, t.table) == before
    assert {d: c.counts for d, c in state.read_state(spark, t.spec).commits.items()} == counts
    assert check.run_checks(spark, t.spec)["ok"]
