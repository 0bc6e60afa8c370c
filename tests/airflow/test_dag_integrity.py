"""DAG integrity, on whichever Airflow this interpreter has (3.3 in .venv, 2.11 in .venv-airflow2;
the 2.11 run is started from the 3.3 suite, see test_integrity_on_airflow2).

Layers: the DAG file loads with no import errors; a bad spec is an import error of its own file and
the other DAGs still load; parsing imports no pyspark, runs no database query and asks for no
connection; every DAG has docs, owner, tags and an explicit catchup; tasks and order are right."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
import sqlalchemy

from tests.airflow.support import AIRFLOW2_VENV, DATES, write_spec
from tests.cli.helpers import REPO
from zipper.airflow.compat import AIRFLOW_3, AirflowException
from zipper.airflow.environment import DEFAULT_CONN_ID, DEFAULT_POOL
from zipper.airflow.operators import CORRECT_LABEL, DATE_LABEL, LABEL, RERUN_LABEL
from zipper.airflow.trigger_params import correct_args, rerun_args

DAGS_FOLDER = REPO / "dags"


def make_dagbag():
    if AIRFLOW_3:
        from airflow.dag_processing.dagbag import DagBag

        return DagBag(dag_folder=str(DAGS_FOLDER))
    from airflow.models.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS_FOLDER), include_examples=False)


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity")
    folder = root / "specs"
    write_spec(folder, "dim_a", root / "data")
    write_spec(
        folder,
        "dim_b",
        root / "data",
        end_date=None,
        airflow={
            "schedule": "30 2 * * *",
            "sensor": {"enabled": False},
            "spark_conn_id": "my_yarn",
            "owner": "data-eng",
            "tags": ["test"],
        },
    )
    (folder / "bad_key.yaml").write_text(
        (folder / "dim_a.yaml").read_text().replace("name: dim_a", "name: bad\ncolour: red")
    )
    (folder / "same_name.yaml").write_text((folder / "dim_a.yaml").read_text().replace("dw.dim_a", "dw.other"))
    # An impossible unquoted date: PyYAML's own date parsing used to raise and take every DAG down.
    bad_date = (folder / "dim_a.yaml").read_text().replace("dim_a", "bad_date").replace(f"'{DATES[0]}'", "2024-13-01")
    assert "start_date: 2024-13-01" in bad_date
    (folder / "bad_date.yaml").write_text(bad_date)
    return folder


@pytest.fixture(scope="module")
def parsed(specs):
    """One DagBag of the dags folder, counting database queries and connection lookups while parsing."""
    from zipper.airflow.compat import BaseHook

    queries, lookups = [], []

    def count_query(conn, cursor, statement, *args):
        queries.append(statement)

    original = BaseHook.get_connection
    BaseHook.get_connection = classmethod(
        lambda cls, conn_id: lookups.append(conn_id) or original.__func__(cls, conn_id)
    )
    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", count_query)
    mp = pytest.MonkeyPatch()
    mp.setenv("ZIPPER_SPECS", str(specs))
    try:
        bag = make_dagbag()
    finally:
        sqlalchemy.event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", count_query)
        BaseHook.get_connection = original
        mp.undo()
    return {"bag": bag, "queries": queries, "lookups": lookups}


def test_the_shipped_dags_folder_loads_without_import_errors(monkeypatch):
    monkeypatch.delenv("ZIPPER_SPECS", raising=False)  # the default: dags/tables
    bag = make_dagbag()
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["zipper_dim_user", "zipper_dim_user_correct", "zipper_dim_user_rerun"]


def test_good_specs_load_and_bad_ones_are_import_errors_of_their_own_files(parsed, specs):
    bag = parsed["bag"]
    assert sorted(bag.dag_ids) == [
        f"zipper_{name}{kind}" for name in ("dim_a", "dim_b") for kind in ("", "_correct", "_rerun")
    ]
    errors = {k: v for k, v in bag.import_errors.items()}
    assert sorted(errors) == [str(specs / n) for n in ("bad_date.yaml", "bad_key.yaml", "same_name.yaml")], errors
    assert errors[str(specs / "bad_date.yaml")].startswith(f"{specs / 'bad_date.yaml'}: key 'start_date': ")
    assert errors[str(specs / "bad_key.yaml")] == f"{specs / 'bad_key.yaml'}: key 'colour': unknown key"
    assert "key 'name': 'dim_a' is also used by" in errors[str(specs / "same_name.yaml")]


def task_parse(dag_id: str, task_id: str):
    """The context Airflow parses the DAG file in when a task of `dag_id` starts (the task runner
    on Airflow 3, `airflow tasks run` on 2.11)."""
    if AIRFLOW_3:
        from airflow.sdk.definitions._internal.dag_parsing_context import _airflow_parsing_context_manager
    else:
        from airflow.utils.dag_parsing_context import _airflow_parsing_context_manager
    return _airflow_parsing_context_manager(dag_id=dag_id, task_id=task_id)


def skipped_specs(caplog) -> list[str]:
    """The spec files the parse logged `zipper: skipping <spec>: <message>` for."""
    prefix = "zipper: skipping "
    return sorted(
        r.getMessage()[len(prefix) :].split(": ")[0] for r in caplog.records if r.getMessage().startswith(prefix)
    )


def test_a_task_of_a_good_dag_does_not_log_the_other_specs_errors(specs, monkeypatch, caplog):
    """Every task re-parses the DAG file: each run of a healthy table logged `zipper: skipping
    <bad spec>: ...` for another table's spec, a problem the import errors already report."""
    monkeypatch.setenv("ZIPPER_SPECS", str(specs))
    # Airflow's parsing context leaves its variables set when none was before: the Airflow 2.11 run
    # of this module, a subprocess started later by this process, parsed as a task of zipper_bad
    for name in ("_AIRFLOW_PARSING_CONTEXT_DAG_ID", "_AIRFLOW_PARSING_CONTEXT_TASK_ID"):
        monkeypatch.setenv(name, "")  # so that the test's end removes them
        monkeypatch.delenv(name)
    bad = [str(specs / n) for n in ("bad_date.yaml", "bad_key.yaml", "same_name.yaml")]
    with caplog.at_level(logging.WARNING):
        bag = make_dagbag()  # the DAG processor's parse: the import errors, and the processor's log
    assert sorted(bag.import_errors) == bad and skipped_specs(caplog) == bad
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("zipper: skipping ")]
    assert all(line.count(path) == 1 for line, path in zip(sorted(logged), bad)), logged  # the file named once
    caplog.clear()
    with caplog.at_level(logging.WARNING), task_parse("zipper_dim_a", "merge"):
        bag = make_dagbag()
    assert "zipper_dim_a" in bag.dag_ids and skipped_specs(caplog) == [] and bag.import_errors == {}
    # a task whose own DAG did not load (its spec broke since the run was scheduled) is told why
    with caplog.at_level(logging.WARNING), task_parse("zipper_bad", "merge"):
        make_dagbag()
    assert skipped_specs(caplog) == bad


