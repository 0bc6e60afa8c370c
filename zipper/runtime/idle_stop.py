"""Runs a server and stops it once no client has been connected to it for a while.

Spark Connect 4.2 has no setting that stops its server when idle:
`spark.connect.session.manager.defaultSessionTimeout` only drops a session that sent nothing for
that long, and the JVM, its memory and its cores stay taken. So the warehouse's Connect server
(runtime.spark_server) is started under this small supervisor. It leads the server's process group
(the server, its Python workers and itself are stopped by the one pid recorded), and counts the
connections clients hold to the server's port (/proc/net/tcp): a client's session keeps one open
while it lives. When none has been open for the idle period, it stops the server, removes the record that names it, and ends. It also ends
when the server ends, with its exit code. Where connections cannot be counted (no /proc/net), it
never stops the server itself.

    python -m zipper.runtime.idle_stop --port P --idle-minutes M [--record FILE] -- COMMAND...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from zipper.core.dates import utc_now_iso
from zipper.runtime import processes

STOP_GRACE_S = 30


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        _parser().error("no server command after --")
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)  # in this process's group, as its leader wanted

    def forward(signum, frame):  # a stop of this pid alone reaches the server too
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    idle_s = args.idle_minutes * 60
    poll_s = max(0.5, min(30.0, idle_s / 10)) if idle_s > 0 else 60.0
    last_client = time.monotonic()
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return _exit_code(child.wait(timeout=poll_s))
        if idle_s <= 0:
            continue
        clients = processes.clients_of(args.port)
        if clients is None or clients > 0:
            last_client = time.monotonic()
        elif time.monotonic() - last_client >= idle_s and _stop_idle(child, args):
            return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m zipper.runtime.idle_stop", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True, help="the server's loopback port its clients connect to")
    parser.add_argument("--idle-minutes", type=float, required=True, help="0: never stop it for being idle")
    parser.add_argument("--record", type=Path, help="the server's record (JSON with this pid), removed when idle")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the server's argv")
    return parser


def _stop_idle(child: subprocess.Popen, args: argparse.Namespace) -> bool:
    """Stop the server under its starters' lock, its record gone first: a starter then waits and
    starts a new server rather than handing out this one. False when a starter holds the lock (it
    is about to use the server) or a client came meanwhile."""
    lock = processes.exclusive(args.record.with_suffix(".lock"), wait=False) if args.record else None
    with lock or contextlib.nullcontext(True) as held:
        if not held or processes.clients_of(args.port):
            return False
        if args.record is not None:
            _forget(args.record)
        print(f"--- {utc_now_iso()} no client for {args.idle_minutes:g} minutes: stopping the server", flush=True)
        child.terminate()
        try:
            child.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return True


def _forget(record: Path) -> None:
    """Remove the record if it is this supervisor's (a newer server's record stays)."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        if json.loads(record.read_text())["pid"] == os.getpid():
            record.unlink()


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # a signal's end, as a shell reports it


if __name__ == "__main__":
    sys.exit(main())
