"""Benchmark: replaying N days in one Spark application against N separate merge commands.

On-call reruns replay every date from D on. This measures, on one generated dimension
(default 200,000 rows; each day 1% changed keys and 0.2% new keys), side by side in one run:

  merges  N separate `zipper merge NAME --ds D` commands, one per day, each its own JVM (as a
          scheduler would run them one task at a time): the wall time of each command;
  rerun   one `zipper rerun NAME --from D1` on the same table afterwards: it restores the table
          to D1 - 1 and replays all N days in one application: its wall time, divided by N.

Both run the same dates on the same inputs through the same `zipper` command, so the counts
each date reports must agree (checked). Printed: per-day cost of each, the ratio, and the time
the engine itself reports per date (so the difference is start-up: JVM, Spark, metastore).
Everything lives in a fresh temp directory that is deleted at the end (unless --keep).

    .venv/bin/python bench/bench_replay.py                        # 30 days, 200,000 rows
    .venv/bin/python bench/bench_replay.py --days 5 --rows 20000  # smoke run, ~4 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

START = dt.date(2024, 6, 1)  # the first replayed date; the base is the state at START - 1
NAME = "bench_dim"
CITIES = ["Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "Chengdu", "Wuhan", "Xi'an"]
SCHEMA = pa.schema(
    [
        ("user_id", pa.int64()),
        ("name", pa.string()),
        ("city", pa.string()),
        ("level", pa.int32()),
        ("score", pa.int64()),
    ]
)
BIN = Path(sys.executable).parent
LINE = re.compile(r"^\S+ (\d{4}-\d{2}-\d{2}): (.*); ([\d.]+) s$")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30, help="days merged one by one, then replayed in one application")
    parser.add_argument("--rows", type=int, default=200_000, help="rows in the base dimension")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, data) for inspection")
    args = parser.parse_args(argv)
    if args.days < 2 or args.rows < 1000:
        parser.error("--days must be >= 2 and --rows >= 1000")
    return args


# ---------------------------------------------------------------- data (pyarrow: no JVM here)


def write_rows(folder: Path, rows: list[tuple]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    columns = list(zip(*rows)) if rows else [[] for _ in SCHEMA]
    pq.write_table(
        pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, SCHEMA)], schema=SCHEMA),
        folder / "part-00000.parquet",
    )


def generate(root: Path, rows: int, days: int) -> None:
    """Base at START - 1, then per day 1% re-sent existing keys with a new score (changed) and 0.2% new keys."""
    rng = random.Random(20240601)

    def row(user_id: int) -> tuple:
        return (user_id, f"user_{user_id}", rng.choice(CITIES), rng.randrange(10), rng.randrange(10**9))

    write_rows(root / "data" / "base", [row(i) for i in range(1, rows + 1)])
    known = rows
    for n in range(days):
        changed = rng.sample(range(1, known + 1), rows // 100)
        new = range(known + 1, known + 1 + rows // 500)
        known += len(new)
        write_rows(root / "data" / "incr" / f"ds={START + dt.timedelta(days=n)}", [row(i) for i in [*changed, *new]])


def write_spec(root: Path, days: int) -> None:
    spec = {
        "name": NAME,
        "table": f"bench.{NAME}",
        "keys": ["user_id"],
        "source": {"format": "parquet", "path": str(root / "data" / "incr" / "ds={{ ds }}")},
        "base": {"format": "parquet", "path": str(root / "data" / "base")},
        "start_date": START.isoformat(),
        "end_date": (START + dt.timedelta(days=days - 1)).isoformat(),
    }
    (root / "specs").mkdir()
    (root / "specs" / f"{NAME}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


# ---------------------------------------------------------------- runs


def zipper(root: Path, *args: str) -> tuple[float, list[str]]:
    """Run one `zipper` command; (wall seconds, stdout lines). Fails loudly."""
    env = dict(
        os.environ,
        ZIPPER_SPECS=str(root / "specs"),
        ZIPPER_WAREHOUSE=str(root / "warehouse"),
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
    )
    started = time.perf_counter()
    result = subprocess.run([str(BIN / "zipper"), *args], env=env, capture_output=True, text=True, cwd=root)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"zipper {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return seconds, result.stdout.splitlines()


def stop_servers(root: Path) -> None:
    """Stop the warehouse's Spark and metastore servers the commands started (by their recorded
    process ids), before the warehouse is deleted: they would otherwise outlive the benchmark."""
    env = dict(os.environ, ZIPPER_SPECS=str(root / "specs"), ZIPPER_WAREHOUSE=str(root / "warehouse"))
    for service in ("spark", "metastore"):
        subprocess.run([str(BIN / "zipper"), service, "stop"], env=env, capture_output=True, cwd=root, timeout=300)


def per_date(lines: list[str]) -> dict[str, tuple[str, float]]:
    """date -> (counts text, seconds the engine reported) from merge summary lines."""
    found = {}
    for line in lines:
        match = LINE.match(line)
        if match and " new, " in match.group(2):
            found[match.group(1)] = (match.group(2), float(match.group(3)))
    return found


def main(argv=None) -> int:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="zipper-bench-replay-"))
    try:
        started = time.perf_counter()
        generate(root, args.rows, args.days)
        write_spec(root, args.days)
        dates = [(START + dt.timedelta(days=n)).isoformat() for n in range(args.days)]
        print(
            f"generated {args.rows:,} rows and {args.days} increments of {args.rows // 100 + args.rows // 500:,} rows"
            f" in {time.perf_counter() - started:.1f} s; {os.cpu_count()} cores; {root}",
            flush=True,
        )

        init_seconds, _ = zipper(root, "init", NAME)
        print(f"init {init_seconds:.1f} s (not counted)", flush=True)

        merge_seconds, merged = [], {}
        for ds in dates:
            seconds, lines = zipper(root, "merge", NAME, "--ds", ds)
            merge_seconds.append(seconds)
            merged.update(per_date(lines))
            print(f"  merge {ds}: {seconds:6.1f} s wall, {merged[ds][1]:5.1f} s in the engine", flush=True)

        rerun_seconds, lines = zipper(root, "rerun", NAME, "--from", dates[0])
        replayed = per_date(lines)
        restore = next((line for line in lines if ": restored to " in line), "")
        print(f"  rerun --from {dates[0]}: {rerun_seconds:.1f} s wall for {len(replayed)} dates; {restore}", flush=True)

        same = all(merged[d][0] == replayed[d][0] for d in dates) and len(replayed) == len(dates)
        merge_day = statistics.mean(merge_seconds)
        rerun_day = rerun_seconds / len(dates)
        engine_merge = statistics.mean(merged[d][1] for d in dates)
        engine_replay = statistics.mean(replayed[d][1] for d in dates)
        print()
        print(f"{'method':<28}{'per day s':>10}{'engine s/day':>14}{'total s':>10}")
        print(f"{f'{len(dates)} x zipper merge':<28}{merge_day:>10.2f}{engine_merge:>14.2f}{sum(merge_seconds):>10.1f}")
        print(f"{'zipper rerun (1 application)':<28}{rerun_day:>10.2f}{engine_replay:>14.2f}{rerun_seconds:>10.1f}")
        print(
            f"merges/rerun per day {merge_day / rerun_day:.2f}; same counts for every date: {'yes' if same else 'NO'}"
        )
        print(
            f"RESULT days={len(dates)} rows={args.rows} merge_per_day={merge_day:.2f}s rerun_per_day={rerun_day:.2f}s"
            f" ratio={merge_day / rerun_day:.2f} engine_merge={engine_merge:.2f}s engine_replay={engine_replay:.2f}s"
            f" same_counts={same}"
        )
        return 0 if same else 1
    finally:
        stop_servers(root)
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