def test_parsing_queries_no_database_and_no_connection(parsed):
    assert parsed["queries"] == []
    assert parsed["lookups"] == []


def test_parsing_imports_no_pyspark(specs):
    code = (
        "import json, os, sys\n"
        "from tests.airflow.test_dag_integrity import make_dagbag\n"
        "bag = make_dagbag()\n"
        "print('RESULT', json.dumps({'dags': len(bag.dag_ids),"
        " 'spark': sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**__import__("os").environ, "ZIPPER_SPECS": str(specs)},
    )
    line = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, result.stderr[-2000:]
    outcome = json.loads(line[0][len("RESULT ") :])
    assert outcome == {"dags": 6, "spark": []}


def test_every_dag_has_docs_owner_tags_and_explicit_catchup(parsed):
    for dag in parsed["bag"].dags.values():
        assert dag.doc_md and len(dag.doc_md) > 200, dag.dag_id
        # the DAG list's one line says which table and what the DAG is for, whatever the spec's description
        table = "dw." + dag.dag_id.removeprefix("zipper_").removesuffix("_rerun").removesuffix("_correct")
        assert dag.description.startswith(f"{table}: ") and len(dag.description) <= 100, dag.description
        assert ("replay" in dag.description) is dag.dag_id.endswith("_rerun"), dag.description
        assert ("corrections" in dag.description) is dag.dag_id.endswith("_correct"), dag.description
        assert dag.owner == "data-eng", dag.dag_id
        assert "zipper" in dag.tags and "test" in dag.tags, dag.dag_id
        assert dag.max_active_runs == 1, dag.dag_id
        assert dag.catchup is (not dag.dag_id.endswith(("_rerun", "_correct"))), dag.dag_id


