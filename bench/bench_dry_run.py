"""Benchmark: a rerun's dry run against the rerun itself, side by side.

On one generated dimension (default 1,000,000 rows, 30 days merged one by one; each day 1% changed
keys and 0.2% new keys, as bench_replay.py makes them), in one run, alternating A B B A (each
method first as often as the other):

  dry run  `zipper rerun NAME --from D1 --dry-run`: the 30 dates restored and replayed on a copy of
           the table's metastore entry, then compared with the table; nothing published;
  rerun    `zipper rerun NAME --from D1`: the same 30 dates restored and replayed on the table.

Each is one command's wall time (the same warehouse, the same Spark as every command uses). The
counts each date reports must agree between the two (checked). Everything lives in a fresh temp
directory that is deleted at the end (unless --keep).

    .venv/bin/python bench/bench_dry_run.py                         # 1,000,000 rows, 30 days, 4 rounds
    .venv/bin/python bench/bench_dry_run.py --rows 20000 --days 5   # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_replay import (  # bench/, the scripts' folder
    NAME,
    START,
    generate,
    per_date,
    stop_servers,
    write_spec,
    zipper,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30, help="days merged, then rerun (and dry-run) from the first")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the base dimension")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of both methods (A B, then B A, ...)")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, data) for inspection")
    args = parser.parse_args(argv)
    if args.days < 2 or args.rows < 1000 or args.rounds < 1:
        parser.error("--days must be >= 2, --rows >= 1000, --rounds >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="zipper-bench-dry-run-"))
    try:
        started = time.perf_counter()
        generate(root, args.rows, args.days)
        write_spec(root, args.days)
        dates = [(START + dt.timedelta(days=n)).isoformat() for n in range(args.days)]
        zipper(root, "init", NAME)
        for ds in dates:
            zipper(root, "merge", NAME, "--ds", ds)
        print(
            f"{args.rows:,} rows, {args.days} dates merged in {time.perf_counter() - started:.1f} s (not counted);"
            f" {os.cpu_count()} cores; {root}",
            flush=True,
        )
        times: dict[str, list[float]] = {"dry run": [], "rerun": []}
        counts: dict[str, dict] = {}
        arms = [("dry run", ["--dry-run"]), ("rerun", [])]
        for n in range(args.rounds):
            # A B, then B A: a command reads the files the one before it just read (the page cache),
            # so each method goes first as often as the other
            for name, extra in arms if n % 2 == 0 else arms[::-1]:
                seconds, lines = zipper(root, "rerun", NAME, "--from", dates[0], *extra)
                times[name].append(seconds)
                counts[name] = {d: text for d, (text, _) in per_date(lines).items()}
                print(f"  round {n + 1} {name:8}: {seconds:6.1f} s wall, {len(counts[name])} dates", flush=True)
        same = counts["dry run"] == counts["rerun"] and len(counts["rerun"]) == len(dates)
        dry, real = statistics.median(times["dry run"]), statistics.median(times["rerun"])
        print()
        print(f"{'method':<32}{'median s':>10}  runs s")
        for name, label in (("dry run", "zipper rerun --dry-run"), ("rerun", "zipper rerun")):
            shown = ", ".join(f"{s:.1f}" for s in times[name])
            print(f"{label:<32}{statistics.median(times[name]):>10.1f}  {shown}")
        print(f"dry run / rerun {dry / real:.2f}; same counts for every date: {'yes' if same else 'NO'}")
        print(
            f"RESULT days={args.days} rows={args.rows} dry_run={dry:.1f}s rerun={real:.1f}s ratio={dry / real:.2f}"
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
