"""How a failed run is told: one line on stderr, and with --json-report one report line first, so
that on-call reads the cause and a scheduler knows whether another try could succeed."""

from __future__ import annotations

import argparse
import json
import sys

from zipper.core.errors import ZipperError, java_messages, summarize_failure
from zipper.core.reports import ERROR_PREFIX, REPORT_PREFIX
from zipper.runtime import metastore

EXIT_ERROR = 1
# What the Hive client's failures say when the metastore server does not answer.
UNREACHABLE = ("TTransportException", "Could not connect to meta store", "java.net.ConnectException")
# What a Spark Connect client's failures say when its server went away mid-run (gRPC's own objects).
SPARK_SERVER_LOST = ("StatusCode.UNAVAILABLE", "_MultiThreadedRendezvous", "_InactiveRpcError", "RETRIES_EXCEEDED")


def report_line(args: argparse.Namespace, report: dict) -> None:
    """With --json-report, one line `zipper-report: {...}` on stdout for schedulers."""
    if getattr(args, "json_report", False):
        print(REPORT_PREFIX + json.dumps(report), flush=True)


def failure_report(exc: BaseException, line: str) -> dict:
    """A failed run for schedulers: `final` when another try would fail the same way (a bad
    spec or input), so that they fail the task at once rather than retry it."""
    return {"failed": True, "final": isinstance(exc, ZipperError) and exc.final, "error": line}


def fail(args: argparse.Namespace, exc: BaseException, line: str) -> int:
    """The report of the failure (with --json-report), then the one error line on stderr."""
    report_line(args, failure_report(exc, line))
    print(f"{ERROR_PREFIX}{line}", file=sys.stderr)
    return EXIT_ERROR


def one_line(exc: BaseException, warehouse: str | None = None) -> str:
    """The useful part of a Spark/Java failure, without the JVM stack."""
    chain = java_messages(exc) or [str(exc).strip() or type(exc).__name__]
    text = " ".join(chain)
    if any(marker in text or marker in repr(exc) for marker in SPARK_SERVER_LOST):
        return spark_server_lost(warehouse)
    if any(marker in text for marker in UNREACHABLE):
        return server_stopped(warehouse) or summarize_failure(exc)
    return summarize_failure(exc)


def server_stopped(warehouse: str | None) -> str | None:
    """The line for a metastore that stopped answering mid-run, when it is the warehouse's own
    server (None otherwise: the failure says it well enough)."""
    if not warehouse or metastore.mode() != metastore.MetastoreMode.LOCAL:
        return None
    server = metastore.MetastoreService(warehouse).recorded()
    where = f" at {server.uri}" if server else ""
    return (
        f"the metastore server{where} stopped answering during this run; the run stopped, and the table is as"
        " its last commit says (`zipper status`, which starts the server again). `zipper metastore status`"
        f" shows the server, its log is {warehouse}/metastore/server.log"
    )


def spark_server_lost(warehouse: str | None) -> str:
    """The line for a Spark Connect server that stopped answering mid-run: gRPC's own error says
    nothing a user can act on."""
    log = f"{warehouse}/metastore/spark-server.log" if warehouse else "the server's log"
    return (
        "the Spark server stopped answering during this run; the run stopped, and the table is as its"
        " last commit says (`zipper status`). The next command starts a new server and runs on the"
        f" table as it is then; `zipper spark status` shows the server, its log is {log}"
    )