def test_merge_dag_tasks_order_and_settings(parsed):
    dag = parsed["bag"].dags["zipper_dim_a"]
    assert [t.task_id for t in dag.topological_sort()] == [
        "wait_for_previous_date",
        "wait_for_increment",
        "merge",
        "audit",
    ]
    previous, wait, merge, audit = (
        dag.get_task(t) for t in ("wait_for_previous_date", "wait_for_increment", "merge", "audit")
    )
    assert wait.upstream_task_ids == {"wait_for_previous_date"} and merge.upstream_task_ids == {"wait_for_increment"}
    assert audit.upstream_task_ids == {"merge"}
    assert merge.depends_on_past and not wait.depends_on_past and not previous.depends_on_past
    assert previous.mode == "reschedule" and previous.retries == 0
    assert merge.pool == DEFAULT_POOL and merge._conn_id == DEFAULT_CONN_ID
    assert merge.application.endswith("spark_jobs/zipper_job.py")
    assert merge.application_args == ["merge", "dim_a", "--ds", "{{ ds }}", "--json-report"]
    assert "application_args" in merge.template_fields
    assert [o.uri for o in merge.outlets] == ["hive://dw/dim_a"]
    if AIRFLOW_3:  # the asset is named after the Hive table (2.11's datasets have a URI only)
        assert [o.name for o in merge.outlets] == ["dw.dim_a"]
    # every task instance shows the date its run merges (the UI's Map Index column), the merge its outcome too
    assert {t.map_index_template for t in (previous, wait, merge, audit)} == {DATE_LABEL}
    assert wait.mode == "reschedule" and wait.poke_interval == 5 and wait.timeout == 600
    assert wait.skip_after is None  # on_missing_input: fail (the default) waits until the timeout
    assert dag.start_date.date().isoformat() == DATES[0] and dag.end_date.date().isoformat() == DATES[-1]
    assert "CronDataIntervalTimetable" in type(dag.timetable).__name__
    assert "zipper rerun dim_a" in dag.doc_md and "`id`" in dag.doc_md
    doc = " ".join(dag.doc_md.split())
    assert "pick **Missing and Errored Runs**" in doc
    assert f"Unpausing this DAG runs every date without a run, one at a time, from {DATES[0]} through its" in doc
    assert "its **Logical Date**" in doc and "not its Run ID or Run After" in doc
    assert ("**Map Index** column" in doc) is AIRFLOW_3  # where on Airflow 3 a task shows its run's date
    assert "The merge updates the asset `dw.dim_a` (`hive://dw/dim_a`)" in doc and "A no-op emits no event" in doc


