"""Is the increment of a date there? The spec's own check (`zipper.airflow.increments`), or, for a
Hive table source with an external metastore, the metastore's answer through the Hive provider.
Shared by the sensor (poke, reschedule) and its trigger (deferrable)."""

from __future__ import annotations

import datetime as dt

from zipper.airflow import environment
from zipper.airflow.compat import AirflowException
from zipper.airflow.increments import ExternalMetastore, Readiness, check_increment
from zipper.tablespec.loader import load_spec_file


def increment_ready(spec_path: str, ds: str, metastore_conn_id: str | None = None) -> Readiness:
    """Shared by the sensor (poke, reschedule) and its trigger (deferrable)."""
    spec = load_spec_file(spec_path)
    day = dt.date.fromisoformat(ds)
    try:
        return check_increment(spec, day, environment.warehouse())
    except ExternalMetastore as external:
        return _metastore_partition(external, metastore_conn_id)


def _metastore_partition(external: ExternalMetastore, metastore_conn_id: str | None) -> Readiness:
    """With an external metastore, ask it through the Hive provider when it is installed."""
    try:
        from airflow.providers.apache.hive.hooks.hive import (
            HiveMetastoreHook,  # optional provider, external metastores only
        )
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
