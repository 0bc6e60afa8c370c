"""The "Zipper" view in Airflow 3's UI, end to end: a real warehouse made by zipper's CLI, a real
Airflow API server that loads the plugin through the package's entry point, its own
authentication, and the pages in Debian's Chromium driven by Playwright.

One set-up for the module (a table merged over four dates, a spec never merged, one queued DAG
run): every test reads it, and the one that removes the pool puts it back."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.helpers import day, make_spec, write_parquet, zipper, zipper_in_one_jvm
from tests.web.browser import ARGS, airflow_token, require_chromium
from zipper.core.reports import REPORT_PREFIX
from zipper.devtools.airflow_home import airflow, airflow_env, setup
from zipper.devtools.local_airflow import free_port
from zipper.runtime.metastore import MetastoreService

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.subprocess]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "build" / "test-artifacts" / "web"  # screenshots, kept after the run (docs/ui.md shows them)
READY_S = 600  # bounds the API server's start (a minute on a loaded machine)

BASE = [(1, "ann", "paris"), (2, "bob", "rome"), (3, "cy", "oslo")]
DAYS = {
    1: [(1, "ann", "lyon"), (4, "dee", "kyiv")],  # 1 changed, 4 new
    2: [(2, "bob", "rome"), (5, "eve", "bern")],  # 2 re-sent unchanged, 5 new
    3: [(1, "ann", "nice")],  # 1 changed again
    4: [(3, "cy", "oslo"), (6, "fay", "riga")],  # 3 re-sent unchanged, 6 new
}


@dataclass(frozen=True)
class View:
    url: str
    token: str
    home: Path
    env: dict
    log: Path  # the API server's output

    def get(self, path: str, token: str | None = "default", method: str = "GET", body=None) -> tuple[int, dict | str]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {self.token if token == 'default' else token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, body = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode()
        with contextlib.suppress(json.JSONDecodeError):
            return status, json.loads(body)
        return status, body


def _wait_until_serving(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while True:
        assert server.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            with urllib.request.urlopen(url + "/api/v2/monitor/health", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, "the Airflow API server never answered"
            time.sleep(1)


DRY_RUN_ID = "manual__dry_run"
RECORD_XCOM = """
import json, sys
from airflow.models.xcom import XComModel
from zipper.airflow.operators import DRY_RUN_XCOM
from zipper.airflow.run_reports import dry_run_record
XComModel.set(key=DRY_RUN_XCOM, value=dry_run_record([json.loads(sys.argv[2])]), dag_id="zipper_dim_rerun",
              task_id="rerun", run_id=sys.argv[1])