def test_the_date_label_renders_the_merged_date_then_what_the_task_set():
    """Airflow renders map_index_template with the task's context before and after execute (a task sets
    its own context variables meanwhile): the same Jinja, with Airflow's StrictUndefined."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    context = {"ds": DATES[0], "params": {"from_date": DATES[1]}}
    assert env.from_string(DATE_LABEL).render(context) == DATES[0]
    assert env.from_string(RERUN_LABEL).render(context) == f"from {DATES[1]}"
    context[LABEL] = f"{DATES[0]}: merged"
    assert env.from_string(DATE_LABEL).render(context) == f"{DATES[0]}: merged"
    # a run without a logical date (Airflow 3's `airflow dags trigger`): no label, rather than a task failed
    # by its label after it succeeded
    assert env.from_string(DATE_LABEL).render({}) == ""


def test_spec_scheduling_keys_reach_the_dag(parsed):
    dag = parsed["bag"].dags["zipper_dim_b"]
    assert [t.task_id for t in dag.topological_sort()] == [
        "wait_for_previous_date",
        "merge",
        "audit",
    ]  # sensor disabled
    assert dag.get_task("merge")._conn_id == "my_yarn"
    assert dag.end_date is None
    assert (getattr(dag.timetable, "expression", None) or dag.timetable._expression) == "30 2 * * *"


def test_rerun_dag_takes_dates_from_its_trigger_form(parsed):
    dag = parsed["bag"].dags["zipper_dim_a_rerun"]
    assert type(dag.timetable).__name__ == "NullTimetable"  # triggered only
    assert dag.is_paused_upon_creation is False  # a trigger from the form runs without unpausing first
    assert [t.task_id for t in dag.tasks] == ["rerun"]
    rerun = dag.get_task("rerun")
    assert rerun.pool == DEFAULT_POOL and [o.uri for o in rerun.outlets] == ["hive://dw/dim_a"]
    assert rerun.table == "dw.dim_a"  # named by the trigger form's refusals
    assert rerun.map_index_template == RERUN_LABEL
    schema = {k: dag.params.get_param(k).schema for k in dag.params}
    # ISO text typed as for the CLI: no `format: date` (a date picker in the browser's locale, 01/05/2024)
    assert all("format" not in field for field in schema.values()), schema
    # the UI marks a field required when its type does not include null: from_date only, not the toggle
    assert [k for k, field in schema.items() if "null" not in field["type"]] == ["from_date"]
    assert schema["uncommit_later"]["type"] == ["null", "boolean"] and dag.params["uncommit_later"] is False
    assert schema["undo_corrections"]["type"] == ["null", "boolean"] and dag.params["undo_corrections"] is False
    assert dag.params.get_param("undo_corrections").schema["title"] == "Undo corrections"
    assert "Logical Date is only this run's own time stamp" in dag.params.get_param("from_date").description


def trigger_params(dag, conf: dict) -> dict:
    """The params a trigger with `conf` gives the run, validated as Airflow validates them when it creates
    the run (`airflow dags trigger`, the UI, the API), where a refusal is a traceback on the command line."""
    if AIRFLOW_3:
        from airflow.serialization.serialized_objects import DagSerialization

        serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag))
        return serialized.params.deep_merge(conf).validate()
    import copy

    params = copy.deepcopy(dag.params)
    params.update(conf)
    return params.validate()


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"from_date": "2024-13-01"}, "rerun param 'from_date': '2024-13-01' is not a date (YYYY-MM-DD)"),
        ({"from_date": DATES[0], "to_date": "01/05/2024"}, "rerun param 'to_date': '01/05/2024' is not a date"),
        ({}, "rerun param 'from_date' is required (YYYY-MM-DD)"),
        (
            {"from": "2024-13-01"},
            "rerun param 'from' is not a param of this DAG: from_date (YYYY-MM-DD, required), to_date (YYYY-MM-DD),"
            " uncommit_later (true or false), undo_corrections (true or false)",
        ),
    ],
)
def test_a_bad_trigger_conf_is_accepted_by_airflow_and_refused_by_the_task_in_one_line(parsed, conf, message):
    """`airflow dags trigger zipper_x_rerun --conf '{"from": "2024-13-01"}'` printed Airflow's 57-line traceback
    (the params' schema refused it at the trigger); the run now starts and its task fails in one line."""
    dag = parsed["bag"].dags["zipper_dim_a_rerun"]
    params = trigger_params(dag, conf)
    with pytest.raises(AirflowException) as refused:
        rerun_args("dim_a", params, table="dw.dim_a")
    assert str(refused.value).startswith(f"dw.dim_a: {message}") and str(refused.value).endswith(
        "; nothing was changed"
    )
    assert "\n" not in str(refused.value)


def test_a_good_trigger_conf_reaches_the_job_as_iso_dates(parsed):
    dag = parsed["bag"].dags["zipper_dim_a_rerun"]
    params = trigger_params(dag, {"from_date": DATES[0], "to_date": DATES[1], "uncommit_later": True})
    assert rerun_args("dim_a", params, table="dw.dim_a") == [
        "rerun", "dim_a", "--from", DATES[0], "--to", DATES[1], "--uncommit-later", "--json-report"
    ]  # fmt: skip
    assert rerun_args("dim_a", trigger_params(dag, {"from_date": DATES[0]}), table="dw.dim_a")[2:4] == [
        "--from",
        DATES[0],
    ]


@pytest.mark.parametrize(
    "toggle, flag",
    [
        # a rerun over versions a `zipper correct` fix or delete changed is refused without it
        ("undo_corrections", "--undo-corrections"),
        # a replayed day the change-volume guard refuses is published with it
        ("accept_large_change", "--accept-large-change"),
        # the rerun on a copy of the table, nothing published
        ("dry_run", "--dry-run"),
    ],
)
def test_the_rerun_forms_toggles_reach_the_job(parsed, toggle, flag):
    dag = parsed["bag"].dags["zipper_dim_a_rerun"]
    assert dag.params[toggle] is False
    params = trigger_params(dag, {"from_date": DATES[0], toggle: True})
    assert rerun_args("dim_a", params, table="dw.dim_a") == [
        "rerun",
        "dim_a",
        "--from",
        DATES[0],
        flag,
        "--json-report",
    ]
    for left in (False, None):  # off, or the toggle left empty
        params = trigger_params(dag, {"from_date": DATES[0], toggle: left})
        assert flag not in rerun_args("dim_a", params, table="dw.dim_a")


def test_correct_dag_takes_its_correction_from_its_trigger_form(parsed):
    dag = parsed["bag"].dags["zipper_dim_a_correct"]
    assert type(dag.timetable).__name__ == "NullTimetable"  # triggered only
    assert dag.is_paused_upon_creation is False and dag.catchup is False
    assert [t.task_id for t in dag.tasks] == ["correct"]
    correct, merge = dag.get_task("correct"), parsed["bag"].dags["zipper_dim_a"].get_task("merge")
    assert correct.retries == 0  # a correction refused by the lock is triggered again by whoever asked for it
    assert correct.pool == merge.pool == DEFAULT_POOL and correct._conn_id == merge._conn_id
    assert correct.application == merge.application and [o.uri for o in correct.outlets] == ["hive://dw/dim_a"]
    assert correct.table == "dw.dim_a" and correct.map_index_template == CORRECT_LABEL
    assert parsed["bag"].dags["zipper_dim_b_correct"].get_task("correct")._conn_id == "my_yarn"
    assert dag.description == (
        "dw.dim_a: row-level corrections: erase keys, fix values, delete versions (dry run by default)"
    )
    schema = {k: dag.params.get_param(k).schema for k in dag.params}
    assert list(schema) == [
        "kind", "erase_keys", "keys_file", "set_values", "where", "from_date", "to_date", "reason", "dry_run", "purge"
    ]  # fmt: skip
    assert all(field.get("title") and dag.params.get_param(k).description for k, field in schema.items())
    assert all("format" not in field for field in schema.values()), schema  # ISO text, as the rerun form's
    # no kind is chosen for on call: the task refuses a run without one; only the reason is marked required
    assert schema["kind"]["enum"] == [None, "erase", "set", "delete"] and dag.params["kind"] is None
    assert [k for k, field in schema.items() if "null" not in field["type"]] == ["reason"]
    assert dag.params["dry_run"] is True and dag.params["purge"] is False
    doc = " ".join(dag.doc_md.split())
    assert "**Dry run by default**" in doc and "the task log shows the versions matched" in doc
    assert "It runs in the pool of `zipper_dim_a` (`zipper_merges`)" in doc and "docs/corrections.md" in doc
    assert '"erase_keys": "id=...", "reason"' in doc  # the spec's own key columns


def test_the_correct_label_says_what_the_run_is_until_it_ends():
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    label = env.from_string(CORRECT_LABEL)
    assert label.render({"params": {"kind": "erase", "dry_run": True}}) == "dry run: erase"
    assert label.render({"params": {"kind": "delete", "dry_run": None}}) == "dry run: delete"  # only false writes
    assert label.render({"params": {"kind": "set", "dry_run": False}}) == "set"
    assert label.render({"params": {"kind": None, "dry_run": True}}) == "dry run: ?"
    assert label.render({"params": {"kind": "set", "dry_run": False}, LABEL: "set: done"}) == "set: done"


REASON = {"reason": "ticket 118: 'wrong' city"}


@pytest.mark.parametrize(
    "conf, argv",
    [
        (
            {"kind": "erase", "erase_keys": "id=7"},
            ["--erase-key", "id=7", "--reason", REASON["reason"], "--dry-run"],
        ),
        (  # a composite key: one --erase-key per column; spaces around ';' and '=' and empty parts dropped
            {"kind": "erase", "erase_keys": " region = eu ;; id=7; ", "purge": True, "dry_run": False},
            ["--erase-key", "region=eu", "--erase-key", "id=7", "--reason", REASON["reason"], "--purge"],
        ),
        (
            {"kind": "erase", "keys_file": "/data/erase requests.csv", "dry_run": False},
            ["--keys-file", "/data/erase requests.csv", "--reason", REASON["reason"]],
        ),
        (
            {
                "kind": "set",
                "set_values": 'city=New York; note=it\'s "fine"',
                "where": "user_id = 7 AND city = 'Olso'",
                "from_date": "2024-01-02",
                "to_date": "2024-01-03",
            },
            [
                "--set",
                "city=New York",
                "--set",
                'note=it\'s "fine"',
                "--where",
                "user_id = 7 AND city = 'Olso'",
                "--from",
                "2024-01-02",
                "--to",
                "2024-01-03",
                "--reason",
                REASON["reason"],
                "--dry-run",
            ],
        ),
        (
            {"kind": "delete", "where": "note = 'a;b' OR note IS NULL", "dry_run": False, "purge": None},
            ["--delete", "--where", "note = 'a;b' OR note IS NULL", "--reason", REASON["reason"]],
        ),
    ],
)
def test_the_correct_form_becomes_the_cli_arguments_one_value_each(parsed, conf, argv):
    """Every value is one argv element: no shell reads it, so spaces and quotes reach the CLI as typed."""
    params = trigger_params(parsed["bag"].dags["zipper_dim_a_correct"], {**REASON, **conf})
    assert correct_args("dim_a", params, table="dw.dim_a") == ["correct", "dim_a", *argv, "--json-report"]


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"reason": "x"}, "correct param 'kind' is required: erase, set or delete"),
        ({"kind": "erase", "erase_keys": "id=7"}, "correct param 'reason' is required: say why, for the commit log"),
        ({"kind": "erase", "erase_keys": "id=7", "reason": "  "}, "correct param 'reason' is required"),
        ({"kind": "erase", "reason": "x"}, "correct param 'erase_keys' (column=value; ...) or 'keys_file' is required"),
        (
            {"kind": "erase", "erase_keys": "id=7", "keys_file": "/k.csv", "reason": "x"},
            "correct param 'erase_keys' and 'keys_file' are both given: give one",
        ),
        ({"kind": "erase", "erase_keys": "7", "reason": "x"}, "correct param 'erase_keys': '7' is not column=value"),
        (
            {"kind": "erase", "keys_file": "keys.csv", "reason": "x"},
            "correct param 'keys_file': 'keys.csv' is not an absolute path on the worker",
        ),
        (
            {"kind": "erase", "erase_keys": "id=7", "where": "id = 7", "reason": "x"},
            "correct param 'where' does not apply to kind erase",
        ),
        ({"kind": "set", "set_values": "city=Oslo", "reason": "x"}, "correct param 'where' is required for kind set"),
        ({"kind": "set", "where": "id = 7", "reason": "x"}, "correct param 'set_values' (column=value; ...) is"),
        ({"kind": "delete", "reason": "x"}, "correct param 'where' is required for kind delete"),
        (
            {"kind": "delete", "where": "id = 7", "set_values": "a=1", "reason": "x"},
            "correct param 'set_values' is for kind set, not delete",
        ),
        (
            {"kind": "delete", "where": "id = 7", "purge": True, "reason": "x"},
            "correct param 'purge' follows an erasure, not kind delete",
        ),
        (
            {"kind": "delete", "where": "id = 7", "from_date": "01/05/2024", "reason": "x"},
            "correct param 'from_date': '01/05/2024' is not a date (YYYY-MM-DD)",
        ),
        (
            {"kind": "delete", "where": "id = 7", "from_date": "2024-01-03", "to_date": "2024-01-02", "reason": "x"},
            "correct param 'to_date': 2024-01-02 is before from_date 2024-01-03",
        ),
        ({"kind": "delete", "wher": "id = 7", "reason": "x"}, "correct param 'wher' is not a param of this DAG: kind,"),
    ],
)
def test_a_bad_correct_conf_is_accepted_by_airflow_and_refused_by_the_task_in_one_line(parsed, conf, message):
    params = trigger_params(parsed["bag"].dags["zipper_dim_a_correct"], conf)
    with pytest.raises(AirflowException) as refused:
        correct_args("dim_a", params, table="dw.dim_a")
    said = str(refused.value)
    assert said.startswith(f"dw.dim_a: {message}") and said.endswith("; nothing was changed"), said
    assert "\n" not in said


