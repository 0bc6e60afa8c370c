"""The catalog of a Spark session's tables, as the data path calls it: one function per question
or change, given the session. The publish step is `repoint`.

Reads and the one-call writes go to the session's Catalog (zipper.table.catalog_interface),
which `session_catalog` chooses: today the Hive metastore over its thrift API
(zipper.table.hive_catalog), which needs no JVM on the client, so the data path runs the same on
a Spark Connect session. DDL goes through the session's Spark SQL, which reaches whatever catalog
the session is configured with, and the session's own caches are refreshed here too."""

from __future__ import annotations

from collections.abc import Callable

from zipper.core import sqltemplates
from zipper.core.errors import StateError
from zipper.table import file_format
from zipper.table.catalog_interface import (  # noqa: F401 - their names here too, as the jobs import them
    AT_PARAM,
    RUN_PARAM,
    Catalog,
    ConcurrentChange,
    Partition,
    TableLocked,
)
from zipper.table.hive_catalog import HiveCatalog
from zipper.table.hive_schema import (
    SCHEMA_PARAM,  # noqa: F401 - the name here too
    SCHEMA_THRESHOLD_CONF,
    SCHEMA_THRESHOLD_DEFAULT,
    data_type,
)
from zipper.table.session_metastore import (  # noqa: F401 - their names here too, as callers know them
    URI_ENV,
    URIS_CONF,
    _kept,
    metastore_uri,
)
from zipper.table.session_metastore import session_metastore as _metastore  # noqa: F401 - the name callers know
from zipper.tablespec.model import TableSpec


def session_catalog(spark) -> Catalog:
    """The Catalog of the session's tables: the Hive metastore the session uses (its
    `hive.metastore.uris`), through this thread's kept connection. Another catalog is chosen here."""
    return HiveCatalog.of_session(spark)


# -- reads


def table_exists(spark, spec: TableSpec) -> bool:
    return session_catalog(spark).table_exists(spec)


def default_table_location(spark, spec: TableSpec) -> str:
    location = session_catalog(spark).database_location(spec.database)
    if location is None:
        raise StateError(f"database {spec.database} does not exist", table=spec.table)
    return location.rstrip("/") + "/" + spec.table_name


def table_location(spark, spec: TableSpec) -> str:
    return session_catalog(spark).table_location(spec)


def table_properties(spark, spec: TableSpec) -> dict[str, str]:
    return session_catalog(spark).table_properties(spec)


def list_partitions(spark, spec: TableSpec) -> list[Partition]:
    """Every partition with its location and parameters, sorted by end value: two catalog calls,
    however many partitions the table has."""
    return session_catalog(spark).list_partitions(spec)


def tables_named(spark, database: str, pattern: str) -> dict[str, dict[str, str]]:
    """The database's tables whose names match `pattern` (`*` for any characters), with their properties."""
    return session_catalog(spark).tables_named(database, pattern)


def data_columns(spark, spec: TableSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the stored data columns, without begin and end: read from the
    Spark schema the table keeps in its properties (one metastore call, where asking Spark is a
    plan analysis on the server), else as Spark reads the table."""
    stored = session_catalog(spark).data_columns(spec)
    if stored is not None:
        return stored
    fields = spark.table(spec.table).schema.fields  # a table whose Spark schema is not in its properties
    return [(f.name, f.dataType.simpleString()) for f in fields if f.name not in (spec.begin_column, spec.end_column)]


# -- writes through the catalog


def add_partitions(spark, spec: TableSpec, locations: dict[str, str]) -> None:
    """Add partitions (end value -> location) in one metastore call, each as Hive adds one: the
    table's storage (columns, formats, serde) at its own location; one the table has is left as
    it is."""
    session_catalog(spark).add_partitions(spec, locations)


def repoint(
    spark, spec: TableSpec, changes: list[Partition], *, expected_run: str | None, ds: str | None = None
) -> None:
    """Re-point partitions at new directories and replace their zipper parameters, atomically:
    refused (ConcurrentChange) if the open partition's run is no longer `expected_run` (None: no
    check, for repairs). See HiveCatalog.repoint for the one call and the table's lock."""
    session_catalog(spark).repoint(spec, changes, expected_run=expected_run, ds=ds)
    # No refresh of the session's catalog: Spark lists a Hive table's partitions from the metastore
    # at every query, and a publish points them at new directories, which no listing cache holds.
    # A change of columns refreshes it (`_write_data_columns`); reads of the rows refresh first
    # (`table.store.table_rows`).


def require_unchanged(spark, spec: TableSpec, expected_run: str, ds: str | None = None) -> None:
    """ConcurrentChange if another run published since the caller read the table's state: asked
    before a change that must not outlive a publish that will fail (a column's widening)."""
    session_catalog(spark).require_unchanged(spec, expected_run, ds)


def copy_table(spark, spec: TableSpec, name: str, location: str, properties: dict[str, str]) -> None:
    """Create table `name` in the spec's database as a copy of the table's metastore entry: its
    definition and every partition as the metastore holds them (locations, columns, parameters),
    external, at `location`, with `properties` added. No file is copied: the copy's partitions
    point at the table's directories."""
    session_catalog(spark).copy_table(spec, name, location, properties)


