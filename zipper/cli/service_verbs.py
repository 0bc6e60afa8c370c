"""`zipper metastore start|stop|status`: the warehouse's metastore server by hand (runtime.metastore).

Anything that needs the server starts it, so `start` is only for those who want it up before the
first run; `stop` ends it by its process id (the next run starts it again)."""

from __future__ import annotations

import argparse
import json

from zipper.core.errors import StateError
from zipper.runtime import metastore
from zipper.runtime.session import SessionSettings

VERBS = ("metastore",)
ACTIONS = ("start", "stop", "status")


def run(args: argparse.Namespace) -> int:
    settings = SessionSettings.from_env(args.warehouse)
    service = metastore.MetastoreService(settings.warehouse_path)
    if args.action == "status":
        print(json.dumps({"mode": settings.metastore, **service.status()}, indent=2))
        return 0
    if settings.metastore != "local":
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
