"""Named kill points for the fault-injection tests.

`ZIPPER_KILL_AT=<step>` makes the process SIGKILL itself when it reaches that step, the way
an OOM killer or a lost node would: no cleanup, no exception handlers. In-process tests use
`crash_at(step)` instead, which raises `SimulatedCrash` (a BaseException, so no handler in the
engine swallows it) at the n-th time the step is reached."""

from __future__ import annotations

import contextlib
import os
import signal

# The steps of one merge (apply_date), in order.
STEPS = ("after_write", "after_audit", "before_publish", "after_publish")
# The restore of a rerun, and the gap between two replayed dates.
RERUN_STEPS = ("after_restore_write", "after_restore_publish", "after_replayed_date")
# A rebuild: written and audited; partitions added; published (before dropping the stale ones).
REBUILD_STEPS = ("after_rebuild_write", "before_rebuild_publish", "after_rebuild_publish")
# A merge that adds columns: published, the columns not yet added to the table.
COLUMN_STEPS = ("before_add_columns",)

_armed: dict[str, int] = {}


class SimulatedCrash(BaseException):
    """Raised by an armed checkpoint: the run stops where a kill would have stopped it."""


def checkpoint(step: str) -> None:
    if os.environ.get("ZIPPER_KILL_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if step in _armed:
        _armed[step] -= 1
        if _armed[step] == 0:
            del _armed[step]
            raise SimulatedCrash(step)


@contextlib.contextmanager
def crash_at(step: str, occurrence: int = 1):
    """Within the block, the `occurrence`-th arrival at `step` raises SimulatedCrash."""
    _armed[step] = occurrence
    try:
        yield
    finally:
        _armed.pop(step, None)
