"""A Hive metastore's thrift API from Python: one connection, the few calls zipper needs.

The bindings are pymetastore's, generated from the metastore's interface definition; only calls
that Hive 2.3's server has are used (`get_database`, `get_table`, `get_partitions`,
`get_partition`, `alter_partitions`, `alter_table`; `create_table`, `add_partitions`, `drop_table` and
`get_tables` for a dry run's copy of a table; and the table locks' `lock`, `check_lock`,
`show_locks`, `unlock`). No JVM and no pyspark: the CLI's `status`,
the Airflow sensors and the merge task's no-op check ask the metastore here in milliseconds,
while a merge of the same table runs; the data path reads and publishes here too, so that it
needs no JVM on the client. Both through zipper.table.hive_catalog, the one Catalog over it."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import getpass
import logging
import os
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

from zipper.core.errors import StateError

# the metastore's check of a table's new column types against the old ones, position by position;
# a client may change it for its connection (`setMetaConf`, Hive 2.0 on)
POSITIONAL_TYPE_CHECK = "hive.metastore.disallow.incompatible.col.type.changes"

# The thrift library logs a refused connection itself; zipper says it in its own one line. With
# this handler nothing reaches Python's last-resort stderr; an application's own logging still
# receives the records.
logging.getLogger("thrift").addHandler(logging.NullHandler())

CONNECT_TIMEOUT_MS = 10_000
# A waiting lock is asked again after these pauses, doubling: a publish holds it for milliseconds.
LOCK_FIRST_PAUSE_S = 0.05
LOCK_MAX_PAUSE_S = 1.0
AGENT_MAX = 128  # the metastore's column for a lock's agent is varchar(128)

log = logging.getLogger(__name__)


@functools.cache
def _let_python_mark_exceptions() -> None:
    """The bindings' exceptions refuse every attribute set after they are made ("can't modify
    immutable instance"), Python's own marks too: a metastore refusal raised through a
    `contextlib.contextmanager` block (which sets its `__traceback__`) turned into that TypeError,
    and the metastore's message was lost. Their classes let Python set its dunder attributes."""
    from pymetastore.hive_metastore import ttypes
    from thrift.Thrift import TException

    for kind in vars(ttypes).values():
        if isinstance(kind, type) and issubclass(kind, TException) and "__setattr__" in vars(kind):
            kind.__setattr__ = _dunder_settable(kind.__setattr__)


def _dunder_settable(refuse):
    def settable(self, name, value):
        if name.startswith("__") and name.endswith("__"):
            BaseException.__setattr__(self, name, value)
        else:
            refuse(self, name, value)

    return settable


class MetastoreUnreachable(StateError):
    """The metastore did not answer, or stopped answering during a call: nothing it had not
    applied was published. The CLI tells it as the warehouse's server stopping, where it is."""


class LockNotGranted(StateError):
    """Another client held the table's lock for longer than the caller would wait. `holder`: who,
    as the metastore lists it. Nothing was locked by the caller."""

    def __init__(self, message: str, *, holder: str = "", table: str | None = None, ds: str | None = None):
        self.holder = holder
        super().__init__(message, table=table, ds=ds)


