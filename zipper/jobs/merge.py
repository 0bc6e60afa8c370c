"""`zipper merge`: the daily run of one date, as a recipe of named steps.

Recover what a killed run left, plan (merge, no-op, or replay a past date whose input changed),
then apply the day (`apply.apply_date`: write, audit, publish). A table without a first state
is initialized first (`init.init_table`)."""

from __future__ import annotations

import datetime as dt

from zipper.core.dates import DAY
from zipper.core.errors import InputError, InputNotFoundError, StateError
from zipper.core.reports import RunAction
from zipper.inputs import dayinput, sources
from zipper.inputs.modes import mode_of
from zipper.jobs import apply, replay
from zipper.jobs.context import Run, open_run, quiet
from zipper.jobs.init import drop_new_table, init_table
from zipper.jobs.plan import Plan, PlanAction, plan_from_state
from zipper.jobs.result import RunResult
from zipper.table import catalog, state
from zipper.tablespec.model import TableSpec


def merge_date(
    spark, spec: TableSpec, ds: dt.date, progress=None, accept_large_change: bool = False, dry_run: bool = False
) -> RunResult:
    """Merge one date. A past date whose input (or a later date's) changed is replayed, per
    `on_past_date`; `progress` receives one line per replayed date. `dry_run`: write and audit the
    date, show what would change, publish nothing (`publishers.DryRunPublisher`)."""
    run = open_run(spark, spec, ds, progress or quiet, accept_large_change, dry_run)
    if not dry_run:
        run = _recovered(run, ds)
    plan = _planned(run, ds)
    match plan.action:
        case PlanAction.NOOP:
            return RunResult(run.spec.table, ds.isoformat(), RunAction.NOOP, plan.reason, seconds=run.seconds())
    if dry_run and plan.action != PlanAction.APPLY:
        raise StateError(
            f"a dry run shows the merge of the next date of an initialized table only; this one would"
            f" {plan.action.value.replace('_', ' ')}; nothing was done",
            table=spec.table,
            ds=ds.isoformat(),
        )
    match plan.action:
        case PlanAction.REPLAY | PlanAction.RESUME:
            return _replay_then_merge(run, ds, plan)
    located = mode_of(run.spec).locate(spark, run.spec, run.state, ds)  # fails before anything is created
    if plan.action != PlanAction.INIT_AND_APPLY:
        return apply.apply_date(run, ds, located)
    return _init_then_apply(run, ds, located)


def _recovered(run: Run, ds: dt.date) -> Run:
    """The run, on a table typed by an input since corrected made again (`open_run` has already
    finished what a killed run left)."""
    if _typed_by_first_input(run.spec, run.state) and ds == run.state.init_ds + DAY:
        return run.with_state(_retype_from_input(run, ds))
    return run


def _planned(run: Run, ds: dt.date) -> Plan:
    """What this merge does, from the committed fingerprints and the inputs as they are now."""
    spark, spec, st = run.spark, run.spec, run.state
    fingerprints: dict[dt.date, str] = {}
    committed = {d: c.fingerprint for d, c in st.commits.items()}

    def current_fingerprint(day: dt.date) -> str:
        if day not in fingerprints:
            try:
                located = mode_of(spec).locate(spark, spec, st, day)
            except InputError as exc:
                if isinstance(exc, InputNotFoundError) and committed.get(day.isoformat()) == sources.NO_INPUT:
                    # skipped while the spec said skip, still not there: as committed (whatever it says now)
                    fingerprints[day] = sources.NO_INPUT
                    return fingerprints[day]
                if day == ds:
                    raise
                if day < ds:  # a date skipped for want of input, looked for again
                    raise exc.reworded(
                        f"{exc.detail}; {day} was committed without input, and its input is looked for again"
                        " (to replay it once it is there); nothing was changed",
                        table=spec.table,
                        ds=ds.isoformat(),
                    ) from None
                # a later date's input, gone (say, past the source's retention): say why this merge needs it
                raise exc.reworded(
                    f"{exc.detail}; the input of {day}, committed after {ds}, is needed to tell"
                    f" whether {ds}..{st.last_committed} are still as committed (and to replay them"
                    " if not); nothing was changed",
                    table=spec.table,
                    ds=ds.isoformat(),
                ) from None
            if located.missing and committed.get(day.isoformat(), sources.NO_INPUT) != sources.NO_INPUT:
                _refuse_vanished(spec, ds, day, located)
            fingerprints[day] = located.fingerprint_against(committed.get(day.isoformat()))
        return fingerprints[day]

    return plan_from_state(spec, ds, st, current_fingerprint)


def _refuse_vanished(spec: TableSpec, ds: dt.date, day: dt.date, located: sources.Input) -> None:
    """A date committed with input whose input is gone now (past the source's retention, say):
    `on_missing_input: skip` is for dates not committed yet, and a merge does not replay history
    away because a file went. A rerun from that date does, when that is what is wanted."""
    raise InputNotFoundError(
        f"increment {located.description} not found, but {day} was committed with input; a merge does not"
        f" commit a committed date again as skipped (on_missing_input: skip is for new dates): put the input"
        f" back, or `zipper rerun {spec.name} --from {day}` to commit it without; nothing was changed",
        table=spec.table,
        ds=ds.isoformat(),
        missing=located.description,
    )