def test_an_unknown_kind_is_refused_by_the_form_and_by_the_task(parsed):
    """`kind` is a choice in the form: Airflow refuses another value at the trigger (as it refuses a toggle
    that is not true or false); the task refuses it too, were it to get one."""
    with pytest.raises(Exception, match="wipe"):
        trigger_params(parsed["bag"].dags["zipper_dim_a_correct"], {"kind": "wipe", "reason": "x"})
    with pytest.raises(AirflowException, match=r"^dw.dim_a: correct param 'kind': 'wipe' is not erase, set or"):
        correct_args("dim_a", {"kind": "wipe", "reason": "x"}, table="dw.dim_a")


@pytest.mark.skipif(not AIRFLOW_3, reason="started from the Airflow 3 suite only")
@pytest.mark.airflow
def test_integrity_on_airflow2():
    """The same DAG files on Airflow 2.11: this module and the operator tests in .venv-airflow2."""
    python = AIRFLOW2_VENV / "bin" / "python"
    assert python.exists(), "run scripts/bootstrap_airflow2.sh (make test does)"
    result = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/airflow/test_dag_integrity.py",
            "tests/airflow/test_operators.py",
            "tests/airflow/test_increments.py",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert "passed" in summary and "failed" not in summary and "error" not in summary, summary


