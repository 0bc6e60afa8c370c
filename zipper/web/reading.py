"""The specs and the tables' committed state, for the pages: read over thrift, never through Spark.

A page view must not start a JVM, and must answer for 50 tables within a second. So the state
comes from the metastore's thrift API (the warehouse's server, or an external one), and a table
whose table and open-partition parameters are unchanged since the last view is not listed again:
every publish changes them (thrift_catalog.signature). Even so the metastore spends 10-25 ms per
table on those two calls, so the tables page answers from the last read of every table (a
`RecentStates`) and refreshes it behind the answer; a single table's page reads it afresh."""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from zipper.core.errors import StateError, ZipperError
from zipper.runtime import metastore
from zipper.table import state as table_state
from zipper.table.thrift_catalog import ThriftCatalog
from zipper.tablespec.loader import scan_specs, spec_files, specs_dir
from zipper.tablespec.model import TableSpec

log = logging.getLogger(__name__)
CONNECTIONS = 4  # thrift connections side by side: the server answers each in milliseconds
EXTERNAL_URI_ENV = "ZIPPER_METASTORE_URI"  # with ZIPPER_METASTORE=external: where the view reads


class ViewUnavailable(ZipperError):
    """The view cannot read the metastore here (no URI for an external one)."""


@dataclass(frozen=True)
class SpecEntry:
    path: Path
    spec: TableSpec | None
    error: str | None = None


_specs_seen: dict[Path, tuple[tuple, list[SpecEntry]]] = {}  # by folder: its files' stats, their entries


def load_specs(folder: str | os.PathLike | None = None) -> list[SpecEntry]:
    """Every spec file of the folder the DAGs use (ZIPPER_SPECS, else dags/tables), in name order;
    a broken file is kept with its error, so the page can show it beside the others. Parsed again
    only when a file was added, removed or changed (every request asks; 50 files take 50 ms)."""
    directory = specs_dir(folder)
    stats = _file_stats(spec_files(directory))
    seen = _specs_seen.get(directory)
    if seen is not None and seen[0] == stats:
        return seen[1]
    entries = [
        SpecEntry(path, spec, None) if isinstance(spec, TableSpec) else SpecEntry(path, None, str(spec))
        for path, spec in scan_specs(directory)
    ]
    entries.sort(key=lambda e: e.spec.name if e.spec else e.path.name)
    _specs_seen[directory] = (stats, entries)
    return entries


def _file_stats(paths) -> tuple:
    found = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            return ()  # removed while listed: never equal to a cached listing's stats
        found.append((str(path), info.st_mtime_ns, info.st_size))
    return tuple(found)


def metastore_uri(warehouse: Path, start: bool = True) -> str | None:
    """The thrift URI the view reads: the warehouse's server (started if down, as any zipper
    command would; with `start=False`, None when it is down), or ZIPPER_METASTORE_URI for an
    external metastore. A retired ZIPPER_METASTORE=embedded is refused (StateError), in one line."""
    if metastore.mode() == metastore.MetastoreMode.LOCAL:
        service = metastore.MetastoreService(warehouse)
        if not start:
            running = service.running()
            return running.uri if running else None
        return service.ensure().uri
    uri = os.environ.get(EXTERNAL_URI_ENV)
    if not uri:
        raise ViewUnavailable(
            f"ZIPPER_METASTORE=external: set {EXTERNAL_URI_ENV}=thrift://host:port in the Airflow API server's"
            " environment so this view can read the tables"
        )
    return uri


class StateReader:
    """Committed states by table, kept between page views while their signature is unchanged."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[tuple, table_state.TableState]] = {}
        self._lock = threading.Lock()

    def states(self, uri: str, specs: list[TableSpec]) -> dict[str, table_state.TableState | StateError]:
        """Each spec's state by name (or the error reading it), read over up to CONNECTIONS connections."""
        if not specs:
            return {}
        chunks = [specs[i::CONNECTIONS] for i in range(min(CONNECTIONS, len(specs)))]
        with ThreadPoolExecutor(len(chunks)) as pool:
            results = pool.map(lambda chunk: self._read_chunk(uri, chunk), chunks)
        return {name: st for result in results for name, st in result.items()}

    def state(self, uri: str, spec: TableSpec) -> table_state.TableState:
        """One table's state, read now (a table's page: two thrift calls when it is unchanged)."""
        with ThriftCatalog(uri) as catalog:
            return self._read(uri, catalog, spec)

    def _read_chunk(self, uri: str, specs: list[TableSpec]) -> dict[str, table_state.TableState | StateError]:
        found: dict[str, table_state.TableState | StateError] = {}
        with ThriftCatalog(uri) as catalog:
            for spec in specs:
                try:
                    found[spec.name] = self._read(uri, catalog, spec)
                except StateError as exc:
                    found[spec.name] = exc
        return found

    def _read(self, uri: str, catalog: ThriftCatalog, spec: TableSpec) -> table_state.TableState:
        signature = catalog.signature(spec)
        if signature is None:
            return table_state.TableState(exists=False)
        key = (uri, spec.table)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        st = table_state.state_from(catalog, spec)
        with self._lock:
            self._cache[key] = (signature, st)
        return st


