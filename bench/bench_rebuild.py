"""Benchmark: a year of daily snapshots made a zipper table in one pass, against a rerun.

Teams moving to zipper often hold a history of daily full extracts and want the zipper table
they imply. This generates a base and N daily snapshots of one dimension (default 365 of 100,000
keys; each day 1% of the keys change their score, 0.2% new keys come, 0.1% leave, and some that
left come back) and times, side by side in one run, on one table:

  rebuild  `zipper rebuild NAME --to LAST` on a table that does not exist yet: it is created, the
           base loaded, and every snapshot computed in one pass and published at once;
  rerun    `zipper rerun NAME --from FIRST` on the rebuilt table: it restores the table to the base
           and replays every date through the daily merge in one application, publishing after
           each date (what a rebuild of a snapshot table had to be before).

Both are whole `zipper` processes, clients of the warehouse's Spark server (started before and
warmed by both commands on a small table of its own, untimed, so neither pays the server's
warm-up and the ratio compares the two passes alone). Each date's recorded counts and
each partition's rows must be the same after both (checked), and `zipper check` must pass after
each. The target: the rebuild at most 0.2x the rerun.

    .venv/bin/python bench/bench_rebuild.py                          # 365 snapshots of 100,000 keys
    .venv/bin/python bench/bench_rebuild.py --days 10 --rows 5000    # smoke run, ~3 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_replay as replay  # noqa: E402  (bench/ is not a package on the path when run as a script)
from benchkit import stop_on_sigterm  # noqa: E402

START = dt.date(2024, 1, 1)  # the first snapshot's date; the base is the state at START - 1
NAME = "bench_snapshots"
WARM_UP = "bench_warm_up"  # a small table both commands run on first, untimed
WARM_UP_ROWS, WARM_UP_DAYS = 2_000, 10
CITIES = np.array(replay.CITIES, dtype=object)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365, help="daily snapshots after the base")
    parser.add_argument("--rows", type=int, default=100_000, help="keys in the base")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, data) for inspection")
    args = parser.parse_args(argv)
    if args.days < 2 or args.rows < 1000:
        parser.error("--days must be >= 2 and --rows >= 1000")
    return args


# ---------------------------------------------------------------- data (numpy and pyarrow: no JVM here)


def write_snapshot(folder: Path, ids, cities, levels, scores) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    names = np.char.add("user_", ids.astype(str)).astype(object)
    table = pa.Table.from_arrays(
        [pa.array(ids, pa.int64()), pa.array(names), pa.array(cities), pa.array(levels, pa.int32()), pa.array(scores)],
        schema=replay.SCHEMA,
    )
    pq.write_table(table, folder / "part-00000.parquet")


def generate(root: Path, rows: int, days: int) -> int:
    """The base, then each day's full snapshot, under `root`/data; returns the rows written in all."""
    rng = np.random.default_rng(20240101)
    ids = np.arange(1, rows + 1, dtype=np.int64)
    cities = CITIES[rng.integers(0, len(CITIES), rows)]
    levels = rng.integers(0, 10, rows).astype(np.int32)
    scores = rng.integers(0, 10**9, rows, dtype=np.int64)
    present = np.ones(rows, dtype=bool)
    write_snapshot(root / "data" / "base", ids, cities, levels, scores)
    written, known = rows, rows
    for n in range(days):
        changed = rng.choice(known, rows // 100, replace=False)
        scores[changed] = rng.integers(0, 10**9, len(changed), dtype=np.int64)
        present[rng.choice(known, rows // 1000, replace=False)] = False  # leave (or stay gone)
        present[rng.choice(known, rows // 2000, replace=False)] = True  # come back (or stay)
        new = rows // 500
        ids = np.concatenate([ids, np.arange(known + 1, known + new + 1, dtype=np.int64)])
        cities = np.concatenate([cities, CITIES[rng.integers(0, len(CITIES), new)]])
        levels = np.concatenate([levels, rng.integers(0, 10, new).astype(np.int32)])
        scores = np.concatenate([scores, rng.integers(0, 10**9, new, dtype=np.int64)])
        present = np.concatenate([present, np.ones(new, dtype=bool)])
        known += new
        ds = START + dt.timedelta(days=n)
        write_snapshot(
            root / "data" / "incr" / f"ds={ds}", ids[present], cities[present], levels[present], scores[present]
        )
        written += int(present.sum())
    return written


def write_spec(specs: Path, name: str, data: Path, days: int) -> None:
    spec = {
        "name": name,
        "table": f"bench.{name}",
        "keys": ["user_id"],
        "source": {"mode": "snapshot", "format": "parquet", "path": str(data / "data" / "incr" / "ds={{ ds }}")},
        "base": {"format": "parquet", "path": str(data / "data" / "base")},
        "start_date": START.isoformat(),
        "end_date": last_date(days),
    }
    specs.mkdir(exist_ok=True)
    (specs / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def last_date(days: int) -> str:
    return (START + dt.timedelta(days=days - 1)).isoformat()


# ---------------------------------------------------------------- runs


def commits(root: Path, days: int) -> dict[str, dict]:
    """Each committed date's recorded counts, and each partition's rows, from `zipper status`."""
    _, lines = replay.zipper(root, "status", NAME, "--recent", str(days + 1))
    status = json.loads("\n".join(lines))
    return {c["ds"]: c["counts"] for c in status["recent_commits"]} | {
        p["end"]: p["rows"] for p in status["partitions"]
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    stop_on_sigterm()
    root = Path(tempfile.mkdtemp(prefix="zipper-bench-rebuild-"))
    try:
        started = time.perf_counter()
        rows = generate(root, args.rows, args.days)
        write_spec(root / "specs", NAME, root, args.days)
        generate(root / WARM_UP, WARM_UP_ROWS, WARM_UP_DAYS)
        write_spec(root / "specs", WARM_UP, root / WARM_UP, WARM_UP_DAYS)
        first, last = START.isoformat(), last_date(args.days)
        print(
            f"generated a base of {args.rows:,} keys and {args.days} snapshots, {rows:,} rows in all,"
            f" in {time.perf_counter() - started:.1f} s; {os.cpu_count()} cores; {root}",
            flush=True,
        )
        warm, _ = replay.zipper(root, "spark", "start")
        print(f"Spark server started in {warm:.1f} s (not counted)", flush=True)
        warm_up = replay.zipper(root, "rebuild", WARM_UP, "--to", last_date(WARM_UP_DAYS))[0]
        warm_up += replay.zipper(root, "rerun", WARM_UP, "--from", first)[0]
        print(f"both commands warmed the server on {WARM_UP} in {warm_up:.1f} s (not counted)", flush=True)

        rebuild_seconds, lines = replay.zipper(root, "rebuild", NAME, "--to", last)
        print(f"  rebuild --to {last}: {rebuild_seconds:.1f} s; {lines[-1] if lines else ''}", flush=True)
        rebuilt = commits(root, args.days)
        replay.zipper(root, "check", NAME)

        rerun_seconds, lines = replay.zipper(root, "rerun", NAME, "--from", first)
        print(f"  rerun --from {first}: {rerun_seconds:.1f} s for {len(lines)} lines of output", flush=True)
        rerun = commits(root, args.days)
        replay.zipper(root, "check", NAME)

        dates = [(START + dt.timedelta(days=n)).isoformat() for n in range(args.days)]
        same = rebuilt == rerun and all(d in rebuilt for d in dates)
        ratio = rebuild_seconds / rerun_seconds
        print()
        print(f"{'method':<34}{'total s':>10}{'per date s':>12}")
        print(f"{'zipper rebuild (one pass)':<34}{rebuild_seconds:>10.1f}{rebuild_seconds / args.days:>12.3f}")
        print(f"{'zipper rerun (one application)':<34}{rerun_seconds:>10.1f}{rerun_seconds / args.days:>12.3f}")
        print(f"rebuild/rerun {ratio:.3f}; same counts for every date: {'yes' if same else 'NO'}")
        print(
            f"RESULT days={args.days} rows={args.rows} snapshot_rows={rows} rebuild={rebuild_seconds:.1f}s"
            f" rerun={rerun_seconds:.1f}s rebuild/rerun={ratio:.3f} same_counts={same}"
        )
        return 0 if same else 1
    finally:
        replay.stop_servers(root)
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