def test_a_spec_named_like_another_tables_rerun_dag_is_refused_and_that_rerun_dag_kept(tmp_path, monkeypatch):
    """`name: dim_a_rerun` builds `zipper_dim_a_rerun`, the rerun DAG of `dim_a`: the later one silently
    replaced it, so the rerun form on call opened was the daily merge of another table."""
    folder = tmp_path / "specs"
    write_spec(folder, "dim_a", tmp_path / "data")
    clash = write_spec(folder, "dim_a_rerun", tmp_path / "data")
    monkeypatch.setenv("ZIPPER_SPECS", str(folder))
    bag = make_dagbag()
    assert sorted(bag.dag_ids) == ["zipper_dim_a", "zipper_dim_a_correct", "zipper_dim_a_rerun"]
    assert [t.task_id for t in bag.dags["zipper_dim_a_rerun"].tasks] == ["rerun"]
    assert bag.import_errors == {
        str(clash): (
            f"{clash}: key 'name': 'dim_a_rerun' would make the DAG zipper_dim_a_rerun, which is the rerun DAG of"
            f" 'dim_a' ({folder / 'dim_a.yaml'}); choose a name not ending in '_rerun'"
        )
    }


def test_a_spec_named_like_another_tables_correct_dag_is_refused_and_that_correct_dag_kept(tmp_path, monkeypatch):
    """`name: dim_a_correct` would build `zipper_dim_a_correct`, the correction DAG of `dim_a`: the correct
    form on call opened would be the daily merge of another table."""
    folder = tmp_path / "specs"
    write_spec(folder, "dim_a", tmp_path / "data")
    clash = write_spec(folder, "dim_a_correct", tmp_path / "data")
    monkeypatch.setenv("ZIPPER_SPECS", str(folder))
    bag = make_dagbag()
    assert sorted(bag.dag_ids) == ["zipper_dim_a", "zipper_dim_a_correct", "zipper_dim_a_rerun"]
    assert [t.task_id for t in bag.dags["zipper_dim_a_correct"].tasks] == ["correct"]
    assert bag.import_errors == {
        str(clash): (
            f"{clash}: key 'name': 'dim_a_correct' would make the DAG zipper_dim_a_correct, which is the correct DAG"
            f" of 'dim_a' ({folder / 'dim_a.yaml'}); choose a name not ending in '_correct'"
        )
    }


