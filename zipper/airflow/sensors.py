"""Wait for the day's increment. Never starts Spark: a sensor asks the files or the metastore's
thrift API, in milliseconds, and leaves the machine's cores to the merges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from zipper.airflow.compat import (
    AIRFLOW_3,
    TRIGGER_FAIL_METHOD,
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    BaseSensorOperator,
    DagRunState,
    DagRunType,
    TaskInstanceState,
)
from zipper.airflow.docs import is_backfill_run, resume_command
from zipper.airflow.increments import Readiness
from zipper.airflow.readiness import increment_ready
from zipper.airflow.run_reports import FAILURE_XCOM
from zipper.airflow.triggers import IncrementEventStatus, IncrementTrigger
from zipper.tablespec.loader import load_spec_file


class ZipperIncrementSensor(BaseSensorOperator):
    """Succeeds when the increment of `ds` is there (see `zipper.airflow.increments`).

    mode `reschedule` (default) frees the worker slot between checks; `deferrable` hands the
    waiting to the triggerer (`airflow triggerer` must run; `airflow standalone` starts one).
    With `merge_task_id`, it also stops the run when the previous date's merge was cleared while
    it waited (`stop_if_previous_date_queued_behind`).

    With `skip_after` (seconds; a spec with `on_missing_input: skip`), it waits that long after the
    date ends (the run's data interval end) for an input that is not there at all, then succeeds
    without it: the merge commits the date as skipped. A weekend's file that never comes does not
    hold the DAG until the timeout; an input still being written is still waited for."""

    template_fields = ("ds",)
    ui_color = "#d9ecf5"

    def __init__(
        self,
        *,
        spec_path: str,
        ds: str = "{{ ds }}",
        deferrable: bool = False,
        merge_task_id: str | None = None,
        skip_after: float | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.ds = ds
        self.deferrable = deferrable
        self.merge_task_id = merge_task_id
        self.skip_after = skip_after

    def poke(self, context: Any) -> bool:
        if self.merge_task_id:
            stop_if_previous_date_queued_behind(context, self.merge_task_id)
        readiness = increment_ready(self.spec_path, self.ds)
        if not readiness.ready and self.gives_up(context, readiness):
            return True
        if self.merge_task_id and not readiness.ready:
            self.say_if_earlier_date_queued_behind(context)
        self.log.info("%s: %s", "found" if readiness.ready else "not yet", readiness.checked)
        return readiness.ready

    def skip_at(self, context: Any) -> datetime | None:
        """When a missing input stops being waited for: `skip_after` seconds after the date ends
        (None: never, a table that fails without its input; or a run without a data interval)."""
        end = context.get("data_interval_end")
        if self.skip_after is None or end is None:
            return None
        return end + timedelta(seconds=float(self.skip_after))

    def gives_up(self, context: Any, readiness: Readiness) -> bool:
        """Whether to stop waiting for an input that is not there: past `skip_at`, and nothing is
        being written (the merge would refuse a half-written input, not skip it)."""
        skip_at = self.skip_at(context)
        if skip_at is None or readiness.writing or datetime.now(UTC) < skip_at:
            return False
        self.log.warning(
            "no increment of %s %g s after the date ended (%s): the merge commits the date as skipped, without"
            " changes (on_missing_input: skip); if its input comes later, the next merge replays from it",
            self.ds,
            float(self.skip_after),
            readiness.checked,
        )
        return True

    def say_if_earlier_date_queued_behind(self, context: Any) -> None:
        """A cleared earlier date (not the previous one, which stop_if_previous_date_queued_behind handles) waits
        for this run's place; nothing deadlocks, but it starts only once this run ends, however long the
        increment takes: say so at each check, and what replays that date now."""
        queued = _previous_merge(context, self.merge_task_id, state=DagRunState.QUEUED.value)
        if queued is None or not queued.queued_behind or queued.merge_state in PASSED_STATES:
            return
        rerun = context["dag"].dag_id + "_rerun"
        self.log.warning(
            "the run of %s (run %s) was cleared and is queued behind this one: the DAG runs one date at a time,"
            " so it starts only once this run has ended (its increment of %s has landed, or the sensor has timed"
            " out). To replay %s now, trigger %s with from_date %s (it runs at once); that queued run is then a"
            " no-op",
            queued.logical,
            queued.run_id,
            self.ds,
            queued.logical,
            rerun,
            queued.logical,
        )

    def execute(self, context: Any) -> Any:
        if not self.deferrable or self.poke(context):
            try:
                return super().execute(context)
            except AirflowSensorTimeout as exc:
                raise type(exc)(self.timed_out(context, exc)) from None
        skip_at = self.skip_at(context)
        self.defer(
            trigger=IncrementTrigger(
                spec_path=self.spec_path,
                ds=self.ds,
                poke_interval=float(self.poke_interval),
                skip_at=skip_at.timestamp() if skip_at is not None else None,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )

    def resume_execution(self, next_method: str, next_kwargs: dict | None, context: Any) -> Any:
        """A deferral that timed out resumes here, with Airflow's bare `Trigger timeout` (3) or `Trigger/execution
        timeout` (2.11, not even as a sensor timeout): the same message and outcome as in the other modes."""
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except AirflowException as exc:
            timed_out = next_method == TRIGGER_FAIL_METHOD and "timeout" in str(exc).lower()
            if isinstance(exc, AirflowSensorTimeout) or timed_out:
                raise AirflowSensorTimeout(self.timed_out(context, exc)) from None
            raise

    def timed_out(self, context: Any, exc: Exception) -> str:
        """Airflow's own words name only the run's duration; the page at 3 a.m. should say what is missing,
        for which table, and what resumes the dates once it is there."""
        checked = increment_ready(self.spec_path, self.ds).checked
        resume = resume_command(
            context["dag"].dag_id,
            self.ds,
            is_backfill_run(context),
            ui="UI: clear this run's merge task with Upstream and Future",
        )
        return (
            f"{load_spec_file(self.spec_path).table}: the increment of {self.ds} did not land within the"
            f" sensor's timeout of {float(self.timeout):g} s: {checked} ({str(exc).rstrip('.')})."
            f" Once it is there, clear this run"
            f" and every later one: {resume}"
        )

    def _named(self) -> str:
        """The Hive table and its spec, as zipper's errors name them; the spec alone when it no longer loads (which
        may be why the check failed)."""
        try:
            return f"{load_spec_file(self.spec_path).table} (spec {self.spec_path})"
        except Exception:
            return self.spec_path

    def execute_complete(self, context: Any, event: dict | None = None) -> None:
        if event and event.get("status") == IncrementEventStatus.SKIPPED:  # the trigger stopped waiting (`skip_after`)
            self.log.warning(
                "no increment of %s by %s s after the date ended (%s): the merge commits the date as skipped",
                self.ds,
                self.skip_after,
                event.get("checked"),
            )
            return
        if not event or event.get("status") != IncrementEventStatus.READY:
            message = " ".join(str((event or {}).get("message") or event).split())  # one line
            raise AirflowException(f"{self._named()}: cannot check the increment of {self.ds}: {message}")
        if self.merge_task_id:  # the triggerer cannot see the runs: check before the merge is due
            stop_if_previous_date_queued_behind(context, self.merge_task_id)
        self.log.info("found: %s", event.get("checked"))


INCREMENT_TASK = "wait_for_increment"
PREVIOUS_DATE_TASK = "wait_for_previous_date"

# The previous run's merge has ended without committing its date: waiting for it would hold
# this run's place (max_active_runs=1) and keep the cleared earlier run from ever starting.
FAILED_STATES = {TaskInstanceState.FAILED, TaskInstanceState.UPSTREAM_FAILED, TaskInstanceState.REMOVED}
PASSED_STATES = {TaskInstanceState.SUCCESS, TaskInstanceState.SKIPPED}


class PreviousDateSensor(BaseSensorOperator):
    """Waits for the previous run's merge, and fails at once when that merge failed.

    `depends_on_past` alone would leave this run running, waiting on a failed date, in the
    DAG's one active-run place: clearing the failed date then queues its run behind this one
    for ever. Failing here frees the place; clearing the failed date with its future runs then
    runs them in date order."""

    ui_color = "#eeeeee"

    def __init__(self, *, merge_task_id: str = "merge", **kwargs: Any):
        super().__init__(**kwargs)
        self.merge_task_id = merge_task_id

    def poke(self, context: Any) -> bool:
        previous = _previous_merge(context, self.merge_task_id)
        if previous is None:
            self.log.info("first run: no earlier date to wait for")
            return True
        if previous.merge_state in PASSED_STATES:
            self.log.info("the merge of %s (run %s) is %s", previous.logical, previous.run_id, previous.merge_state)
            return True
        dag_id = context["dag"].dag_id
        if previous.merge_state in FAILED_STATES:
            self._pass_on_the_failure(context, previous)
            raise AirflowFailException(_failed_previous(dag_id, previous))
        if previous.queued_behind:
            raise AirflowFailException(_queued_behind(dag_id, context["ds"], previous))
        self.log.info(
            "waiting: the merge of %s (run %s) is %s%s",
            previous.logical,
            previous.run_id,
            previous.merge_state or "not started",
            _stranded_hint(dag_id, previous),
        )
        return False

    def _pass_on_the_failure(self, context: Any, previous: PreviousRun) -> None:
        """Leave for the Zipper view why the table is stuck: the failed merge's own line (its
        FAILURE_XCOM), which the previous run's merge or, when that one never ran, its gate left.
        The view shows the latest run's reason, and that run is this one, failed here; without
        this it would name this gate instead of, say, the guard's refusal two dates back."""
        ti = context.get("ti")
        if ti is None or not AIRFLOW_3:  # the view is Airflow 3's (Airflow 2 pulls no other run's XCom)
            return
        try:
            for task_id in (self.merge_task_id, self.task_id):
                reason = ti.xcom_pull(task_ids=task_id, key=FAILURE_XCOM, run_id=previous.run_id)
                if reason:
                    if task_id == self.merge_task_id:
                        reason = f"the merge of {previous.logical} failed: {reason}"
                    ti.xcom_push(key=FAILURE_XCOM, value=reason)
                    return
        except Exception as exc:  # noqa: BLE001 - this run's own failure is what the task must report
            self.log.warning("Could not pass on the previous date's failure to the Zipper view: %s", exc)


def stop_if_previous_date_queued_behind(context: Any, merge_task_id: str) -> None:
    """Fail this run when the previous date's merge has to run again but its run is queued behind this one.

    Clearing D's merge while D+1's run waits for its increment queues D's run behind D+1's (one
    active run), and D+1's merge (depends_on_past) then waits for D's for ever: Airflow marks no
    run with a depends_on_past task as deadlocked. Failing D+1 frees the place for D. A queued
    previous run whose merge has succeeded (only a later task of it was cleared) blocks nothing."""
    previous = _previous_merge(context, merge_task_id)
    if previous is not None and previous.queued_behind and previous.merge_state not in PASSED_STATES:
        raise AirflowFailException(_queued_behind(context["dag"].dag_id, context["ds"], previous))


class PreviousRun(NamedTuple):
    """What the gate knows of the run before this one."""

    logical: str  # its date
    run_id: str
    merge_state: str | None
    queued_behind: bool  # queued, and it cannot start while this run runs (_previous_merge)
    failed_tasks: list[str]  # its other tasks that failed
    backfill: bool  # it or this run is a backfill run
    queued_backfill: bool  # it is a queued backfill run


def _failed_previous(dag_id: str, previous: PreviousRun) -> str:
    """Why this run stops, and what clears it, from what failed in the previous run."""
    logical, run_id, state = previous.logical, previous.run_id, previous.merge_state
    clear = resume_command(dag_id, logical, previous.backfill, ui="UI: clear its merge task with Upstream and Future")
    if state == TaskInstanceState.UPSTREAM_FAILED and INCREMENT_TASK in previous.failed_tasks:
        return (
            f"the merge of the previous date {logical} (run {run_id}) did not run: its {INCREMENT_TASK} failed"
            f" (its log says why: its increment did not land in time, or an earlier date was cleared while it"
            f" waited); dates merge in order. Once that is resolved, clear that run and every later one: {clear}"
        )
    if state == TaskInstanceState.UPSTREAM_FAILED and PREVIOUS_DATE_TASK in previous.failed_tasks:
        return (
            f"the merge of the previous date {logical} (run {run_id}) did not run: an earlier date has not"
            f" merged (that run's {PREVIOUS_DATE_TASK} log names it); dates merge in order. Fix the earliest"
            f" failed date, then clear from it: {resume_command(dag_id, '<that date>', previous.backfill)}"
        )
    return (
        f"the merge of the previous date {logical} (run {run_id}) is {state}; dates merge in order."
        f" Fix it, then clear that run and every later one: {clear}"
    )


_CLEAR_THIS_RUN = "UI: clear this run's merge task with Future"


def _queued_behind(dag_id: str, ds: str, previous: PreviousRun) -> str:
    """Why this run stops rather than wait for a previous run that cannot start before it ends."""
    logical, run_id = previous.logical, previous.run_id
    if previous.backfill and not AIRFLOW_3:
        return (
            f"the run of the previous date {logical} (run {run_id}) is queued, and cannot start while this run"
            " runs: Airflow 2 counts backfill runs against the DAG's one active run, and only `airflow dags"
            " backfill` starts a queued backfill run. Waiting would hold this place for ever, so this run"
            f" stops. Run the dates from {logical} again: {resume_command(dag_id, logical, backfill=True)}"
        )
    return (
        f"the run of the previous date {logical} (run {run_id}) is queued behind this one, and the DAG runs"
        f" one date at a time: waiting would hold its place for ever, so this run stops. Once the merge of"
        f" {logical} has succeeded, clear this date and the later ones:"
        f" {resume_command(dag_id, ds, previous.backfill, ui=_CLEAR_THIS_RUN)}"
    )


