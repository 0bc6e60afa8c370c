"""What zipper asks of a table catalog, as one interface: `Catalog`.

The committed state, the publish and the column changes are all reads and writes of a table's
catalog entry. Naming them here lets the jobs, the CLI and the view speak to any catalog the
same way: the Hive metastore over thrift (zipper.table.hive_catalog) is one implementation;
another catalog (AWS Glue, an Iceberg REST catalog) would be one more module implementing it.

DDL (create and drop a table, drop partitions) is not here: it goes through the session's Spark
SQL (zipper.table.catalog), which reaches whatever catalog the session is configured with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from zipper.core.errors import StateError
from zipper.tablespec.model import TableSpec

# The open partition's parameters that name the run that published it and the date it is at
# (zipper.table.state's RUN_ID and LAST_COMMITTED): a publish checks the first is unchanged.
RUN_PARAM = "zipper.run_id"
AT_PARAM = "zipper.last_committed"


@dataclass(frozen=True)
class Partition:
    end: str
    location: str
    params: dict[str, str] = field(default_factory=dict)
    # `zipper alter`: the partition's own Hive columns renamed (old -> new) or dropped (old -> None):
    # Hive keeps a column list per partition, and it must name what the new files hold
    column_edits: dict[str, str | None] | None = None


class ConcurrentChange(StateError):
    """Another run published to the table after this run read its state."""


class TableLocked(ConcurrentChange):
    """Another client held the table's metastore lock for longer than a publish waits: nothing of
    this run was published. Not final: the next try finds the lock free."""


class Catalog(Protocol):
    """A table catalog's reads and writes, as zipper makes them.

    The reads answer `state.state_from` (exists, properties, location, partitions), the no-op
    check (column types) and the view's cache (signature). The writes are the publish (`repoint`:
    every change of one publish applied at once, refused with ConcurrentChange if another run
    published since), partitions added before it, the table's data columns, and a dry run's copy."""

    # -- reads
    def database_location(self, database: str) -> str | None:
        """The database's location (a Hadoop path), or None when it does not exist."""
        ...

    def table_exists(self, spec: TableSpec) -> bool: ...

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        """The table's properties as Spark's catalog shows them (without Spark's own and the statistics)."""
        ...

    def table_location(self, spec: TableSpec) -> str: ...

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        """Every partition with its location and parameters, sorted by end value."""
        ...

    def column_types(self, spec: TableSpec) -> dict[str, str]:
        """The data columns' types by lower-case name, as the catalog holds them (`bigint`)."""
        ...

    def data_columns(self, spec: TableSpec) -> list[tuple[str, str]] | None:
        """(name, Spark SQL type) of the data columns without begin and end, from the Spark schema
        the catalog keeps for the table; None when it keeps none (the caller asks Spark)."""
        ...

    def signature(self, spec: TableSpec) -> tuple | None:
        """What every publish changes (None: no such table): equal signatures, equal committed state."""
        ...

    def tables_named(self, database: str, pattern: str) -> dict[str, dict[str, str]]:
        """The database's tables whose names match `pattern` (`*` for any characters), with their properties."""
        ...

    # -- writes
    def add_partitions(self, spec: TableSpec, locations: dict[str, str]) -> None:
        """Add partitions (end value -> location) in one call; one the table has is left as it is."""
        ...

    def repoint(
        self, spec: TableSpec, changes: list[Partition], *, expected_run: str | None, ds: str | None = None
    ) -> None:
        """Point partitions at new directories and replace their zipper parameters, all at once."""
        ...

    def require_unchanged(self, spec: TableSpec, expected_run: str, ds: str | None = None) -> None:
        """ConcurrentChange if another run published since the caller read the table's state."""
        ...

    def write_data_columns(
        self, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None, *, threshold: int
    ) -> None:
        """Make the table's data columns `fields` ((name, Spark DataType)); `renamed`: old -> new
        names; `threshold`: the longest schema property value Spark writes whole."""
        ...

    def planned_data_columns(
        self, spec: TableSpec, fields: list, renamed: dict[str, str] | None = None, *, threshold: int
    ) -> Callable[[], None]:
        """`write_data_columns`, its reads done now: returns the call that writes. A reader sees
        the table half changed between a partitions' publish and the columns' write, so `zipper
        alter` reads first and keeps only the writes between the two."""
        ...

    def complete_data_columns(self, spec: TableSpec) -> bool:
        """Finish a change of the table's data columns that was killed part way (`write_data_columns`
        may take two calls); True when it changed the table."""
        ...

    def copy_table(self, spec: TableSpec, name: str, location: str, properties: dict[str, str]) -> None:
        """Create table `name` as a copy of the table's entry, its partitions pointing at the same files."""
        ...

    def drop_entry(self, database: str, name: str) -> None:
        """Drop a table's entry and its partitions', deleting no file."""
        ...
