"""The soak: zipper tables of different modes through Airflow's scheduler over weeks of dates each,
with retries on, while a chaos loop kills, at random moments during merges and a bounded number of
times, merge task processes, the Spark Connect server and the metastore server, by pid. At the end
every table must equal the reference model's history for its inputs (tests/jobs/test_model.py's
ZipperModel, day by day), `zipper check` must pass, no lock may be held and no run's directory may
be left that no commit names. It prints the figures: dates committed, kills by kind, retries, wall
time; and exits non-zero when any table or check is off.

    make soak                                               # 4 tables x 45 dates, up to 120 kills
    .venv/bin/python -m bench.soak --tables 2 --dates 5 --kills 3   # the short variant make test runs

Every kill lands while a merge holds its table's lock, a random moment after it took it: the lock
names the merge's process (the job; its parent is Airflow's task process, killed instead one time
in two), and the servers' records name theirs. A killed task fails and Airflow retries it; a killed
server is started again by the next command that needs it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.airflow.support import minimal_env  # noqa: E402
from tests.jobs.test_model import ZipperModel  # noqa: E402
from tests.support import write_parquet  # noqa: E402
from zipper.airflow.environment import DEFAULT_POOL  # noqa: E402
from zipper.devtools.local_airflow import LocalAirflow  # noqa: E402
from zipper.runtime import metastore, processes, spark_server  # noqa: E402
from zipper.runtime.settings import SessionSettings  # noqa: E402

START = dt.date(2024, 1, 1)
BASE_DS = (START - dt.timedelta(days=1)).isoformat()
KEYS = 30
NAMES = [None, "a", "b", "c"]
SCORES = [None, 0, 1, 2]
PLAIN = "id int, name string, score int"
SEQUENCED = "id int, name string, score int, seq int"  # the cdc table's base: no operation column
CDC = f"{SEQUENCED}, sys_op int"
KINDS = ("snapshot", "cdc", "upsert", "tombstones")  # the tables, in this order: --tables N takes the first N
KILL_KINDS = ("task", "spark", "metastore")
RETRIES = 12


@dataclasses.dataclass
class Table:
    """A soak table: its spec name, its kind, and the model fed each date's input as it is written."""

    kind: str
    model: ZipperModel

    @property
    def name(self) -> str:
        return f"soak_{self.kind}"


@dataclasses.dataclass
class Result:
    tables: dict[str, dict] = dataclasses.field(default_factory=dict)  # name -> what was found
    kills: Counter = dataclasses.field(default_factory=Counter)
    retries: int = 0
    dates_committed: int = 0
    wall_s: float = 0.0
    failure: str | None = None  # why not every date's run succeeded

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.tables) and all(t["ok"] for t in self.tables.values())

    def lines(self) -> list[str]:
        kills = ", ".join(f"{self.kills[k]} {k}" for k in KILL_KINDS)
        out = [
            f"soak: {len(self.tables)} tables, {self.dates_committed} dates committed, kills: {kills}"
            f" ({sum(self.kills.values())} in all), {self.retries} retries, {self.wall_s:.0f} s",
        ]
        if self.failure:
            out.append(f"  FAILED: {self.failure}")
        for name, found in self.tables.items():
            out.append(f"  {name}: {'ok' if found['ok'] else 'OFF'} ({', '.join(found['notes'])})")
        return out


# ------------------------------------------------------------------ inputs and the model


def _attrs(rng: random.Random) -> tuple:
    return (rng.choice(NAMES), rng.choice(SCORES))


