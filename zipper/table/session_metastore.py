"""The Hive metastore of a Spark session's tables: its thrift URI, and this thread's connection to it.

A merge makes several metastore calls, and the server sets up a store for each new connection,
so the connection is kept between calls. Apart from the catalog's calls (zipper.table.hive_catalog)
because it is about the session, not the metastore: a reader with a URI of its own
(zipper.table.thrift_catalog) opens its own connection instead."""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator

from zipper.core.errors import StateError
from zipper.core.hms import MetastoreClient, MetastoreUnreachable

# Where the thrift URI comes from: the session's Spark conf, else this variable (an external
# metastore configured in hive-site.xml, which a session's conf does not show).
URIS_CONF = "spark.hadoop.hive.metastore.uris"
URI_ENV = "ZIPPER_METASTORE_URI"

_session_uris: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a session's metastore setting
_kept = threading.local()  # this thread's open connections, by (process, URI)


def metastore_uri(spark) -> str:
    """The thrift URI of the session's metastore: the session's conf (the warehouse's own server,
    or an external one given to Spark), else ZIPPER_METASTORE_URI. The session's setting is asked
    once (on a Spark Connect client each ask is a round trip; a merge makes several calls)."""
    try:
        setting = _session_uris[spark]
    except (KeyError, TypeError):  # not asked yet (or a session that cannot be weakly referenced)
        setting = spark.conf.get(URIS_CONF, None) or ""
        with contextlib.suppress(TypeError):
            _session_uris[spark] = setting
    configured = setting or os.environ.get(URI_ENV, "")
    uri = next((u.strip() for u in configured.split(",") if u.strip()), "")
    if not uri:
        raise StateError(
            f"no metastore URI: set {URIS_CONF} in the Spark conf or {URI_ENV}=thrift://host:port"
            " in the environment (the tables are read and published over the metastore's thrift API)"
        )
    return uri


@contextlib.contextmanager
def session_metastore(spark) -> Iterator[MetastoreClient]:
    """This thread's connection to the session's metastore, opened on first use and kept for the
    next call: the server sets up a store for each new connection (measured: 50-70 ms for a
    new connection and one call, 7 ms for the call on an open one), and a publish makes several
    calls. One the server has closed since (a restart) is opened again; one a call failed on
    is closed, and the failure told in one line."""
    from thrift.transport.TTransport import TTransportException  # on use: as zipper.core.hms

    uri = metastore_uri(spark)
    key = (os.getpid(), uri)  # a forked process opens its own: a socket is not shared
    kept = _kept.__dict__.setdefault("clients", {})
    client = kept.pop(key, None)  # taken while in use: a nested call opens another
    if client is not None and not client.is_open():
        client.__exit__(None, None, None)
        client = None
    if client is None:
        client = MetastoreClient(uri).__enter__()
    try:
        yield client
    except StateError:
        kept[key] = client  # zipper's own refusal, between calls: the connection is fine
        raise
    except (TTransportException, ConnectionError, TimeoutError) as exc:  # the socket's, not a file's
        client.__exit__(None, None, None)
        raise MetastoreUnreachable(
            f"the metastore at {uri} stopped answering ({type(exc).__name__}: {exc}); what it had not applied"
            " was not published, and the table is as its last commit says (`zipper status`; `zipper metastore"
            " status` shows the warehouse's server)"
        ) from None
    except BaseException:
        client.__exit__(None, None, None)
        raise
    kept[key] = client
