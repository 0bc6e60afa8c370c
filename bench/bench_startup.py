"""Benchmark: a daily `zipper merge` in a fresh JVM, with and without the class data sharing archive.

Each scheduled merge is one new driver, which loads some 15,000 classes before it does any work.
Set-up makes an archive of them (zipper.devtools.jvm_archive); this measures what it saves, side by side
in one run: a generated dimension (default 1,000,000 rows; each day 1% changed keys and 0.2% new
keys, as bench_replay), then one `zipper merge NAME --ds D` per day, alternating
`ZIPPER_JVM_ARCHIVE=off` and the default (the archive), `--rounds` each. Printed: wall and engine
seconds of every merge, the medians and the ratio off/archive.

    .venv/bin/python bench/bench_startup.py                          # 1,000,000 rows, 3 rounds
    .venv/bin/python bench/bench_startup.py --rows 20000 --rounds 1  # smoke run, ~2 min
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_replay as replay  # noqa: E402  (bench/ is not a package on the path when run as a script)

from zipper.devtools import jvm_archive  # noqa: E402
from zipper.runtime import jvm  # noqa: E402

METHODS = ("no archive", "archive")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the base dimension")
    parser.add_argument("--rounds", type=int, default=3, help="merges per method")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.rounds < 1:
        parser.error("--rows must be >= 1000 and --rounds >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if jvm_archive.ensure_archive() is None:
        raise SystemExit("no class data sharing archive could be made; nothing to compare")
    root = Path(tempfile.mkdtemp(prefix="zipper-bench-startup-"))
    days = args.rounds * len(METHODS)
    saved = {k: os.environ.get(k) for k in (jvm.ARCHIVE_ENV, "SPARK_SUBMIT_OPTS")}
    try:
        replay.generate(root, args.rows, days)
        replay.write_spec(root, days)
        os.environ.pop("SPARK_SUBMIT_OPTS", None)  # only what the product itself sets
        seconds, _ = replay.zipper(root, "init", replay.NAME)
        print(
            f"{args.rows:,} rows, {days} days; init {seconds:.1f} s (not counted); {os.cpu_count()} cores", flush=True
        )
        wall: dict[str, list[float]] = {m: [] for m in METHODS}
        engine: dict[str, list[float]] = {m: [] for m in METHODS}
        for n in range(days):
            method = METHODS[n % len(METHODS)]
            if method == "no archive":
                os.environ[jvm.ARCHIVE_ENV] = "off"
            else:
                os.environ.pop(jvm.ARCHIVE_ENV, None)
            ds = (replay.START + dt.timedelta(days=n)).isoformat()
            seconds, lines = replay.zipper(root, "merge", replay.NAME, "--ds", ds)
            wall[method].append(seconds)
            engine[method].append(replay.per_date(lines)[ds][1])
            print(
                f"  merge {ds} {method:<11} {seconds:6.1f} s wall, {engine[method][-1]:5.1f} s in the engine",
                flush=True,
            )
        print()
        print(f"{'method':<12}{'median s':>10}{'engine s':>10}  samples s")
        for method in METHODS:
            print(
                f"{method:<12}{statistics.median(wall[method]):>10.2f}{statistics.median(engine[method]):>10.2f}  "
                + " ".join(f"{s:.1f}" for s in wall[method])
            )
        off, on = (statistics.median(wall[m]) for m in METHODS)
        print(
            f"RESULT rows={args.rows} rounds={args.rounds} no_archive={off:.2f}s archive={on:.2f}s"
            f" no_archive/archive={off / on:.2f}"
        )
        return 0
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
