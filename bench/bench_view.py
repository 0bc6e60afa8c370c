"""Benchmark: the Airflow view ("Zipper tables") over 50 tables, through a real Airflow API server and in-process.

Why: the view's target is "pages load within a second for 50 tables", and never a Spark start per
page view. The state comes over thrift from the warehouse's metastore server (zipper/web/reading.py),
and a table whose signature (table and open-partition parameters) is unchanged since the last view
is not listed again. This measures, in one run:

  the JSON API    through `airflow api-server` (Airflow 3, the plugin loaded through its entry point),
                  with a bearer token from POST /auth/token:
                    GET /zipper/api/tables, cold: the first request after the server started
                      (every table read while it waits; one sample per server start, `--starts` starts);
                    GET /zipper/api/tables, warm: again (answered from the last read, which is
                      refreshed behind the answer once it is over 10 s old: reading.RecentStates);
                    GET /zipper/api/tables/{name}, /commits?limit=50, /history?key=id=1
                  the warm requests `--repeats` times per start, their order rotating each time,
                  each time another table; then, twice per start, the up-to-date view: once the
                  last read is over 10 s old, from the first request until one answers with a
                  fresh read (as the page asks again; the signature cache: two thrift calls a table);
  first call      the route's function app.tables() in a fresh process (`--starts` times): the import
                  of zipper.web.app (as the plugin's loading does it), then its first call, a second
                  with a new reader and a third: what the cold request holds besides HTTP;
  the read path   in this process, without HTTP (so the API server's own share shows):
                    reading.load_specs() (every request asks; parsed again only when a file changed),
                    StateReader().states(uri, specs) cold (a new reader) and warm (the same reader),
                    each over reading.CONNECTIONS connections and over 1,
                    airflow_runs.latest_runs() of every merge DAG (Airflow's database),
                    app.tables(), the route's function, cold (nothing read yet) and from the last read,
                  alternating, `--repeats` times;
  the page        (unless --no-browser) the tables page in Debian's Chromium through Playwright:
                  from navigation until `#tables tbody tr` counts every table; the first visit of a
                  fresh browser context (static files not cached yet) and visits after it.

The warehouse: `--tables` specs (default 50) in one specs folder, each table merged over `--dates`
dates (default 5) of a small dimension (`--rows`, default 1,000: per day id 1 changed, 2% of ids
changed, 1% new ids), all merges in ONE Spark driver (tests/airflow/probe.py through
tests/cli/helpers.zipper_in_one_jvm), the warehouse's metastore server started by it. With
`--data DIR` it is built there once and reused by later runs (the shape is recorded in
DIR/built.json); by default it lives in the run's temp directory. Airflow: a fresh AIRFLOW_HOME
(zipper.devtools.airflow_home.setup), `airflow dags reserialize`, then one DAG run per date and
merge DAG (triggered through the REST API, then set to success, the newest of every tenth table
to failed), so that the view's run queries have rows to find. No scheduler runs: the runs only
sit in the database.

Every sample is wall seconds; beside them the CPU seconds the metastore server and the serving
process (the API server's process tree, or this process for the in-process rows) spent during it,
read from /proc through psutil: this machine is shared, and a wall time includes waiting for a core.

The temp directory is deleted at the end (unless --keep); the API server is stopped by its process
group, and the warehouse's metastore server by its process id (MetastoreService.stop).

    .venv/bin/python bench/bench_view.py                     # 50 tables x 5 dates: ~50 min on 2 busy cores (30: merges)
    .venv/bin/python bench/bench_view.py --data /tmp/view50  # the same; the warehouse kept there and reused (~20 min)
    .venv/bin/python bench/bench_view.py --tables 3 --dates 2 --starts 1 --repeats 2   # smoke run, ~6 min
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))  # tests.cli.helpers (the one-driver set-up) and tests.web.browser (Chromium's flags)
from benchkit import stop_on_sigterm  # noqa: E402  (bench/, the scripts' folder)

from tests.cli.helpers import day, make_spec, write_parquet, zipper_in_one_jvm  # noqa: E402
from zipper.airflow.environment import python_bin  # noqa: E402
from zipper.devtools.airflow_home import airflow, airflow_env, setup  # noqa: E402
from zipper.devtools.local_airflow import free_port  # noqa: E402
from zipper.runtime.metastore import MetastoreService  # noqa: E402
from zipper.web.reading import CONNECTIONS  # noqa: E402  (no Airflow import: the in-process step imports it later)

FRESH_S = 10  # the tables page's reads stay fresh this long (reading.RecentStates)
READY_S = 600  # bounds the API server's start (a minute on a loaded machine)
KEY = "id=1"  # changed every day: dates + 1 versions
CHROMIUM = Path("/usr/bin/chromium")

API_TABLES = "GET /zipper/api/tables"
API_TABLES_COLD = f"{API_TABLES}, cold (first after start)"
API_TABLES_FRESH = f"{API_TABLES} until a fresh read (its last read >{FRESH_S} s old)"
API_TABLE = "GET /zipper/api/tables/{name}"
API_COMMITS = "GET /zipper/api/tables/{name}/commits?limit=50"
API_HISTORY = f"GET /zipper/api/tables/{{name}}/history?key={KEY}"
WARM_ENDPOINTS = (API_TABLES, API_TABLE, API_COMMITS, API_HISTORY)
STATES_COLD = f"StateReader().states(), cold (new reader), {CONNECTIONS} connections"
STATES_COLD_1 = "StateReader().states(), cold, 1 connection"
STATES_WARM = f"StateReader.states(), warm (same reader), {CONNECTIONS} connections"
STATES_WARM_1 = "StateReader.states(), warm, 1 connection"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=50, help="table specs in the specs folder (default 50)")
    parser.add_argument("--dates", type=int, default=5, help="dates merged into every table (default 5)")
    parser.add_argument("--rows", type=int, default=1000, help="rows in the base of each table (default 1,000)")
    parser.add_argument("--starts", type=int, default=3, help="API server starts: one cold sample each (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="warm samples of each request per start (default 5)")
    parser.add_argument("--no-browser", action="store_true", help="skip the page load in Chromium")
    parser.add_argument("--data", type=Path, help="build the warehouse here and keep it; reuse one of the same shape")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, Airflow home)")
    parser.add_argument("--first-call-probe", action="store_true", help=argparse.SUPPRESS)  # the subprocess of step 4
    args = parser.parse_args(argv)
    if args.tables < 1 or args.dates < 1 or args.rows < 100 or args.starts < 1 or args.repeats < 1:
        parser.error("--tables, --dates, --starts and --repeats must be >= 1, --rows >= 100")
    return args


def names(count: int) -> list[str]:
    return [f"t{n:02d}" for n in range(count)]


# ---------------------------------------------------------------- step 1: the warehouse, in one driver


def generate(root: Path, rows: int, dates: int) -> None:
    """One base and `dates` increments, read by every spec (each its own table)."""
    rng = random.Random(20261127)
    cities = ["paris", "rome", "oslo", "lyon", "kyiv", "bern", "riga", "nice"]
    write_parquet(root / "data" / "base", [(i, f"user_{i}", rng.choice(cities)) for i in range(1, rows + 1)])
    known = rows
    for k in range(1, dates + 1):
        changed = sorted({1, *rng.sample(range(2, known + 1), rows // 50)})
        new = range(known + 1, known + 1 + rows // 100)
        known += len(new)
        day_rows = [(i, f"user_{i}", rng.choice(cities) + f"_{k}") for i in [*changed, *new]]
        write_parquet(root / "data" / "incr" / f"ds={day(k)}", day_rows)


def build_warehouse(root: Path, tables: int, rows: int, dates: int) -> None:
    shape = {"tables": tables, "rows": rows, "dates": dates}
    marker = root / "built.json"
    if marker.exists() and json.loads(marker.read_text()) == shape:
        print(f"  reusing the warehouse in {root} ({tables} tables x {dates} dates)", flush=True)
        return
    if root.exists() and any(root.iterdir()):
        MetastoreService(root / "warehouse").stop()
        for part in ("warehouse", "specs", "data", "built.json"):
            path = root / part
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    generate(root, rows, dates)
    for name in names(tables):
        make_spec(root, name, end_date=day(dates))  # committed through its end date: up to date
    commands = [["merge", name, "--ds", day(k)] for name in names(tables) for k in range(1, dates + 1)]
    started = time.perf_counter()
    exits = zipper_in_one_jvm(root, *commands, timeout=600 + 60 * len(commands))
    if exits != [0] * len(commands):
        failed = [" ".join(c) for c, code in zip(commands, exits) if code != 0]
        raise SystemExit(f"{len(failed)} merges failed, first: zipper {failed[0]}")
    seconds = time.perf_counter() - started
    print(
        f"  {len(commands)} merges in one driver in {seconds:.0f} s ({seconds / len(commands):.1f} s each)", flush=True
    )
    marker.write_text(json.dumps(shape) + "\n")


def metastore_up(data: Path) -> int:
    """The warehouse's metastore server running before Airflow starts, so that no timed request starts it."""
    server, started = MetastoreService(data / "warehouse").start()
    print(f"  metastore server pid {server.pid} ({'started now' if started else 'running'})", flush=True)
    return server.pid