@dataclass(frozen=True)
class Reading:
    """States by table name as read at `read_at` (seconds since the epoch); `refreshing`: a newer
    read is under way behind this answer."""

    states: dict[str, table_state.TableState | StateError]
    read_at: float
    refreshing: bool


class RecentStates:
    """The tables page's states: the last read of every table, refreshed behind the answer.

    A read younger than `fresh_s` is answered as it is. An older one is answered at once too, and
    a refresh starts in the background (one at a time): the page says how old its read is and
    asks again until it is fresh. A read older than `max_age_s`, or none (a spec added, or no
    read since the start), is made while the request waits; a read already under way (the one
    `prime` starts with the API server) is waited for rather than made twice."""

    def __init__(self, reader: StateReader, fresh_s: float = 10, max_age_s: float = 3600, clock=time.time) -> None:
        self.reader, self.fresh_s, self.max_age_s, self.clock = reader, fresh_s, max_age_s, clock
        self._reads: dict[str, tuple[float, dict]] = {}  # by URI: (read at, {spec.table: state})
        self._refreshing: dict[str, threading.Thread] = {}  # by URI: the read under way behind the answers
        self._lock = threading.Lock()

    def states(self, uri: str, specs: list[TableSpec]) -> Reading:
        with self._lock:
            read_at, found = self._reads.get(uri, (None, {}))
            running = self._refreshing.get(uri)
        if running is not None and (read_at is None or self.clock() - read_at > self.max_age_s):
            running.join()
            with self._lock:
                read_at, found = self._reads.get(uri, (None, {}))
        now = self.clock()
        if read_at is None or now - read_at > self.max_age_s:
            read_at, found = now, self._read(uri, specs)
            with self._lock:
                self._reads[uri] = (read_at, found)
        elif missing := [spec for spec in specs if spec.table not in found]:
            added = self._read(uri, missing)
            with self._lock:
                read_at, found = self._reads.get(uri, (read_at, found))
                found = {**found, **added}
                self._reads[uri] = (read_at, found)
        refreshing = now - read_at > self.fresh_s
        if refreshing:
            self.prime(uri, specs)
        return Reading({spec.name: found[spec.table] for spec in specs}, read_at, refreshing)

    def prime(self, uri: str, specs: list[TableSpec]) -> None:
        """Read every table behind the caller, unless a read is under way already."""
        with self._lock:
            if uri not in self._refreshing:
                self._refreshing[uri] = threading.Thread(
                    target=self._refresh, args=(uri, specs), name="zipper-view-read", daemon=True
                )
                self._refreshing[uri].start()

    def _read(self, uri: str, specs: list[TableSpec]) -> dict:
        by_name = self.reader.states(uri, specs)
        return {spec.table: by_name[spec.name] for spec in specs}

    def _refresh(self, uri: str, specs: list[TableSpec]) -> None:
        try:
            read_at = self.clock()
            found = self._read(uri, specs)
            with self._lock:
                self._reads[uri] = (read_at, found)
            log.info("zipper view: read %d tables from %s in %.1f s", len(found), uri, self.clock() - read_at)
        except Exception as exc:  # the next request reads while it waits, and shows what failed
            log.warning("zipper view: reading the tables from %s failed: %s", uri, exc)
            with self._lock:
                self._reads.pop(uri, None)
        finally:
            with self._lock:
                self._refreshing.pop(uri, None)

    def settle(self, timeout: float | None = None) -> None:
        """Until the read under way behind the answers has ended (tests and benchmarks)."""
        with self._lock:
            running = list(self._refreshing.values())
        for thread in running:
            thread.join(timeout)
