"""One DAG per table spec (`zipper_<name>`), one rerun DAG (`zipper_<name>_rerun`) and one correction DAG
(`zipper_<name>_correct`).

The DAG file in `dags/` calls `build_dags(globals())`. Parsing reads the spec files and builds
operators; it imports no pyspark and touches no database or connection. A spec that does not load
is reported as an import error of its own file and skipped; the others still load (a task's own
parse of a DAG that loaded reports nothing: parse_errors)."""

from __future__ import annotations

import datetime as dt
from datetime import timedelta
from pathlib import Path
from typing import Any

from zipper.airflow.compat import DAG, CronDataIntervalTimetable, Param, make_asset
from zipper.airflow.docs import asset_uri, correct_dag_doc, merge_dag_doc, rerun_dag_doc
from zipper.airflow.operators import (
    CORRECT_LABEL,
    DATE_LABEL,
    RERUN_LABEL,
    ZipperAuditOperator,
    ZipperCorrectOperator,
    ZipperMergeOperator,
    ZipperRerunOperator,
)
from zipper.airflow.parse_errors import report_spec_errors
from zipper.airflow.sensors import INCREMENT_TASK, PREVIOUS_DATE_TASK, PreviousDateSensor, ZipperIncrementSensor
from zipper.airflow.trigger_params import CORRECT_KINDS
from zipper.core.corrections import CorrectionKind
from zipper.core.errors import SpecError
from zipper.tablespec.loader import scan_specs, specs_dir
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SensorMode

DAG_PREFIX = "zipper_"
CRON_PRESETS = {"@daily": "0 0 * * *", "@midnight": "0 0 * * *"}


