"""`ZipperTable`: one table's operations behind one handle.

In the spirit of delta's `DeltaTable`: callers (the CLI, notebooks) hold the session and the
spec once and call the operations by name, the writing ones (init, adopt, merge, rerun, rebuild,
correct, alter) beside the reading and upkeep ones (status, history, slice, check, vacuum). Each
method is the entry of the job or reader that does the work, with the same arguments; it lives
with the jobs because the writing verbs are jobs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from zipper.core.alter import AlterRequest
from zipper.core.corrections import CorrectionRequest
from zipper.jobs import adopt, alter, correct, init, merge, preview, rebuild, replay
from zipper.jobs.context import quiet
from zipper.jobs.result import RunResult
from zipper.table import check, inspect, vacuum
from zipper.tablespec.model import TableSpec


class ZipperTable:
    """A zipper table, as the spec names it, in the metastore `spark` uses."""

    def __init__(self, spark, spec: TableSpec):
        self.spark = spark
        self.spec = spec

    # -- writing verbs: each publishes in one metastore transaction, or changes nothing ---------

    def init(self, ds: dt.date | None = None) -> RunResult:
        """Create the table and load its base as of `ds` (default: the day before `start_date`)."""
        return init.init_table(self.spark, self.spec, ds)

    def adopt(self, through: dt.date, allow_gaps: bool = False, dry_run: bool = False) -> RunResult:
        """Take over the spec's `adopt.table`, written by hand, committed through `through` (`adopt.adopt`)."""
        return adopt.adopt(self.spark, self.spec, through, allow_gaps=allow_gaps, dry_run=dry_run)

    def merge(
        self,
        ds: dt.date,
        progress: Callable[[str], None] = quiet,
        accept_large_change: bool = False,
        dry_run: bool = False,
    ) -> RunResult:
        """The daily run of one date (`merge.merge_date`); `accept_large_change` lets a day the
        change-volume guard would refuse through; `dry_run` publishes nothing and shows what would change."""
        return merge.merge_date(self.spark, self.spec, ds, progress, accept_large_change, dry_run)

    def rerun(
        self,
        first: dt.date,
        last: dt.date | None = None,
        progress: Callable[[str], None] = quiet,
        uncommit_later: bool = False,
        undo_corrections: bool = False,
        accept_large_change: bool = False,
        dry_run: bool = False,
    ) -> RunResult:
        """Replay committed dates from their inputs as they are now (`replay.rerun`); `dry_run`: on a
        copy of the table, showing what would change (`preview.on_copy`)."""

        def job(spec: TableSpec, said: Callable[[str], None]) -> RunResult:
            return replay.rerun(
                self.spark,
                spec,
                first,
                last,
                progress=said,
                uncommit_later=uncommit_later,
                undo_corrections=undo_corrections,
                accept_large_change=accept_large_change,
            )

        return preview.on_copy(self.spark, self.spec, job, progress) if dry_run else job(self.spec, progress)

    def rebuild(
        self,
        last: dt.date | None = None,
        progress: Callable[[str], None] = quiet,
        uncommit_later: bool = False,
        undo_corrections: bool = False,
        dry_run: bool = False,
    ) -> RunResult:
        """The whole history again from the base and every input, in one pass where the mode allows;
        `dry_run`: on a copy of the table, showing what would change (`preview.on_copy`)."""

        def job(spec: TableSpec, said: Callable[[str], None]) -> RunResult:
            return rebuild.rebuild(
                self.spark, spec, last, progress=said, uncommit_later=uncommit_later, undo_corrections=undo_corrections
            )

        return preview.on_copy(self.spark, self.spec, job, progress) if dry_run else job(self.spec, progress)

    def correct(self, request: CorrectionRequest, progress: Callable[[str], None] = quiet) -> RunResult:
        """Erase keys, fix values or delete versions (`correct.correct`)."""
        return correct.correct(self.spark, self.spec, request, progress)

    def alter(self, request: AlterRequest, progress: Callable[[str], None] = quiet) -> RunResult:
        """Rename or drop a column in every version (`alter.alter_table`)."""
        return alter.alter_table(self.spark, self.spec, request, progress)

    # -- reading and upkeep ----------------------------------------------------------------------

    def status(self, recent: int = 10) -> dict:
        """The committed state, with the `recent` latest commits (`inspect.status`)."""
        return inspect.status(self.spark, self.spec, recent)

    def history(self, key: dict[str, str]):
        """Every version of one key, as a DataFrame (`inspect.history`)."""
        return inspect.history(self.spark, self.spec, key)

    def slice(self, as_of: dt.date):
        """The table as of the end of `as_of`, as a DataFrame (`inspect.slice_as_of`)."""
        return inspect.slice_as_of(self.spark, self.spec, as_of)

    def check(self) -> dict:
        """Every invariant, verified on the live table (`check.run_checks`)."""
        return check.run_checks(self.spark, self.spec)

    def vacuum(self, retention_days: int | None = None, dry_run: bool = False, now: dt.datetime | None = None) -> dict:
        """Remove version directories no partition or commit refers to (`vacuum.vacuum`)."""
        return vacuum.vacuum(self.spark, self.spec, retention_days, dry_run, now)
