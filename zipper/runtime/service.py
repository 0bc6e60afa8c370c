"""The lifecycle shared by a warehouse's local servers: its metastore server (runtime.metastore)
and its Spark Connect server (runtime.spark_server).

Each is started on demand and left running. Its pid and port are recorded in `server.json` in
its folder, so any later process finds it again; a record whose process is gone, is not this
warehouse's server or does not answer is replaced. Starting happens under a file lock
(`server.lock`), so two callers starting at once get one server. It is stopped by its pid.
A kind of server says only what differs: how it is launched and how its process is recognised."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from zipper.runtime import processes


class Recorded(Protocol):
    """What every server's record holds (a frozen dataclass, written as JSON)."""

    pid: int
    port: int


ServerT = TypeVar("ServerT", bound=Recorded)


class LocalService(Generic[ServerT]):
    """One warehouse's server of one kind: find it, start it, stop it."""

    record_type: type[ServerT]  # the record's dataclass
    stop_grace_s: float = 20  # seconds between SIGTERM and SIGKILL
    stop_group: bool = False  # whether its pid leads a process group that is stopped whole

    def __init__(self, folder: Path, log_path: Path):
        self.folder = folder
        self.record_path = folder / "server.json"
        self.lock_path = folder / "server.lock"
        self.log_path = log_path
        self.stopped_cleanly: bool | None = None  # after stop(): whether the server exited on SIGTERM

    # -- what a kind of server says ----------------------------------------------------------------

    def _is_our_process(self, pid: int) -> bool:
        """Whether `pid` is this warehouse's server of this kind (a recycled pid is some other process)."""
        raise NotImplementedError

    def _marker(self) -> str:
        """The argument naming this warehouse on its servers' command lines."""
        raise NotImplementedError

    def _is_current(self, server: ServerT) -> bool:
        """Whether the recorded server's process is this warehouse's server, as this zipper would start it now."""
        raise NotImplementedError

    def _launcher(self) -> Callable[[], ServerT]:
        """What launches a new server once the lock is held; made before it is taken, so that what
        the server needs first (a secret, say) is ready."""
        raise NotImplementedError

    # -- finding it -------------------------------------------------------------------------------

    def recorded(self) -> ServerT | None:
        return processes.read_record(self.record_path, self.record_type)

    def running(self) -> ServerT | None:
        """The recorded server if it is alive, this warehouse's, as this zipper would start it now
        (`_is_current`), and answering on its port: the one a command uses."""
        server = self.answering()
        return server if server is not None and self._is_current(server) else None

    def answering(self) -> ServerT | None:
        """The recorded server if its process is this warehouse's server of this kind and answers on
        its port, whether or not a command would use it (`running`): what `status` reports, so that
        it says running exactly while the server's process serves."""
        server = self.recorded()
        if server is None or not self._is_our_process(server.pid):
            return None
        return server if processes.accepts(server.port) else None

    # -- starting and stopping ---------------------------------------------------------------------

    def start(self) -> tuple[ServerT, bool]:
        """(the server, whether this call started it)."""
        server = self.running()
        if server is not None:
            return server, False
        launch = self._launcher()
        with processes.exclusive(self.lock_path):
            server = self.running()  # another caller may have started it while this one waited
            if server is not None:
                return server, False
            stale = self.recorded()
            if stale is not None and self._is_our_process(stale.pid):
                # alive but not answering (a hung metastore server holds the Derby database)
                processes.terminate(stale.pid, self.stop_grace_s, group=self.stop_group)
            self._stop_orphans()
            self.record_path.unlink(missing_ok=True)
            server = launch()
            processes.write_record(self.record_path, asdict(server))
            return server, True

    def _stop_orphans(self) -> None:
        """Stop this warehouse's servers of this kind that no record names: each one's starter was
        killed before it could write the record (a merge task killed while it started the
        metastore server). Run under the start lock, so no other starter is mid-launch; left
        alone, such a server kept the Derby database, and every later start failed on it."""
        for pid in processes.processes_with(self._marker()):
            with contextlib.suppress(ProcessLookupError):  # gone meanwhile: with its group's leader, say
                if pid != os.getpid() and self._is_our_process(pid):
                    leads_group = os.getpgid(pid) == pid
                    processes.terminate(pid, self.stop_grace_s, group=self.stop_group and leads_group)

    def stop(self, grace_s: float | None = None) -> ServerT | None:
        """Stop the recorded server, by its pid (SIGTERM, then SIGKILL after `grace_s`, by default
        `stop_grace_s`); the server that was stopped, or None."""
        with processes.exclusive(self.lock_path):
            server = self.recorded()
            if server is None:
                return None
            if self._is_our_process(server.pid):
                grace = self.stop_grace_s if grace_s is None else grace_s
                self.stopped_cleanly = processes.terminate(server.pid, grace, group=self.stop_group)
            else:
                server = None  # only a stale record
            self.record_path.unlink(missing_ok=True)
            return server

    def _log_tail(self) -> str:
        return processes.log_tail(self.log_path)