def _midnight_utc(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def timetable(spec: TableSpec):
    """Data-interval semantics on both Airflow versions: the run of date D covers D and starts when
    D ends, so the day's increment can exist. (Airflow 3 would read a bare '@daily' as a trigger
    timetable that fires at the start of D.)"""
    cron = CRON_PRESETS.get(spec.airflow.schedule, spec.airflow.schedule)
    return CronDataIntervalTimetable(cron, timezone="UTC")


def _default_args(spec: TableSpec) -> dict[str, Any]:
    return {
        "owner": spec.airflow.owner,
        "retries": spec.airflow.retries,
        "retry_delay": timedelta(minutes=spec.airflow.retry_delay_minutes),
    }


def _tags(spec: TableSpec) -> list[str]:
    return sorted({"zipper", *spec.airflow.tags})


def _job_args(spec: TableSpec, specs: Path) -> dict[str, Any]:
    return {
        "table_name": spec.name,
        "table": spec.table,
        "specs_dir": str(specs),
        "conn_id": spec.airflow.spark_conn_id,
        "pool": spec.airflow.pool,
        "outlets": [make_asset(asset_uri(spec), name=spec.table)],  # the asset is the Hive table
    }


def merge_dag_description(spec: TableSpec) -> str:
    """The DAG list's one line: which table, and what the DAG does."""
    return f"{spec.table}: daily SCD type 2 merge, one run per date (rerun: {rerun_dag_id(spec)})"


def rerun_dag_description(spec: TableSpec) -> str:
    return f"{spec.table}: on call's replay of dates whose input changed (trigger it with from_date)"


def correct_dag_description(spec: TableSpec) -> str:
    return f"{spec.table}: row-level corrections: erase keys, fix values, delete versions (dry run by default)"


def build_merge_dag(spec: TableSpec, spec_path: Path, specs: Path):
    dag_id = merge_dag_id(spec)
    with DAG(
        dag_id=dag_id,
        description=merge_dag_description(spec),
        schedule=timetable(spec),
        start_date=_midnight_utc(spec.start_date),
        end_date=_midnight_utc(spec.end_date) if spec.end_date else None,
        catchup=True,
        max_active_runs=1,
        default_args=_default_args(spec),
        tags=_tags(spec),
        doc_md=merge_dag_doc(spec, spec_path, rerun_dag_id(spec)),
    ) as dag:
        # first: a run whose previous date failed fails at once instead of holding the run place
        # every task instance shows the date its run merges (DATE_LABEL; the UI's Map Index column)
        previous = PreviousDateSensor(
            task_id=PREVIOUS_DATE_TASK, mode="reschedule", poke_interval=15, retries=0, map_index_template=DATE_LABEL
        )
        merge = ZipperMergeOperator(
            task_id="merge", depends_on_past=True, map_index_template=DATE_LABEL, **_job_args(spec, specs)
        )
        audit = ZipperAuditOperator(
            task_id="audit",
            merge_task_id="merge",
            table=spec.table,
            table_name=spec.name,
            retries=0,
            map_index_template=DATE_LABEL,
        )
        before_merge = previous
        if spec.airflow.sensor.enabled:
            sensor = spec.airflow.sensor
            wait = ZipperIncrementSensor(
                task_id=INCREMENT_TASK,
                spec_path=str(spec_path),
                merge_task_id="merge",  # the previous date's, cleared while this waits: stop, see the sensor
                # plain text for Airflow: a deferrable sensor pokes when it is not deferred
                mode=str(SensorMode.POKE if sensor.mode == SensorMode.DEFERRABLE else sensor.mode),
                deferrable=sensor.mode == SensorMode.DEFERRABLE,
                poke_interval=sensor.poke_interval,
                timeout=sensor.timeout,
                # on_missing_input: skip: a date whose input never comes is merged as skipped after this wait
                skip_after=sensor.skip_after_seconds if spec.source.skips_missing_input else None,
                retries=0,
                map_index_template=DATE_LABEL,
            )
            previous >> wait
            before_merge = wait
        before_merge >> merge >> audit
    return dag


def _triggered_dag(spec: TableSpec, dag_id: str, description: str, doc_md: str, params: dict[str, Any]):
    """A DAG run only from its trigger form: nothing scheduled, so not paused on creation (a trigger must
    just run), one run at a time, never retried (whoever triggered it reads why and triggers it again)."""
    return DAG(
        dag_id=dag_id,
        description=description,
        schedule=None,
        start_date=_midnight_utc(spec.start_date),
        catchup=False,
        is_paused_upon_creation=False,
        max_active_runs=1,
        default_args={**_default_args(spec), "retries": 0},
        tags=_tags(spec),
        doc_md=doc_md,
        params=params,
    )


def build_rerun_dag(spec: TableSpec, specs: Path):
    doc = rerun_dag_doc(spec, merge_dag_id(spec))
    with _triggered_dag(spec, rerun_dag_id(spec), rerun_dag_description(spec), doc, rerun_params()) as dag:
        ZipperRerunOperator(task_id="rerun", map_index_template=RERUN_LABEL, **_job_args(spec, specs))
    return dag


def rerun_params() -> dict[str, Any]:
    """The trigger form. Dates are plain text in ISO form (YYYY-MM-DD), typed as the CLI takes them: a
    `format: date` field is a browser date picker showing the browser's locale (01/05/2024), and Airflow
    refuses a value that is not a date at the trigger, with a traceback on the command line. Any string
    passes here; the rerun task refuses a bad one before Spark starts, in one line naming the table.
    Only from_date is required; the toggle may be left empty (null)."""
    return {
        "from_date": Param(
            "",
            type="string",
            title="From date",
            description=(
                "First date to replay, YYYY-MM-DD (e.g. 2024-01-05). The form's Logical Date is only this"
                " run's own time stamp: leave it; the dates replayed are these."
            ),
        ),
        "to_date": Param(
            None,
            type=["null", "string"],
            title="To date",
            description="Last date to replay, YYYY-MM-DD; empty: the table's last committed date.",
        ),
        "uncommit_later": Param(
            False,
            type=["null", "boolean"],
            title="Uncommit later dates",
            description=(
                "Needed only with a To date before the last committed date: the dates after it are then no"
                " longer committed, and their runs of the daily DAG must run again."
            ),
        ),
        "undo_corrections": Param(
            False,
            type=["null", "boolean"],
            title="Undo corrections",
            description=(
                "Replay the inputs as they are over versions a `zipper correct` fix or delete changed; the"
                " correction is marked undone (a rerun over them is refused without this)."
            ),
        ),
        "accept_large_change": Param(
            False,
            type=["null", "boolean"],
            title="Accept a large change",
            description=(
                "Publish replayed days even if one changes far more open rows than the table's usual (the"
                " spec's guard refuses such a day otherwise, naming its figures)."
            ),
        ),
        "dry_run": Param(
            False,
            type=["null", "boolean"],
            title="Dry run",
            description=(
                "Replay on a copy of the table and show what would change, publishing nothing: each date's"
                " counts, the change-volume guard's verdicts and up to 5 keys' versions before and after,"
                " in the task log and on the table's Zipper page."
            ),
        ),
    }


def build_correct_dag(spec: TableSpec, specs: Path):
    """Triggered only, never retried: a correction refused by the table's lock is triggered again by whoever
    asked for it, after reading why. Its task takes a slot of the merges' pool."""
    doc = correct_dag_doc(spec, merge_dag_id(spec))
    with _triggered_dag(spec, correct_dag_id(spec), correct_dag_description(spec), doc, correct_params()) as dag:
        ZipperCorrectOperator(task_id="correct", map_index_template=CORRECT_LABEL, **_job_args(spec, specs))
    return dag


def correct_params() -> dict[str, Any]:
    """The correction's trigger form. `kind` is a choice with no default: nothing is corrected until someone
    picks what; the task refuses a run without one. (Being a choice, another value in `--conf` is refused by
    Airflow at the trigger, as a toggle's is; correct_args refuses it too.) Text fields take the CLI's forms, several `column=value`
    separated by `;`, and may stay empty (null); the task checks them against the kind, in one line naming the
    table, before Spark starts. `dry_run` is on when the form opens: applying a correction is a second,
    deliberate trigger."""
    return {
        "kind": Param(
            None,
            type=["null", "string"],
            enum=[None, *CORRECT_KINDS],
            # the option's label in both UIs (Airflow 3 names null's by "None" too)
            values_display={
                "None": "(choose)",
                CorrectionKind.ERASE.value: "erase keys",
                CorrectionKind.SET.value: "set values",
                CorrectionKind.DELETE.value: "delete versions",
            },
            title="Kind",
            description=(
                "erase: remove keys from every version; set: fix values in the versions Where matches; delete:"
                " remove the versions Where matches."
            ),
        ),
        "erase_keys": Param(
            None,
            type=["null", "string"],
            title="Keys to erase",
            description="For erase: column=value per key column, separated by ';' (e.g. id=7, or region=eu; id=7).",
        ),
        "keys_file": Param(
            None,
            type=["null", "string"],
            title="Keys file",
            description="For erase, instead of the keys: the absolute path on the worker of a CSV file of keys.",
        ),
        "set_values": Param(
            None,
            type=["null", "string"],
            title="New values",
            description="For set: column=value separated by ';' (e.g. city=Oslo; tier=gold); NULL for none.",
        ),
        "where": Param(
            None,
            type=["null", "string"],
            title="Where",
            description="For set and delete: which versions, e.g. user_id = 7 AND city = 'Olso' (docs/corrections.md).",
        ),
        "from_date": Param(
            None,
            type=["null", "string"],
            title="From date",
            description="For set and delete: only versions valid on this date or later, YYYY-MM-DD.",
        ),
        "to_date": Param(
            None,
            type=["null", "string"],
            title="To date",
            description="For set and delete: only versions valid on this date or earlier, YYYY-MM-DD.",
        ),
        "reason": Param(
            "",
            type="string",
            title="Reason",
            description="Why, in a few words: kept in the table's commit log (required).",
        ),
        "dry_run": Param(
            True,
            type=["null", "boolean"],
            title="Dry run",
            description="On: show in the task log what would change, and write nothing. Turn off to apply.",
        ),
        "purge": Param(
            False,
            type=["null", "boolean"],
            title="Purge",
            description="For erase: remove at once the superseded directories that still hold the erased rows.",
        ),
    }


def load_table_specs(folder: Path) -> tuple[list[tuple[Path, TableSpec]], list[tuple[Path, str]]]:
    """(every spec that loads, every one that does not with its one-line message).

    A spec named `<other>_rerun` would build the DAG `zipper_<other>_rerun`, which is the rerun DAG of
    the spec `<other>`: one would silently replace the other, and on call would trigger a merge of the
    wrong table from the rerun form. It is refused instead; `<other>` keeps its rerun DAG. So is a spec
    named `<other>_correct`, whose merge DAG would replace the correction DAG of `<other>`."""
    loaded, failed = [], []
    for path, spec in scan_specs(folder):
        if isinstance(spec, SpecError):
            failed.append((path, str(spec)))
        else:
            loaded.append((path, spec))
    taken = {
        dag_id(spec): (path, spec, what)
        for what, dag_id in (("rerun", rerun_dag_id), ("correct", correct_dag_id))
        for path, spec in loaded
    }
    kept = []
    for path, spec in loaded:
        if merge_dag_id(spec) in taken:
            other_path, other, what = taken[merge_dag_id(spec)]
            failed.append(
                (
                    path,
                    f"{path}: key 'name': {spec.name!r} would make the DAG {merge_dag_id(spec)}, which"
                    f" is the {what} DAG of {other.name!r} ({other_path}); choose a name not ending in"
                    f" '_{what}'",
                )
            )
        else:
            kept.append((path, spec))
    return kept, failed


def merge_dag_id(spec: TableSpec) -> str:
    return DAG_PREFIX + spec.name


def rerun_dag_id(spec: TableSpec) -> str:
    return DAG_PREFIX + spec.name + "_rerun"


def correct_dag_id(spec: TableSpec) -> str:
    return DAG_PREFIX + spec.name + "_correct"


def build_dags(namespace: dict[str, Any] | None = None, folder: str | Path | None = None) -> dict[str, Any]:
    """Build the DAGs of every spec in `folder` (default ZIPPER_SPECS, else dags/tables) into
    `namespace` (the DAG file's globals()), in name order."""
    specs = specs_dir(folder).resolve()
    loaded, failed = load_table_specs(specs)
    dags: dict[str, Any] = {}
    for path, spec in sorted(loaded, key=lambda item: item[1].name):
        for dag in (build_merge_dag(spec, path, specs), build_rerun_dag(spec, specs), build_correct_dag(spec, specs)):
            dags[dag.dag_id] = dag
    report_spec_errors(failed, dags)
    if namespace is not None:
        namespace.update(dags)
    return dags