# ---------------------------------------------------------------- step 2: Airflow's home and its API server


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    token: str
    started_s: float


def airflow_home(home: Path, data: Path, port: int) -> dict:
    """Set up `home` for the warehouse in `data`; the environment every airflow command gets."""
    env = airflow_env(home, ZIPPER_WAREHOUSE=data / "warehouse", ZIPPER_SPECS=data / "specs")
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW__")}
    setup(home, api_port=port, env=env)
    airflow(home, "dags", "reserialize", env=env)
    return env


def start_server(home: Path, port: int, env: dict, log: Path) -> Server:
    started = time.perf_counter()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [str(python_bin() / "airflow"), "api-server", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_S
    while True:
        if process.poll() is not None:
            raise SystemExit(
                f"the API server exited ({process.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url + "/api/v2/monitor/health", timeout=5):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the Airflow API server never answered") from None
            time.sleep(0.5)
    seconds = time.perf_counter() - started
    passwords = json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())
    body = json.dumps({"username": "admin", "password": passwords["admin"]}).encode()
    request = urllib.request.Request(
        url + "/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        token = json.loads(response.read())["access_token"]
    return Server(url, process, token, seconds)


def stop_server(server: Server | None) -> None:
    if server is None or server.process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGTERM)
    try:
        server.process.wait(60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()


def call(server: Server, method: str, path: str, body: dict | None = None) -> tuple[float, int, bytes]:
    """(seconds, status, body) of one request with the bearer token; a new connection each, as urllib makes."""
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        method=method,
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            status, data = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, data = error.code, error.read()
    return time.perf_counter() - started, status, data


def get(server: Server, path: str) -> tuple[float, bytes]:
    seconds, status, data = call(server, "GET", path)
    if status != 200:
        raise SystemExit(f"GET {path}: {status} {data[:500]!r}")
    return seconds, data


def make_runs(server: Server, tables: int, dates: int) -> int:
    """One run per date and merge DAG; all succeeded except the newest of every tenth table (failed)."""
    made = 0
    for n, name in enumerate(names(tables)):
        for k in range(1, dates + 1):
            run_id = f"manual__bench_{k}"
            logical = f"{day(k)}T00:00:00+00:00"
            body = {"dag_run_id": run_id, "logical_date": logical, "run_after": logical}
            _, status, data = call(server, "POST", f"/api/v2/dags/zipper_{name}/dagRuns", body)
            if status not in (200, 409):  # 409: made by an earlier run of this script on this home
                raise SystemExit(f"triggering zipper_{name} {run_id}: {status} {data[:500]!r}")
            state = "failed" if (k == dates and n % 10 == 0) else "success"
            _, status, data = call(server, "PATCH", f"/api/v2/dags/zipper_{name}/dagRuns/{run_id}", {"state": state})
            if status != 200:
                raise SystemExit(f"setting zipper_{name} {run_id} {state}: {status} {data[:500]!r}")
            made += 1
    return made


def check_tables(data: bytes, tables: int, dates: int) -> None:
    body = json.loads(data)
    found = {t["name"]: t for t in body["tables"]}
    if sorted(found) != names(tables):
        raise SystemExit(f"/zipper/api/tables listed {sorted(found)}")
    wrong = [n for n, t in found.items() if t["last_committed"] != day(dates) or not t["open_rows"]]
    if wrong:
        raise SystemExit(f"tables not committed through {day(dates)}: {wrong}")


# ---------------------------------------------------------------- CPU seconds beside wall seconds


class CpuMeter:
    """CPU seconds each timed call cost the warehouse's metastore server and the process that served
    it (the API server's process tree, or this process in-process): on a shared machine a wall time
    waits for the CPU too, and the CPU seconds say what the call itself costs."""

    def __init__(self, metastore_pid: int):
        self.metastore = psutil.Process(metastore_pid)
        self.server: psutil.Process | None = None  # None: this process
        self.spent: dict[str, list[tuple[float, float]]] = {}  # label -> (metastore, serving) per sample

    @staticmethod
    def _tree(process: psutil.Process) -> float:
        total = 0.0
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = member.cpu_times()
                total += times.user + times.system
        return total

    def now(self) -> tuple[float, float]:
        serving = self._tree(self.server) if self.server is not None else time.process_time()
        return self._tree(self.metastore), serving

    def record(self, label: str, before: tuple[float, float]) -> None:
        after = self.now()
        self.spent.setdefault(label, []).append((after[0] - before[0], after[1] - before[1]))

    def medians(self, label: str) -> tuple[float, float] | None:
        found = self.spent.get(label)
        if not found:
            return None
        return statistics.median(m for m, _ in found), statistics.median(s for _, s in found)


# ---------------------------------------------------------------- step 3: the timed requests


def endpoint_path(endpoint: str, name: str) -> str:
    return endpoint.split(" ", 1)[1].replace("{name}", name)


def api_round(server: Server, args, samples: dict[str, list[float]], sizes: dict[str, int], cpu: CpuMeter) -> None:
    """The cold request, then the warm ones, their order rotating, each time another table."""
    cpu.server = psutil.Process(server.process.pid)
    before = cpu.now()
    seconds, data = get(server, endpoint_path(API_TABLES, ""))
    cpu.record(API_TABLES_COLD, before)
    check_tables(data, args.tables, args.dates)
    samples[API_TABLES_COLD].append(seconds)
    sizes[API_TABLES] = len(data)
    print(f"    cold {API_TABLES}: {seconds * 1000:.0f} ms ({len(data):,} bytes)", flush=True)
    tables = names(args.tables)
    for i in range(args.repeats):
        name = tables[(len(samples[API_TABLE]) * 7) % len(tables)]
        order = WARM_ENDPOINTS[i % len(WARM_ENDPOINTS) :] + WARM_ENDPOINTS[: i % len(WARM_ENDPOINTS)]
        for endpoint in order:
            before = cpu.now()
            seconds, data = get(server, endpoint_path(endpoint, name))
            cpu.record(endpoint, before)
            samples[endpoint].append(seconds)
            sizes[endpoint] = len(data)
        shown = ", ".join(f"{e.split('/')[-1] or 'tables'} {samples[e][-1] * 1000:.0f}" for e in WARM_ENDPOINTS)
        print(f"    warm, {name}: {shown} ms", flush=True)
    # The up-to-date view: once the last read is older than FRESH_S, the first answer is that read
    # and a new one runs behind it; asking until it is there (as the page does) times the fresh view.
    for _ in range(min(args.repeats, 2)):
        time.sleep(FRESH_S + 1)
        before, started = cpu.now(), time.perf_counter()
        while json.loads(get(server, endpoint_path(API_TABLES, ""))[1])["refreshing"]:
            time.sleep(0.1)
        samples.setdefault(API_TABLES_FRESH, []).append(time.perf_counter() - started)
        cpu.record(API_TABLES_FRESH, before)
        print(f"    {API_TABLES_FRESH}: {samples[API_TABLES_FRESH][-1] * 1000:.0f} ms", flush=True)
    versions = json.loads(get(server, endpoint_path(API_HISTORY, tables[0]))[1])["versions"]
    if len(versions) != args.dates + 1:
        raise SystemExit(f"history of {KEY} in {tables[0]}: {len(versions)} versions, want {args.dates + 1}")


def browser_round(server: Server, args, samples: dict[str, list[float]], cpu: CpuMeter) -> None:
    """The tables page in a fresh browser context: the first visit, then visits with its cache."""
    from playwright.sync_api import sync_playwright

    from tests.web.browser import ARGS

    wanted = f"document.querySelectorAll('#tables tbody tr').length === {args.tables}"
    first, again = "tables page, first visit (browser cache empty)", "tables page, again"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_cookies([{"name": "_token", "value": server.token, "url": server.url}])
            tab = context.new_page()
            tab.set_default_timeout(120_000)
            for visit in range(args.repeats + 1):
                label = first if visit == 0 else again
                before, started = cpu.now(), time.perf_counter()
                tab.goto(server.url + "/zipper/tables", wait_until="commit")
                tab.wait_for_function(wanted, polling="raf")
                seconds = time.perf_counter() - started
                cpu.record(label, before)  # the metastore's and the API server's, not Chromium's
                samples.setdefault(label, []).append(seconds)
            shown = " ".join(f"{s * 1000:.0f}" for s in samples[again][-args.repeats :])
            print(f"    page: first visit {samples[first][-1] * 1000:.0f} ms, then {shown}", flush=True)
        finally:
            browser.close()


# ---------------------------------------------------------------- step 4: the read path in this process


def view_environment(data: Path, home: Path) -> dict[str, str]:
    """What the API server's process has: this Airflow home, this warehouse and specs folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
    env.update(AIRFLOW_HOME=str(home), ZIPPER_WAREHOUSE=str(data / "warehouse"), ZIPPER_SPECS=str(data / "specs"))
    return env


def first_call_probe() -> int:
    """Run as a subprocess (--first-call-probe): import the view's app as the API server's plugin
    loading does, then time its route function's first call, a second with a new reader, a third."""
    started = time.perf_counter()
    from zipper.web import app, reading

    imported = time.perf_counter() - started
    timings = {"import": imported}
    for label in ("first", "cold", "warm"):
        if label == "cold":
            app.states = reading.StateReader()
            app.recent = reading.RecentStates(app.states)
        started = time.perf_counter()
        app.tables()
        timings[label] = time.perf_counter() - started
    print("PROBE " + json.dumps(timings))
    return 0


def first_calls(args, data: Path, home: Path, samples: dict[str, list[float]]) -> None:
    """The route's first call in a fresh process, `--starts` times (what a cold request holds besides HTTP)."""
    for _ in range(args.starts):
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--first-call-probe"],
            env=view_environment(data, home),
            capture_output=True,
            text=True,
            timeout=600,
            cwd=REPO,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"the first-call probe failed ({done.returncode}): {done.stderr[-2000:]}")
        found = json.loads(lines[-1][len("PROBE ") :])
        samples.setdefault("fresh process: import zipper.web.app (Airflow, FastAPI)", []).append(found["import"])
        samples.setdefault("fresh process: app.tables(), first call", []).append(found["first"])
        samples.setdefault("fresh process: app.tables(), second, new reader", []).append(found["cold"])
        samples.setdefault("fresh process: app.tables(), third (warm)", []).append(found["warm"])
        shown = ", ".join(f"{k} {v * 1000:.0f}" for k, v in found.items())
        print(f"  fresh process: {shown} ms", flush=True)


