"""The local servers' processes: their port, their liveness, their lock, their end.

The warehouse's metastore server and its Spark Connect server are processes zipper starts and
leaves running, recorded by pid and port under the warehouse; these are the few operating-system
questions their records are checked with, the lock their starters share and the way they are
stopped. Kept apart from the services so that every server zipper runs on this machine is
handled the same way."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple, TypeVar

T = TypeVar("T")
LOCAL_HOST = "127.0.0.1"  # every server zipper starts listens on loopback only


def accepts(port: int) -> bool:
    try:
        socket.create_connection((LOCAL_HOST, port), timeout=2).close()
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCAL_HOST, 0))
        return sock.getsockname()[1]


def wait_until_accepting(process: subprocess.Popen, port: int, timeout_s: float, group: bool = False) -> bool:
    """Whether the server `process` started answers on `port` before it exits or the time is up
    (then it is stopped; with `group`, with the processes of the group it leads)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if accepts(port):
            return True
        time.sleep(0.2)
    terminate(process.pid, group=group)
    return False


@contextlib.contextmanager
def exclusive(lock_path: Path, wait: bool = True) -> Iterator[bool]:
    """One starter or stopper of a server at a time; the kernel drops the lock of a process that
    dies. Yields whether this holds the lock: always, unless `wait` is False and another held it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_record(path: Path, kind: Callable[..., T]) -> T | None:
    """A server's record (`server.json`) as `kind`, or None when there is none or it cannot be
    read as one (a half-written or older record is no server)."""
    try:
        return kind(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_record(path: Path, record: dict) -> None:
    """Write a server's record whole under another name and move it into place: a reader never
    sees half of one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)


def log_tail(path: Path, size: int = 6000) -> str:
    """The end of a server's log, where a failed start says why; empty when there is none."""
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def has_cmdline(pid: int, *items: str) -> bool:
    """Whether process `pid` has each of `items` as one argument of its command line: a recorded
    pid recycled by the system is some other process, never to be used or stopped."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid) and ps_cmdline_has(pid, *items)
    return all(item.encode() in cmdline for item in items)


def processes_with(*items: str) -> list[int]:
    """The pids of this machine's processes with each of `items` as one argument (none without /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    return sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit() and has_cmdline(int(p.name), *items))


def ps_cmdline_has(pid: int, *parts: str) -> bool:
    """Where there is no /proc (macOS): the process's command line through ps."""
    found = subprocess.run(["ps", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True, text=True)
    return found.returncode == 0 and all(part in found.stdout for part in parts)


def terminate(pid: int, grace_s: float = 20, group: bool = False) -> bool:
    """SIGTERM, then SIGKILL if it has not exited within `grace_s` (Derby shuts down on SIGTERM);
    with `group`, to every process of the group `pid` leads (a server and the workers it started).
    Whether it exited by itself."""
    send = os.killpg if group else os.kill
    try:
        send(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        reap(pid)
        if not (group_alive(pid) if group else pid_alive(pid) and not is_zombie(pid)):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        send(pid, signal.SIGKILL)
    reap(pid)
    return False


def group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` still runs."""
    try:
        return bool(group_members(pgid))
    except OSError:  # no /proc (macOS)
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False


def group_members(pgid: int) -> list[int]:
    """The pids of group `pgid` that still run (Linux; OSError where there is no /proc). Zombies
    do not count: whoever runs as pid 1 in a container may never reap them."""
    members = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                state, _ppid, group = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:3]
                if int(group) == pgid and state != "Z":
                    members.append(int(proc.name))
    return members


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def reap(pid: int) -> None:
    """Collect the exit of a server this process started itself, so it leaves no zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


class TcpSocket(NamedTuple):
    """One TCP socket of this machine, as /proc/net/tcp and tcp6 list it."""

    local: str  # IPv4 dotted, or IPv6 as /proc writes it (an IPv4-mapped one as its IPv4 address)
    port: int
    state: str  # "0A" listening, "01" established
    inode: int


LISTEN, ESTABLISHED = "0A", "01"


def tcp_sockets() -> list[TcpSocket]:
    """The machine's TCP sockets (Linux; none where there is no /proc/net)."""
    found = []
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                address, port = fields[1].split(":")
                found.append(TcpSocket(_address(address), int(port, 16), fields[3], int(fields[9])))
    return found


def _address(hexed: str) -> str:
    """/proc's hex address: IPv4 in host byte order; IPv6 as four such words."""
    raw = b"".join(int(hexed[i : i + 8], 16).to_bytes(4, "little") for i in range(0, len(hexed), 8))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]  # a dual-stack socket's IPv4 address
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def clients_of(port: int, host: str = LOCAL_HOST) -> int | None:
    """How many connections clients hold to the server on `host:port` (None where it cannot be
    told: no /proc/net)."""
    sockets = tcp_sockets()
    if not sockets:
        return None
    return sum(1 for s in sockets if s.state == ESTABLISHED and s.port == port and s.local == host)