def _stranded_hint(dag_id: str, previous: PreviousRun) -> str:
    """What to do if the queued backfill run waited for belongs to a cancelled backfill.

    Airflow 3 never starts a queued run of a cancelled backfill (apache/airflow#72337: a run of it
    cleared after the cancel), and a task cannot see the backfill's state (the Task Execution API
    has no backfill, tasks no database), so the gate waits, and says what resolves that case."""
    if not (AIRFLOW_3 and previous.queued_backfill):
        return ""
    return (
        f"; that run is a queued backfill run, which starts only while its backfill is active. If the backfill"
        f" was cancelled, Airflow never starts it (apache/airflow#72337): mark its queued runs failed (UI), then,"
        f" once the scheduler has closed that backfill (until then a new one is refused: 'Another backfill is"
        f" running'), airflow backfill create --dag-id {dag_id} --from-date {previous.logical} --to-date <the last"
        f" of their dates> --reprocess-behavior failed"
    )


def _text(value: Any) -> str | None:
    """An Airflow state or run type (an enum, or a string) as its string."""
    return str(value.value if hasattr(value, "value") else value) if value else None


def _previous_merge(context: Any, task_id: str, state: str | None = None) -> PreviousRun | None:
    """The run before this one (by date), or None; with `state`, the latest earlier run in that state.

    Queued behind: the previous run is queued while this one runs and can only start once this
    one ends (a past date cleared after `airflow dags test` replaced its scheduled run is queued
    by its new run_after, behind the later dates' runs). Airflow 2.11 counts every running run
    of the DAG, backfill runs too, against its one active run (max_active_runs=1), and its
    scheduler never starts a queued backfill run (only `airflow dags backfill` does, and that too
    waits while this run is active): so whatever the runs' kinds. Airflow 3 counts each
    backfill's running runs against that backfill's own max_active_runs and the other runs
    against the DAG's: so only when neither run is a backfill run. A queued run of the other kind
    waits for a place this run does not hold; a backfill starts its runs in date order (Airflow 3
    refuses a backfill in reverse of a DAG with depends_on_past), so a previous run of the same
    backfill is queued while this one runs only if it was cleared while it ran, which freed its
    own place, and it gets that place back before any later date. (Not seen from here: a queued
    run of the other kind held up by a later run of its kind that itself waits for this backfill,
    i.e. a past date cleared while a later scheduled run is in flight; docs/airflow-operations.md.)"""
    if AIRFLOW_3:
        ti = context["ti"]
        previous = ti.get_previous_dagrun(state=state)
        if previous is None:
            return None
        found = ti.get_task_states(dag_id=ti.dag_id, run_ids=[previous.run_id])
        states = {task: _text(state) for task, state in (found.get(previous.run_id) or {}).items()}
    else:
        run = context["dag_run"]
        previous = type(run).get_previous_dagrun(run, state=state)  # a static method on 2.11
        if previous is None:
            return None
        states = {found.task_id: _text(found.state) for found in previous.get_task_instances()}
    logical = previous.logical_date.date().isoformat() if getattr(previous, "logical_date", None) else "?"
    backfill = DagRunType.BACKFILL_JOB in (
        _text(previous.run_type),
        _text(getattr(context.get("dag_run"), "run_type", None)),
    )
    queued_behind = _text(previous.state) == DagRunState.QUEUED and (not AIRFLOW_3 or not backfill)
    failed = sorted(task for task, state in states.items() if state == TaskInstanceState.FAILED and task != task_id)
    queued_backfill = (
        _text(previous.state) == DagRunState.QUEUED and _text(previous.run_type) == DagRunType.BACKFILL_JOB
    )
    return PreviousRun(logical, previous.run_id, states.get(task_id), queued_behind, failed, backfill, queued_backfill)


