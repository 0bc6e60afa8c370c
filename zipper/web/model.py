"""What the pages and the JSON API show about a table, from its committed state: plain dicts.

No Airflow calls and no I/O here (only Airflow's closed set of run states): the state comes from
the metastore (reading.py), the Airflow runs from Airflow's database (airflow_runs.py), and these
functions only shape them, so every field has one definition whether a page, the API or a test asks."""

from __future__ import annotations

import datetime as dt

from zipper.airflow.compat import DagRunState
from zipper.table import state as table_state
from zipper.table.status import report
from zipper.tablespec.model import TableSpec

# The version counts of a commit, as the chart draws them (counts keys -> series names).
SERIES = {"new": "new", "changed": "changed", "unchanged": "re-sent unchanged", "closed": "closed"}


def expected_date(spec: TableSpec, today: dt.date) -> dt.date | None:
    """The last date the schedule has run by `today`: a daily run of D starts when D ends, so
    yesterday, capped at the spec's end date; None before the first date."""
    last = today - dt.timedelta(days=1)
    if spec.end_date and spec.end_date < last:
        last = spec.end_date
    return last if last >= spec.start_date else None


def lag_days(spec: TableSpec, last_committed: dt.date | None, today: dt.date) -> int | None:
    """How many scheduled dates are not committed yet (0: up to date); None when the table has no commit."""
    expected = expected_date(spec, today)
    if expected is None:
        return 0
    if last_committed is None:
        return None
    return max((expected - last_committed).days, 0)


def commit_entry(commit: table_state.Commit) -> dict:
    return {
        "ds": commit.ds,
        "action": str(commit.action),
        "run_id": commit.run_id,
        "committed_at": commit.committed_at,
        "fingerprint": commit.fingerprint,
        "counts": commit.counts,
        "rows": commit.rows,
        "skipped": commit.skipped,  # "no input": committed without changes (on_missing_input: skip)
    }


def table_summary(spec: TableSpec, st: table_state.TableState, today: dt.date, run: dict | None = None) -> dict:
    """One line of the tables page: where the table is, how far behind, and how its last run went."""
    summary = {
        "name": spec.name,
        "table": spec.table,
        "dag_id": None,
        "exists": st.exists,
        "initialized": st.exists and st.initialized,
        "last_committed": None,
        "lag_days": None,
        "open_rows": None,
        "closed_rows": None,
        "replay_interrupted": None,
        "last_commit": None,
        "latest_run": run,
        "problem": None,
    }
    if not summary["initialized"]:
        summary["problem"] = "not initialized" if st.exists else "no table yet"
        summary["lag_days"] = lag_days(spec, None, today)
        return summary
    status = report(st, spec, recent=1)
    commits = sorted(st.commits.values(), key=lambda c: c.ds)
    summary.update(
        last_committed=status["last_committed"],
        lag_days=lag_days(spec, st.last_committed, today),
        open_rows=status["open_rows"],
        closed_rows=status["closed_rows"],
        replay_interrupted=status["replay_interrupted"],
        last_commit=commit_entry(commits[-1]) if commits else None,
    )
    summary["problem"] = _problem(summary)
    return summary


def _problem(summary: dict) -> str | None:
    """What makes a table stand out on the tables page, in words; None when all is well."""
    run = summary["latest_run"] or {}
    if run.get("state") == DagRunState.FAILED:  # with the job's own reason when its task left one
        reason = f": {run['failure']}" if run.get("failure") else ""
        return f"latest run failed ({run.get('failed_task') or 'a task'}){reason}"
    if summary["replay_interrupted"]:
        return "a replay was interrupted: run the same rerun (or any merge) to finish it"
    if summary["lag_days"]:
        return f"{summary['lag_days']} day{'s' if summary['lag_days'] != 1 else ''} behind"
    return None


def table_detail(spec: TableSpec, st: table_state.TableState, today: dt.date, run: dict | None = None) -> dict:
    """A table's page: its summary, the chart series per committed date and its partitions."""
    detail = table_summary(spec, st, today, run)
    detail.update(
        keys=list(spec.keys),
        begin_column=spec.begin_column,
        end_column=spec.end_column,
        source_mode=spec.source.mode,
        start_date=spec.start_date.isoformat(),
        end_date=spec.end_date.isoformat() if spec.end_date else None,
        schedule=spec.airflow.schedule,
        base_date=st.init_ds.isoformat() if st.exists and st.init_ds else None,
        series=series(st) if detail["initialized"] else [],
    )
    return detail


def series(st: table_state.TableState) -> list[dict]:
    """One point per committed date: the version counts and the open rows after it."""
    points = []
    for commit in sorted(st.commits.values(), key=lambda c: c.ds):
        counts = commit.counts
        point = {"ds": commit.ds, "open_after": counts.get("open_after")}
        point.update({name: counts.get(name, 0) for name in SERIES})
        points.append(point)
    return points


def correction_entry(correction: table_state.Correction) -> dict:
    """A row-level correction in the commit log: at the table's date then, after that date's commit."""
    return {
        "ds": correction.as_of,
        "action": "correct",
        "run_id": correction.run_id,
        "committed_at": correction.committed_at,
        "fingerprint": "",
        "counts": correction.counts,
        "rows": None,
        "what": correction.describe(),
        "by": correction.by,
        "undone_by": correction.undone_by or None,
    }


def commit_log(st: table_state.TableState, limit: int) -> list[dict]:
    """The newest `limit` commits and corrections, newest first (a correction after its date's commit)."""
    entries = [((c.ds, 0, c.committed_at), commit_entry(c)) for c in st.commits.values()]
    entries += [((c.as_of, 1, c.committed_at), correction_entry(c)) for c in st.corrections]
    entries.sort(key=lambda item: item[0], reverse=True)
    return [entry for _, entry in entries[: max(limit, 0)]]
