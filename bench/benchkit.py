"""What the benchmarks that start servers share: a SIGTERM that unwinds like an exception."""

from __future__ import annotations

import signal


def stop_on_sigterm() -> None:
    """A SIGTERM (a killed job) unwinds through the benchmark's `finally`, which stops what it
    started (Airflow, API servers, metastore servers) by process id."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
