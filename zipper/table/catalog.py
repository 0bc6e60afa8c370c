"""Hive metastore operations. The publish step is `repoint`: one `alterPartitions` call,
which the metastore applies in a single transaction."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from zipper.core import fs, sqltemplates
from zipper.core.errors import StateError
from zipper.core.paths import hadoop_path
from zipper.tablespec.model import TableSpec

PARTITION_CLASS = "org.apache.spark.sql.catalyst.catalog.CatalogTablePartition"
# The open partition's parameters that name the run that published it and the date it is at
# (zipper.table.state's RUN_ID and LAST_COMMITTED).
RUN_PARAM = "zipper.run_id"
AT_PARAM = "zipper.last_committed"
FETCH_ONE_BY_ONE = 4
STATS_PARAMS = ("numRows", "rawDataSize", "totalSize", "numFiles", "COLUMN_STATS_ACCURATE")


@dataclass(frozen=True)
class Partition:
    end: str
    location: str
    params: dict[str, str] = field(default_factory=dict)


def _converters(spark):
    return spark._jvm.scala.jdk.javaapi.CollectionConverters


def _external_catalog(spark):
    return spark._jsparkSession.sessionState().catalog().externalCatalog()


def _scala_map(spark, mapping: dict[str, str]):
    return spark._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(dict(mapping))


def _to_python_map(spark, scala_map) -> dict[str, str]:
    java_map = _converters(spark).asJava(scala_map)
    return {str(k): str(v) for k, v in java_map.items()}


def ensure_database(spark, database: str) -> None:
    # Asked first: the Hive metastore answers CREATE DATABASE IF NOT EXISTS for an existing
    # database with an AlreadyExistsException that it logs, with its Java stack, at ERROR level.
    if not _external_catalog(spark).databaseExists(database):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {sqltemplates.quote_identifier(database)}")


def table_exists(spark, spec: TableSpec) -> bool:
    catalog = _external_catalog(spark)
    return bool(catalog.databaseExists(spec.database)) and bool(catalog.tableExists(spec.database, spec.table_name))


def default_table_location(spark, spec: TableSpec) -> str:
    database = _external_catalog(spark).getDatabase(spec.database)
    return hadoop_path(database.locationUri().toString()).rstrip("/") + "/" + spec.table_name


def table_location(spark, spec: TableSpec) -> str:
    table = _external_catalog(spark).getTable(spec.database, spec.table_name)
    return hadoop_path(table.location().toString()).rstrip("/")


def table_properties(spark, spec: TableSpec) -> dict[str, str]:
    table = _external_catalog(spark).getTable(spec.database, spec.table_name)
    return _to_python_map(spark, table.properties())


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
        )
    )


def list_partitions(spark, spec: TableSpec) -> list[Partition]:
    """Every partition with its location and parameters, sorted by end value.

    Serialised to JSON inside the JVM in one call: reading them field by field costs a Py4J
    round trip per value, which is seconds for a table with a year of daily partitions."""
    catalog = _external_catalog(spark)
    parts = catalog.listPartitions(spec.database, spec.table_name, spark._jvm.scala.Option.empty())
    listed = json.loads(_json_mapper(spark).writeValueAsString(parts))
    result = [
        Partition(
            end=part["spec"][spec.end_column],
            location=hadoop_path(part["storage"].get("locationUri") or ""),
            params={str(k): str(v) for k, v in (part.get("parameters") or {}).items()},
        )
        for part in listed
    ]
    return sorted(result, key=lambda p: p.end)


def _json_mapper(spark):
    """Jackson with its Scala module, both shipped with Spark: catalog objects to and from JSON."""
    jvm = spark._jvm
    scala_module = getattr(jvm.com.fasterxml.jackson.module.scala, "DefaultScalaModule$").__getattr__("MODULE$")
    return jvm.com.fasterxml.jackson.databind.ObjectMapper().registerModule(scala_module)


def add_partitions(spark, spec: TableSpec, locations: dict[str, str]) -> None:
    """Add partitions (end value -> location) in one statement."""
    if not locations:
        return
    clauses = " ".join(
        f"PARTITION ({sqltemplates.quote_identifier(spec.end_column)} = {sqltemplates.quote_literal(end)})"
        f" LOCATION {sqltemplates.quote_literal(loc)}"
        for end, loc in sorted(locations.items())
    )
    spark.sql(f"ALTER TABLE {sqltemplates.quote_identifier(spec.table)} ADD IF NOT EXISTS {clauses}")


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


class ConcurrentChange(StateError):
    """Another run published to the table after this run read its state."""


def repoint(
    spark, spec: TableSpec, changes: list[Partition], *, expected_run: str | None, ds: str | None = None
) -> None:
    """Re-point partitions at new directories and replace their zipper parameters, atomically.

    The partitions travel through JSON (Jackson, inside the JVM): one call out, edited here,
    one call back, whatever the number of partitions or the fields this Spark version's
    `CatalogTablePartition` has. Then one `alterPartitions`: one metastore transaction.

    `expected_run`: the run id the open partition had when the caller read the table's state
    ("" before the first commit; None: no check, for repairs). If another run has published since
    (a rerun and a merge of one table at once, with an external metastore), nothing is published:
    ConcurrentChange. The check reads the open partition as fetched for the publish, so it costs
    no extra call; two runs publishing within the milliseconds between that fetch and
    `alterPartitions` are not told apart."""
    catalog = _external_catalog(spark)
    jvm = spark._jvm
    mapper = _json_mapper(spark)
    if len(changes) <= FETCH_ONE_BY_ONE:  # the daily merge: two partitions
        current = jvm.java.util.ArrayList()
        for change in changes:
            try:
                current.add(
                    catalog.getPartition(
                        spec.database, spec.table_name, _scala_map(spark, {spec.end_column: change.end})
                    )
                )
            except Exception as exc:  # gone: the recovery of a run that overtook this one drops pending ones
                if "PARTITIONS_NOT_FOUND" not in str(exc):
                    raise
        listed = json.loads(mapper.writeValueAsString(current))
    else:  # one metastore call instead of one per partition (each takes a good tenth of a second)
        listed = json.loads(
            mapper.writeValueAsString(catalog.listPartitions(spec.database, spec.table_name, jvm.scala.Option.empty()))
        )
    by_end = {part["spec"][spec.end_column]: part for part in listed}
    if expected_run is not None:
        _require_unchanged(spark, spec, by_end, expected_run, ds)
    missing = [change.end for change in changes if change.end not in by_end]
    if missing:
        raise StateError(f"cannot re-point partitions that do not exist: {missing}", table=spec.table, ds=ds)
    parts = [by_end[change.end] for change in changes]
    for part, change in zip(parts, changes):
        kept = {
            k: v
            for k, v in (part.get("parameters") or {}).items()
            if not k.startswith("zipper.") and k not in STATS_PARAMS
        }
        kept.update(change.params)
        part["storage"]["locationUri"] = fs.location_uri(spark, change.location)
        part["parameters"] = kept
        part["stats"] = None
    list_type = mapper.getTypeFactory().constructCollectionType(
        jvm.java.lang.Class.forName("java.util.List"), jvm.java.lang.Class.forName(PARTITION_CLASS)
    )
    updated = mapper.readValue(json.dumps(parts), list_type)
    catalog.alterPartitions(spec.database, spec.table_name, jvm.org.apache.spark.api.python.PythonUtils.toSeq(updated))
    refresh(spark, spec)


def require_unchanged(spark, spec: TableSpec, expected_run: str, ds: str | None = None) -> None:
    """ConcurrentChange if another run published since the caller read the table's state: asked
    before a change that must not outlive a publish that will fail (a column's widening)."""
    _require_unchanged(spark, spec, {}, expected_run, ds)


def _require_unchanged(spark, spec: TableSpec, fetched: dict[str, dict], expected_run: str, ds: str | None) -> None:
    open_end = spec.open_end.isoformat()
    if open_end in fetched:
        current = fetched[open_end].get("parameters") or {}
    else:
        part = _external_catalog(spark).getPartition(
            spec.database, spec.table_name, _scala_map(spark, {spec.end_column: open_end})
        )
        current = _to_python_map(spark, part.parameters())
    found = current.get(RUN_PARAM, "")
    if found != expected_run:
        raise ConcurrentChange(
            f"another run ({found or 'unknown'}, table now at {current.get(AT_PARAM, 'no date')}) published to the"
            " table while this one was running; nothing of this run was published. Run it again: it plans from"
            " the table as it is now (a date already committed is a no-op)",
            table=spec.table,
            ds=ds,
        )


def refresh(spark, spec: TableSpec) -> None:
    spark.catalog.refreshTable(spec.table)


def data_columns(spark, spec: TableSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the stored data columns, without begin and end."""
    schema = spark.table(spec.table).schema
    return [
        (f.name, f.dataType.simpleString()) for f in schema.fields if f.name not in (spec.begin_column, spec.end_column)
    ]


def alter_data_columns(spark, spec: TableSpec, columns: list[tuple[str, str]]) -> None:
    """Make the table's data columns `columns`: widen the types of existing ones in place and
    append the new ones after the existing columns (the metastore checks types by position, so
    new columns go last, after the begin column). One metastore call; Parquet files are read by
    column name, so older files read NULL for an added column and their values widened."""
    wanted = dict(columns)
    current = [
        (f.name, f.dataType.simpleString()) for f in spark.table(spec.table).schema.fields if f.name != spec.end_column
    ]
    have = {name for name, _ in current}
    fields = [(name, wanted.get(name, kind)) for name, kind in current] + [c for c in columns if c[0] not in have]
    struct = {
        "type": "struct",
        "fields": [{"name": name, "type": _type_json(kind), "nullable": True, "metadata": {}} for name, kind in fields],
    }
    schema = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(json.dumps(struct))
    _external_catalog(spark).alterTableDataSchema(spec.database, spec.table_name, schema)
    refresh(spark, spec)


def _type_json(kind: str):
    from pyspark.sql import types as T  # on use: the thrift reader of the committed state loads no pyspark

    return T._parse_datatype_string(kind).jsonValue()


class SparkCatalog:
    """The four questions `state.state_from` asks, answered through a SparkSession's catalog."""

    def __init__(self, spark):
        self.spark = spark

    def table_exists(self, spec: TableSpec) -> bool:
        return table_exists(self.spark, spec)

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        return table_properties(self.spark, spec)

    def table_location(self, spec: TableSpec) -> str:
        return table_location(self.spark, spec)

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        return list_partitions(self.spark, spec)
