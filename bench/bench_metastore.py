"""Benchmark: a whole `zipper merge` process on the metastore service beside a dbt snapshot, and `status` without a JVM.

Why: a scheduled merge is one whole `zipper` process: a JVM and a Spark driver started for one
day's work, talking over thrift to the warehouse's metastore server (`ZIPPER_METASTORE=local`,
the default), which is already running. The issue asks for that merge within 2x of a dbt
snapshot of the same day, so a dbt snapshot (dbt-duckdb, `strategy: check`, `check_cols: all`)
runs beside it as a whole process too. `zipper status` reads the commit record over the
metastore's thrift API from Python, with no JVM: its whole process is timed as well. (The
embedded Derby metastore this benchmark once set against the service is retired.)

In ONE run, alternating the variants (their order rotates each round), `--warmup` rounds left
out, then the median of `--rounds`:

  merge, own driver   `zipper merge NAME --ds D` with a Spark driver of its own
                      (`ZIPPER_SPARK_RUNNER=driver`, the classic way) on a warehouse whose
                      metastore server was started by `zipper init` and stays running;
  merge, Connect      the same merge of a twin table (same data, same history) by a `zipper`
                      process that is, by default, a Spark Connect client of the warehouse's
                      warm Spark server: no JVM of its own (`--no-connect` leaves out this
                      variant and the next);
  merge, cold server  the same merge of a third twin, with the warehouse's Spark server stopped
                      first (not timed): the merge starts it, as the first command of the day
                      does;
  dbt snapshot        `dbt snapshot` of the same day's Parquet file (read by DuckDB), after a
                      snapshot of the base; dbt-duckdb from bench/requirements-dbt.txt in
                      bench/.venv-dbt, made by this script (`--no-dbt` leaves dbt out);
  copy, Connect       a whole Python process, a Connect client of the same warm server as zipper
                      configures it, that reads the Connect twin's open partition (through the
                      metastore) and writes it to a fresh directory: the floor of any day that
                      rewrites the open partition (left out with --no-connect);
  status, thrift      `zipper status NAME` against the running server (no JVM), after the merges.

Each is the wall time of the whole process. State before a merge: a fresh date each round. Round
r merges day D_r and snapshots D_r in dbt, so in every round both start from the same history
(the base and days D_1 .. D_r-1), and a round's state differs from the previous one's by one day
(0.2% more keys). The data are bench_replay's: a dimension of `--rows` (default 1,000,000) and
per day 1% changed keys and 0.2% new keys. At the end, dbt's snapshot table must hold the
versions zipper's merge counts imply.

Then (unless --no-split) the start-up split of a driver, from a small probe process that builds
zipper's session step by step against the running server: Python and imports, JVM start (py4j
gateway), SparkContext, session, the Hive client's first metastore call, a first trivial job, a
read of the table.

Everything lives in a fresh temp directory, deleted at the end (unless --keep); the metastore
server the run started is stopped by its process id.

    .venv/bin/python bench/bench_metastore.py                                     # 1M rows
    .venv/bin/python bench/bench_metastore.py --rows 20000 --rounds 1 --warmup 0  # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import bench_replay as replay  # noqa: E402  (bench/ is not a package on the path when run as a script)
from benchkit import stop_on_sigterm  # noqa: E402  (bench/, the scripts' folder)

NAME = replay.NAME
TABLE = f"bench.{NAME}"
ZIPPER = Path(sys.executable).parent / "zipper"
DBT_VENV = BENCH / ".venv-dbt"
DBT_REQUIREMENTS = BENCH / "requirements-dbt.txt"
DBT_ENV = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_VERSION_CHECK": "false", "DBT_USE_COLORS": "false"}
DBT_FINISHED = re.compile(r"Finished running .*\(([\d.]+)s\)")

MERGE_SERVICE, DBT = "merge, own driver", "dbt snapshot (DuckDB)"
MERGE_CONNECT = "merge, Connect client"
MERGE_COLD = "merge, cold server"
# the floor of a day that rewrites the open partition, as a whole process like the merge: a Python
# process, a Connect client of the same warm server, that copies the Connect twin's open partition
COPY_CONNECT = "copy, Connect client"
# the twin tables (same data, same history) the Connect variants merge
TWINS = {MERGE_CONNECT: f"{NAME}_connect", MERGE_COLD: f"{NAME}_cold"}
STATUS_THRIFT = "status, thrift (service)"
PROBE_STEPS = (
    "Python start, imports, session conf",
    "JVM start (py4j gateway)",
    "SparkContext",
    "SparkSession (Hive support)",
    "Hive client + first metastore call",
    "first job (trivial)",
    "read the table (count)",
    "spark.stop()",
    "Python exit",
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the base dimension")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; each runs every variant once")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and left out of the medians")
    parser.add_argument("--no-split", action="store_true", help="skip the driver start-up split")
    parser.add_argument("--no-dbt", action="store_true", help="leave the dbt snapshot out (no bench/.venv-dbt needed)")
    parser.add_argument("--no-connect", action="store_true", help="leave the Spark Connect client's merge out")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (data, logs) for inspection")
    parser.add_argument("--probe", metavar="TABLE", help=argparse.SUPPRESS)  # the start-up split's child process
    parser.add_argument("--copy-probe", nargs=2, metavar=("TABLE", "OUT"), help=argparse.SUPPRESS)  # COPY_CONNECT's
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.rounds < 1 or args.warmup < 0:
        parser.error("--rows must be >= 1000, --rounds >= 1 and --warmup >= 0")
    return args


# ---------------------------------------------------------------- where everything goes


@dataclass(frozen=True)
class Layout:
    """One temp directory: data and specs (bench_replay's layout), the warehouse, the dbt project."""

    root: Path

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def dbt(self) -> Path:
        return self.root / "dbt"

    @property
    def day_file(self) -> Path:
        """What the dbt snapshot reads: a link to the day's Parquet file, swapped before each run."""
        return self.dbt / "day.parquet"

    def increment_file(self, day: dt.date) -> Path:
        return self.root / "data" / "incr" / f"ds={day.isoformat()}" / "part-00000.parquet"

    @property
    def base_file(self) -> Path:
        return self.root / "data" / "base" / "part-00000.parquet"


@dataclass
class Samples:
    seconds: dict[str, list[float]] = field(default_factory=dict)
    inner: dict[str, list[float]] = field(default_factory=dict)  # what the tool itself reports

    def add(self, method: str, seconds: float, inner: float | None = None) -> None:
        self.seconds.setdefault(method, []).append(seconds)
        if inner is not None:
            self.inner.setdefault(method, []).append(inner)

    def median(self, method: str) -> float:
        return statistics.median(self.seconds[method])

    def inner_median(self, method: str) -> float | None:
        return statistics.median(self.inner[method]) if self.inner.get(method) else None


def rotated(methods: tuple[str, ...], round_no: int) -> tuple[str, ...]:
    """Each round starts with the next variant, so drift on a shared machine hits all alike."""
    shift = round_no % len(methods)
    return methods[shift:] + methods[:shift]


# ---------------------------------------------------------------- processes


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, list[str]]:
    """One whole process: (wall seconds, stdout lines). Fails loudly."""
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        tail = (result.stderr.strip() or result.stdout.strip())[-2000:]
        raise SystemExit(f"{' '.join(command[:3])} ... failed ({result.returncode}): {tail}")
    return seconds, result.stdout.splitlines()


