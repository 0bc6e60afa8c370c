"""The specs and the tables' committed state, for the pages: read over thrift, never through Spark.

A page view must not start a JVM, and must answer for 50 tables in well under a second. So the
state comes from the metastore's thrift API (the warehouse's server, or an external one), a few
connections side by side, and a table whose table and open-partition parameters are unchanged
since the last view is not listed again: every publish changes them (thrift_catalog.signature)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from zipper.core.errors import StateError, ZipperError
from zipper.runtime import metastore
from zipper.table import state as table_state
from zipper.table.thrift_catalog import ThriftCatalog
from zipper.tablespec.loader import scan_specs, specs_dir
from zipper.tablespec.model import TableSpec

CONNECTIONS = 4  # thrift connections side by side: the server answers each in milliseconds
EXTERNAL_URI_ENV = "ZIPPER_METASTORE_URI"  # with ZIPPER_METASTORE=external: where the view reads


class ViewUnavailable(ZipperError):
    """The view cannot read the metastore here (embedded Derby, or no URI for an external one)."""


@dataclass(frozen=True)
class SpecEntry:
    path: Path
    spec: TableSpec | None
    error: str | None = None


def load_specs(folder: str | os.PathLike | None = None) -> list[SpecEntry]:
    """Every spec file of the folder the DAGs use (ZIPPER_SPECS, else dags/tables), in name order;
    a broken file is kept with its error, so the page can show it beside the others."""
    entries = [
        SpecEntry(path, spec, None) if isinstance(spec, TableSpec) else SpecEntry(path, None, str(spec))
        for path, spec in scan_specs(specs_dir(folder))
    ]
    return sorted(entries, key=lambda e: e.spec.name if e.spec else e.path.name)


def metastore_uri(warehouse: Path) -> str:
    """The thrift URI the view reads: the warehouse's server (started if down, as any zipper
    command would), or ZIPPER_METASTORE_URI for an external metastore."""
    mode = metastore.mode()
    if mode == "local":
        return metastore.MetastoreService(warehouse).ensure().uri
    if mode == "external":
        uri = os.environ.get(EXTERNAL_URI_ENV)
        if not uri:
            raise ViewUnavailable(
                f"ZIPPER_METASTORE=external: set {EXTERNAL_URI_ENV}=thrift://host:port in the Airflow API server's"
                " environment so this view can read the tables"
            )
        return uri
    raise ViewUnavailable(
        "ZIPPER_METASTORE=embedded: the embedded Derby metastore admits one JVM at a time, so this view cannot"
        " read it; use the default (local) metastore service"
    )


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
        found = self.states(uri, [spec])[spec.name]
        if isinstance(found, StateError):
            raise found
        return found

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