def test_the_docs_show_paths_as_the_job_reads_them_and_what_a_cleared_past_date_does(tmp_path):
    """A relative source path was shown as written (`../in/ds={{ ds }}`), relative to the spec's folder, which
    the UI does not say; and the docs said a cleared past date replays even where `on_past_date: error` makes
    that merge fail."""
    from zipper.airflow.docs import merge_dag_doc
    from zipper.tablespec.loader import load_spec_file

    path = write_spec(
        tmp_path / "specs",
        "dim_rel",
        tmp_path / "data",
        on_past_date="error",
        source={"format": "parquet", "path": "../in/ds={{ ds }}"},
        base={"format": "parquet", "path": "../base"},
    )
    doc = " ".join(merge_dag_doc(load_spec_file(path), path, "zipper_dim_rel_rerun").split())
    assert f"| source | parquet files at `{tmp_path / 'in' / 'ds={{ ds }}'}` (upsert mode) |" in doc
    assert f"| base | parquet files at `{tmp_path / 'base'}` |" in doc
    assert (
        "when the date's input (or a later date's) changed since it was committed, its merge fails and names the"
        " `zipper rerun` (this table has `on_past_date: error`): trigger the rerun DAG instead"
    ) in doc
    assert "restores the table" not in doc
    replaying = write_spec(tmp_path / "specs", "dim_abs", tmp_path / "data")
    assert "its merge restores the table to the day before and replays" in " ".join(
        merge_dag_doc(load_spec_file(replaying), replaying, "zipper_dim_abs_rerun").split()
    )
