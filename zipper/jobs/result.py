"""What a job run did, for people (`summary`) and for schedulers (`report`).

Every job returns a RunResult, so the CLI and the Airflow operators print and report them alike."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    table: str
    ds: str
    action: str  # init | merge | noop | restore | rerun | replay | rebuild
    message: str = ""
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    run_id: str = ""
    join: str = ""  # how the day's rows met the open partition: broadcast | shuffle ("" when not joined)
    # a replay's summary: what came of it, without the reason its first progress line gave
    # (`message` holds both, for the report)
    outcome: str = ""

    def summary(self) -> str:
        if self.action == "noop":
            return f"{self.table} {self.ds}: no-op, {self.message}"
        if self.action in ("restore", "rerun", "rebuild"):
            return f"{self.table}: {self.message}; {self.seconds:.1f} s"
        if self.action == "replay":
            return f"{self.table} {self.ds}: {self.outcome or self.message}; {self.seconds:.1f} s"
        if self.action == "init":
            open_rows = counted(self.counts.get("open_after", 0), "open row")
            return f"{self.table} {self.ds}: initialized, {open_rows}; {self.seconds:.1f} s"
        c = self.counts
        return (
            f"{self.table} {self.ds}: {c['new']} new, {c['changed']} changed, {c['unchanged']} re-sent unchanged"
            + (f", {c['updated_in_place']} updated in place" if c.get("updated_in_place") else "")
            + (f", {c['deleted']} deleted" if "deleted" in c else "")
            + f", {c['closed']} closed; {counted(c['open_after'], 'open row')} after"
            + "".join(f"; {note}" for note in _notes(c))
            + f"; {self.seconds:.1f} s"
        )

    def report(self) -> dict:
        """Machine-readable form of the run, for schedulers (the DAGs' audit task)."""
        return {
            "table": self.table,
            "ds": self.ds,
            "action": self.action,
            "message": self.message,
            "counts": dict(self.counts),
            "run_id": self.run_id,
            "seconds": round(self.seconds, 3),
            "join": self.join,
            "summary": self.summary(),
        }


def counted(n: int, noun: str) -> str:
    """`1 open row`, `2 open rows`."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _notes(c: dict) -> list[str]:
    """What a run reports beyond the version counts: ignored deletes, anomalies, column changes."""
    # on use: refusals loads pyspark, and a no-op told without Spark (jobs.noop) reports with none
    from zipper.inputs import refusals

    notes = []
    if c.get("anomalies"):
        kinds = [
            refusals.anomaly_text(problem, c[name])
            for problem in refusals.ANOMALY_TEXT
            if c.get(name := refusals.ANOMALY_COUNTS[problem])
        ]
        notes.append(f"{c['anomalies']} {'anomaly' if c['anomalies'] == 1 else 'anomalies'} ({', '.join(kinds)})")
    elif c.get("deletes_of_absent_keys"):
        n = c["deletes_of_absent_keys"]
        notes.append(f"{n} {'delete of a key that was' if n == 1 else 'deletes of keys that were'} not open (ignored)")
    if "files" in c:
        notes.append(f"{counted(c['files'], 'landing-zone file')}, {counted(c['source_rows'], 'change')}")
    for key, text in (
        ("columns_added", "columns added"),
        ("columns_missing", "columns missing (NULL in new versions)"),
        ("columns_widened", "columns widened"),
    ):
        if c.get(key):
            notes.append(f"{text}: {', '.join(c[key])}")
    return notes