def write_inputs(root: Path, kind: str, dates: int, rng: random.Random) -> ZipperModel:
    """Write `kind`'s base and `dates` daily inputs under root/data/<kind>, feeding the model as it goes."""
    data = root / "data" / kind
    base = [(k, *_attrs(rng)) for k in range(1, KEYS + 1) if rng.random() < 0.7]
    if kind == "cdc":
        base = [row + (0,) for row in base]  # seq: stored, not tracked (updated in place)
        model = ZipperModel("exclusive", base, 1, tracked=(0, 1))
        write_parquet(data / "base", base, SEQUENCED)
    else:
        model = ZipperModel("exclusive", base, 1, tombstones=kind == "tombstones")
        write_parquet(data / "base", base, PLAIN)
    snapshot = {row[0]: row[1:3] for row in base}
    for n in range(dates):
        ds = START + dt.timedelta(days=n)
        folder = data / "incr" / f"ds={ds.isoformat()}"
        if kind == "upsert":
            rows = [(k, *_attrs(rng)) for k in rng.sample(range(1, KEYS + 1), rng.randint(0, 8))]
            model.merge(ds, rows)
            write_parquet(folder, rows, PLAIN)
        elif kind == "cdc":
            events = []
            for k in rng.sample(range(1, KEYS + 1), rng.randint(0, 8)):
                for _ in range(rng.choice((1, 1, 2))):
                    events.append(((k, *_attrs(rng)), "delete" if rng.random() < 0.25 else "upsert"))
            rng.shuffle(events)
            ordered = [(row + (seq,), action) for seq, (row, action) in enumerate(events, start=1)]
            model.merge_changes(ds, ordered, deletes=True)
            written = [row + (int(action == "delete"),) for row, action in ordered]
            rng.shuffle(written)  # the file's order: seq decides
            write_parquet(folder, written, CDC)
        else:
            for k in range(1, KEYS + 1):
                roll = rng.random()
                if k in snapshot and roll < 0.08:
                    del snapshot[k]  # missing from today's snapshot
                elif roll < 0.2:
                    snapshot[k] = _attrs(rng)  # new, changed, or back
            rows = [(k, *attrs) for k, attrs in sorted(snapshot.items())]
            model.merge_snapshot(ds, rows, invalidate=True)
            write_parquet(folder, rows, PLAIN)
    return model


def write_spec(root: Path, kind: str, dates: int, retries: int = RETRIES) -> None:
    data = root / "data" / kind
    source: dict = {"format": "parquet", "path": str(data / "incr" / "ds={{ ds }}")}
    extra: dict = {}
    if kind == "cdc":
        source.update(mode="cdc", sequence_by="seq", delete_match="key")
        extra["track_columns"] = ["name", "score"]
    elif kind == "upsert":
        source["mode"] = "upsert"
    else:
        source.update(mode="snapshot", hard_deletes="new_record" if kind == "tombstones" else "invalidate")
    raw = {
        "name": f"soak_{kind}",
        "table": f"dw.soak_{kind}",
        "keys": ["id"],
        "source": source,
        "base": {"format": "parquet", "path": str(data / "base")},
        "start_date": START.isoformat(),
        "end_date": (START + dt.timedelta(days=dates - 1)).isoformat(),
        "description": f"soak table ({kind})",
        **extra,
        "airflow": {
            "owner": "data-eng",
            "tags": ["soak"],
            "retries": retries,
            "retry_delay_minutes": 0.02,
            "sensor": {"mode": "poke", "poke_interval": 1, "timeout": 600},
        },
    }
    specs = root / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    (specs / f"soak_{kind}.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


# ------------------------------------------------------------------ the chaos loop


class Chaos(threading.Thread):
    """Kill `budget[kind]` times each kind, each while some merge holds its table's lock, a random
    0-3 s after it was seen holding it, and each after some date committed since the kill before
    (`merged()` counts the dates merged): kills as often as merges can bear them, so the tables
    still move on (unbounded, they starved a table through all its retries). Stops when the
    budget is spent or `done` is set."""

    def __init__(self, warehouse: Path, tables: list[str], budget: Counter, rng: random.Random, log, merged):
        super().__init__(daemon=True)
        self.merged = merged
        self.warehouse = warehouse
        self.locks = [warehouse / "metastore" / "locks" / f"dw.{name}.lock" for name in tables]
        self.budget = budget
        self.rng = rng
        self.log = log
        self.kills: Counter = Counter()
        self.done = threading.Event()
        self.settings = SessionSettings(warehouse=str(warehouse))

    def run(self) -> None:
        merged_at_last_kill = -1
        while not self.done.is_set() and +self.budget:
            if self.done.wait(self.rng.uniform(0.5, 3)):
                return
            if self.merged() <= merged_at_last_kill:
                continue
            holder = self._merge_holding_a_lock()
            if holder is None:
                continue
            if self.done.wait(self.rng.uniform(0, 3)):
                return
            kind = self.rng.choice([k for k in KILL_KINDS if self.budget[k] > 0])
            pid = self._victim(kind, holder)
            if pid is None or not processes.pid_alive(pid):
                continue
            with contextlib.suppress(ProcessLookupError):
                (os.killpg if kind == "spark" else os.kill)(pid, signal.SIGKILL)
                self.budget[kind] -= 1
                self.kills[kind] += 1
                merged_at_last_kill = self.merged()
                self.log(f"killed {kind} pid {pid} (merge pid {holder})")

    def _merge_holding_a_lock(self) -> int | None:
        """The pid of a merge that holds its table's lock now."""
        for lock in self.rng.sample(self.locks, len(self.locks)):
            if lock.exists() and lock_held(lock):
                with contextlib.suppress(OSError, ValueError, KeyError):
                    return int(json.loads(lock.read_text())["pid"])
        return None

    def _victim(self, kind: str, holder: int) -> int | None:
        if kind == "task":  # the job, or Airflow's task process that started it
            if self.rng.random() < 0.5:
                return holder
            with contextlib.suppress(OSError, ValueError, IndexError):
                parent = int(Path(f"/proc/{holder}/stat").read_text().rsplit(")", 1)[1].split()[1])
                # not a job whose task process is gone already (its parent is then init, or a reaper)
                if parent > 1 and "airflow" in _cmdline(parent):
                    return parent
            return holder
        if kind == "spark":
            server = spark_server.SparkServerService(self.settings).recorded()
        else:
            server = metastore.MetastoreService(self.warehouse).recorded()
        return None if server is None else server.pid


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ------------------------------------------------------------------ the run and the checks


def table_rows(warehouse: Path, table: str) -> list[tuple]:
    """Every row of `table`, as a client of the warehouse's server, in the model's order."""
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession(connection=spark_server.client_url(SessionSettings(warehouse=str(warehouse))))
    try:
        spark.catalog.refreshTable(table)
        rows = [tuple(r) for r in spark.table(table).collect()]
    finally:
        spark.stop()
    return sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r))


