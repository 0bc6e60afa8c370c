"""The few Airflow names zipper uses, imported from where each supported version keeps them.

Airflow 3 exposes the authoring API in `airflow.sdk` and calls datasets assets; Airflow 2.11
keeps them in `airflow.models`, `airflow.sensors` and `airflow.datasets`. 2.10 and older are
not supported (no `airflow dags backfill` parity, different timetable defaults)."""

from __future__ import annotations

from airflow import __version__ as AIRFLOW_VERSION

AIRFLOW_MAJOR = int(AIRFLOW_VERSION.split(".")[0])
AIRFLOW_3 = AIRFLOW_MAJOR >= 3

if AIRFLOW_3:
    from airflow.sdk import (
        DAG,
        Asset,
        BaseHook,
        BaseOperator,
        BaseSensorOperator,
        CronDataIntervalTimetable,
        Param,
        get_parsing_context,
    )
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSensorTimeout,
    )
else:
    from airflow import DAG
    from airflow.datasets import Dataset as Asset
    from airflow.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSensorTimeout,
    )
    from airflow.hooks.base import BaseHook
    from airflow.models.baseoperator import BaseOperator
    from airflow.models.param import Param
    from airflow.sensors.base import BaseSensorOperator
    from airflow.timetables.interval import CronDataIntervalTimetable
    from airflow.utils.dag_parsing_context import get_parsing_context

    _minor = int(AIRFLOW_VERSION.split(".")[1])
    if AIRFLOW_MAJOR < 2 or _minor < 11:
        raise ImportError(f"zipper needs Airflow 2.11 or 3.x; this is Airflow {AIRFLOW_VERSION}")


# Airflow's own closed sets of run and task states and run types, the same in both versions
from airflow.utils.state import DagRunState, TaskInstanceState  # noqa: E402
from airflow.utils.types import DagRunType  # noqa: E402

# The `next_method` a deferred task resumes with when its trigger failed or timed out: Airflow's
# own signal in both versions, under no public name in either.
TRIGGER_FAIL_METHOD = "__fail__"


def make_asset(uri: str, name: str):
    """An outlet for the table: `Asset(name=, uri=)` on Airflow 3, `Dataset(uri)` on 2.11."""
    return Asset(name=name, uri=uri) if AIRFLOW_3 else Asset(uri)


__all__ = [
    "AIRFLOW_3",
    "AIRFLOW_VERSION",
    "DAG",
    "AirflowException",
    "AirflowFailException",
    "AirflowNotFoundException",
    "AirflowSensorTimeout",
    "Asset",
    "BaseHook",
    "BaseOperator",
    "BaseSensorOperator",
    "CronDataIntervalTimetable",
    "DagRunState",
    "DagRunType",
    "Param",
    "TRIGGER_FAIL_METHOD",
    "TaskInstanceState",
    "get_parsing_context",
    "make_asset",
]
