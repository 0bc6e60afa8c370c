"""Named kill points for the fault-injection tests.

`ZIPPER_KILL_AT=<step>` makes the process SIGKILL itself when it reaches that step, the way
an OOM killer or a lost node would: no cleanup, no exception handlers."""

from __future__ import annotations

import os
import signal

STEPS = ("after_write", "after_audit", "before_publish", "after_publish")


def checkpoint(step: str) -> None:
    if os.environ.get("ZIPPER_KILL_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)
