"""Benchmark: a small day of a small table, the merge most days of most tables are.

A small day's merge costs its Spark jobs, plan analyses and round trips, not its rows. On a
generated 1,000-row dimension with days of 20 rows (15 changed keys, 5 new), in ONE run:

  warm session   merges in this process, a Spark Connect client of the warehouse's warm server
                 (as the engine's tests and a rerun's dates run): `--warmup-merges` left out,
                 then the median of `--merges` merges, each a new date; and one merge's profile
                 (Spark executions, plan analyses, metastore calls) where the version has it;
  merge process  a whole `zipper merge NAME --ds D` process, a client of the warm server, as a
                 scheduler's task runs it, on a twin table;
  dbt snapshot   a whole `dbt snapshot` process (dbt-duckdb, `strategy: check`) of the same
                 day's Parquet file, after a snapshot of the base (bench_metastore's project).

The process rounds alternate the two (their order rotates), `--warmup` rounds left out, then the
median of `--rounds`. At the end dbt's snapshot must hold the versions zipper's merges imply.
Everything lives in a fresh temp directory, deleted at the end; the servers the run started are
stopped by their process ids.

    .venv/bin/python bench/bench_small.py                 # the figures of docs/benchmarks.md
    .venv/bin/python bench/bench_small.py --no-dbt --rounds 1 --merges 3   # smoke run
    bench/compare_refs.sh OLD NEW 3 bench/bench_small.py --no-dbt --rounds 1   # before and after
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import bench_metastore as hosted  # noqa: E402  (bench/ is not a package on the path when run as a script)
import bench_replay as replay  # noqa: E402
from benchkit import stop_on_sigterm  # noqa: E402

NAME = replay.NAME  # the dbt project's snapshot and the process rounds' table
WARM = "bench_small_warm"  # the warm session's twin


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows in the base dimension")
    parser.add_argument("--changed", type=int, default=15, help="keys a day changes")
    parser.add_argument("--new", type=int, default=5, help="keys a day adds")
    parser.add_argument("--merges", type=int, default=10, help="timed merges in the warm session")
    parser.add_argument("--warmup-merges", type=int, default=3, help="warm-session merges left out first")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the whole processes")
    parser.add_argument("--warmup", type=int, default=1, help="process rounds run first and left out")
    parser.add_argument("--no-dbt", action="store_true", help="leave the dbt snapshot out")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args(argv)
    if args.rows < 100 or args.merges < 1 or args.rounds < 1 or args.changed > args.rows:
        parser.error("--rows >= 100, --merges >= 1, --rounds >= 1, --changed <= --rows")
    return args


def generate(root: Path, rows: int, days: int, changed: int, new: int) -> None:
    """A base of `rows` keys, then per day `changed` re-sent keys with new values and `new` keys."""
    rng = random.Random(20241201)

    def row(user_id: int) -> tuple:
        return (user_id, f"user_{user_id}", rng.choice(replay.CITIES), rng.randrange(10), rng.randrange(10**9))

    replay.write_rows(root / "data" / "base", [row(i) for i in range(1, rows + 1)])
    known = rows
    for n in range(days):
        keys = [*rng.sample(range(1, known + 1), changed), *range(known + 1, known + 1 + new)]
        known += new
        replay.write_rows(root / "data" / "incr" / f"ds={replay.START + dt.timedelta(days=n)}", [row(k) for k in keys])


def twin_spec(layout: hosted.Layout, twin: str) -> None:
    spec = (layout.root / "specs" / f"{NAME}.yaml").read_text()
    made = spec.replace(f"name: {NAME}\n", f"name: {twin}\n").replace(f"bench.{NAME}\n", f"bench.{twin}\n")
    (layout.root / "specs" / f"{twin}.yaml").write_text(made)


def environment_for_commands() -> None:
    """What this process's own Spark Connect client puts in its environment stays out of the
    commands it starts (they are clients of their own, configured as the product configures them)."""
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        os.environ.pop(name, None)


def warm_session(layout: hosted.Layout, days: list[dt.date], warmup: int) -> tuple[list[float], list[str]]:
    """The warm session's merges of WARM, one per day; (seconds of the timed ones, one merge's profile)."""
    from zipper.jobs.merge import merge_date
    from zipper.runtime.session import build_session, release_session
    from zipper.runtime.settings import SessionSettings, SparkRunner
    from zipper.tablespec.loader import find_spec

    settings = SessionSettings(warehouse=str(layout.warehouse), app_name="bench_small", runner=SparkRunner.SERVER)
    spark = build_session(settings)
    _, spec = find_spec(WARM, str(layout.root / "specs"))
    timed, profiled = [], []
    try:
        for n, day in enumerate(days):
            started = time.perf_counter()
            result = merge_date(spark, spec, day)
            seconds = time.perf_counter() - started
            if n >= warmup:
                timed.append(seconds)
            label = "warm-up (not counted)" if n < warmup else f"merge {n - warmup + 1}/{len(days) - warmup}"
            print(f"    {label:<24} {day}: {seconds:6.3f} s  {result.summary()}", flush=True)
        profiled = profile_one(spark, spec, days[-1] + dt.timedelta(days=1))
    finally:
        release_session(spark)
        environment_for_commands()
    return timed, profiled


def profile_one(spark, spec, day: dt.date) -> list[str]:
    """One more merge, its calls counted (`zipper.runtime.profile`, where this version has it)."""
    from zipper.jobs.merge import merge_date

    try:
        from zipper.runtime import profile
    except ImportError:
        return ["(this version has no profile)"]
    with profile.recording(lambda: spark) as counted:
        merge_date(spark, spec, day)
    return counted.lines(f"the warm session's merge of {day}")


def process_rounds(layout: hosted.Layout, days: list[dt.date], warmup: int, dbt: bool) -> dict[str, list[float]]:
    """Whole `zipper merge` processes of NAME and (with `dbt`) dbt snapshots of the same days, rotated."""
    methods = (hosted.MERGE_CONNECT, *((hosted.DBT,) if dbt else ()))
    samples: dict[str, list[float]] = {m: [] for m in methods}
    service = hosted.spark_service(layout)
    for n, day in enumerate(days):
        print(f"  {'warm-up round (not counted)' if n < warmup else f'round {n - warmup + 1}'}: {day}", flush=True)
        for method in hosted.rotated(methods, n):
            if method == hosted.DBT:
                hosted.point_dbt_at(layout, layout.increment_file(day))
                seconds, inner = hosted.dbt_snapshot(layout)
                shown = f"dbt reports {inner:.2f} s" if inner is not None else ""
            else:
                service.start()  # warm, as every command after the day's first finds it
                seconds, lines = hosted.zipper(layout, "merge", NAME, "--ds", day.isoformat())
                shown = lines[-1] if lines else ""
            if n >= warmup:
                samples[method].append(seconds)
            print(f"    {method:<24} {seconds:6.2f} s  {shown}", flush=True)
    return samples


def main(argv=None) -> int:
    args = parse_args(argv)

    stop_on_sigterm()
    load_at_start = os.getloadavg()
    dbt_version = None if args.no_dbt else hosted.ensure_dbt_venv()
    layout = hosted.Layout(Path(tempfile.mkdtemp(prefix="zipper-bench-small-")))
    warm_days = args.warmup_merges + args.merges
    process_days = args.warmup + args.rounds
    every_day = [replay.START + dt.timedelta(days=n) for n in range(max(warm_days + 1, process_days))]
    print(f"{hosted.machine_line(load_at_start)}; {layout.root}", flush=True)
    environment_for_commands()
    try:
        generate(layout.root, args.rows, len(every_day), args.changed, args.new)
        replay.write_spec(layout.root, len(every_day))
        twin_spec(layout, WARM)
        for table in (NAME, WARM):
            seconds, _ = hosted.zipper(layout, "init", table)
            print(f"init {table}: {seconds:.1f} s (not counted; the metastore and Spark servers started)", flush=True)
        if not args.no_dbt:
            hosted.snapshot_base(layout)
        print("  whole processes, clients of the warm server:", flush=True)
        samples = process_rounds(layout, every_day[:process_days], args.warmup, not args.no_dbt)
        print("  the warm session:", flush=True)
        timed, profiled = warm_session(layout, every_day[:warm_days], args.warmup_merges)
        notes = []
        if not args.no_dbt:
            closed = args.changed * args.rounds + args.changed * args.warmup
            totals = {"new": args.new * process_days, "changed": args.changed * process_days, "closed": closed}
            notes.append(hosted.check_dbt_against_zipper(layout, args.rows, totals))
        print()
        print(f"machine: {hosted.machine_line(load_at_start)}")
        print(
            f"zipper: {args.rows:,}-row table, days of {args.changed} changed + {args.new} new keys;"
            f" {'dbt left out' if args.no_dbt else f'dbt-core {dbt_version}'}"
        )
        warm = statistics.median(timed)
        print(f"warm session: median of {len(timed)} merges {warm:.3f} s  ({' '.join(f'{s:.2f}' for s in timed)})")
        for line in profiled:
            print(f"  {line}")
        result = f"RESULT rows={args.rows} day_rows={args.changed + args.new} warm_merge={warm:.3f}s"
        merged = statistics.median(samples[hosted.MERGE_CONNECT])
        shown = " ".join(f"{s:.2f}" for s in samples[hosted.MERGE_CONNECT])
        print(f"merge process (warm server): median {merged:.2f} s ({shown})")
        result += f" merge_process={merged:.2f}s"
        if not args.no_dbt:
            dbt = statistics.median(samples[hosted.DBT])
            print(f"dbt snapshot process: median {dbt:.2f} s ({' '.join(f'{s:.2f}' for s in samples[hosted.DBT])})")
            print(f"merge process/dbt snapshot {merged / dbt:.2f}")
            result += f" dbt_snapshot={dbt:.2f}s process/dbt={merged / dbt:.2f}"
        for note in notes:
            print(note)
        print(result)
        return 1 if any("DIFFERENT" in n for n in notes) else 0
    finally:
        hosted.stop_servers(layout)
        if args.keep:
            print(f"kept {layout.root}")
        else:
            shutil.rmtree(layout.root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
