"""The Hive catalog over a thrift connection of its own, for readers that have no Spark session.

A zipper table's committed state is its partitions' parameters (zipper.table.state), so a
question like "where is the table" needs the metastore and nothing else. Asked through Spark it
cost a JVM, a SparkSession and a Hive client (seconds); asked here it is two thrift calls. The
CLI's `status`, the no-op check and the view read here; the data path reads and writes through
its session's connection (zipper.table.catalog). Both are the one HiveCatalog."""

from __future__ import annotations

import contextlib

from zipper.core.hms import MetastoreClient
from zipper.table.hive_catalog import HiveCatalog


class ThriftCatalog(HiveCatalog):
    """A HiveCatalog over one connection to the metastore at `uri`.

    Use as a context manager: the connection is opened on entry and closed on exit."""

    def __init__(self, uri: str):
        self.metastore = MetastoreClient(uri)
        super().__init__(lambda: contextlib.nullcontext(self.metastore))

    def __enter__(self) -> ThriftCatalog:
        self.metastore.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self.metastore.__exit__(*exc_info)
