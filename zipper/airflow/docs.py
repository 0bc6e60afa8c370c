"""The `doc_md` of each DAG, rendered from its spec: what the table is and how to operate it."""

from __future__ import annotations

from pathlib import Path

from zipper.airflow.compat import AIRFLOW_3, DagRunType
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import OnPastDate, SourceFormat, Tracked
from zipper.tablespec.paths import resolve_path


def resume_command(dag_id: str, date: str, backfill: bool, ui: str = "") -> str:
    """What runs a date and the later ones of a zipper DAG again: clearing them. On Airflow 2, where
    backfill runs are involved, a backfill too: its scheduler never starts a (cleared) backfill run."""
    clear = f"airflow tasks clear {dag_id} -s {date} -y"
    if backfill and not AIRFLOW_3:
        return f"{clear}, then airflow dags backfill -s {date} -e <last date> {dag_id}"
    return f"{clear} ({ui})" if ui else clear


def is_backfill_run(context) -> bool:
    """Whether the task's run is a backfill run (Airflow 2 then needs a backfill after the clear)."""
    run_type = getattr(context.get("dag_run"), "run_type", None)
    return getattr(run_type, "value", run_type) == DagRunType.BACKFILL_JOB


def _code(value: object) -> str:
    return "`" + str(value).replace("`", "'") + "`"


def _path(spec: TableSpec, path: str) -> str:
    """A path as the job reads it: a relative one is relative to the spec's folder, not to anything on call knows."""
    return _code(resolve_path(path, spec))


def _source(spec: TableSpec) -> str:
    source = spec.source
    if source.format == SourceFormat.TABLE:
        where = f"Hive table {_code(source.table)}" + (
            f" partition {_code(source.partition)}" if source.partition else ""
        )
    else:
        where = f"{source.format} files at {_path(spec, source.path)}"
    return f"{where} ({source.mode} mode)"


def _base(spec: TableSpec) -> str:
    if spec.base is None:
        return "none (the table starts empty)"
    base = spec.base
    if base.format == SourceFormat.TABLE:
        return f"Hive table {_code(base.table)}"
    return f"{base.format} files at {_path(spec, base.path)}"


def _past_date(spec: TableSpec) -> str:
    """What clearing the merge of a past date does, per `on_past_date`."""
    if spec.on_past_date == OnPastDate.ERROR:
        return (
            "when the date's input (or a later date's) changed since it was committed, its merge fails and names"
            " the `zipper rerun` (this table has `on_past_date: error`): trigger the rerun DAG instead"
        )
    return (
        "when the date's input (or a later date's) changed since it was committed, its merge restores the table"
        " to the day before and replays, as `zipper rerun` does"
    )


def _columns(spec: TableSpec) -> str:
    if spec.columns:
        return ", ".join(f"{_code(name)} {kind}" for name, kind in spec.columns.items())
    return "taken from the base" if spec.base else "taken from the first increment"


