"""What Airflow knows about the zipper DAGs, for the pages: each DAG's latest run and the pool.

Read from Airflow's own database through its models, inside the API server that serves the
pages (no extra connection, no REST round trip). Airflow 3 only, as the view is."""

from __future__ import annotations

import json

from airflow.models.dagrun import DagRun
from airflow.models.pool import Pool
from airflow.models.taskinstance import TaskInstance
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.state import TaskInstanceState
from sqlalchemy import func, select

from zipper.airflow.run_reports import DRY_RUN_XCOM, FAILURE_XCOM

MERGE_TASK = "merge"


def latest_runs(dag_ids: list[str]) -> dict[str, dict]:
    """Each DAG's newest run (by run_after): state, ids, dates, and its first failed task if any."""
    if not dag_ids:
        return {}
    with create_session() as session:
        newest = (
            select(DagRun.dag_id, func.max(DagRun.run_after).label("run_after"))
            .where(DagRun.dag_id.in_(dag_ids))
            .group_by(DagRun.dag_id)
            .subquery()
        )
        runs = session.scalars(
            select(DagRun).join(newest, (DagRun.dag_id == newest.c.dag_id) & (DagRun.run_after == newest.c.run_after))
        ).all()
        failed: dict[tuple[str, str], str] = {}  # (dag_id, run_id): its first failed task, one query for all
        if runs:
            for dag_id, run_id, task_id in session.execute(
                select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id)
                .where(
                    TaskInstance.dag_id.in_(sorted({run.dag_id for run in runs})),
                    TaskInstance.run_id.in_(sorted({run.run_id for run in runs})),
                    TaskInstance.state.in_((TaskInstanceState.FAILED, TaskInstanceState.UPSTREAM_FAILED)),
                )
                .order_by(TaskInstance.end_date)
            ):
                failed.setdefault((dag_id, run_id), task_id)
        reasons = _failure_reasons(session, failed)
        found = {}
        for run in runs:
            found[run.dag_id] = {
                "dag_id": run.dag_id,
                "run_id": run.run_id,
                "state": str(run.state.value if hasattr(run.state, "value") else run.state),
                "logical_date": run.logical_date.isoformat() if run.logical_date else None,
                "run_after": run.run_after.isoformat() if run.run_after else None,
                "start_date": run.start_date.isoformat() if run.start_date else None,
                "end_date": run.end_date.isoformat() if run.end_date else None,
                "note": run.note,
                "failed_task": failed.get((run.dag_id, run.run_id)),
                "failure": reasons.get((run.dag_id, run.run_id)),
            }
        return found


def _failure_reasons(session, failed: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """The one-line reason each failed task left (its `zipper_failure` XCom), by (dag_id, run_id)."""
    if not failed:
        return {}
    rows = session.execute(
        select(XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.value).where(
            XComModel.key == FAILURE_XCOM,
            XComModel.dag_id.in_(sorted({dag_id for dag_id, _ in failed})),
            XComModel.run_id.in_(sorted({run_id for _, run_id in failed})),
        )
    )
    reasons = {}
    for dag_id, run_id, task_id, value in rows:
        if (dag_id, run_id) not in failed:
            continue
        # the first failed task's; another failed task's when it left none (a run whose gate
        # failed it, its merge then upstream_failed, may list either first)
        if failed[(dag_id, run_id)] == task_id or (dag_id, run_id) not in reasons:
            reasons[(dag_id, run_id)] = str(XComModel.deserialize_value(_Stored(value)))
    return reasons


def latest_dry_run(dag_id: str) -> dict | None:
    """The newest dry run of a rerun DAG (its task's `zipper_dry_run` XCom): its run id, when it
    ended, its summary, dates and sample; None when the DAG never made one."""
    with create_session() as session:
        row = session.execute(
            select(XComModel.run_id, XComModel.value, XComModel.timestamp)
            .where(XComModel.key == DRY_RUN_XCOM, XComModel.dag_id == dag_id)
            .order_by(XComModel.timestamp.desc())
            .limit(1)
        ).first()
    if row is None:
        return None
    value = XComModel.deserialize_value(_Stored(row.value))
    while isinstance(value, str):  # stored as JSON text
        value = json.loads(value)
    return {"run_id": row.run_id, "at": row.timestamp.isoformat() if row.timestamp else None, **value}


class _Stored:
    """A stored XCom value as `XComModel.deserialize_value` takes it (a result with `.value`)."""

    def __init__(self, value):
        self.value = value


def pool_slots(name: str) -> int | None:
    """The pool's slots, or None when Airflow has no such pool (its tasks would never be scheduled)."""
    with create_session() as session:
        pool = session.scalars(select(Pool).where(Pool.pool == name)).first()
        return pool.slots if pool is not None else None


def known_dag_ids(dag_ids: list[str]) -> set[str]:
    """Which of these DAGs Airflow has parsed (a tab link to a DAG it does not know would be dead)."""
    from airflow.models.dag import DagModel

    if not dag_ids:
        return set()
    with create_session() as session:
        return set(session.scalars(select(DagModel.dag_id).where(DagModel.dag_id.in_(dag_ids))).all())