def _replay_then_merge(run: Run, ds: dt.date, plan: Plan) -> RunResult:
    """Replay the planned dates (or finish an interrupted replay, then merge `ds` if still due)."""
    spark, spec = run.spark, run.spec
    if plan.action == PlanAction.RESUME and ds > plan.replay_to and not mode_of(spec).located_when_due:
        _require_input(run, ds, plan)  # before the replay, which may take long
    run.progress(f"{spec.table} {ds}: {plan.reason}")
    done = replay.rerun(
        spark,
        spec,
        plan.replay_from,
        plan.replay_to,
        progress=run.progress,
        resume_said=plan.action == PlanAction.RESUME,
        accept_large_change=run.accept_large_change,
    )
    if plan.action == PlanAction.RESUME:  # the table is where the interrupted replay was going: plan again
        after = merge_date(spark, spec, ds, run.progress, run.accept_large_change)
        if after.action != RunAction.NOOP:
            return after
    if ds > plan.replay_to:  # a skipped date's input appeared: replayed first, then the new date merges
        after = merge_date(spark, spec, ds, run.progress, run.accept_large_change)
        after.replayed = done.replayed
        return after
    # the report carries the commit of the run's own date, as a merge's does
    counts = {**_commit_counts(spark, spec, ds), "dates_replayed": done.counts.get("dates", 0)}
    return RunResult(
        spec.table,
        ds.isoformat(),
        RunAction.REPLAY,
        f"{plan.reason}; replayed {done.ds}",
        counts,
        run.seconds(),
        done.run_id,
        outcome=done.message,
        replayed=done.replayed,
    )


def _init_then_apply(run: Run, ds: dt.date, located: sources.Input) -> RunResult:
    """The first merge of a table not initialized yet: create it (and load its base), then apply the
    date. Its summary says so first: it is no ordinary merge."""
    spark, spec, st = run.spark, run.spec, run.state
    created = not st.exists
    opened = init_table(spark, spec, None).opened
    st = state.read_state(spark, spec)  # the table init created
    try:
        result = apply.apply_date(run.after(st), ds, located)
        result.opened = opened
        return result
    except Exception:
        # the first date failed before its publish: no table, as before, so the fixed input starts afresh
        if created and not state.read_state(spark, spec).commits:
            drop_new_table(spark, spec, st.location)
        raise


def _typed_by_first_input(spec: TableSpec, st: state.TableState) -> bool:
    """A table whose columns were taken from its first increment (no base, no `columns:`) and
    that has committed nothing since: it holds no row, and its columns are only what that
    input had."""
    return (
        st.initialized
        and not st.commits
        and st.open_rows == 0
        and spec.base is None
        and not spec.columns
        and st.open_partition.params.get(state.INIT_FINGERPRINT) == state.NO_BASE_FINGERPRINT
    )


def _retype_from_input(run: Run, ds: dt.date) -> state.TableState:
    """Such a table is made again from the first increment as it is now when its columns differ:
    a first merge killed after creating the table (a failed one drops it) left the columns of
    an input that has since been corrected, and the corrected one would be refused."""
    spark, spec, st = run.spark, run.spec, run.state
    try:
        located = mode_of(spec).locate(spark, spec, st, ds)
    except InputError:
        return st  # the merge says so
    columns = dayinput.first_columns(spark, spec, located, ds)
    table_columns = catalog.data_columns(spark, spec)
    if not columns or sorted(columns) == sorted(table_columns):
        return st
    drop_new_table(spark, spec, st.location)
    run.progress(
        f"{spec.table} {ds}: the table held no rows and had the columns of an earlier copy of this input"
        f" ({', '.join(f'{n} {k}' for n, k in table_columns)}); made again with the input's columns"
    )
    return state.read_state(spark, spec)


def _commit_counts(spark, spec: TableSpec, ds: dt.date) -> dict:
    commit = state.read_state(spark, spec).commits.get(ds.isoformat())
    return dict(commit.counts) if commit is not None else {}


def _require_input(run: Run, ds: dt.date, plan: Plan) -> None:
    """A merge that would first resume an interrupted replay fails at once if its own date's
    input is missing, and says the replay is still pending."""
    spark, spec, st = run.spark, run.spec, run.state
    try:
        mode_of(spec).locate(spark, spec, st, ds)
    except InputError as exc:
        raise exc.reworded(
            f"{exc.detail}; the interrupted replay of {plan.replay_from}..{plan.replay_to} was not"
            f" resumed (the next merge or `zipper rerun {spec.name} --from {plan.replay_from}` resumes"
            " it)",
            **run.where(ds),
        ) from None