def merge_dag_doc(spec: TableSpec, spec_path: Path, rerun_dag_id: str) -> str:
    a = spec.airflow
    dates = f"{spec.start_date} .. {spec.end_date or '(open)'}"
    tracked = "all columns" if spec.track_columns == Tracked.ALL else ", ".join(map(_code, spec.track_columns))
    if spec.track_columns_except:
        tracked = "all columns but " + ", ".join(map(_code, spec.track_columns_except))
    rows = [
        ("table", _code(spec.table)),
        ("keys", ", ".join(map(_code, spec.keys))),
        ("source", _source(spec)),
        ("base", _base(spec)),
        ("columns", _columns(spec)),
        ("history on", tracked),
        (
            "validity",
            f"{_code(spec.begin_column)} / {_code(spec.end_column)}, end style {spec.end_style},"
            f" open end {spec.open_end}",
        ),
        ("dates", dates),
        ("schedule", f"{_code(a.schedule)} (the run of a date starts after the date ends)"),
        (
            "spark",
            f"connection {_code(a.spark_conn_id)} (if absent: the warehouse's Spark Connect server), pool {_code(a.pool)}",
        ),
        ("spec", _code(spec_path)),
    ]
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    description = f"\n{spec.description}\n" if spec.description else ""
    sensor = (
        f"`wait_for_increment` ({a.sensor.mode}, every {a.sensor.poke_interval} s, gives up after"
        f" {a.sensor.timeout} s) → "
        if a.sensor.enabled
        else ""
    )
    return f"""### {spec.table}: daily SCD type 2 (zipper)
{description}
| | |
|---|---|
{table}

**Tasks**: `wait_for_previous_date` (fails at once if the previous date's merge failed) →
{sensor}`merge` (spark-submit `zipper merge {spec.name} --ds <ds>`, one date at a time:
depends on the previous date's merge) → `audit` (the commit's counts in the task log; after a
replay, every replayed date's and where the table ended).
The merge updates the asset {_code(spec.table)} ({_code(asset_uri(spec))}); the event's extra has
`table`, `date`, `action`, `counts`, `run_id` and `dates`. A no-op emits no event.

**Which date a run merges**: its **Logical Date** (the grid's tooltip, the run's header), not its
Run ID or Run After, which are the next day (the end of its interval). {_date_field()}

**A failed date**: fix its input, then clear its run and every later one (they failed at
`wait_for_previous_date`): `airflow tasks clear zipper_{spec.name} -s <date> -y`, or in the UI its
`merge` with Upstream and Future. Airflow 2.11 runs a cleared backfill run only in a backfill: then
also `airflow dags backfill -s <date> -e <last date> zipper_{spec.name}`. A cleared **past** date whose
replay is refused (bad input{", or `on_past_date: error`" if spec.on_past_date == OnPastDate.ERROR else ""}) is
different: the table is unchanged and the later runs keep their success; fix the input, then clear only
that merge (`airflow tasks clear zipper_{spec.name} -t merge -d -s <date> -e <date> -y`) or trigger the
rerun DAG. The failed task's error says which of the two cases it is.

**Rerun** (on call): trigger {_code(rerun_dag_id)} with `from_date` (and optionally `to_date`),
which runs `zipper rerun {spec.name} --from D [--to E]` at once; or clear the `merge` task of a past
date in this DAG (with or without its future runs): {_past_date(spec)}; otherwise it is a
no-op. This DAG runs one date at a time, so a cleared past date waits while a later run holds the
place (waiting for its increment, say): use the rerun DAG then. If that later run is the next date's,
its `wait_for_increment` stops it so that the cleared date runs, and names the clear that resumes it.
Do not `airflow dags test` a date this DAG has scheduled: it replaces that date's run.

**Backfill**: Airflow 3: `airflow backfill create --dag-id zipper_{spec.name} --from-date A --to-date B
--reprocess-behavior failed`, or in the UI's backfill dialog pick **Missing and Errored Runs** ("Missing
Runs" is refused: the merge depends on past runs); Airflow 2.11: `airflow dags backfill -s A -e B
zipper_{spec.name}`. Unpausing this DAG runs every date without a run, one at a time, from
{spec.start_date} {_catch_up_end(spec)} (catch-up): a backfill is needed only for dates that have a run.
"""


def _catch_up_end(spec: TableSpec) -> str:
    if spec.end_date:
        return f"through its `end_date`, {spec.end_date}"
    return "up to the last date that has ended"


def _date_field() -> str:
    """Where the UI shows the merged date beside a task (a task cannot set its run's note)."""
    if AIRFLOW_3:
        return (
            "Each task instance shows it in the **Map Index** column of the Task Instances lists (the DAG's,"
            " a run's, Browse): `2024-01-05`, and once the merge task has ended its outcome, e.g."
            " `2024-01-05: merged`, `2024-01-05: no-op ...`, `2024-01-05: replayed 2024-01-05..2024-01-07`."
        )
    return "On Airflow 2.11 a scheduled run's id names it too (`scheduled__<the merged date>`)."