def next_date_merged(context: Any, task_id: str) -> bool:
    """Whether the merge of the next date has succeeded: this run's date is then a past date, committed
    before, whose later dates stay committed.

    The next date is this run's data interval end when that is after its logical date (a scheduled or
    backfill run); a manual run's interval ends at its logical date (`airflow dags test`, a trigger
    with a logical date), so then its logical date plus the interval's length."""
    following = next_logical_dates(context)
    if not following:
        return False
    if AIRFLOW_3:
        ti = context["ti"]
        merged = ti.get_ti_count(
            dag_id=ti.dag_id, task_ids=[task_id], logical_dates=following, states=[TaskInstanceState.SUCCESS.value]
        )
        return merged > 0
    from airflow.models.dagrun import DagRun  # on use: Airflow 2.11 only, where tasks read the database

    for run in DagRun.find(dag_id=context["dag"].dag_id, execution_date=following):
        merge = run.get_task_instance(task_id)
        if merge is not None and _text(merge.state) == TaskInstanceState.SUCCESS:
            return True
    return False


def next_logical_dates(context: Any) -> list:
    """The logical date of the run after this one, as next_date_merged reads it (none without a date)."""
    logical, start, end = (context.get(key) for key in ("logical_date", "data_interval_start", "data_interval_end"))
    if logical is None or start is None or end is None:
        return []
    return sorted({day for day in (end, logical + (end - start)) if day > logical})
