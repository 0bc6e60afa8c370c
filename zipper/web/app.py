"""The "Zipper" view: pages and a JSON API, a FastAPI app Airflow's API server mounts at /zipper.

Every route sits behind Airflow's own authentication (its `get_user` dependency: the UI's session
cookie or a bearer token), so the view shows nothing to someone Airflow would not let in. The
pages are small shells whose script reads the JSON API, the same one a user may script against
(docs/ui.md)."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import time
from pathlib import Path
from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape

from zipper.airflow import environment
from zipper.airflow.dag_builder import merge_dag_id, rerun_dag_id
from zipper.core.errors import InputError, StateError
from zipper.table import lookup
from zipper.tablespec.model import TableSpec
from zipper.web import airflow_runs, model, reading

HERE = Path(__file__).parent
PAGES = Environment(loader=PackageLoader("zipper.web", "templates"), autoescape=select_autoescape())
KEY_PARAM = re.compile(r"^([^=]+)=(.*)$", re.DOTALL)
states = reading.StateReader()  # kept between requests: unchanged tables are not listed again
recent = reading.RecentStates(states)  # the tables page: answered from the last read, refreshed behind


def today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def _specs() -> tuple[dict[str, TableSpec], list[dict]]:
    entries = reading.load_specs()
    specs = {e.spec.name: e.spec for e in entries if e.spec is not None}
    errors = [{"file": str(e.path), "error": e.error} for e in entries if e.spec is None]
    return specs, errors


def _spec(name: str) -> TableSpec:
    specs, _ = _specs()
    if name not in specs:
        raise HTTPException(404, f"no table spec named {name!r} in {reading.specs_dir()}")
    return specs[name]


def _uri() -> str:
    try:
        return reading.metastore_uri(environment.warehouse())
    except (reading.ViewUnavailable, StateError) as exc:
        raise HTTPException(503, str(exc)) from None


def _state(spec: TableSpec):
    try:
        return states.state(_uri(), spec)
    except StateError as exc:
        raise HTTPException(503, str(exc)) from None


def warm_up() -> None:
    """Read every table behind the API server's start, so that the first view of the tables page
    answers from memory (a request arriving first waits for this read). Only from a metastore
    that is already up: a server is never started for it. A failure is left to the first
    request, which reads again and says what failed."""
    with contextlib.suppress(Exception):
        uri = reading.metastore_uri(environment.warehouse(), start=False)
        if uri is not None:
            recent.prime(uri, list(_specs()[0].values()))


api = APIRouter(prefix="/api", dependencies=[Depends(get_user)])


@api.get("/tables")
def tables() -> dict:
    """Every spec's table: last committed date, lag, rows, interrupted replay, last commit, latest run.

    The states are the last read of every table (`read_at`, `read_age_s`); when that is older than
    a few seconds a new read runs behind this answer (`refreshing`), and asking again shortly
    gets it."""
    specs, spec_errors = _specs()
    uri = _uri()
    try:
        reading_ = recent.states(uri, list(specs.values()))
    except StateError as exc:  # the metastore did not answer: the page says so, as for one table
        raise HTTPException(503, str(exc)) from None
    read = reading_.states
    runs = airflow_runs.latest_runs([merge_dag_id(s) for s in specs.values()])
    rows = []
    for name, spec in specs.items():
        found = read[name]
        if isinstance(found, StateError):
            rows.append({"name": name, "table": spec.table, "problem": f"unreadable: {found}", "exists": None})
            continue
        row = model.table_summary(spec, found, today(), runs.get(merge_dag_id(spec)))
        row["dag_id"] = merge_dag_id(spec)
        rows.append(row)
    slots = airflow_runs.pool_slots(environment.DEFAULT_POOL)
    return {
        "tables": rows,
        "pool": {"name": environment.DEFAULT_POOL, "slots": slots, "missing": slots is None},
        "spec_errors": spec_errors,
        "metastore": uri,
        "today": today().isoformat(),
        "read_at": dt.datetime.fromtimestamp(reading_.read_at, dt.UTC).isoformat(timespec="milliseconds"),
        "read_age_s": round(max(0.0, time.time() - reading_.read_at), 1),
        "refreshing": reading_.refreshing,
    }


@api.get("/tables/{name}")
def table(name: str) -> dict:
    """One table: its summary, the chart's points (one per committed date), and its DAGs."""
    spec = _spec(name)
    runs = airflow_runs.latest_runs([merge_dag_id(spec), rerun_dag_id(spec)])
    detail = model.table_detail(spec, _state(spec), today(), runs.get(merge_dag_id(spec)))
    detail.update(
        dag_id=merge_dag_id(spec),
        rerun_dag_id=rerun_dag_id(spec),
        latest_rerun=runs.get(rerun_dag_id(spec)),
        latest_dry_run=airflow_runs.latest_dry_run(rerun_dag_id(spec)),
    )
    return detail


