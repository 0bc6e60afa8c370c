"""Named kill points for the fault-injection tests.

`ZIPPER_KILL_AT=<step>` makes the process SIGKILL itself when it reaches that step, the way
an OOM killer or a lost node would: no cleanup, no exception handlers. In-process tests use
`crash_at(step)` instead, which raises `SimulatedCrash` (a BaseException, so no handler in the
engine swallows it) at the n-th time the step is reached.

`ZIPPER_PAUSE_AT=<step>:<file>` holds the process at that step while `file` exists, after
writing `<file>.reached`: a test can then do what it wants to happen during the run (read the
table, start another run, kill the metastore server) without timing anything, and remove `file`
to let the run go on.

`ZIPPER_STALL_WRITES=1` makes the table store's writes of a daily merge wait on the Spark server,
an hour per task, until their job is cancelled: a test can kill the client while its own write
runs there and watch what the server does with it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# The steps of one merge (apply_date), in order.
STEPS = ("after_write", "after_audit", "before_publish", "after_publish")
# The restore of a rerun, and the gap between two replayed dates.
RERUN_STEPS = ("after_restore_write", "after_restore_publish", "after_replayed_date")
# A rebuild: written and audited; partitions added; published (before dropping the stale ones).
REBUILD_STEPS = ("after_rebuild_write", "before_rebuild_publish", "after_rebuild_publish")
# A row-level correction: written and audited; published.
CORRECT_STEPS = ("after_correct_write", "before_correct_publish", "after_correct_publish")
# A column rename or drop: written and audited; about to publish; published, the table's columns not yet
# changed; done.
ALTER_STEPS = ("after_alter_write", "before_alter_publish", "before_alter_columns", "after_alter_publish")
# A merge that adds columns: published, the columns not yet added to the table.
COLUMN_STEPS = ("before_add_columns",)

_armed: dict[str, int] = {}


class SimulatedCrash(BaseException):
    """Raised by an armed checkpoint: the run stops where a kill would have stopped it."""


def checkpoint(step: str) -> None:
    if os.environ.get("ZIPPER_KILL_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)
    paused_step, _, hold = os.environ.get("ZIPPER_PAUSE_AT", "").partition(":")
    if paused_step == step and hold:
        _pause_while(Path(hold))
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


def stalled(rows):
    """`rows` as they are, or, with ZIPPER_STALL_WRITES set, behind a filter whose every task sleeps
    an hour on the server (`java_method` is nondeterministic: Spark neither folds nor skips it;
    a cancelled job's threads are interrupted, which ends the sleep)."""
    if not os.environ.get("ZIPPER_STALL_WRITES"):
        return rows
    from pyspark.sql import functions as F  # on use: this module is the engine's, loaded without Spark

    return rows.where(F.expr("java_method('java.lang.Thread', 'sleep', 3600000L) IS NULL"))


def _pause_while(hold: Path) -> None:
    """Say the step is reached, then wait until the test removes `hold`."""
    Path(f"{hold}.reached").write_text(f"{os.getpid()}\n")
    while hold.exists():
        time.sleep(0.05)
