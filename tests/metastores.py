"""The warehouses' metastore servers the tests start, found and stopped by process id.

Every `zipper` command, probe and Airflow task of a test starts its warehouse's server on demand
(zipper.runtime.metastore) and leaves it running, as on a user's machine. The fixtures in
tests/conftest.py stop them: after each test, those of its own `tmp_path`; after each module,
every other one under the run's temporary folder, but the session's shared warehouse."""

from __future__ import annotations

import contextlib
from pathlib import Path

from zipper.runtime import metastore, processes

MARKER = "-Dzipper.warehouse="


def running_servers() -> dict[int, Path]:
    """pid -> warehouse of every metastore server of a zipper warehouse running on this machine."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if metastore.MAIN_CLASS in cmdline:
            marks = [part[len(MARKER) :] for part in cmdline if part.startswith(MARKER)]
            if marks:
                found[int(proc.name)] = Path(marks[0])
    return found


def stop_servers(under: Path, keep: frozenset[Path] = frozenset()) -> list[Path]:
    """Stop the servers whose warehouse is inside `under` (but those in `keep`); their warehouses."""
    stopped = []
    under = under.resolve()
    for pid, warehouse in running_servers().items():
        if warehouse in keep or not warehouse.is_relative_to(under):
            continue
        service = metastore.MetastoreService(warehouse)
        recorded = service.recorded()
        if recorded is not None and recorded.pid == pid:
            service.stop()
        else:  # a server whose record a test removed or replaced: by its pid alone
            with contextlib.suppress(ProcessLookupError):
                processes.terminate(pid)
        stopped.append(warehouse)
    return stopped