def in_process(args, data: Path, home: Path, samples: dict[str, list[float]], cpu: CpuMeter) -> None:
    """The route's parts without HTTP, alternating; Airflow is imported here with the run's home."""
    os.environ.clear()
    os.environ.update(view_environment(data, home))
    from zipper.airflow import environment
    from zipper.airflow.dag_builder import merge_dag_id
    from zipper.web import airflow_runs, app, reading

    specs = [e.spec for e in reading.load_specs()]
    uri = reading.metastore_uri(environment.warehouse())
    warm = reading.StateReader()
    warm.states(uri, specs)
    app.recent.fresh_s = app.recent.max_age_s = float("inf")  # "from the last read": no refresh behind it
    app.tables()  # the module's last read
    dag_ids = [merge_dag_id(s) for s in specs]
    connections = reading.CONNECTIONS

    def cold_route():
        app.states = reading.StateReader()
        app.recent = reading.RecentStates(app.states, fresh_s=float("inf"), max_age_s=float("inf"))
        return app.tables()

    def one_connection(read: Callable[[], object]) -> Callable[[], object]:
        def run():
            reading.CONNECTIONS = 1
            try:
                return read()
            finally:
                reading.CONNECTIONS = connections

        return run

    parts: dict[str, Callable[[], object]] = {
        "reading.load_specs() (every spec file)": reading.load_specs,
        "reading.metastore_uri() (is the server up)": lambda: reading.metastore_uri(environment.warehouse()),
        STATES_COLD: lambda: reading.StateReader().states(uri, specs),
        STATES_COLD_1: one_connection(lambda: reading.StateReader().states(uri, specs)),
        STATES_WARM: lambda: warm.states(uri, specs),
        STATES_WARM_1: one_connection(lambda: warm.states(uri, specs)),
        "airflow_runs.latest_runs() (every merge DAG)": lambda: airflow_runs.latest_runs(dag_ids),
        "app.tables(), cold (nothing read yet)": cold_route,
        "app.tables(), from the last read": lambda: app.tables(),
    }
    order = list(parts)
    for i in range(args.repeats):
        rotated = order[i % len(order) :] + order[: i % len(order)]
        for label in rotated:
            before, started = cpu.now(), time.perf_counter()
            parts[label]()
            samples.setdefault(label, []).append(time.perf_counter() - started)
            cpu.record(label, before)
        cold_route()  # the module's last read, for "app.tables(), from the last read"
        print(f"  in-process round {i + 1} of {args.repeats}", flush=True)
    if len(reading.StateReader().states(uri, specs)) != args.tables:
        raise SystemExit("the in-process read did not find every table")