def zipper_env(layout: Layout, runner: str = "server") -> dict[str, str]:
    env = dict(
        os.environ,
        ZIPPER_SPECS=str(layout.root / "specs"),
        ZIPPER_WAREHOUSE=str(layout.warehouse),
        ZIPPER_METASTORE="local",  # the warehouse's own server, whatever the caller's environment says
        ZIPPER_SPARK_RUNNER=runner,
        PATH=f"{ZIPPER.parent}:{os.environ.get('PATH', '')}",
    )
    for name in ("SPARK_SUBMIT_OPTS", "ZIPPER_SPARK_REMOTE"):  # only what the product itself configures
        env.pop(name, None)
    return env


def zipper(layout: Layout, *args: str, runner: str = "server") -> tuple[float, list[str]]:
    return run([str(ZIPPER), *args], zipper_env(layout, runner), layout.root)


def spark_service(layout: Layout):
    from zipper.runtime.settings import SessionSettings
    from zipper.runtime.spark_server import SparkServerService

    return SparkServerService(SessionSettings(warehouse=str(layout.warehouse)))


def stop_servers(layout: Layout) -> None:
    """The warehouse's Spark Connect server, then its metastore server (by process id), each said."""
    from zipper.runtime.metastore import MetastoreService

    stopped = spark_service(layout).stop()
    if stopped is not None:
        print(f"stopped the warehouse's Spark Connect server (pid {stopped.pid})", flush=True)
    stopped = MetastoreService(layout.warehouse).stop()
    if stopped is not None:
        print(f"stopped the warehouse's metastore server (pid {stopped.pid})", flush=True)


