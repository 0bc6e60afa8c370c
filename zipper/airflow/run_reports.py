"""What a job's report lines say, in a few words: the task's label, the asset event, the audit's log.

The job prints its reports as JSON lines; the operators read them back as plain dicts. These
functions only read those dicts, so they live apart from the operators that run the job."""

from __future__ import annotations

from zipper.core.reports import RunAction

# A failed task's one-line reason, left in an XCom of its try for the Zipper view (a page cannot
# read a task's log): the job's own line, or a gate's naming the earlier date whose merge failed.
FAILURE_XCOM = "zipper_failure"
# The XCom a rerun's dry run leaves: its summary, the guard's verdicts and the sample (`dry_run_record`)
DRY_RUN_XCOM = "zipper_dry_run"


def _span(dates: list[str]) -> str:
    return f"{dates[0]}..{dates[-1]}" if len(dates) > 1 else dates[0]


def outcome(reports: list[dict] | None) -> str:
    """A run's outcome in a few words, from its reports (None: it failed)."""
    if reports is None:
        return "failed"
    if not reports:
        return "done, no report (`zipper status` has the table's state)"
    final = reports[-1]
    action = final.get("action")
    replayed = [r.get("ds", "?") for r in reports[:-1]]
    match action:  # as read back from the report: a plain text (or None)
        case RunAction.NOOP:
            return "no-op (already committed with the same input)"
        case RunAction.REPLAY:
            return f"replayed {_span(replayed)}" if replayed else "replayed"
        case RunAction.RERUN if (final.get("counts") or {}).get("dry_run"):
            return f"dry run: would replay {final.get('ds', '?')}"
        case RunAction.RERUN:
            return f"replayed {final.get('ds', '?')}"
    return "merged"


def dry_run_record(reports: list[dict]) -> dict:
    """What the Zipper view shows of a rerun's dry run: its summary, the dates it would replay with
    their counts and the guard's verdicts, and the sample of keys whose history would differ."""
    final = reports[-1] if reports else {}
    counts = final.get("counts") or {}
    dates = [
        {"ds": r.get("ds"), "summary": r.get("summary", ""), "guard": (r.get("counts") or {}).get("guard", "")}
        for r in final.get("replayed") or reports[:-1]
    ]
    return {
        "summary": final.get("summary", ""),
        "span": final.get("ds", ""),
        "guard": counts.get("guard", ""),
        "dates": dates,
        "sample": counts.get("sample") or [],
    }


def asset_extra(reports: list[dict], table: str, ds: str) -> dict:
    """The `extra` of the asset event of a run that changed the table: the table, the run's date, what it did
    (merge, replay, rerun), the counts of its report, its run id and the dates whose partitions it wrote."""
    final = reports[-1] if reports else {}
    replayed = [r.get("ds") for r in reports[:-1]]
    return {
        "table": final.get("table", table),
        "date": final.get("ds", ds),
        "action": final.get("action", "unknown"),
        "counts": final.get("counts", {}),
        "run_id": final.get("run_id", ""),
        "dates": replayed or ([final.get("ds", ds)] if final.get("action") == RunAction.MERGE else []),
    }


def describe(report: dict) -> str:
    """The job's summary line and its counts, e.g. `dw.dim_user 2024-01-03: 10 new, ... | counts {...}`."""
    counts = report.get("counts") or {}
    shown = ", ".join(f"{k}={counts[k]}" for k in sorted(counts))
    return f"{report.get('summary', '')} | run {report.get('run_id') or '-'} | counts: {shown or 'none'}"


def final_state(reports: list[dict]) -> str:
    """Where a replay left the table: its last replayed date and open rows."""
    dates = [r.get("ds", "?") for r in reports[:-1]]
    last = reports[-2]
    open_rows = (last.get("counts") or {}).get("open_after", "?")
    n = len(dates)
    return (
        f"{reports[-1].get('table', '?')}: replayed {_span(dates)} ({n} date{'s' if n != 1 else ''}); the table"
        f" is at {dates[-1]}, {open_rows} open rows"
    )
