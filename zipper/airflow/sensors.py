"""Wait for the day's increment. Never starts Spark (the embedded Derby metastore allows one JVM,
and the merge needs it)."""

from __future__ import annotations

import datetime as dt
from datetime import timedelta
from typing import Any

from zipper.airflow import environment
from zipper.airflow.compat import AirflowException, BaseSensorOperator
from zipper.airflow.increments import ExternalMetastore, Readiness, check_increment


def increment_ready(spec_path: str, ds: str, metastore_conn_id: str | None = None) -> Readiness:
    """Shared by the sensor (poke, reschedule) and its trigger (deferrable)."""
    from zipper.spec.loader import load_spec_file

    spec = load_spec_file(spec_path)
    day = dt.date.fromisoformat(ds)
    try:
        return check_increment(spec, day, environment.warehouse())
    except ExternalMetastore as external:
        return _metastore_partition(external, metastore_conn_id)


def _metastore_partition(external: ExternalMetastore, metastore_conn_id: str | None) -> Readiness:
    """With an external metastore, ask it through the Hive provider when it is installed."""
    try:
        from airflow.providers.apache.hive.hooks.hive import HiveMetastoreHook
    except ImportError:
        raise AirflowException(
            f"cannot check {external}: with ZIPPER_METASTORE=external the table sensor needs"
            " apache-airflow-providers-apache-hive (a metastore connection), or set"
            " `airflow: {sensor: {enabled: false}}` in the spec"
        ) from None
    database, table = external.table.split(".")
    hook = HiveMetastoreHook(metastore_conn_id=metastore_conn_id or "metastore_default")
    if not external.partition:
        return Readiness(hook.table_exists(table, database), external.table)
    expression = " AND ".join(f"{k}='{v}'" for k, v in external.partition.items())
    return Readiness(hook.check_for_partition(database, table, expression), str(external))


class ZipperIncrementSensor(BaseSensorOperator):
    """Succeeds when the increment of `ds` is there (see `zipper.airflow.increments`).

    mode `reschedule` (default) frees the worker slot between checks; `deferrable` hands the
    waiting to the triggerer (`airflow triggerer` must run; `airflow standalone` starts one)."""

    template_fields = ("ds",)
    ui_color = "#d9ecf5"

    def __init__(self, *, spec_path: str, ds: str = "{{ ds }}", deferrable: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.ds = ds
        self.deferrable = deferrable

    def poke(self, context: Any) -> bool:
        readiness = increment_ready(self.spec_path, self.ds)
        self.log.info("%s: %s", "found" if readiness.ready else "not yet", readiness.checked)
        return readiness.ready

    def execute(self, context: Any) -> Any:
        if not self.deferrable or self.poke(context):
            return super().execute(context)
        from zipper.airflow.triggers import IncrementTrigger

        self.defer(
            trigger=IncrementTrigger(spec_path=self.spec_path, ds=self.ds, poke_interval=float(self.poke_interval)),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )

    def execute_complete(self, context: Any, event: dict | None = None) -> None:
        if not event or event.get("status") != "ready":
            raise AirflowException(f"increment check failed: {event}")
        self.log.info("found: %s", event.get("checked"))