@api.get("/tables/{name}/commits")
def commits(name: str, limit: Annotated[int, Query(ge=0, le=10_000)] = 50) -> dict:
    """The commit log, newest first: date, action, run id, committed at, counts, input fingerprint."""
    spec = _spec(name)
    st = _state(spec)
    return {"name": spec.name, "table": spec.table, "commits": model.commit_log(st, limit) if st.exists else []}


@api.get("/tables/{name}/history")
def history(name: str, key: Annotated[list[str], Query()] = ()) -> dict:
    """Every version of one key (`key=col=value`, once per key column), read from the table's files."""
    spec = _spec(name)
    given = {}
    for item in key:
        found = KEY_PARAM.match(item)
        if not found:
            raise HTTPException(400, f"key {item!r}: expected col=value")
        given[found.group(1).strip()] = found.group(2)
    st = _state(spec)
    if not (st.exists and st.initialized):
        raise HTTPException(404, f"{spec.table} has no committed state yet")
    try:
        versions = lookup.key_versions(spec, st, given)
    except lookup.LookupRefused as exc:
        raise HTTPException(413, str(exc)) from None
    except InputError as exc:
        raise HTTPException(400, str(exc)) from None
    return {
        "name": spec.name,
        "table": spec.table,
        "key": given,
        "begin_column": spec.begin_column,
        "end_column": spec.end_column,
        "open_end": spec.open_end.isoformat(),
        "last_committed": st.last_committed.isoformat(),
        "versions": versions,
    }


pages = APIRouter(dependencies=[Depends(get_user)], default_response_class=HTMLResponse)


def _page(request: Request, template: str, **values) -> HTMLResponse:
    root = request.scope.get("root_path", "")  # where Airflow mounted this app ("/zipper")
    airflow_root = root[: -len("/zipper")] if root.endswith("/zipper") else ""
    html = PAGES.get_template(template).render(root=root, airflow_root=airflow_root, **values)
    return HTMLResponse(html)


@pages.get("/tables")
def tables_page(request: Request) -> HTMLResponse:
    return _page(request, "tables.html")


@pages.get("/tables/{name}")
def table_page(request: Request, name: str) -> HTMLResponse:
    return _page(request, "table.html", name=_spec(name).name)


@pages.get("/dags/{dag_id}")
def dag_tab(request: Request, dag_id: str) -> HTMLResponse:
    """The tab on every DAG: the table's page for a zipper DAG (merge or rerun), a note otherwise."""
    specs, _ = _specs()
    for spec in specs.values():
        if dag_id in (merge_dag_id(spec), rerun_dag_id(spec)):
            return _page(request, "table.html", name=spec.name)
    return _page(request, "not_zipper.html", dag_id=dag_id)


app = FastAPI(title="zipper", description="Zipper tables: committed state, commit log and key history")
app.include_router(api)
app.include_router(pages)
app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