# ---------------------------------------------------------------- step 1: dbt's virtualenv


def ensure_dbt_venv() -> str:
    """bench/.venv-dbt with the pinned versions; made again when the pins change. Its dbt version."""
    wanted = hashlib.sha256(DBT_REQUIREMENTS.read_bytes()).hexdigest()
    stamp = DBT_VENV / "requirements.sha256"
    if not stamp.is_file() or stamp.read_text().strip() != wanted:
        print(f"making {DBT_VENV} from {DBT_REQUIREMENTS.name} (a minute or two) ...", flush=True)
        shutil.rmtree(DBT_VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(DBT_VENV)], check=True)
        pip = [str(DBT_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        installed = subprocess.run([*pip, "-r", str(DBT_REQUIREMENTS)], capture_output=True, text=True)
        if installed.returncode != 0:
            raise SystemExit(f"pip install -r {DBT_REQUIREMENTS} failed: {installed.stderr.strip()[-2000:]}")
        stamp.write_text(wanted + "\n")
    found = subprocess.run(
        [str(DBT_VENV / "bin" / "python"), "-c", "from dbt.version import __version__; print(__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip()


# ---------------------------------------------------------------- step 2: data and tables


def prepare_tables(layout: Layout, rows: int, days: int) -> None:
    """bench_replay's data, one spec, and the table initialized (its metastore server started). Not timed."""
    started = time.perf_counter()
    replay.generate(layout.root, rows, days)
    replay.write_spec(layout.root, days)
    print(
        f"generated {rows:,} rows and {days} days of {rows // 100:,} changed + {rows // 500:,} new keys"
        f" in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    seconds, _ = zipper(layout, "init", NAME)
    print(f"init, the metastore and Spark servers started: {seconds:.1f} s (not counted)", flush=True)


def prepare_connect(layout: Layout) -> None:
    """The twin tables (NAME's spec under other names and tables) initialized. Not timed."""
    spec = (layout.root / "specs" / f"{NAME}.yaml").read_text()
    for twin in TWINS.values():
        made = spec.replace(f"name: {NAME}\n", f"name: {twin}\n").replace(f"{TABLE}\n", f"bench.{twin}\n")
        (layout.root / "specs" / f"{twin}.yaml").write_text(made)
        zipper(layout, "init", twin)


# ---------------------------------------------------------------- step 3: the dbt project


DBT_PROJECT = """\
name: bench_snapshot
version: "1.0"
profile: bench
snapshot-paths: ["snapshots"]
flags:
  send_anonymous_usage_stats: false
  use_colors: false
"""

DBT_PROFILE = """\
bench:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{database}"
      threads: 1
"""

# One snapshot over the day's Parquet file: a new version for every re-sent key whose columns
# changed, the key's open version closed; keys absent from the day are left open (hard_deletes
# ignore, the default), as zipper's upsert mode does.
DBT_SNAPSHOT = """\
{{% snapshot {name} %}}
{{{{ config(target_schema='main', unique_key='user_id', strategy='check', check_cols='all') }}}}
select * from read_parquet('{day_file}')
{{% endsnapshot %}}
"""


def write_dbt_project(layout: Layout) -> None:
    (layout.dbt / "snapshots").mkdir(parents=True)
    (layout.dbt / "dbt_project.yml").write_text(DBT_PROJECT)
    (layout.dbt / "profiles.yml").write_text(DBT_PROFILE.format(database=layout.dbt / "bench.duckdb"))
    (layout.dbt / "snapshots" / f"{NAME}.sql").write_text(DBT_SNAPSHOT.format(name=NAME, day_file=layout.day_file))


def point_dbt_at(layout: Layout, parquet: Path) -> None:
    """Swap the link the snapshot reads, so the project (and dbt's partial parse) never changes."""
    layout.day_file.unlink(missing_ok=True)
    layout.day_file.symlink_to(parquet)


def dbt_snapshot(layout: Layout) -> tuple[float, float | None]:
    """`dbt snapshot` as a whole process: (wall seconds, the seconds dbt reports for its run)."""
    command = [str(DBT_VENV / "bin" / "dbt"), "snapshot", "--project-dir", str(layout.dbt)]
    command += ["--profiles-dir", str(layout.dbt)]
    seconds, lines = run(command, dict(os.environ, **DBT_ENV), layout.dbt)
    reported = next((float(m.group(1)) for line in lines if (m := DBT_FINISHED.search(line))), None)
    return seconds, reported


def snapshot_base(layout: Layout) -> None:
    write_dbt_project(layout)
    point_dbt_at(layout, layout.base_file)
    seconds, _ = dbt_snapshot(layout)
    print(f"dbt snapshot of the base: {seconds:.1f} s (not counted)", flush=True)


def dbt_counts(layout: Layout) -> tuple[int, int]:
    """(all versions, closed versions) in the dbt snapshot table."""
    query = (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True);"
        f" print(*c.sql('select count(*), count(dbt_valid_to) from main.{NAME}').fetchall()[0])"
    )
    found = subprocess.run(
        [str(DBT_VENV / "bin" / "python"), "-c", query, str(layout.dbt / "bench.duckdb")],
        capture_output=True,
        text=True,
        check=True,
    )
    total, closed = found.stdout.split()
    return int(total), int(closed)


# ---------------------------------------------------------------- step 4: the rounds


def merge_counts(text: str) -> dict[str, int]:
    """'12,000 changed, 2,000 new, ...' -> {'changed': 12000, 'new': 2000, ...}."""
    return {word: int(number.replace(",", "")) for number, word in re.findall(r"([\d,]+) ([a-z]+)", text)}


def run_rounds(layout: Layout, rounds: int, warmup: int, merges: tuple[str, ...]) -> tuple[Samples, dict[str, int]]:
    """Every round: the merge and (in `merges`) the Connect clients' merges of the twin tables and
    the dbt snapshot of its day, in rotated order, then the status. Also the merges' counts added
    up over the days; the twins' must be the same each day."""
    samples, discarded, totals = Samples(), Samples(), {"new": 0, "changed": 0, "closed": 0}
    service_counts, twin_counts = {}, {}
    service = spark_service(layout)
    for n in range(warmup + rounds):
        day = replay.START + dt.timedelta(days=n)
        ds = day.isoformat()
        warming = n < warmup
        into = discarded if warming else samples
        print(f"  {'warm-up round (not counted)' if warming else f'round {n - warmup + 1}/{rounds}'}: {ds}", flush=True)
        for method in rotated(merges, n):
            if method == DBT:
                point_dbt_at(layout, layout.increment_file(day))
                seconds, inner = dbt_snapshot(layout)
                shown = f"dbt reports {inner:.2f} s" if inner is not None else ""
            elif method == COPY_CONNECT:
                service.start()
                out = layout.root / "copies" / ds
                command = [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--copy-probe",
                    TWINS[MERGE_CONNECT],
                    str(out),
                ]
                seconds, lines = run(command, zipper_env(layout), layout.root)
                inner = float(lines[-1].split()[1])
                shown = f"copy {inner:.2f} s"
                shutil.rmtree(out, ignore_errors=True)
            elif method in TWINS:
                if method == MERGE_COLD:
                    service.stop()  # the merge starts it
                else:
                    service.start()  # warm, as every command after the day's first finds it
                seconds, lines = zipper(layout, "merge", TWINS[method], "--ds", ds)
                counts, inner = replay.per_date(lines)[ds]
                shown = f"engine {inner:.2f} s; {counts}"
                twin_counts.setdefault(ds, set()).add(counts)
            else:
                seconds, lines = zipper(layout, "merge", NAME, "--ds", ds, runner="driver")
                counts, inner = replay.per_date(lines)[ds]
                service_counts[ds] = counts
                shown = f"engine {inner:.2f} s; {counts}"
                for word, number in merge_counts(counts).items():
                    if word in totals:
                        totals[word] += number
            into.add(method, seconds, inner)
            print(f"    {method:<26} {seconds:7.2f} s  {shown}", flush=True)
        seconds, lines = zipper(layout, "status", NAME)
        json.loads("\n".join(lines))  # it answered with its report
        into.add(STATUS_THRIFT, seconds)
        print(f"    {STATUS_THRIFT:<26} {seconds:7.2f} s", flush=True)
    if twin_counts and twin_counts != {ds: {counts} for ds, counts in service_counts.items()}:
        raise SystemExit(f"the Connect client's merges counted otherwise: {twin_counts} against {service_counts}")
    return samples, totals


def check_dbt_against_zipper(layout: Layout, rows: int, totals: dict[str, int]) -> str:
    """dbt's snapshot must hold what the merges did: the base, a version per new or changed key, the changed closed."""
    expected = (rows + totals["new"] + totals["changed"], totals["closed"])
    found = dbt_counts(layout)
    verdict = "same" if found == expected else "DIFFERENT"
    return (
        f"dbt snapshot table: {found[0]:,} versions, {found[1]:,} closed;"
        f" expected from zipper's counts {expected[0]:,}, {expected[1]:,}: {verdict}"
    )


def copy_probe(table: str, out: str) -> None:
    """COPY_CONNECT's process: a Connect client of the warehouse's warm server, as zipper builds
    it, copies the table's open partition to `out`; prints `COPY <seconds of the copy>`."""
    from zipper.runtime.session import build_session, release_session
    from zipper.runtime.settings import SessionSettings

    spark = build_session(SessionSettings.from_env(app_name="zipper bench copy"))  # ZIPPER_SPARK_RUNNER=server
    started = time.perf_counter()
    rows = spark.table(f"bench.{table}").where("end_dt = '9999-12-31'").drop("end_dt")
    rows.write.parquet(out)
    print(f"COPY {time.perf_counter() - started:.3f}", flush=True)
    release_session(spark)


# ---------------------------------------------------------------- step 5: where a driver's start-up goes


def probe(table: str) -> None:
    """The child process of the split: zipper's session (runtime.session's settings) built step by
    step, each step's end stamped in epoch seconds and printed as one JSON line."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from zipper.runtime import settings as session_settings

    settings = session_settings.SessionSettings.from_env(app_name="zipper bench probe")
    conf = {
        **session_settings.common_conf(),
        "spark.app.name": settings.app_name,
        "spark.sql.catalogImplementation": "hive",
    }
    conf.update(session_settings.warehouse_conf(settings))  # under local: the running server's thrift URI
    conf.update({"spark.ui.enabled": "false", "spark.master": "local[*]"})
    spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    marks = [time.time()]
    with open(session_settings.new_log_file(settings), "ab") as log:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
    marks.append(time.time())
    SparkContext(conf=spark_conf, gateway=gateway)
    marks.append(time.time())
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    marks.append(time.time())
    if not spark.catalog.tableExists(table):
        raise SystemExit(f"probe: {table} not found")
    marks.append(time.time())
    spark.range(1000).selectExpr("sum(id)").collect()
    marks.append(time.time())
    spark.table(table).count()
    marks.append(time.time())
    spark.stop()
    marks.append(time.time())
    print("PROBE " + json.dumps(marks), flush=True)


def startup_split(layout: Layout, rounds: int) -> dict[str, list[float]]:
    """The probe against the running server, `rounds` times: seconds per step."""
    steps: dict[str, list[float]] = {s: [] for s in PROBE_STEPS}
    for _ in range(rounds):
        command = [sys.executable, str(Path(__file__).resolve()), "--probe", TABLE]
        launched = time.time()
        seconds, lines = run(command, zipper_env(layout), layout.root)
        marks = json.loads(next(line for line in lines if line.startswith("PROBE "))[len("PROBE ") :])
        ends = [m - launched for m in marks] + [seconds]
        durations = [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]
        for step, value in zip(PROBE_STEPS, durations):
            steps[step].append(value)
        print(f"    probe {seconds:6.2f} s: " + " ".join(f"{d:.2f}" for d in durations), flush=True)
    return steps


# ---------------------------------------------------------------- step 6: the report


def machine_line(load_at_start: tuple[float, float, float]) -> str:
    return (
        f"{dt.date.today().isoformat()}; {os.cpu_count()} cores, {platform.machine()};"
        f" load average at start {load_at_start[0]:.2f} {load_at_start[1]:.2f} {load_at_start[2]:.2f},"
        f" at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def report(args, samples: Samples, split, notes: list[str], load_at_start, dbt_version: str | None) -> None:
    methods = (
        (MERGE_SERVICE,)
        + (() if args.no_connect else (MERGE_CONNECT, MERGE_COLD, COPY_CONNECT))
        + (() if args.no_dbt else (DBT,))
        + (STATUS_THRIFT,)
    )
    print()
    print(f"machine: {machine_line(load_at_start)}")
    print(f"zipper: {args.rows:,}-row table, day of {args.rows // 100:,} changed + {args.rows // 500:,} new keys;")
    same = "" if args.no_dbt else " (the same history for zipper and dbt in a round)"
    print(f"  state before each merge: a fresh date each round{same};")
    versions = "dbt left out (--no-dbt)" if args.no_dbt else f"dbt-core {dbt_version}"
    print(f"  {args.warmup} warm-up round(s) left out, then the median of {args.rounds}; {versions}")
    print()
    print(f"{'whole process':<28}{'median s':>10}{'inner s':>10}  samples s")
    for method in methods:
        inner = samples.inner_median(method)
        shown = " ".join(f"{s:.2f}" for s in samples.seconds[method])
        print(f"{method:<28}{samples.median(method):>10.2f}{(f'{inner:.2f}' if inner else '-'):>10}  {shown}")
    print("  inner s: what zipper's merge line reports as the engine's time, or dbt's own run time")
    svc, thrift = samples.median(MERGE_SERVICE), samples.median(STATUS_THRIFT)
    result = f"RESULT rows={args.rows} rounds={args.rounds} merge_service={svc:.2f}s"
    if not args.no_dbt:
        dbt = samples.median(DBT)
        print()
        print(f"own driver's merge/dbt snapshot {svc / dbt:.2f}")
        if not args.no_connect:
            print(f"Connect client merge/dbt snapshot {samples.median(MERGE_CONNECT) / dbt:.2f} (goal <= 1.0)")
        result += f" dbt_snapshot={dbt:.2f}s"
    if not args.no_connect:
        connect, cold = samples.median(MERGE_CONNECT), samples.median(MERGE_COLD)
        print(f"Connect client merge/own driver's merge {connect / svc:.2f}")
        print(f"merge with the server's start/own driver's merge {cold / svc:.2f} (goal <= 1.0)")
        copy = samples.median(COPY_CONNECT)
        print(f"Connect client merge/copy of its open partition {connect / copy:.2f}")
        result += f" merge_connect={connect:.2f}s merge_cold_server={cold:.2f}s copy_connect={copy:.2f}s"
        result += f" connect/copy={connect / copy:.2f}"
    result += f" status_thrift={thrift:.2f}s"
    if not args.no_dbt:
        result += f" service/dbt={svc / dbt:.2f}"
        if not args.no_connect:
            result += f" connect/dbt={samples.median(MERGE_CONNECT) / dbt:.2f}"
    for note in notes:
        print(note)
    if split:
        print()
        print("driver start-up split (probe: zipper's session built step by step, metastore service), median s")
        for step in PROBE_STEPS:
            print(f"{step:<38}{statistics.median(split[step]):>10.2f}")
        total = statistics.median([sum(x) for x in zip(*split.values())])
        print(f"{'whole probe process':<38}{total:>10.2f}")
        result += f" probe_service={total:.2f}s"
    print(result)


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.probe:
        probe(args.probe)
        return 0
    if args.copy_probe:
        copy_probe(*args.copy_probe)
        return 0

    stop_on_sigterm()
    load_at_start = os.getloadavg()
    dbt_version = None if args.no_dbt else ensure_dbt_venv()
    layout = Layout(Path(tempfile.mkdtemp(prefix="zipper-bench-metastore-")))
    days = args.warmup + args.rounds
    print(f"{machine_line(load_at_start)}; {layout.root}", flush=True)
    try:
        prepare_tables(layout, args.rows, days)
        notes = []
        if not args.no_dbt:
            snapshot_base(layout)
        if not args.no_connect:
            prepare_connect(layout)
        connect = () if args.no_connect else (MERGE_CONNECT, MERGE_COLD, COPY_CONNECT)
        merges = (MERGE_SERVICE, *connect) + (() if args.no_dbt else (DBT,))
        samples, totals = run_rounds(layout, args.rounds, args.warmup, merges)
        if not args.no_dbt:
            notes.append(check_dbt_against_zipper(layout, args.rows, totals))
        split = None
        if not args.no_split:
            print("  driver start-up split:", flush=True)
            split = startup_split(layout, args.rounds)
        report(args, samples, split, notes, load_at_start, dbt_version)
        return 1 if any("DIFFERENT" in n for n in notes) else 0
    finally:
        stop_servers(layout)
        if args.keep:
            print(f"kept {layout.root}")
        else:
            shutil.rmtree(layout.root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
