"""The committed state's catalog questions answered over the metastore's thrift API, without a JVM.

A zipper table's committed state is its partitions' parameters (zipper.table.state), so a
question like "where is the table" needs the metastore and nothing else. Asked through Spark it
cost a JVM, a SparkSession and a Hive client (seconds); asked here it is two thrift calls
(zipper.core.hms). zipper.table.catalog reads the same way through a session's metastore."""

from __future__ import annotations

from zipper.core.hms import MetastoreClient
from zipper.core.paths import hadoop_path
from zipper.table.catalog import Partition, partitions_of
from zipper.tablespec.model import TableSpec


class ThriftCatalog:
    """A catalog reader (the four questions `state.state_from` asks, and the table's column types)
    over one thrift connection.

    Use as a context manager: the connection is opened on entry and closed on exit."""

    def __init__(self, uri: str):
        self.metastore = MetastoreClient(uri)
        self._tables: dict[str, object] = {}  # by database.table: the four questions ask for it four times

    def __enter__(self) -> ThriftCatalog:
        self.metastore.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self.metastore.__exit__(*exc_info)

    def _table(self, spec: TableSpec):
        if spec.table not in self._tables:
            self._tables[spec.table] = self.metastore.table(spec.database, spec.table_name)
        return self._tables[spec.table]

    def table_exists(self, spec: TableSpec) -> bool:
        return self._table(spec) is not None

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        return dict(self._table(spec).parameters or {})

    def table_location(self, spec: TableSpec) -> str:
        return hadoop_path(self._table(spec).sd.location).rstrip("/")

    def column_types(self, spec: TableSpec) -> dict[str, str]:
        """The table's data columns' types by lower-case name, as the metastore holds them (`bigint`)."""
        return {column.name.lower(): column.type for column in self._table(spec).sd.cols or []}

    def signature(self, spec: TableSpec) -> tuple | None:
        """What every publish changes: the table's parameters and its open partition's location and
        parameters (None: no such table). Equal signatures, equal committed state: a reader may keep
        the state it listed and skip listing every partition again."""
        table = self._table(spec)
        if table is None:
            return None
        opened = self.metastore.partition(
            spec.database, spec.table_name, {spec.end_column: spec.open_end.isoformat()}, table
        )  # None too when the table has other partition columns: then no partition is open
        return (
            tuple(sorted((table.parameters or {}).items())),
            opened.sd.location if opened else None,
            tuple(sorted((opened.parameters or {}).items())) if opened else None,
        )

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        """Every partition with its location and parameters, sorted by end value (as catalog.list_partitions)."""
        return partitions_of(spec, self._table(spec), self.metastore.partitions(spec.database, spec.table_name))
