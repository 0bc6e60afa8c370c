"""What a job run did, for people (`summary`) and for schedulers (`report`).

Every job returns a RunResult, so the CLI and the Airflow operators print and report them alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from zipper.core.reports import SKIPPED, RunAction


@dataclass(frozen=True)
class Preview:
    """What a dry run shows instead of publishing: a sample of keys whose history would change
    (`sample`: `preview.sample`'s entries) and, for a rerun or rebuild run on a copy, each date's
    verdict of the change-volume guard (`dates`: (ds, table.guard.Verdict)). A field left None is
    not part of this kind of dry run (a replayed date has no sample of its own)."""

    sample: list | None = None
    dates: tuple | None = None

    def guard_text(self) -> str:
        """The dates' verdicts as a line: `passes`, or each date it would refuse; "" without dates."""
        refused = [f"{ds}: {verdict}" for ds, verdict in self.dates or () if not verdict.passes]
        return ("; ".join(refused) or "passes") if self.dates else ""

    def counts(self) -> dict:
        """The preview as the report's counts carry it (`dry_run`, `guard`, `sample`), as schedulers read it."""
        counts: dict = {"dry_run": True}
        if self.dates is not None:
            counts["guard"] = self.guard_text()
        if self.sample is not None:
            counts["sample"] = self.sample
        return counts


@dataclass
class RunResult:
    table: str
    ds: str
    action: RunAction  # a plain text is taken as its member
    message: str = ""
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    run_id: str = ""
    join: str = ""  # how the day's rows met the open partition: broadcast | shuffle ("" when not joined)
    # a replay's summary: what came of it, without the reason its first progress line gave
    # (`message` holds both, for the report)
    outcome: str = ""
    # a replay's or rerun's dates, one result each, in date order (their reports go in this one's)
    replayed: list[RunResult] = field(default_factory=list)
    # how this run gave the table its first state (`zipper init`, or the first merge of a table that did not exist)
    opened: Opening | None = None
    # a dry run's: what it shows instead of publishing (None: the run published, or a run on a copy
    # that is not itself a dry run's result yet)
    preview: Preview | None = None
    # the change-volume guard's verdict where it was shown, not enforced (a dry run, a run on a copy)
    verdict: object = None  # table.guard.Verdict

    def __post_init__(self):
        self.action = RunAction(self.action)
        if self.verdict is not None or self.preview is not None:  # shown with the counts, as reports carry them
            shown = {"guard": str(self.verdict)} if self.verdict is not None else {}
            self.counts = {**self.counts, **shown, **(self.preview.counts() if self.preview is not None else {})}

    def summary(self) -> str:
        match self.action:
            case RunAction.NOOP:
                return f"{self.table} {self.ds}: no-op, {self.message}"
            case RunAction.RESTORE | RunAction.RERUN | RunAction.REBUILD | RunAction.CORRECT | RunAction.ALTER:
                return f"{self.table}: {self.message}; {self.seconds:.1f} s"
            case RunAction.ADOPT:
                return f"{self.table} {self.ds}: {self.message}; {self.seconds:.1f} s"
            case RunAction.REPLAY:
                return f"{self.table} {self.ds}: {self.outcome or self.message}; {self.seconds:.1f} s"
            case RunAction.INIT:
                opened = self.opened or Opening(True, True, self.counts.get("open_after", 0), self.ds)
                return f"{self.table} {self.ds}: {opened.text()}; {self.seconds:.1f} s"
        c = self.counts
        if c.get(SKIPPED):  # on_missing_input: skip, and nothing was there
            return (
                f"{self.table} {self.ds}: "
                + (f"{self.opened.text(dated=True)}; then " if self.opened else "")
                + f"skipped: {self.message or c[SKIPPED]}; committed without changes;"
                f" {counted(c['open_after'], 'open row')} after; {self.seconds:.1f} s"
            )
        return (
            f"{self.table} {self.ds}: "
            + ("dry run, would commit: " if self.preview is not None else "")
            + (f"{self.opened.text(dated=True)}; then " if self.opened else "")
            + f"{c['new']} new, {c['changed']} changed, {c['unchanged']} re-sent unchanged"
            + (f", {c['updated_in_place']} updated in place" if c.get("updated_in_place") else "")
            + (f", {c['deleted']} deleted" if "deleted" in c else "")
            + (f" ({c['tombstones']} tombstones)" if c.get("tombstones") else "")
            + f", {c['closed']} closed; {counted(c['open_after'], 'open row')} after"
            + "".join(f"; {note}" for note in _notes(c))
            + f"; {self.seconds:.1f} s"
        )

    def report(self) -> dict:
        """Machine-readable form of the run, for schedulers (the DAGs' audit task); a replay's also
        holds each replayed date's report (`replayed`)."""
        report = {
            "table": self.table,
            "ds": self.ds,
            "action": str(self.action),  # the plain text, in the JSON the schedulers read
            "message": self.message,
            "counts": dict(self.counts),
            "run_id": self.run_id,
            "seconds": round(self.seconds, 3),
            "join": self.join,
            "summary": self.summary(),
        }
        if self.replayed:
            report["replayed"] = [result.report() for result in self.replayed]
        return report


@dataclass(frozen=True)
class Opening:
    """How a run gave a table its first state, said first in its summary: the first date of a table
    must not read like an ordinary merge (nor like a no-op)."""

    created: bool  # the run created the table (else it found the empty table an interrupted init left)
    base: bool  # it loaded the spec's base (else the table starts empty)
    rows: int  # the open rows of the first state
    ds: str  # the date of the first state: the base date

    def text(self, dated: bool = False) -> str:
        """`table created, base loaded: 1000 open rows`; `dated`: for the first merge, which
        also names the base date (`base loaded as of 2023-12-31: ...`)."""
        made = "table created" if self.created else "table initialized"
        if not self.base:
            return f"{made} without a base" + ("" if dated else f": {counted(self.rows, 'open row')}")
        return f"{made}, base loaded{f' as of {self.ds}' if dated else ''}: {counted(self.rows, 'open row')}"


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
    if c.get("late_changes"):
        rewritten = c.get("partitions_rewritten", 0)
        notes.append(
            f"{counted(c['late_changes'], 'late change')} put in place"
            f" ({counted(rewritten, 'history partition')} rewritten)"
        )
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
