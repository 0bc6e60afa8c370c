"""A triggered run's params (the rerun and correct forms) turned into the job's arguments.

The params' schema takes any text, so a bad date or name typed in `--conf` reaches the task. It
is refused here, in one line naming the table, before spark-submit starts a driver. They live
apart from the operators so that the forms' rules read in one place."""

from __future__ import annotations

from typing import Any

from zipper.airflow.compat import AirflowException
from zipper.core.corrections import FORM_PARAMS, CorrectionKind, CorrectionRequest, is_dry_run
from zipper.core.dates import iso_date
from zipper.core.errors import InputError


def _date_param(params: dict, key: str, required: bool, table: str, form: str = "rerun") -> str | None:
    """A date of the trigger form, checked before any Spark starts; the message names the table, as the job's would."""
    value = params.get(key)
    if value in (None, ""):
        if required:
            raise AirflowException(f"{table}: {form} param {key!r} is required (YYYY-MM-DD); nothing was changed")
        return None
    try:
        return iso_date(str(value)).isoformat()
    except ValueError:
        raise AirflowException(
            f"{table}: {form} param {key!r}: {value!r} is not a date (YYYY-MM-DD); nothing was changed"
        ) from None


RERUN_PARAMS = ("from_date", "to_date", "uncommit_later", "undo_corrections", "accept_large_change", "dry_run")


def _is_true(value: Any) -> bool:
    """A toggle of the form: true, or its text from `--conf` (a toggle left empty is null: false)."""
    return value in (True, "true", "True")


def rerun_args(table_name: str, params: dict, *, table: str) -> list[str]:
    """`rerun NAME --from D [--to E] [--uncommit-later] [--undo-corrections] [--accept-large-change] [--dry-run]
    --json-report`
    from the trigger form's params, dates checked; the report line says whether a failure is final. The params'
    schema takes any string, so that a bad date or name typed in `--conf` is refused here, in one line, rather than
    by Airflow's trigger."""
    unknown = sorted(set(params) - set(RERUN_PARAMS))
    if unknown:
        raise AirflowException(
            f"{table}: rerun param {unknown[0]!r} is not a param of this DAG: from_date (YYYY-MM-DD, required),"
            " to_date (YYYY-MM-DD), uncommit_later (true or false), undo_corrections (true or false),"
            " accept_large_change (true or false), dry_run (true or false); nothing was changed"
        )
    first = _date_param(params, "from_date", required=True, table=table)
    last = _date_param(params, "to_date", required=False, table=table)
    return (
        ["rerun", table_name, "--from", first]
        + (["--to", last] if last else [])
        + (["--uncommit-later"] if _is_true(params.get("uncommit_later")) else [])
        + (["--undo-corrections"] if _is_true(params.get("undo_corrections")) else [])
        + (["--accept-large-change"] if _is_true(params.get("accept_large_change")) else [])
        + (["--dry-run"] if _is_true(params.get("dry_run")) else [])
        + ["--json-report"]
    )


CORRECT_KINDS = tuple(kind.value for kind in CorrectionKind)  # plain texts: the form's choices
CORRECT_PARAMS = FORM_PARAMS


def correct_label(params: dict) -> str:
    """What a correction run is, in a few words: `dry run: erase`, `delete`."""
    return f"{'dry run: ' if is_dry_run(params) else ''}{params.get('kind') or '?'}"


def _refuse(table: str, message: str) -> AirflowException:
    return AirflowException(f"{table}: correct param {message}; nothing was changed")


def correct_args(table_name: str, params: dict, *, table: str) -> list[str]:
    """`correct NAME (--erase-key C=V ... | --keys-file F | --set C=V ... --where P | --delete --where P) [--from
    D] [--to E] --reason TEXT [--dry-run] [--purge] --json-report` from the trigger form's params. Each value is
    one argv element: no shell reads it, so spaces and quotes reach the CLI as typed.

    A run is a dry run unless `dry_run` is false: a form left as it opened writes nothing. A conf the CLI
    would refuse is refused here (CorrectionRequest.from_form), in one line naming the table, before
    spark-submit starts a driver."""
    try:
        request = CorrectionRequest.from_form(params, table=table)
    except InputError as exc:
        raise _refuse(table, exc.detail) from None
    return request.argv(table_name)
