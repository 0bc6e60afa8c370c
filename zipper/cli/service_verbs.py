"""`zipper metastore start|stop|status`: the warehouse's metastore server by hand (runtime.metastore).

Anything that needs the server starts it, so `start` is only for those who want it up before the
first run; `stop` ends it by its process id (the next run starts it again). `status` exits 3 when
no server runs, as `pg_ctl status` does, so that a script can test for it without reading JSON."""

from __future__ import annotations

import argparse
import json
import sys

from zipper.core.errors import StateError
from zipper.runtime import metastore
from zipper.runtime.session import SessionSettings

ACTIONS = ("start", "stop", "status")
EXIT_NOT_RUNNING = 3


def metastore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=ACTIONS, help=f"start | stop | status (JSON; exit {EXIT_NOT_RUNNING} when no server runs)"
    )


def run_metastore(args: argparse.Namespace) -> int:
    settings = SessionSettings.from_env(args.warehouse)
    service = metastore.MetastoreService(settings.warehouse_path)
    if args.action == "status":
        shown = {"mode": settings.metastore, **service.status()}
        print(json.dumps(shown, indent=2))
        if not shown["running"]:
            print(f"zipper: no metastore server is running for {service.warehouse}", file=sys.stderr)
            return EXIT_NOT_RUNNING
        return 0
    if settings.metastore != metastore.MetastoreMode.LOCAL:
        raise StateError(
            f"ZIPPER_METASTORE={settings.metastore}: there is no local metastore server to {args.action}"
            " (it serves the default, ZIPPER_METASTORE=local)"
        )
    if args.action == "start":
        server, started = service.start()
        print(
            f"metastore server {'started' if started else 'already running'} for {service.warehouse}:"
            f" {server.uri} (pid {server.pid}, database {server.database})"
        )
        return 0
    stopped = service.stop()
    if stopped is None:
        print(f"no metastore server was running for {service.warehouse}")
    else:
        print(f"metastore server of {service.warehouse} stopped (pid {stopped.pid}, {stopped.uri})")
    return 0
