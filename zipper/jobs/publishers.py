"""One publisher per kind of run: what becomes of a day written and audited under the run's directory.

The apply is the same for every kind of run: read the day, write its slots, audit them. What differs
is the end, and each kind of run is one object here rather than a branch in the apply:

- `LIVE`: the table's own run. The change-volume guard enforces; the day is published.
- `ON_COPY`: a rerun's or rebuild's dry run, which runs the job on a copy of the table's metastore
  entry (`preview.on_copy`). The guard's verdict is shown, not enforced; the day is published on the
  copy, so that the next date reads what this one left.
- `DRY_RUN`: a merge's or a correction's dry run. Nothing is published: a merge's shows the guard's
  verdict and a sample of keys whose history would change, and deletes the run's directory; a
  correction's shows the versions it matched and stops before its write.

A correction ends the same way (`publish_correction`, given the correction selected and counted,
`correct.Selected`): the live publisher writes, audits and publishes it, the dry run's shows it.

A run carries its publisher (`Run.publisher`, chosen once by `context.open_run`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from zipper.core import faults, fs, layout
from zipper.core.errors import LargeChangeError
from zipper.core.layout import Slot
from zipper.core.reports import RunAction
from zipper.inputs import conform
from zipper.inputs.modes import mode_of
from zipper.jobs import preview
from zipper.jobs.result import Preview, RunResult
from zipper.table import guard, publish, state


@dataclass(frozen=True)
class Audited:
    """A day written and audited under the run's directory: everything its publish needs."""

    day: object  # dayinput.Day, with its merge shape
    written: object  # write_day.Written
    summary: dict  # the audit's counts, the day's and its column changes
    table_columns: list[tuple[str, str]]  # the table's data columns before the day
    action: state.CommitAction = state.CommitAction.MERGE
    carry_params: dict[str, str] | None = None  # extra open-partition parameters (a replay's marker)

    @property
    def ds(self) -> dt.date:
        return self.day.shape.date

    def result(self, run, message: str = "", **shown) -> RunResult:
        """The day's RunResult (`shown`: a preview or a verdict)."""
        ds_text = self.day.shape.ds
        counts = self.summary
        return RunResult(
            run.spec.table,
            ds_text,
            RunAction.MERGE,
            message,
            counts,
            run.seconds(),
            run.run_id,
            self.written.join,
            **shown,
        )


def _skipped(day) -> str:
    """A date skipped for want of input says what was not there."""
    return f"no input: {day.located.description} not found" if day.located.missing else ""


def _publish(run, audited: Audited) -> None:
    """Publish the day (`publish.publish_day`): the new open slot and the day's closed slot, and
    the column changes applied around it, so that a run killed in between is completed by the next."""
    day, written = audited.day, audited.written
    publish.publish_day(
        run.spark,
        run.spec,
        run.state,
        publish.DayCommit(
            audited.ds,
            run.run_id,
            run.root,
            written.open_dir,
            layout.slot_dir(run.root, Slot.CLOSED),
            audited.summary,
            day.located.fingerprint,
            mode_of(run.spec).commit_record(day.located),
            state.CommitAction(audited.action),  # a caller's text (replay's "replay") as its member
            written.rewritten,
            audited.carry_params,
        ),
        publish.DayColumns(
            day.column_changes, audited.table_columns, day.columns, conform.widened_from_float(day.column_changes)
        ),
    )


class LivePublisher:
    """The table's own run: the guard refuses a day far larger than the table's usual (nothing of
    the run is published or left behind), else the day is published."""

    # a rerun that fails once the table has changed leaves its replay pending, for the next run to
    # resume; a dry run's changes only its copy, dropped at its end, and leaves nothing to resume
    leaves_work_to_resume = True

    def new_run_id(self) -> str:
        return state.new_run_id()

    def keep(self, run, day) -> None:
        """Nothing of the day's input is needed past its write."""

    def publish(self, run, audited: Audited) -> RunResult:
        try:
            accept = _how_to_accept(run.spec, audited.ds, audited.action)
            guard.check(
                run.spec, run.state, audited.ds, audited.summary, accepted=run.accept_large_change, accept=accept
            )
        except LargeChangeError:
            fs.delete(run.root)  # refused: nothing of this run is published, nothing left behind
            raise
        faults.checkpoint("after_audit")
        _publish(run, audited)
        return audited.result(run, _skipped(audited.day))

    def publish_correction(self, run, selected) -> RunResult:
        """Write and audit the correction under the run's directory, then publish every partition it
        rewrote with its record in one metastore transaction (`publish.publish_correction`)."""
        correction, rewritten = selected.written()
        publish.publish_correction(run.spark, run.spec, run.state, correction, run.root, rewritten)
        return selected.published(correction, rewritten)


class OnCopyPublisher(LivePublisher):
    """A rerun's or rebuild's dry run on a copy of the table's metastore entry: the guard's verdict
    is shown with the day, not enforced, and the day is published on the copy."""

    leaves_work_to_resume = False

    def publish(self, run, audited: Audited) -> RunResult:
        verdict = guard.verdict(run.spec, run.state, audited.ds, audited.summary, accepted=run.accept_large_change)
        faults.checkpoint("after_audit")
        _publish(run, audited)
        return audited.result(run, _skipped(audited.day), verdict=verdict)


class DryRunPublisher:
    """A merge's dry run: the day as the merge would publish it, without the publish: its counts,
    the guard's verdict (not a refusal) and a sample of keys whose history would differ, before
    and after. The run's directory is deleted: nothing is published, nothing is left behind."""

    leaves_work_to_resume = False

    def new_run_id(self) -> str:
        """A dry run's id: what a killed one left is known by its name (`clone.sweep`)."""
        return state.new_run_id(dry_run=True)

    def keep(self, run, day) -> None:
        """The day's keys, kept past the change set's scratch for the sample (`preview.keep_keys`)."""
        preview.keep_keys(run, day)

    def publish(self, run, audited: Audited) -> RunResult:
        try:
            verdict = guard.verdict(run.spec, run.state, audited.ds, audited.summary, accepted=run.accept_large_change)
            schema = conform.struct_type(audited.day.columns, run.spec.begin_column)
            closed_dir = layout.slot_dir(run.root, Slot.CLOSED)
            found = preview.sample(
                run, audited.ds, schema, audited.written.open_dir, closed_dir, audited.written.rewritten
            )
        finally:
            preview.clean(run)
        return audited.result(run, "dry run", verdict=verdict, preview=Preview(sample=found))

    def publish_correction(self, run, selected) -> RunResult:
        """The versions the correction matched, per partition, and a sample of them; nothing is written."""
        return selected.preview()


LIVE, ON_COPY, DRY_RUN = LivePublisher(), OnCopyPublisher(), DryRunPublisher()


def _how_to_accept(spec, ds: dt.date, action: state.CommitAction) -> str:
    """The command that accepts a day the change-volume guard refused, for its message."""
    if state.CommitAction(action) == state.CommitAction.REPLAY:
        return "run the same merge or rerun again with --accept-large-change (in Airflow: the rerun form's accept_large_change)"
    return (
        f"zipper merge {spec.name} --ds {ds.isoformat()} --accept-large-change"
        " (in Airflow, then clear the failed task: the date is committed)"
    )
