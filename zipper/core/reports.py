"""The lines a zipper run prints for the scheduler that started it: the CLI writes them, the
Airflow hook reads them from the Spark driver's output. One definition, so the two cannot drift."""

from enum import StrEnum

# One line `zipper-report: {...}` (JSON) with the run's result, when asked for (`--json-report`).
REPORT_PREFIX = "zipper-report: "
# The first words of the line the CLI ends a failed run with (stderr); schedulers look for them.
ERROR_PREFIX = "zipper: error: "
INTERRUPTED = "zipper: interrupted; nothing was published by this run unless it said so"
# The exit code of `zipper merge --no-spark` when the merge is not a no-op it could tell without
# Spark (the Airflow merge task then runs it through spark-submit).
EXIT_NOT_NOOP = 10
# A date committed without changes for want of input (`on_missing_input: skip`): its counts hold
# SKIPPED with the reason, which its report, its commit record, `zipper status` and the view show.
SKIPPED = "skipped"
NO_INPUT_REASON = "no input"


class RunAction(StrEnum):
    """What a run did: its report's `action` (and its summary's form). A `str` enum, so the JSON
    report keeps the plain text the Airflow tasks read back."""

    INIT = "init"
    MERGE = "merge"
    NOOP = "noop"
    RESTORE = "restore"
    RERUN = "rerun"
    REPLAY = "replay"
    REBUILD = "rebuild"
    CORRECT = "correct"
    ALTER = "alter"