def drop_entry(spark, database: str, name: str) -> None:
    """Drop a table's metastore entry and its partitions', deleting no file."""
    session_catalog(spark).drop_entry(database, name)


def alter_data_columns(spark, spec: TableSpec, columns: list[tuple[str, str]]) -> None:
    """Make the table's data columns `columns`: widen the types of existing ones in place and
    append the new ones after the existing columns (the metastore checks types by position, so
    new columns go last, after the begin column). One metastore call; Parquet files are read by
    column name, so older files read NULL for an added column and their values widened.

    Written as Spark's `alterTableDataSchema` writes it: the Hive columns, and Spark's schema
    (the data columns, then the partition column) in the table's properties, which is what Spark
    reads the table's types from."""
    wanted = {name: data_type(kind) for name, kind in columns}
    current = [(f.name, f.dataType) for f in spark.table(spec.table).schema.fields if f.name != spec.end_column]
    have = {name for name, _ in current}
    fields = [(name, wanted.get(name, kind)) for name, kind in current] + [
        (name, wanted[name]) for name, _ in columns if name not in have
    ]
    _write_data_columns(spark, spec, fields)


def edit_data_columns(spark, spec: TableSpec, edits: dict[str, str | None]) -> None:
    """Rename (old -> new) or drop (old -> None) data columns of the table, each renamed one in
    its place with its type and comment. One metastore call (two for a drop on Hive 2)."""
    planned_column_edit(spark, spec, edits)()


def planned_column_edit(spark, spec: TableSpec, edits: dict[str, str | None]) -> Callable[[], None]:
    """`edit_data_columns` with every read done now (the table's schema, its Hive columns, the
    session's settings): returns the call that writes. `zipper alter` plans before it publishes
    its partitions with files under the new names and writes right after, so that the time a
    reader can see the column NULL is the write's alone."""
    current = [(f.name, f.dataType) for f in spark.table(spec.table).schema.fields if f.name != spec.end_column]
    fields = [(edits.get(name, name), kind) for name, kind in current if edits.get(name, name) is not None]
    return _planned_data_columns(spark, spec, fields, {old: new for old, new in edits.items() if new})


def complete_data_columns(spark, spec: TableSpec) -> bool:
    """Finish a change of the table's data columns killed between its two metastore calls."""
    changed = session_catalog(spark).complete_data_columns(spec)
    if changed:
        refresh(spark, spec)
    return changed


def _write_data_columns(spark, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None) -> None:
    """The table's data columns made `fields` ((name, Spark DataType)), Hive's and Spark's alike;
    `renamed`: old -> new names, whose comments follow them."""
    _planned_data_columns(spark, spec, fields, renamed)()


def _planned_data_columns(
    spark, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None
) -> Callable[[], None]:
    """`_write_data_columns` with its reads done now; the returned call writes, then refreshes
    the session's view of the table."""
    threshold = int(spark.conf.get(SCHEMA_THRESHOLD_CONF, None) or SCHEMA_THRESHOLD_DEFAULT)
    write = session_catalog(spark).planned_data_columns(spec, fields, renamed, threshold=threshold)

    def written() -> None:
        write()
        refresh(spark, spec)

    return written


# -- DDL and the session's cache, through Spark SQL


def ensure_database(spark, database: str) -> None:
    # Asked first: the Hive metastore answers CREATE DATABASE IF NOT EXISTS for an existing
    # database with an AlreadyExistsException that it logs, with its Java stack, at ERROR level.
    if session_catalog(spark).database_location(database) is None:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {sqltemplates.quote_identifier(database)}")


def create_table(
    spark, spec: TableSpec, columns: list[tuple[str, str]], location: str, properties: dict[str, str]
) -> None:
    ensure_database(spark, spec.database)
    spark.sql(
        sqltemplates.render(
            "create_table.sql",
            table=spec.table,
            columns=columns,
            begin_column=spec.begin_column,
            end_column=spec.end_column,
            open_end=spec.open_end.isoformat(),
            location=location,
            properties=sorted(properties.items()),
            stored_as=file_format.STORED_AS,
        )
    )


def drop_table(spark, spec: TableSpec) -> None:
    """The table's metastore entry (external: its files stay, for the caller to delete)."""
    spark.sql(f"DROP TABLE IF EXISTS {sqltemplates.quote_identifier(spec.table)}")


def drop_partitions(spark, spec: TableSpec, ends: list[str]) -> None:
    if not ends:
        return
    clauses = ", ".join(
        f"PARTITION ({sqltemplates.quote_identifier(spec.end_column)} = {sqltemplates.quote_literal(end)})"
        for end in sorted(ends)
    )
    spark.sql(f"ALTER TABLE {sqltemplates.quote_identifier(spec.table)} DROP IF EXISTS {clauses}")


def refresh(spark, spec: TableSpec) -> None:
    spark.catalog.refreshTable(spec.table)
