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
    ADOPT = "adopt"


def dry_run_lines(table: str, ds: str, sample: list[dict], verdict: str | None) -> list[str]:
    """A dry run's last lines, after its counts: that nothing was published, the change-volume guard's
    verdict (none: not checked, as for a rebuild) and the sample of keys whose history would differ,
    each key's versions before and after. The CLI prints them; the Airflow rerun task logs them."""
    out = [f"{table} {ds}: dry run: nothing was published" + (f"; change-volume guard: {verdict}" if verdict else "")]
    if not sample:
        out.append("  no key's history differs")
    for entry in sample:
        out.append("  key " + ", ".join(f"{k}={v}" for k, v in entry["key"].items()))
        for side in ("before", "after"):
            for version in entry[side] or [{}]:
                text = ", ".join(f"{k}={v}" for k, v in version.items()) if version else "(none)"
                out.append(f"    {side:6} {text}")
    return out