# ---------------------------------------------------------------- the report


def machine_line(load_at_start: tuple[float, float, float]) -> str:
    model = "?"
    with contextlib.suppress(OSError):
        model = next(
            (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?"
        )
    return (
        f"{dt.date.today().isoformat()}; {platform.node()}, {os.cpu_count()} cores ({model}), {platform.machine()};"
        f" load average at start {' '.join(f'{x:.2f}' for x in load_at_start)},"
        f" at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def row(label: str, values: list[float], cpu: tuple[float, float] | None) -> str:
    shown = " ".join(f"{v * 1000:.0f}" for v in values)
    if len(shown) > 50:
        shown = shown[:47] + "..."
    spent = f"{cpu[0] * 1000:>8.0f}{cpu[1] * 1000:>8.0f}" if cpu else f"{'':>16}"
    ms = f"{statistics.median(values) * 1000:>9.0f}{min(values) * 1000:>8.0f}{max(values) * 1000:>8.0f}"
    return f"{label:<58}{ms}{spent}  {shown}"


def report(args, samples, sizes, starts: list[float], load_at_start, cpu: CpuMeter) -> None:
    print()
    print(f"machine: {machine_line(load_at_start)}")
    print(
        f"warehouse: {args.tables} tables x {args.dates} dates ({args.rows:,} base rows each); API server started"
        f" {len(starts)} times ({' '.join(f'{s:.0f}' for s in starts)} s to healthy)"
    )
    print()
    print("CPU ms: medians of the CPU the metastore server (HMS) and the serving process (API server, or this")
    print("process in-process) spent during each sample")
    print(f"{'request':<58}{'median ms':>9}{'min':>8}{'max':>8}{'HMS CPU':>8}{'srv CPU':>8}  samples ms")
    for label, values in samples.items():
        if values:
            print(row(label, values, cpu.medians(label)))
    print("response bytes: " + ", ".join(f"{e.split('/')[-1] or 'tables'} {n:,}" for e, n in sizes.items()))
    cold = statistics.median(samples[API_TABLES_COLD])
    warm = statistics.median(samples[API_TABLES])
    within = "yes" if warm < 1 else "NO"
    result = {
        "tables": args.tables,
        "dates": args.dates,
        "cold_tables_s": round(cold, 3),
        "warm_tables_s": round(warm, 3),
    }
    for key, label in (
        ("detail_s", API_TABLE),
        ("commits_s", API_COMMITS),
        ("history_s", API_HISTORY),
        ("states_cold_s", STATES_COLD),
        ("states_warm_s", STATES_WARM),
        ("states_cold_1conn_s", STATES_COLD_1),
        ("states_warm_1conn_s", STATES_WARM_1),
        ("fresh_first_call_s", "fresh process: app.tables(), first call"),
        ("route_from_last_read_s", "app.tables(), from the last read"),
        ("fresh_tables_s", API_TABLES_FRESH),
        ("page_s", "tables page, again"),
    ):
        if samples.get(label):
            result[key] = round(statistics.median(samples[label]), 3)
    for key, label in (
        ("cold_tables", API_TABLES_COLD),
        ("warm_tables", API_TABLES),
        ("fresh_tables", API_TABLES_FRESH),
        ("states_warm_1conn", STATES_WARM_1),
    ):
        spent = cpu.medians(label)
        if spent:
            result[f"{key}_hms_cpu_s"], result[f"{key}_server_cpu_s"] = round(spent[0], 3), round(spent[1], 3)
    fresh = statistics.median(samples[API_TABLES_FRESH]) if samples.get(API_TABLES_FRESH) else float("nan")
    print(
        f"{args.tables} tables within a second, answered from the last read: {within} ({warm:.3f} s);"
        f" the first view after a start {cold:.3f} s; until a fresh read {fresh:.3f} s"
    )
    print("RESULT " + json.dumps(result))


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.first_call_probe:
        return first_call_probe()
    stop_on_sigterm()
    load_at_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="zipper-bench-view-"))
    data = args.data.resolve() if args.data else work / "data"
    print(f"{machine_line(load_at_start)}; {work}", flush=True)
    server = None
    samples: dict[str, list[float]] = {API_TABLES_COLD: []}
    samples.update({e: [] for e in WARM_ENDPOINTS})
    sizes: dict[str, int] = {}
    starts: list[float] = []
    try:
        print(f"step 1: the warehouse, {args.tables} tables x {args.dates} dates", flush=True)
        build_warehouse(data, args.tables, args.rows, args.dates)
        cpu = CpuMeter(metastore_up(data))
        print("step 2: AIRFLOW_HOME, the DAGs, their runs", flush=True)
        started = time.perf_counter()
        home, port = work / "airflow", free_port()
        env = airflow_home(home, data, port)
        server = start_server(home, port, env, work / "api-server.log")
        runs = make_runs(server, args.tables, args.dates)
        stop_server(server)
        print(f"  {runs} DAG runs; set up in {time.perf_counter() - started:.0f} s", flush=True)
        browser = not args.no_browser and CHROMIUM.exists()
        if not args.no_browser and not browser:
            print(f"  no {CHROMIUM}: the page load is left out", flush=True)
        print("step 3: the API server, started again for each cold sample", flush=True)
        for start in range(args.starts):
            server = start_server(home, port, env, work / "api-server.log")
            starts.append(server.started_s)
            print(f"  start {start + 1}: healthy after {server.started_s:.0f} s", flush=True)
            api_round(server, args, samples, sizes, cpu)
            if browser:
                browser_round(server, args, samples, cpu)
            stop_server(server)
            server = None
        print("step 4: the route's first call in a fresh process", flush=True)
        first_calls(args, data, home, samples)
        print("step 5: the read path in this process", flush=True)
        cpu.server = None
        in_process(args, data, home, samples, cpu)
        report(args, samples, sizes, starts, load_at_start, cpu)
        return 0
    finally:
        stop_server(server)
        stopped = MetastoreService(data / "warehouse").stop()
        if stopped is not None:
            print(f"stopped the warehouse's metastore server (pid {stopped.pid})", flush=True)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
