"""The local servers' processes: their port, their liveness, their end.

The warehouse's metastore server is a process zipper starts and leaves running, recorded by
pid and port under the warehouse; these are the few operating-system questions its record is
checked with and the way it is stopped. Kept apart from the service so that any other server
zipper runs on this machine is handled the same way."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

LOCAL_HOST = "127.0.0.1"  # every server zipper starts listens on loopback only


def accepts(port: int) -> bool:
    try:
        socket.create_connection((LOCAL_HOST, port), timeout=2).close()
        return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def ps_cmdline_has(pid: int, *parts: str) -> bool:
    """Where there is no /proc (macOS): the process's command line through ps."""
    found = subprocess.run(["ps", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True, text=True)
    return found.returncode == 0 and all(part in found.stdout for part in parts)


def terminate(pid: int, grace_s: float = 20) -> bool:
    """SIGTERM, then SIGKILL if it has not exited within `grace_s` (Derby shuts down on SIGTERM).
    Whether it exited by itself."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not pid_alive(pid) or is_zombie(pid):
            reap(pid)
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    reap(pid)
    return False


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def reap(pid: int) -> None:
    """Collect the exit of a server this process started itself, so it leaves no zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