def zipper(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "zipper"), *args], env=env, capture_output=True, text=True, timeout=600
    )


def committed(env: dict, name: str) -> tuple[int, list[str]]:
    """How many dates the table has committed, and its run directories that no commit names and
    no partition points into: what a killed run wrote and no one cleared."""
    out = zipper(env, "status", name, "--recent", "100000")
    if out.returncode != 0:
        raise RuntimeError(f"zipper status {name}: {out.stderr.strip()[-2000:]}")
    status = json.loads(out.stdout)
    commits = status["recent_commits"]
    runs = {c["run_id"] for c in commits} | {c["run_id"] for c in status["corrections"]}
    open_location = next(p["location"] for p in status["partitions"] if p["kind"] == "open")
    versions = Path(open_location.removeprefix("file:")).parent.parent
    assert versions.name == "versions" and versions.is_dir(), open_location
    pointed = {Path(p["location"].removeprefix("file:")).parent.name for p in status["partitions"]}
    left = sorted(d.name for d in versions.iterdir() if d.name != "empty" and d.name not in runs | pointed)
    # the base's directory, which no commit names: the newest of those older than the first commit
    # (run ids sort as the runs started; an init killed before it would be older still)
    first = min(c["run_id"] for c in commits)
    base = max((run for run in left if run < first), default=None)
    return sum(1 for c in commits if c["ds"] > BASE_DS), [run for run in left if run != base]


def lock_held(lock: Path) -> bool:
    """Whether a run holds the table lock file `lock` now (the file names its last holder whether
    or not it still holds it: only a held flock says it does)."""
    with open(lock) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def held_locks(warehouse: Path) -> list[str]:
    return [lock.name for lock in sorted((warehouse / "metastore" / "locks").glob("*.lock")) if lock_held(lock)]


