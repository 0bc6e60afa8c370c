"""`zipper metastore|spark start|stop|status`: the warehouse's servers by hand (runtime.metastore,
runtime.spark_server).

Anything that needs a server starts it, so `start` is only for those who want it up before the
first run; `stop` ends it by its process id (the next run starts it again). `status` exits 3 when
no server runs, as `pg_ctl status` does, so that a script can test for it without reading JSON."""

from __future__ import annotations

import argparse
import json
import sys
from enum import StrEnum

from zipper.core.errors import StateError
from zipper.runtime import metastore, spark_server
from zipper.runtime.settings import SessionSettings

EXIT_NOT_RUNNING = 3


class Action(StrEnum):
    START = "start"
    STOP = "stop"
    STATUS = "status"


def service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=list(Action),
        type=Action,
        help=f"start | stop | status (JSON; exit {EXIT_NOT_RUNNING} when no server runs)",
    )


def _shown_status(shown: dict, what: str, warehouse) -> int:
    print(json.dumps(shown, indent=2))
    if not shown["running"]:
        print(f"zipper: no {what} is running for {warehouse}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    return 0


def run_metastore(args: argparse.Namespace) -> int:
    settings = SessionSettings.from_env(args.warehouse)
    service = metastore.MetastoreService(settings.warehouse_path)
    if args.action == Action.STATUS:
        return _shown_status({"mode": settings.metastore, **service.status()}, "metastore server", service.warehouse)
    if settings.metastore != metastore.MetastoreMode.LOCAL:
        raise StateError(
            f"ZIPPER_METASTORE={settings.metastore}: there is no local metastore server to {args.action}"
            " (it serves the default, ZIPPER_METASTORE=local)"
        )
    return _start_or_stop(
        args.action,
        service,
        "metastore server",
        lambda server: f"{server.uri} (pid {server.pid}, database {server.database})",
        lambda server: f"pid {server.pid}, {server.uri}",
    )


def run_spark(args: argparse.Namespace) -> int:
    """The token is never printed: clients read it from its file, which `status` names."""
    settings = SessionSettings.from_env(args.warehouse)
    service = spark_server.SparkServerService(settings)
    if args.action == Action.STATUS:
        return _shown_status(service.status(), "Spark Connect server", service.warehouse)
    return _start_or_stop(
        args.action,
        service,
        "Spark Connect server",
        lambda server: f"{server.url} (pid {server.pid}; its token is in {service.token_path})",
        lambda server: f"pid {server.pid}, {server.url}",
    )


def _start_or_stop(action: Action, service, what: str, started_line, stopped_line) -> int:
    """Start or stop `service` and say so in one line; `started_line` and `stopped_line` describe
    the server as each line names it."""
    if action == Action.START:
        server, started = service.start()
        state = "started" if started else "already running"
        print(f"{what} {state} for {service.warehouse}: {started_line(server)}")
        return 0
    stopped = service.stop()
    if stopped is None:
        print(f"no {what} was running for {service.warehouse}")
    else:
        print(f"{what} of {service.warehouse} stopped ({stopped_line(stopped)})")
    return 0
