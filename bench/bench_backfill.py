"""Benchmark: an Airflow backfill of 10 dates of which 5 are already committed, before and after the no-Spark pre-check.

Why: a backfill with `--reprocess-behavior completed` runs the merge task of every date again,
also of the dates already committed with the same input. Each of those merges is a no-op, but
before the pre-check each was a whole spark-submit (a Spark driver's start-up, then "nothing to
do"). ZipperMergeOperator now first asks a plain Python subprocess (`zipper merge NAME --ds D
--json-report --no-spark`); when the date is committed with the same input the task ends there.
This measures what that saves on the whole backfill, side by side in one run:

  before   ZIPPER_NOOP_CHECK=off in Airflow's environment: no pre-check, every merge task runs
           spark-submit (as before the check);
  after    the default: the pre-check, then spark-submit only for the dates to merge.

State before each backfill: a small generated table (bench_replay's data, default 5,000 rows:
the point is the per-task overhead, not the merge) with `--dates` dates in its spec (default 10),
the first half committed beforehand by one `zipper rebuild NAME --to D5` (untimed), the
warehouse's metastore server running, Airflow (api-server, scheduler, dag-processor, triggerer)
started on a fresh copy of one prepared AIRFLOW_HOME and the DAG parsed. Timed: `airflow
backfill create --dag-id zipper_bench_dim --from-date D1 --to-date D10 --reprocess-behavior
completed`, `airflow dags unpause` (Airflow 3 runs no task of a paused DAG), until every run of
the backfill has succeeded (LocalAirflow.wait_for_backfill, polled every 2 s). D1..D5 re-run as
no-ops, D6..D10 merge.

Each repetition restores the warehouse from a copy of the prepared one (its metastore server
stopped while it is copied) and Airflow's home from a copy of the prepared one, so every
backfill starts from the same state; the variant is Airflow's environment, so each backfill
has its own Airflow start, left out of the timing. The variants alternate (their order swaps
each repetition); the median of `--repetitions` (default 3) is reported, with every sample, the
ratio before/after, and each date's merge task duration from Airflow's metadata database (and
whether its log says the pre-check ended it). Everything lives in a fresh temp directory,
deleted at the end (unless --keep); Airflow and every metastore server the run started are
stopped by their process ids.

    .venv/bin/python bench/bench_backfill.py                              # 10 dates, 3 repetitions: ~50 min on 2 busy cores
    .venv/bin/python bench/bench_backfill.py --repetitions 1 --dates 4    # smoke run, ~9 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
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

from zipper.airflow.operators import NOOP_CHECK_ENV  # noqa: E402
from zipper.core.reports import EXIT_NOT_NOOP  # noqa: E402
from zipper.devtools.airflow_home import airflow_env, setup  # noqa: E402
from zipper.devtools.local_airflow import LocalAirflow  # noqa: E402
from zipper.runtime import jvm  # noqa: E402
from zipper.runtime.metastore import MetastoreService  # noqa: E402

NAME = replay.NAME
DAG_ID = f"zipper_{NAME}"
BEFORE = "before: spark-submit always (ZIPPER_NOOP_CHECK=off)"
AFTER = "after: no-Spark pre-check (default)"
VARIANTS = (BEFORE, AFTER)
SHORT = {BEFORE: "before", AFTER: "after"}
PRE_CHECK_ENDED = "A no-op, told without Spark"  # ZipperMergeOperator's log line when the pre-check ends the task


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5000, help="rows in the base dimension (default 5,000)")
    parser.add_argument("--dates", type=int, default=10, help="dates in the backfill; the first half is committed")
    parser.add_argument("--repetitions", type=int, default=3, help="timed backfills per variant (median)")
    parser.add_argument(
        "--max-active-runs", type=int, help="passed to `airflow backfill create` (default: Airflow's, 10)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, data) for inspection")
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.dates < 2 or args.repetitions < 1:
        parser.error("--rows must be >= 1000, --dates >= 2 and --repetitions >= 1")
    return args


# ---------------------------------------------------------------- where everything goes


@dataclass(frozen=True)
class Layout:
    """One temp directory: data and specs (bench_replay's layout), the warehouse and Airflow's home
    where the runs use them, and the prepared copies each repetition starts from."""

    root: Path

    @property
    def specs(self) -> Path:
        return self.root / "specs"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"  # bench_replay.zipper's warehouse

    @property
    def prepared_warehouse(self) -> Path:
        return self.root / "warehouse-prepared"

    @property
    def home(self) -> Path:
        return self.root / "airflow"

    @property
    def prepared_home(self) -> Path:
        return self.root / "airflow-prepared"

    def zipper_env(self) -> dict[str, str]:
        """What the `zipper` commands and every Airflow process get: this table, this warehouse, its server."""
        return {"ZIPPER_SPECS": str(self.specs), "ZIPPER_WAREHOUSE": str(self.warehouse), "ZIPPER_METASTORE": "local"}


@dataclass
class Backfill:
    """One timed backfill: its seconds, and per date its merge task's seconds and how it ended."""

    seconds: float
    merge_seconds: dict[str, float] = field(default_factory=dict)
    ended_by_pre_check: dict[str, bool] = field(default_factory=dict)


def the_dates(count: int) -> list[str]:
    return [(replay.START + dt.timedelta(days=n)).isoformat() for n in range(count)]


def restore(prepared: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(prepared, target, symlinks=True)


def stop_metastore(warehouse: Path) -> None:
    stopped = MetastoreService(warehouse).stop()
    if stopped is not None:
        print(f"    stopped the warehouse's metastore server (pid {stopped.pid})", flush=True)


# ---------------------------------------------------------------- step 1: the table, half committed


def no_spark_check(layout: Layout, ds: str) -> int:
    """The operator's pre-check for `ds`, run by hand: 0 = committed with the same input, 10 = to merge."""
    command = [sys.executable, "-m", "zipper.cli.main", "merge", NAME, "--ds", ds, "--json-report", "--no-spark"]
    env = {**os.environ, **layout.zipper_env()}
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=BENCH.parent).returncode


def prepare_warehouse(layout: Layout, rows: int, dates: list[str], committed: int) -> None:
    """Data and spec, the first `committed` dates committed in one Spark application, checked with
    the pre-check itself; then the server is stopped and the warehouse kept as the prepared copy."""
    started = time.perf_counter()
    replay.generate(layout.root, rows, len(dates))
    replay.write_spec(layout.root, len(dates))
    seconds, _ = replay.zipper(layout.root, "rebuild", NAME, "--to", dates[committed - 1])
    print(f"  {dates[0]} .. {dates[committed - 1]} committed by one `zipper rebuild` in {seconds:.1f} s", flush=True)
    first_noop, first_to_merge = no_spark_check(layout, dates[0]), no_spark_check(layout, dates[committed])
    if (first_noop, first_to_merge) != (0, EXIT_NOT_NOOP):
        raise SystemExit(
            f"the prepared warehouse is not as meant: the pre-check of {dates[0]} exited {first_noop} (want 0),"
            f" of {dates[committed]} {first_to_merge} (want {EXIT_NOT_NOOP})"
        )
    stop_metastore(layout.warehouse)
    shutil.copytree(layout.warehouse, layout.prepared_warehouse, symlinks=True)
    checked = f"the pre-check says {dates[0]} is a no-op, {dates[committed]} to merge"
    print(f"  warehouse prepared in {time.perf_counter() - started:.1f} s; {checked}", flush=True)


# ---------------------------------------------------------------- step 2: one Airflow home, copied per backfill


def prepare_airflow_home(layout: Layout) -> None:
    """airflow.cfg rendered for `layout.home` (its paths are absolute, so copies go back to that
    path), the metadata database migrated, the merge pool created."""
    started = time.perf_counter()
    setup(layout.home, env=airflow_env(layout.home, **layout.zipper_env()))
    shutil.copytree(layout.home, layout.prepared_home, symlinks=True)
    print(f"  AIRFLOW_HOME prepared in {time.perf_counter() - started:.1f} s", flush=True)


# ---------------------------------------------------------------- step 3: one timed backfill


def airflow_environment(layout: Layout, variant: str) -> dict[str, str]:
    env = {**os.environ, **layout.zipper_env()}
    env.pop(NOOP_CHECK_ENV, None)
    if variant == BEFORE:
        env[NOOP_CHECK_ENV] = "off"
    return env


def seconds_between(start: str | None, end: str | None) -> float:
    if not start or not end:
        return float("nan")
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()


def ended_by_pre_check(home: Path, run_id: str) -> bool:
    """Whether the merge task's log (any attempt) says the pre-check ended it without spark-submit."""
    folder = home / "logs" / f"dag_id={DAG_ID}" / f"run_id={run_id}" / "task_id=merge"
    return any(PRE_CHECK_ENDED in log.read_text(errors="replace") for log in folder.glob("attempt=*.log"))


def timed_backfill(layout: Layout, variant: str, dates: list[str], max_active_runs: int | None) -> Backfill:
    """Restore both homes, start the server and Airflow (untimed), then time the backfill."""
    restore(layout.prepared_warehouse, layout.warehouse)
    restore(layout.prepared_home, layout.home)
    server = MetastoreService(layout.warehouse).ensure()
    print(f"    metastore server pid {server.pid}", flush=True)
    create = ["backfill", "create", "--dag-id", DAG_ID, "--from-date", dates[0], "--to-date", dates[-1]]
    create += ["--reprocess-behavior", "completed"]
    if max_active_runs:
        create += ["--max-active-runs", str(max_active_runs)]
    airflow = LocalAirflow(layout.home, env=airflow_environment(layout, variant))
    try:
        with airflow:
            airflow.wait_for_dags([DAG_ID])
            started = time.perf_counter()
            airflow.cli(*create)
            airflow.cli("dags", "unpause", DAG_ID)
            runs = airflow.wait_for_backfill(DAG_ID, timeout=600 + 240 * len(dates))
            result = Backfill(time.perf_counter() - started)
            merges = {m["run_id"]: m for m in airflow.task_instances(DAG_ID, "merge")}
        for run in runs:
            merge = merges[run["run_id"]]
            ds = run["logical_date"][:10]
            result.merge_seconds[ds] = seconds_between(merge["start_date"], merge["end_date"])
            result.ended_by_pre_check[ds] = ended_by_pre_check(layout.home, run["run_id"])
        if sorted(result.merge_seconds) != dates:
            raise SystemExit(f"the backfill ran {sorted(result.merge_seconds)}, not {dates}")
        last = committed_through(layout)
        if last != dates[-1]:
            raise SystemExit(f"after the backfill the table is committed through {last}, not {dates[-1]}")
        return result
    finally:
        stop_metastore(layout.warehouse)


def committed_through(layout: Layout) -> str:
    """`zipper status`'s last committed date (thrift, no JVM), while the server runs."""
    _, lines = replay.zipper(layout.root, "status", NAME)
    return json.loads("\n".join(lines))["last_committed"]


# ---------------------------------------------------------------- step 4: the report


def machine_line(load_at_start: tuple[float, float, float]) -> str:
    archive = jvm.archive_path()
    cds = "with" if archive is not None and jvm.usable(archive) else "without"
    return (
        f"{dt.date.today().isoformat()}; {platform.node()}, {os.cpu_count()} cores, {platform.machine()};"
        f" load average at start {' '.join(f'{x:.2f}' for x in load_at_start)},"
        f" at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; Spark drivers {cds} the class data sharing archive"
    )


def report(args, dates: list[str], committed: int, samples: dict[str, list[Backfill]], load_at_start) -> None:
    median = {v: statistics.median(b.seconds for b in samples[v]) for v in VARIANTS}

    def merge_median(variant: str, ds: str) -> float:
        return statistics.median(b.merge_seconds[ds] for b in samples[variant])

    def group_median(variant: str, group: list[str]) -> float:
        return statistics.median(merge_median(variant, ds) for ds in group)

    noops, merged = dates[:committed], dates[committed:]
    print()
    print(f"machine: {machine_line(load_at_start)}")
    print(f"table: {args.rows:,} rows, days of {args.rows // 100:,} changed + {args.rows // 500:,} new keys;")
    print(f"  {len(dates)} dates {dates[0]} .. {dates[-1]}, {dates[0]} .. {dates[committed - 1]} committed before each")
    print(f"  backfill; timed: `airflow backfill create --dag-id {DAG_ID} --from-date {dates[0]} --to-date {dates[-1]}")
    print(
        "  --reprocess-behavior completed"
        + (f" --max-active-runs {args.max_active_runs}" if args.max_active_runs else "")
        + "` + `dags unpause` until all runs succeeded;"
    )
    print(f"  Airflow and the metastore server already running; median of {args.repetitions}, variants alternating")
    print()
    print(f"{'whole backfill':<54}{'median s':>10}  samples s")
    for variant in VARIANTS:
        shown = " ".join(f"{b.seconds:.1f}" for b in samples[variant])
        print(f"{variant:<54}{median[variant]:>10.1f}  {shown}")
    ratio = median[BEFORE] / median[AFTER]
    print(f"before/after {ratio:.2f}; saved {median[BEFORE] - median[AFTER]:.1f} s")
    print()
    print("merge task seconds per date (Airflow's start and end of the task; median over repetitions);")
    print("  * = the task's log says the pre-check ended it without spark-submit (in every repetition)")
    print(f"{'date':<12}{'state before':<16}{'before s':>10}{'after s':>10}")
    for ds in dates:
        cells = []
        for variant in VARIANTS:
            mark = "*" if all(b.ended_by_pre_check[ds] for b in samples[variant]) else " "
            cells.append(f"{merge_median(variant, ds):>9.1f}{mark}")
        print(f"{ds:<12}{'committed' if ds in noops else 'to merge':<16}{''.join(cells)}")
    for label, group in (("committed dates (no-ops)", noops), ("dates merged", merged)):
        print(f"{'median, ' + label:<28}{group_median(BEFORE, group):>10.1f}{group_median(AFTER, group):>10.1f}")
    wrong = [
        f"{SHORT[v]} {ds}"
        for v in VARIANTS
        for b in samples[v]
        for ds in dates
        if b.ended_by_pre_check[ds] != (v == AFTER and ds in noops)
    ]
    if wrong:
        print(f"NOTE: the pre-check did not end exactly the committed dates of 'after': {', '.join(wrong)}")
    print(
        f"RESULT dates={len(dates)} committed={committed} rows={args.rows} repetitions={args.repetitions}"
        f" before={median[BEFORE]:.1f}s after={median[AFTER]:.1f}s before/after={ratio:.2f}"
        f" noop_merge_before={group_median(BEFORE, noops):.1f}s noop_merge_after={group_median(AFTER, noops):.1f}s"
        f" merge_before={group_median(BEFORE, merged):.1f}s merge_after={group_median(AFTER, merged):.1f}s"
    )


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    args = parse_args(argv)
    stop_on_sigterm()
    load_at_start = os.getloadavg()
    layout = Layout(Path(tempfile.mkdtemp(prefix="zipper-bench-backfill-")))
    dates = the_dates(args.dates)
    committed = args.dates // 2
    print(f"{machine_line(load_at_start)}; {layout.root}", flush=True)
    try:
        print("step 1: the table, half committed", flush=True)
        prepare_warehouse(layout, args.rows, dates, committed)
        print("step 2: one AIRFLOW_HOME", flush=True)
        prepare_airflow_home(layout)
        print("step 3: the backfills", flush=True)
        samples: dict[str, list[Backfill]] = {v: [] for v in VARIANTS}
        for repetition in range(args.repetitions):
            order = VARIANTS if repetition % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                print(f"  repetition {repetition + 1}, {variant}", flush=True)
                backfill = timed_backfill(layout, variant, dates, args.max_active_runs)
                samples[variant].append(backfill)
                merges = " ".join(f"{backfill.merge_seconds[ds]:.0f}" for ds in dates)
                print(f"    backfill {backfill.seconds:.1f} s; merge tasks s: {merges}", flush=True)
        report(args, dates, committed, samples, load_at_start)
        return 0
    finally:
        stop_metastore(layout.warehouse)
        if args.keep:
            print(f"kept {layout.root}")
        else:
            shutil.rmtree(layout.root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