def rerun_dag_doc(spec: TableSpec, merge_dag_id: str) -> str:
    return f"""### Rerun {spec.table}

Replays dates of {_code(spec.table)} after their input changed: restores the table to the day
before `from_date` and merges every date from there up to `to_date` (default: the last committed
date), serially, as `zipper rerun {spec.name} --from D [--to E]`. A `to_date` before the last
committed date is refused unless `uncommit_later` is set: the dates after it are then no longer
committed, and their runs of the daily DAG must be cleared to merge them again.

Trigger it from the UI's form: dates as YYYY-MM-DD (e.g. `2024-01-05`), typed as for the CLI. The
form's **Logical Date** is only this run's own time stamp; leave it as it is: the dates replayed are
`from_date` and `to_date`. From the command line:
`airflow dags trigger {merge_dag_id}_rerun --conf '{{"from_date": "2024-01-05"}}'`.
A missing or malformed date, or a param name it does not know, fails the task before Spark starts,
in one line naming the table.

It runs in the same pool as {_code(merge_dag_id)} ({_code(spec.airflow.pool)}). It never writes the
table at the same time as a merge: the second of the two to start is refused by the table's lock and
replans on its retry. Its asset event (the asset {_code(spec.table)}) lists the replayed dates.

A rerun over versions that `zipper correct` fixed or deleted (the {_code(merge_dag_id + "_correct")} DAG) is
refused, naming the correction: set `undo_corrections` to replay the inputs as they are over them; the
correction is then marked undone. An erasure is never undone.
"""


def correct_dag_doc(spec: TableSpec, merge_dag_id: str) -> str:
    """What each form of the correction does, and that a trigger left as the form opens writes nothing."""
    name = spec.name
    keys = "; ".join(f"{key}=..." for key in spec.keys)
    return f"""### Correct {spec.table}

Row-level corrections of {_code(spec.table)}, published in one metastore transaction with a record
(the `reason`, who, the counts) in the table's commit log: `zipper correct {name} ...`. Pick the
`kind`, fill in its fields, and a `reason` (required):

- **erase**: removes every version of the keys, from every partition; later reruns and rebuilds leave
  them out too. `erase_keys`: one `column=value` per key column, separated by `;` (`id=7`, or
  `region=eu; id=7`); or `keys_file`: the absolute path, on the worker, of a CSV file whose header
  names the key columns. `purge` then removes at once the superseded directories that still hold
  the erased rows (else the next `zipper vacuum {name}` does).
- **set**: `set_values` (`city=Oslo; tier=gold`; `NULL` for none) in the versions `where` matches
  (`user_id = 7 AND city = 'Olso'`); `from_date` and `to_date` (YYYY-MM-DD, optional) keep only the
  versions valid on some day of that range.
- **delete**: removes the versions `where` matches (and `from_date`, `to_date` as for set).

**Dry run by default**: `dry_run` is on when the form opens. A dry run writes nothing: the task log
shows the versions matched per partition and up to 20 of them (with their new values for a fix).
Read it, then trigger again with `dry_run` off to apply the correction.

A bad or missing field (no `kind` or `reason`, `set` without `where`, `erase` without keys, a date
that is not YYYY-MM-DD) fails the task before Spark starts, in one line naming the table. From the
command line: `airflow dags trigger {merge_dag_id}_correct --conf '{{"kind": "erase", "erase_keys":
"{keys}", "reason": "erasure request 118"}}'` (a dry run; add `"dry_run": false` to apply it).

It runs in the pool of {_code(merge_dag_id)} ({_code(spec.airflow.pool)}): it takes a slot as a merge
does. It never writes the table at the same time as a merge or a rerun: the table's lock refuses the
second of them to start, and this DAG does not retry (trigger it again). A rerun over the versions
that a fix or delete changed is then refused unless its `undo_corrections` is set.
Read docs/corrections.md (`zipper correct`) before a first correction.
"""


def asset_uri(spec: TableSpec) -> str:
    return f"hive://{spec.database}/{spec.table_name}"
