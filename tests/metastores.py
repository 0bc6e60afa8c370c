"""The warehouses' metastore and Spark Connect servers the tests start, found and stopped by process id.

Every `zipper` command, probe and Airflow task of a test starts its warehouse's servers on demand
(zipper.runtime.metastore, zipper.runtime.spark_server) and leaves them running, as on a user's machine. The fixtures in
tests/conftest.py stop them: after each test, those of its own `tmp_path`; after each module,
every other one under the run's temporary folder, but the session's shared warehouse."""

from __future__ import annotations

import contextlib
from pathlib import Path

from zipper.runtime import metastore, processes, spark_server
from zipper.runtime.settings import SessionSettings

MARKER = "-Dzipper.warehouse="
SPARK_MARKER = f"{spark_server.MARKER_CONF}="


def _processes_marked(main_class: str, marker: str) -> dict[int, Path]:
    """pid -> warehouse of every process running `main_class` whose command line has an argument
    `<marker><warehouse>`."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if main_class in cmdline:
            marks = [part[len(marker) :] for part in cmdline if part.startswith(marker)]
            if marks:
                found[int(proc.name)] = Path(marks[0])
    return found


def running_servers() -> dict[int, Path]:
    """pid -> warehouse of every metastore server of a zipper warehouse running on this machine."""
    return _processes_marked(metastore.MAIN_CLASS, MARKER)


def running_spark_servers() -> dict[int, Path]:
    """pid -> warehouse of every process of a warehouse's Spark Connect server (its supervisor,
    spark-submit's JVM) running on this machine."""
    return _processes_marked(spark_server.MAIN_CLASS, SPARK_MARKER)


def stop_servers(under: Path, keep: frozenset[Path] = frozenset()) -> list[Path]:
    """Stop the servers whose warehouse is inside `under` (but those in `keep`); their warehouses.
    A warehouse's Spark server first: it is a client of its metastore server."""
    stopped = []
    under = under.resolve()
    spark_servers = {
        pid: warehouse
        for pid, warehouse in running_spark_servers().items()
        if warehouse not in keep and warehouse.is_relative_to(under)
    }
    for warehouse in set(spark_servers.values()):
        spark_server.SparkServerService(SessionSettings(warehouse=str(warehouse))).stop()
    for pid in spark_servers:  # a server whose record a test removed or replaced: by its pid alone
        with contextlib.suppress(ProcessLookupError):
            if processes.has_cmdline(pid, spark_server.MAIN_CLASS):
                processes.terminate(pid)
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
