"""A Hive metastore's thrift API from Python: one connection, the few calls zipper needs.

The bindings are pymetastore's, generated from the metastore's interface definition; only calls
that Hive 2.3's server has are used (`get_database`, `get_table`, `get_partitions`,
`get_partition`, `alter_partitions`, `alter_table`). No JVM and no pyspark: the CLI's `status`,
the Airflow sensors and the merge task's no-op check ask the metastore here in milliseconds,
while a merge of the same table runs; the catalog of the data path (zipper.table.catalog) reads
and publishes here too, so that it needs no JVM on the client."""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

from zipper.core.errors import StateError

# The thrift library logs a refused connection itself; zipper says it in its own one line. With
# this handler nothing reaches Python's last-resort stderr; an application's own logging still
# receives the records.
logging.getLogger("thrift").addHandler(logging.NullHandler())

CONNECT_TIMEOUT_MS = 10_000


class MetastoreUnreachable(StateError):
    """The metastore did not answer, or stopped answering during a call: nothing it had not
    applied was published. The CLI tells it as the warehouse's server stopping, where it is."""


class MetastoreClient:
    """A thrift connection to one metastore; a context manager (opened on entry, closed on exit)."""

    def __init__(self, uri: str):
        parts = urlsplit(uri)
        if parts.scheme != "thrift" or not parts.hostname or not parts.port:
            raise StateError(f"metastore URI {uri!r}: expected thrift://host:port")
        self.uri = uri
        self.host, self.port = parts.hostname, parts.port
        self._transport = None
        self._socket = None
        self.client = None  # the generated ThriftHiveMetastore.Client, once open

    def __enter__(self) -> MetastoreClient:
        # on use: the bindings are large, and only these readers need them
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        self._socket = TSocket.TSocket(self.host, self.port)
        self._socket.setTimeout(CONNECT_TIMEOUT_MS)
        self._transport = TTransport.TBufferedTransport(self._socket)
        try:
            self._transport.open()
        except TTransport.TTransportException as exc:
            raise MetastoreUnreachable(
                f"the metastore at {self.uri} did not answer ({exc}); `zipper metastore status` shows the"
                " warehouse's server, `zipper metastore start` starts it"
            ) from None
        self._socket.setTimeout(None)  # a listing of many partitions may take a while: no read timeout
        self.client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(self._transport))
        return self

    def __exit__(self, *exc_info) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = self._socket = self.client = None

    def is_open(self) -> bool:
        """Whether the connection is still usable between calls: open, and neither closed by the
        server (a restart) nor holding bytes no call asked for. A peek that neither waits nor reads."""
        handle = self._socket.handle if self._socket is not None else None
        if handle is None:
            return False
        try:
            handle.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True  # nothing to read: idle, as it should be
        except OSError:
            return False
        return False  # closed (b"") or out of step

    def database(self, name: str):
        """The thrift `Database`, or None when it does not exist."""
        from pymetastore.hive_metastore.ttypes import NoSuchObjectException

        try:
            return self.client.get_database(name)
        except NoSuchObjectException:
            return None

    def table(self, database: str, name: str):
        """The thrift `Table`, or None when the database or table does not exist."""
        from pymetastore.hive_metastore.ttypes import NoSuchObjectException

        try:
            return self.client.get_table(database, name)
        except NoSuchObjectException:
            return None

    def partitions(self, database: str, name: str) -> list:
        """Every thrift `Partition` of the table (values, sd.location, parameters)."""
        return self.client.get_partitions(database, name, -1)

    def partition(self, database: str, name: str, values: dict[str, str], table=None):
        """One partition by its column values (in the table's partition column order), or None.
        `table`: the thrift `Table` if the caller has it (one call less)."""
        from pymetastore.hive_metastore.ttypes import NoSuchObjectException

        table = table or self.table(database, name)
        if table is None:
            return None
        try:
            return self.client.get_partition(database, name, [values[c.name] for c in table.partitionKeys])
        except (NoSuchObjectException, KeyError):
            return None

    def alter_partitions(self, database: str, name: str, partitions: list) -> None:
        """Replace these partitions (thrift `Partition`s, as read and edited) in one call: the
        metastore applies them in one transaction, all or none."""
        self.client.alter_partitions(database, name, partitions)

    def alter_table(self, database: str, name: str, table) -> None:
        """Replace the table's definition (a thrift `Table`, as read and edited)."""
        self.client.alter_table(database, name, table)