class LocksUnsupported(Exception):
    """The metastore refused the `lock` call itself: it keeps no transaction tables (Hive's schema
    scripts create them; DataNucleus does not), or it is not a Hive metastore that has the call."""


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
        _let_python_mark_exceptions()
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

    def positional_type_check(self) -> str | None:
        """This connection's setting of the check that refuses a table's new columns whose types
        differ, place by place, from the old ones (`POSITIONAL_TYPE_CHECK`); None when the
        metastore does not let a client change it (before Hive 2.0)."""
        from pymetastore.hive_metastore.ttypes import MetaException

        try:
            return self.client.getMetaConf(POSITIONAL_TYPE_CHECK)
        except MetaException:
            return None

    @contextlib.contextmanager
    def without_positional_type_check(self) -> Iterator[bool]:
        """The calls inside made with the positional type check off on this connection, then set
        back as it was. The check protects data files read by position; zipper's files are Parquet,
        read by name, and a drop rewrites every partition first. Yields whether it could be turned off."""
        before = self.positional_type_check()
        if before is None:
            yield False
            return
        self.client.setMetaConf(POSITIONAL_TYPE_CHECK, "false")
        try:
            yield True
        finally:
            self.client.setMetaConf(POSITIONAL_TYPE_CHECK, before)

    def create_table(self, table) -> None:
        """Create a table from a thrift `Table` (a copy of another's, edited)."""
        self.client.create_table(table)

    def add_partitions(self, partitions: list, if_not_exists: bool = False) -> None:
        """Add thrift `Partition`s, with their locations, columns and parameters, in one call.
        `if_not_exists`: one the table has already is left as it is (else the call fails)."""
        if not if_not_exists:
            self.client.add_partitions(partitions)
            return
        from pymetastore.hive_metastore.ttypes import AddPartitionsRequest

        first = partitions[0]
        self.client.add_partitions_req(
            AddPartitionsRequest(first.dbName, first.tableName, partitions, ifNotExists=True, needResult=False)
        )

    def drop_table(self, database: str, name: str) -> None:
        """Drop a table's entry, and its partitions', deleting no file (an external table's stay anyway)."""
        from pymetastore.hive_metastore.ttypes import NoSuchObjectException

        try:
            self.client.drop_table(database, name, False)
        except NoSuchObjectException:
            pass

    def table_names(self, database: str, pattern: str) -> list[str]:
        """The names of the database's tables matching `pattern` (`*` for any characters)."""
        return list(self.client.get_tables(database, pattern))

    @contextlib.contextmanager
    def exclusive_lock(self, database: str, name: str, *, wait_s: float, agent: str) -> Iterator[int]:
        """Hold the metastore's exclusive lock on a table for the block (its lock id).

        As Hive's own clients and Iceberg's Hive catalog take it: `lock` with one EXCLUSIVE
        TABLE component and no transaction, then `check_lock` while it is WAITING, for at most
        `wait_s` seconds (LockNotGranted, naming the holder), and `unlock` at the end, whatever
        happens. No heartbeat: the block lasts milliseconds. A lock whose client is killed
        stays until the metastore's housekeeping removes locks not heartbeated for
        `hive.txn.timeout`. LocksUnsupported when the metastore cannot lock at all."""
        from pymetastore.hive_metastore.ttypes import (
            CheckLockRequest,
            LockComponent,
            LockLevel,
            LockRequest,
            LockState,
            LockType,
            MetaException,
            NoSuchLockException,
        )
        from thrift.Thrift import TApplicationException
        from thrift.transport.TTransport import TTransportException

        component = LockComponent(
            type=LockType.EXCLUSIVE, level=LockLevel.TABLE, dbname=database.lower(), tablename=name.lower()
        )
        request = LockRequest(
            component=[component], user=_user(), hostname=socket.gethostname(), agentInfo=agent[:AGENT_MAX]
        )
        try:
            response = self.client.lock(request)
        except (MetaException, TApplicationException) as exc:
            raise LocksUnsupported(_first_line(exc)) from None
        except TTransportException as exc:
            # A Hive server whose lock call fails with a Java Error (its transaction store's JDBC
            # pool missing from its classpath, as Hive's default BoneCP is from Spark's jars) ends
            # the connection. A server that answers a new one is up: that call is what it lacks.
            self.__exit__(None, None, None)
            self.__enter__()  # MetastoreUnreachable if the server itself is gone
            try:  # a port that takes the connection is not yet a server that answers (one killed, restarting)
                self.client.get_all_databases()
            except TTransportException as gone:
                raise MetastoreUnreachable(
                    f"the metastore at {self.uri} stopped answering ({_first_line(gone)})"
                ) from None
            raise LocksUnsupported(f"the connection closed on the lock call ({_first_line(exc)})") from None
        lock_id = response.lockid
        try:
            state, pause = response.state, LOCK_FIRST_PAUSE_S
            deadline = time.monotonic() + wait_s
            while state == LockState.WAITING and time.monotonic() < deadline:
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, LOCK_MAX_PAUSE_S)
                try:
                    state = self.client.check_lock(CheckLockRequest(lockid=lock_id)).state
                except NoSuchLockException:  # timed out by the metastore meanwhile
                    state = LockState.NOT_ACQUIRED
            if state != LockState.ACQUIRED:
                holder = self.lock_holder(database, name, lock_id)
                raise LockNotGranted(
                    f"the metastore did not grant the table's lock in {wait_s:g} s ({holder})", holder=holder
                )
            yield lock_id
        except BaseException:
            self.unlock(lock_id, quiet=True)  # the failure in flight is what the caller tells
            raise
        self.unlock(lock_id)

    def unlock(self, lock_id: int, *, quiet: bool = False) -> None:
        """Release a lock. One the metastore has already let go of is fine; one that cannot be
        released now (the connection broke) is left to expire, and said in the log unless
        `quiet`: the caller's own outcome stands."""
        from pymetastore.hive_metastore.ttypes import NoSuchLockException, UnlockRequest

        try:
            self.client.unlock(UnlockRequest(lockid=lock_id))
        except NoSuchLockException:
            pass
        except Exception as exc:  # noqa: BLE001 - any failure: the lock expires on its own
            if not quiet:
                log.warning(
                    "zipper: warning: metastore lock %s on %s was not released (%s): it expires after the"
                    " metastore's hive.txn.timeout",
                    lock_id,
                    self.uri,
                    _first_line(exc),
                )

    def lock_holder(self, database: str, name: str, waiting: int | None = None) -> str:
        """Who holds the table's lock, in a few words: the metastore's user, host and agent of the
        granted lock (another than `waiting`), and since when."""
        from pymetastore.hive_metastore.ttypes import LockState, ShowLocksRequest

        try:
            locks = self.client.show_locks(ShowLocksRequest(dbname=database.lower(), tablename=name.lower())).locks
        except Exception as exc:  # noqa: BLE001 - a description only
            return f"its holder could not be listed: {_first_line(exc)}"
        held = [lock for lock in locks or [] if lock.state == LockState.ACQUIRED and lock.lockid != waiting]
        if not held:
            return "its holder has let go of it meanwhile"
        lock = held[0]
        since = dt.datetime.fromtimestamp((lock.acquiredat or 0) / 1000, dt.UTC).isoformat(timespec="seconds")
        return f"lock {lock.lockid} of `{lock.agentInfo}` by {lock.user}@{lock.hostname}, since {since}"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's random uid)
        return str(os.getuid())


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