"""


def _record_a_dry_run(root: Path, home: Path, env: dict) -> None:
    """A rerun's dry run made by the CLI (undoing the correction of key 6), recorded as the rerun DAG's task
    records it: a run of the DAG (queued: no scheduler here) and its task's XCom of the job's report."""
    done = zipper(root, "rerun", "dim", "--from", day(4), "--undo-corrections", "--dry-run", "--json-report")
    assert done.returncode == 0, done.stderr
    report = next(line for line in done.stdout.splitlines() if line.startswith(REPORT_PREFIX))[len(REPORT_PREFIX) :]
    conf = json.dumps({"from_date": day(4), "dry_run": True})
    airflow(home, "dags", "trigger", "zipper_dim_rerun", "--run-id", DRY_RUN_ID, "--conf", conf, env=env)
    python = Path(env["PATH"].split(os.pathsep)[0]) / "python"
    subprocess.run([str(python), "-c", RECORD_XCOM, DRY_RUN_ID, report], env=env, check=True, timeout=300)


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("view")
    make_spec(root, "dim", end_date=day(len(DAYS)))  # committed through its end date: up to date
    make_spec(root, "orders", table="dw.orders")  # never merged: the tables page flags it
    # a table that skips a date without input: day 2 has none, and is committed as skipped
    holiday_source = {"mode": "upsert", "path": str(root / "data" / "hol" / "ds={{ ds }}"), "on_missing_input": "skip"}
    make_spec(root, "holidays", source=holiday_source, end_date=day(2))
    write_parquet(root / "data" / "hol" / f"ds={day(1)}", DAYS[1])
    write_parquet(root / "data" / "base", BASE)
    for k, rows in DAYS.items():
        write_parquet(root / "data" / "incr" / f"ds={day(k)}", rows)
    # the table's merges (a JVM) and Airflow's set-up and start are independent: side by side
    merging = ThreadPoolExecutor(1)
    commands = [["merge", "dim", "--ds", day(k)] for k in DAYS]
    commands += [["merge", "holidays", "--ds", day(k)] for k in (1, 2)]
    commands.append(["correct", "dim", "--set", "city=RIGA", "--where", "id = 6", "--reason", "upper case"])
    merged = merging.submit(zipper_in_one_jvm, root, *commands, timeout=900)

    home, port = root / "airflow", free_port()
    env = airflow_env(home, ZIPPER_WAREHOUSE=root / "warehouse", ZIPPER_SPECS=root / "specs")
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW__")}
    setup(home, api_port=port, env=env)
    airflow(home, "dags", "reserialize", env=env)
    airflow(home, "dags", "trigger", "zipper_dim", "--run-id", "manual__view", env=env)  # queued: no scheduler here
    # The API server reads every table as it starts when the warehouse's metastore is up (the
    # merges' driver starts it first thing): so that its start has something to read
    service = MetastoreService(root / "warehouse")
    while service.running() is None:
        assert not merged.done() or merged.exception() is None, merged.exception()
        time.sleep(0.5)
    log = root / "api-server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(Path(env["PATH"].split(os.pathsep)[0]) / "airflow"), "api-server", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_serving(url, server, log)
        assert merged.result() == [0] * len(commands)
        _record_a_dry_run(root, home, env)
        merges_done = time.time()
        served = View(url, airflow_token(url, home), home, env, log)
        # The tables page answers from its last read: until that read is one made after the merges
        deadline = time.monotonic() + READY_S
        while dt.datetime.fromisoformat(served.get("/zipper/api/tables")[1]["read_at"]).timestamp() < merges_done:
            assert time.monotonic() < deadline, "the tables page never read the tables after the merges"
            time.sleep(1)
        yield served
    finally:
        merging.shutdown(wait=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


# ---------- the JSON API ----------


def test_the_plugin_is_installed_through_the_package_entry_point(view):
    status, plugins = view.get("/api/v2/plugins")
    assert status == 200
    [zipper] = [p for p in plugins["plugins"] if p["name"] == "zipper"]
    assert zipper["source"].startswith("zipper==") or "zipper" in zipper["source"]  # an entry point, not plugins/
    views = {v["url_route"]: v for v in zipper["external_views"]}
    assert views["zipper-tables"]["destination"] == "nav" and views["zipper-tables"]["href"] == "/zipper/tables"
    assert views["zipper-dag"]["destination"] == "dag" and views["zipper-dag"]["href"] == "/zipper/dags/{DAG_ID}"


@pytest.mark.parametrize(
    "path", ["/zipper/api/tables", "/zipper/api/tables/dim/history?key=id=1", "/zipper/tables", "/zipper/tables/dim"]
)
def test_a_request_without_airflow_authentication_is_refused(view, path):
    assert view.get(path, token=None)[0] == 401
    assert view.get(path, token="not-a-token")[0] in (401, 403)
    assert view.get(path)[0] == 200


def test_the_tables_api_lists_every_spec_with_its_state_and_latest_run(view):
    status, body = view.get("/zipper/api/tables")
    assert status == 200
    tables = {t["name"]: t for t in body["tables"]}
    assert list(tables) == ["dim", "holidays", "orders"]
    dim = tables["dim"]
    assert dim["table"] == "dw.dim" and dim["last_committed"] == day(4)
    assert dim["open_rows"] == 6  # ids 1..6, one open version each
    assert dim["closed_rows"] == 2  # id 1 closed on day 1 and on day 3
    assert dim["last_commit"]["ds"] == day(4)
    assert dim["last_commit"]["counts"]["new"] == 1 and dim["last_commit"]["counts"]["unchanged"] == 1
    assert dim["latest_run"]["run_id"] == "manual__view" and dim["latest_run"]["state"] == "queued"
    assert dim["replay_interrupted"] is None and dim["lag_days"] == 0 and dim["problem"] is None
    assert tables["orders"]["exists"] is False and tables["orders"]["problem"] == "no table yet"
    assert body["pool"] == {"name": "zipper_merges", "slots": body["pool"]["slots"], "missing": False}
    # the read it answers from: when, and whether a newer one runs behind this answer
    assert dt.datetime.fromisoformat(body["read_at"]).utcoffset() == dt.timedelta(0)
    assert body["read_age_s"] >= 0 and body["refreshing"] in (True, False)


def test_the_api_server_read_the_tables_as_it_started(view):
    """The start's read (app.warm_up): the first view answers from memory, not after a read."""
    said = [line for line in view.log.read_text(errors="replace").splitlines() if "zipper view: read" in line]
    assert said and "read 3 tables from thrift://" in said[0], said


