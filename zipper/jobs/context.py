"""One command's run of one table: built once, handed to every step.

Each step of a job used to derive the same things again: the spec's keys, the table's state,
the recovery of what a killed run left, the run id and its directory. `open_run` does it once;
steps read it from the `Run`. The date stays a parameter of its own: a rerun's one run covers
many dates, and a step that needs a date is given it. A step that changes the table hands the
next one the state it left (`Run.with_state`) rather than asking the metastore again."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from zipper.core.errors import StateError
from zipper.jobs import publishers
from zipper.jobs.keys import resolve_keys
from zipper.table import clone, recovery, state
from zipper.tablespec.model import TableSpec


def quiet(line: str) -> None:
    """The progress of a run nobody watches."""


@dataclass(frozen=True)
class Run:
    """A run of one table: the session, the spec with its keys, the recovered state, and this
    run's id (its directory is named after it)."""

    spark: object
    spec: TableSpec
    state: state.TableState
    progress: Callable[[str], None] = quiet
    accept_large_change: bool = False  # the change-volume guard lets this run's days through (`table.guard`)
    # what becomes of each date written and audited (`publishers`): published, published on a copy
    # of the table (a rerun's dry run), or shown and not published (a merge's dry run)
    publisher: publishers.LivePublisher | publishers.DryRunPublisher = publishers.LIVE
    run_id: str = field(default_factory=state.new_run_id)  # a dry run's: `publisher.new_run_id()`
    started: float = field(default_factory=time.monotonic)

    @property
    def root(self) -> str:
        """The run's own directory under the table: nothing reads it until a publish points at it."""
        return state.run_dir(self.state, self.run_id)

    def where(self, ds: dt.date) -> dict[str, str]:
        """The table and date an error of this run at `ds` names."""
        return {"table": self.spec.table, "ds": ds.isoformat()}

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def with_state(self, st: state.TableState) -> Run:
        return replace(self, state=st)

    def after(self, st: state.TableState) -> Run:
        """The run on the state another writer left (a first merge's init): a fresh id, so that
        its directory is named after that writer's, as run ids are in the order runs write."""
        return replace(self, state=st, run_id=self.publisher.new_run_id())

    def next_date(self, st: state.TableState) -> Run:
        """The run of one date of a replay: its own id, directory and clock, on the state the
        date before left."""
        return replace(self, state=st, run_id=self.publisher.new_run_id(), started=time.monotonic())


def open_run(
    spark,
    spec: TableSpec,
    ds: dt.date | None = None,
    progress: Callable[[str], None] = quiet,
    accept_large_change: bool = False,
    dry_run: bool = False,
) -> Run:
    """The run of `spec` from `ds` on (None: at the table's last committed date, for a table that
    must exist): keys resolved, state read once, checked to be this spec's, a killed run's debris
    cleared."""
    spec = resolve_keys(spark, spec)
    st = state.read_state(spark, spec)
    if ds is None and not st.initialized:
        raise StateError(f"table is not initialized; run `zipper init {spec.name}`", table=spec.table)
    at = ds or st.last_committed
    state.check_owned(st, spec, at)
    st = recovery.recover(spark, spec, st, at)
    publisher = publishers.DRY_RUN if dry_run else publishers.ON_COPY if clone.is_copy(st) else publishers.LIVE
    return Run(spark, spec, st, progress, accept_large_change, publisher, publisher.new_run_id())
