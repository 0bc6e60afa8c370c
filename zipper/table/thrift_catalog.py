"""The metastore's tables and partitions read over its thrift API, from Python, without a JVM.

A zipper table's committed state is its partitions' parameters (zipper.table.state), so a
question like "where is the table" needs the metastore and nothing else. Asked through Spark it
cost a JVM, a SparkSession and a Hive client (seconds, or a wait behind a merge on the embedded
metastore); asked here it is two thrift calls. The bindings are pymetastore's, generated from
the metastore's interface definition; only calls that Hive 2.3's server has are used
(`get_database`, `get_table`, `get_partitions`)."""

from __future__ import annotations

from urllib.parse import urlsplit

from zipper.core.errors import StateError
from zipper.core.paths import hadoop_path
from zipper.table.catalog import Partition
from zipper.tablespec.model import TableSpec

CONNECT_TIMEOUT_MS = 10_000


class ThriftCatalog:
    """A catalog reader (the four questions `state.state_from` asks) over one thrift connection.

    Use as a context manager: the connection is opened on entry and closed on exit."""

    def __init__(self, uri: str):
        parts = urlsplit(uri)
        if parts.scheme != "thrift" or not parts.hostname or not parts.port:
            raise StateError(f"metastore URI {uri!r}: expected thrift://host:port")
        self.uri = uri
        self.host, self.port = parts.hostname, parts.port
        self._transport = None
        self._client = None
        self._tables: dict[str, object] = {}  # by database.table: the four questions ask for it four times

    def __enter__(self) -> ThriftCatalog:
        # on use: the bindings are large, and only this reader needs them
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        socket = TSocket.TSocket(self.host, self.port)
        socket.setTimeout(CONNECT_TIMEOUT_MS)
        self._transport = TTransport.TBufferedTransport(socket)
        try:
            self._transport.open()
        except TTransport.TTransportException as exc:
            raise StateError(
                f"the metastore at {self.uri} did not answer ({exc}); `zipper metastore status` shows the"
                " local server, `zipper metastore start` starts it"
            ) from None
        socket.setTimeout(None)  # a listing of many partitions may take a while: no read timeout
        self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(self._transport))
        return self

    def __exit__(self, *exc_info) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = self._client = None

    def _table(self, spec: TableSpec):
        from pymetastore.hive_metastore.ttypes import NoSuchObjectException

        if spec.table not in self._tables:
            try:
                self._tables[spec.table] = self._client.get_table(spec.database, spec.table_name)
            except NoSuchObjectException:
                self._tables[spec.table] = None
        return self._tables[spec.table]

    def table_exists(self, spec: TableSpec) -> bool:
        return self._table(spec) is not None

    def table_properties(self, spec: TableSpec) -> dict[str, str]:
        return dict(self._table(spec).parameters or {})

    def table_location(self, spec: TableSpec) -> str:
        return hadoop_path(self._table(spec).sd.location).rstrip("/")

    def list_partitions(self, spec: TableSpec) -> list[Partition]:
        """Every partition with its location and parameters, sorted by end value (as catalog.list_partitions)."""
        table = self._table(spec)
        names = [column.name for column in table.partitionKeys]
        position = names.index(spec.end_column)
        parts = self._client.get_partitions(spec.database, spec.table_name, -1)
        result = [
            Partition(
                end=part.values[position],
                location=hadoop_path(part.sd.location or ""),
                params={str(k): str(v) for k, v in (part.parameters or {}).items()},
            )
            for part in parts
        ]
        return sorted(result, key=lambda p: p.end)