def test_a_tables_page_has_one_chart_point_and_one_commit_per_committed_date(view):
    status, detail = view.get("/zipper/api/tables/dim")
    assert status == 200
    assert [p["ds"] for p in detail["series"]] == [day(k) for k in DAYS]
    assert [(p["new"], p["changed"], p["unchanged"], p["closed"]) for p in detail["series"]] == [
        (1, 1, 0, 1),
        (1, 0, 1, 0),
        (0, 1, 0, 1),
        (1, 0, 1, 0),
    ]
    assert [p["open_after"] for p in detail["series"]] == [4, 5, 5, 6]
    assert detail["dag_id"] == "zipper_dim" and detail["rerun_dag_id"] == "zipper_dim_rerun"
    status, log = view.get("/zipper/api/tables/dim/commits?limit=3")
    assert status == 200
    # the correction after the merge of the date the table was at
    assert [(c["ds"], c["action"]) for c in log["commits"]] == [
        (day(4), "correct"),
        (day(4), "merge"),
        (day(3), "merge"),
    ]
    correction, newest = log["commits"][:2]
    assert "set city=RIGA where" in correction["what"] and correction["counts"]["changed"] == 1
    assert newest["action"] == "merge" and newest["run_id"] and newest["committed_at"] and newest["fingerprint"]
    assert view.get("/zipper/api/tables/nosuch")[0] == 404


def test_the_history_api_returns_every_version_of_a_key_from_the_files(view):
    status, found = view.get("/zipper/api/tables/dim/history?key=id=1")
    assert status == 200
    versions = [(v["name"], v["city"], v["begin_dt"], v["end_dt"]) for v in found["versions"]]
    assert versions == [
        ("ann", "paris", found["versions"][0]["begin_dt"], day(1)),
        ("ann", "lyon", day(1), day(3)),
        ("ann", "nice", day(3), "9999-12-31"),
    ]
    assert view.get("/zipper/api/tables/dim/history?key=id=99")[1]["versions"] == []
    status, refused = view.get("/zipper/api/tables/dim/history?key=id=abc")
    assert status == 400 and "id='abc'" in refused["detail"]
    status, refused = view.get("/zipper/api/tables/dim/history?key=city=oslo")
    assert status == 400 and "every key column" in refused["detail"]


def test_a_missing_pool_is_flagged(view):
    # through Airflow's REST API, as an operator's script would (and without an `airflow` process each)
    assert view.get("/api/v2/pools/zipper_merges", method="DELETE")[0] == 204
    try:
        status, body = view.get("/zipper/api/tables")
        assert status == 200 and body["pool"]["missing"] is True and body["pool"]["slots"] is None
    finally:
        pool = {"name": "zipper_merges", "slots": 2, "description": "zipper merges", "include_deferred": False}
        assert view.get("/api/v2/pools", method="POST", body=pool)[0] == 201
    assert view.get("/zipper/api/tables")[1]["pool"]["missing"] is False


# ---------- the pages, in a real browser ----------


@pytest.fixture(scope="module")
def page(view):
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        # signed in as Airflow's UI signs in: its JWT in the `_token` cookie
        context.add_cookies([{"name": "_token", "value": view.token, "url": view.url}])
        tab = context.new_page()
        tab.set_default_timeout(120_000)
        yield tab
        browser.close()


def test_the_tables_page_lists_the_tables_and_a_problem_stands_out(view, page):
    page.goto(view.url + "/zipper/tables")
    page.wait_for_selector("#tables tbody tr[data-table='dim']")
    rows = page.locator("#tables tbody tr")
    assert [rows.nth(i).get_attribute("data-table") for i in range(rows.count())] == ["dim", "holidays", "orders"]
    dim = page.locator("tr[data-table='dim'] td")
    assert dim.nth(1).inner_text() == day(4) and dim.nth(3).inner_text() == "6"
    assert dim.nth(6).inner_text() == "queued"
    assert page.locator("tr[data-table='orders']").get_attribute("class") == "problem"
    assert page.locator("tr[data-table='dim']").get_attribute("class") is None
    assert "state read" in page.locator("#summary").inner_text()
    page.screenshot(path=str(ARTIFACTS / "tables.png"), full_page=True)
    # sortable: open rows, descending on the second click
    header = page.locator("th[data-key='open_rows']")
    header.click()
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert rows.nth(0).get_attribute("data-table") == "dim"


def test_the_table_page_charts_one_point_per_committed_date(view, page):
    page.goto(view.url + "/zipper/tables/dim")
    page.wait_for_selector("#commits tbody tr")
    labels = page.evaluate("() => window.zipperCharts.counts.data.labels")
    assert labels == [day(k) for k in DAYS]
    assert page.evaluate("() => window.zipperCharts.open.data.datasets[0].data") == [4, 5, 5, 6]
    assert page.locator("#commits tbody tr").count() == len(DAYS) + 1  # and the correction
    assert "set city=RIGA where" in page.locator("#commits tbody tr.correction").inner_text()
    page.screenshot(path=str(ARTIFACTS / "table.png"), full_page=True)