def run_soak(root: Path, tables: int, dates: int, kills: int, seed: int, log=print, retries: int = RETRIES) -> Result:
    started = time.monotonic()
    rng = random.Random(seed)
    chosen = [Table(kind, write_inputs(root, kind, dates, rng)) for kind in KINDS[:tables]]
    for table in chosen:
        write_spec(root, table.kind, dates, retries)
    warehouse = root / "warehouse"
    env = minimal_env(root, root / "specs", warehouse)
    # The soak is about kills, not the scheduler's pace: its DAGs start unpaused (no CLI call each) and
    # the scheduler looks for work every 0.2 s when idle (1 s by default), which shortens each task hop.
    env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"
    env["AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME"] = "0.2"
    budget = Counter({kind: kills // len(KILL_KINDS) for kind in KILL_KINDS})
    budget["task"] += kills - sum(budget.values())
    result = Result()
    airflow = LocalAirflow(root / "airflow", env)
    airflow.cli("db", "migrate")
    airflow.cli("pools", "set", DEFAULT_POOL, "2", "zipper merges")
    dags = [f"zipper_{t.name}" for t in chosen]

    def merged() -> int:
        marks = ",".join("?" * len(dags))
        found = airflow.query(
            f"SELECT count(*) FROM task_instance WHERE task_id = 'merge' AND state = 'success' AND dag_id IN ({marks})",
            *dags,
        )
        return found[0][0] if found else 0

    chaos = Chaos(warehouse, [t.name for t in chosen], budget, rng, log, merged)
    airflow.start()
    try:
        airflow.wait_for_dags(dags)
        chaos.start()

        def finished():
            states = [[r["state"] for r in airflow.dag_runs(dag)] for dag in dags]
            if any("failed" in s for s in states):
                raise RuntimeError(f"a run failed: {dict(zip(dags, states))}; logs under {airflow.home}/logs")
            return all(s.count("success") == dates for s in states)

        airflow.wait_until(finished, timeout=600 + 120 * dates * len(dags) + 60 * kills, what="every date", poll=3)
    except (RuntimeError, TimeoutError) as exc:
        result.failure = str(exc)  # the tables are checked all the same: the figures say how far it got
    finally:
        chaos.done.set()
        chaos.join()
        result.kills = chaos.kills
        for dag in dags:
            result.retries += sum(max(0, (ti["try_number"] or 1) - 1) for ti in airflow.task_instances(dag, "merge"))
        airflow.stop()
    cli_env = {**env, "PATH": f"{REPO / '.venv' / 'bin'}:{env.get('PATH', '')}"}
    for table in chosen:
        notes, ok = [], True
        rows = table_rows(warehouse, f"dw.{table.name}")
        expected = table.model.rows()
        if rows != expected:
            ok = False
            notes.append(
                f"{len(rows)} rows, the model {len(expected)}; first off: "
                f"{next((a, b) for a, b in zip(rows + [None] * len(expected), expected + [None] * len(rows)) if a != b)}"
            )
        else:
            notes.append(f"{len(rows)} rows equal the model's")
        check = zipper(cli_env, "check", table.name)
        if check.returncode != 0:
            ok = False
            notes.append(f"zipper check: {(check.stdout + check.stderr).strip().splitlines()[-1:]}")
        dates_committed, left = committed(cli_env, table.name)
        result.dates_committed += dates_committed
        notes.append(f"{dates_committed} dates committed, {len(left)} killed runs' directories left")
        result.tables[table.name] = {"ok": ok, "notes": notes, "leftover_dirs": left}
    locks = held_locks(warehouse)
    if locks:
        for found in result.tables.values():
            found["ok"] = False
            found["notes"].append(f"locks held: {locks}")
    result.wall_s = time.monotonic() - started
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=len(KINDS), choices=range(1, len(KINDS) + 1))
    parser.add_argument("--dates", type=int, default=45)  # about one date in two sees a kill
    parser.add_argument("--kills", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--retries", type=int, default=RETRIES, help="each merge task's retries (0: a kill fails its run)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the soak's folder (its path is printed)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="zipper-soak-"))
    print(f"soak folder: {root}", flush=True)
    try:
        result = run_soak(
            root, args.tables, args.dates, args.kills, args.seed, lambda m: print(m, flush=True), args.retries
        )
    finally:
        from tests.metastores import stop_servers

        stop_servers(root)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n".join(result.lines()))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