def test_a_date_skipped_for_want_of_input_says_so_in_the_commit_log(view, page):
    """on_missing_input: skip: the date is committed, without changes, and the view says why."""
    status, log = view.get("/zipper/api/tables/holidays/commits")
    assert status == 200
    assert [(c["ds"], c["skipped"]) for c in log["commits"]] == [(day(2), "no input"), (day(1), None)]
    page.goto(view.url + "/zipper/tables/holidays")
    row = page.locator(f"#commits tbody tr[data-ds='{day(2)}']")
    row.wait_for()
    assert row.get_attribute("class") == "skipped"
    assert row.locator("td").nth(1).inner_text() == "merge (skipped: no input)"
    merged = page.locator(f"#commits tbody tr[data-ds='{day(1)}']")
    assert merged.get_attribute("class") is None and merged.locator("td").nth(1).inner_text() == "merge"


def test_the_key_lookup_draws_every_version_of_the_key(view, page):
    page.goto(view.url + "/zipper/tables/dim")
    page.fill("#lookup input[name='id']", "1")
    page.click("#lookup button[type='submit']")
    page.wait_for_selector("#versions tbody tr")
    cities = page.locator("#versions tbody tr td:nth-child(4)").all_inner_texts()
    assert cities == ["paris", "lyon", "nice"]
    bars = page.evaluate("() => window.zipperCharts.timeline.data.datasets[0].data.length")
    assert bars == 3
    assert "3 versions of id=1" in page.inner_text("#lookup-message")
    page.locator("section", has=page.locator("#lookup")).screenshot(path=str(ARTIFACTS / "key-lookup.png"))


def test_the_view_is_in_airflow_navigation_and_on_the_dag_tab(view, page):
    page.goto(view.url + "/plugin/zipper-tables")
    frame = page.frame_locator("iframe")
    frame.locator("#tables tbody tr[data-table='dim']").wait_for()
    page.screenshot(path=str(ARTIFACTS / "in-airflow.png"))
    page.goto(view.url + "/dags/zipper_dim/plugin/zipper-dag")
    page.frame_locator("iframe").locator("#commits tbody tr").first.wait_for()
    assert page.frame_locator("iframe").locator("#title").inner_text() == "dim (dw.dim)"


def test_rerun_from_a_commit_triggers_the_rerun_dag_with_that_date(view, page):
    page.goto(view.url + "/zipper/tables/dim")
    page.locator(f"#commits tr[data-ds='{day(3)}'] button").click()
    assert page.input_value("#rerun input[name='from_date']") == day(3)  # prefilled, ISO
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#rerun button[type='submit']")
    page.wait_for_selector("#rerun-message a")
    run_id = page.inner_text("#rerun-message a")
    status, run = view.get(f"/api/v2/dags/zipper_dim_rerun/dagRuns/{run_id}")
    assert status == 200 and run["conf"] == {
        "from_date": day(3),
        "to_date": None,
        "uncommit_later": False,
        "dry_run": False,
    }


def test_the_rerun_forms_dry_run_box_triggers_a_dry_run(view, page):
    page.goto(view.url + "/zipper/tables/dim")
    page.wait_for_selector("#commits tbody tr")  # drawn last: nothing moves the form after this
    page.fill("#rerun input[name='from_date']", day(2))
    page.check("#rerun input[name='dry_run']")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#rerun button[type='submit']")
    page.wait_for_selector("#rerun-message a")
    assert asked == [f"Trigger zipper_dim_rerun: dry run of a replay {day(2)} … the last committed date?"]
    status, run = view.get(f"/api/v2/dags/zipper_dim_rerun/dagRuns/{page.inner_text('#rerun-message a')}")
    assert status == 200 and run["conf"]["dry_run"] is True and run["conf"]["from_date"] == day(2)


def test_the_table_page_shows_the_latest_dry_run_with_the_keys_it_would_change(view, page):
    """The dry run the set-up made (`zipper rerun --dry-run`, its report recorded as the rerun task's XCom):
    undoing the correction of key 6 would give it back its lower-case city."""
    status, detail = view.get("/zipper/api/tables/dim")
    assert status == 200 and detail["latest_dry_run"]["run_id"] == DRY_RUN_ID
    page.goto(view.url + "/zipper/tables/dim")
    page.wait_for_selector("#dry-run:not([hidden])")
    assert page.inner_text("#dry-run-summary").startswith(f"dw.dim: dry run: replayed {day(4)} (1 date)")
    assert page.locator(f"#dry-run-dates tr[data-ds='{day(4)}'] td").all_inner_texts()[2] == "passes"
    cities = {
        side: page.locator(f"#dry-run-sample tr[data-key='6'][data-side='{side}'] td").all_inner_texts()
        for side in ("before", "after")
    }
    assert "RIGA" in cities["before"] and "riga" in cities["after"], cities
    page.screenshot(path=str(ARTIFACTS / "dry-run.png"), full_page=True)
