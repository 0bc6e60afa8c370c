"""Benchmark: how close can one pass over the open partition get to the copy floor?

The merge's big pass reads every open row once, looks its key up among the increment's keys
and writes it to one of two slots (`open`, or `touched` for the small job). This times, side by
side in one local SparkSession, alternating, median of the rounds after a warm-up round:

  copy      read the open partition and write it back as Parquet (bench_merge's floor);
  lookup    the same plus the broadcast key lookup, writing only the rows the increment does
            not name (one output): what any merge that reads each open row once must do;
  big pass  zipper's big pass as the merge runs it (`daily.route_open`, both slots written
            by one partitioned write);
  hashed    the big pass observing, as it writes, a row count and a sum of row hashes (the
            hash a dry run compares rows by): what recording each partition's content hash at
            every write would add to every merge.

lookup/copy bounds every single-pass design from below; big pass/copy is what zipper pays
before its small job, key validation and metastore calls.

    .venv/bin/python bench/bench_floor.py                     # 5,000,000 rows, 1 + 3 rounds
    .venv/bin/python bench/bench_floor.py --rows 200000 --repeats 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_merge as common  # noqa: E402  (bench/ is not a package on the path when run as a script)

METHODS = ("copy", "lookup", "big pass", "hashed")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows in the base dimension")
    parser.add_argument("--repeats", type=int, default=3, help="measured rounds after one warm-up round")
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.repeats < 1:
        parser.error("--rows must be >= 1000 and --repeats >= 1")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    layout = common.Layout(Path(tempfile.mkdtemp(prefix="zipper-floor-")))
    from zipper.runtime.metastore import MetastoreService

    server = MetastoreService(layout.warehouse)
    try:
        server.ensure()  # the warehouse's metastore server, stopped by its pid at the end
        run(args, layout)
    finally:
        server.stop()
        shutil.rmtree(layout.root, ignore_errors=True)


def run(args, layout: common.Layout) -> None:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from zipper.core.layout import SLOT, Slot
    from zipper.inputs import conform, dayinput
    from zipper.inputs.modes import mode_of
    from zipper.jobs.init import init_table
    from zipper.jobs.preview import row_digest
    from zipper.table import catalog, state
    from zipper.transforms import daily

    spark = common.start_session(layout)
    meter = common.HeapMeter(spark)
    common.generate(spark, layout, args.rows)
    spec = common.zipper_spec(layout, 0)
    init_table(spark, spec, common.DAY - dt.timedelta(days=1))
    st = state.read_state(spark, spec)
    located = mode_of(spec).locate(spark, spec, st, common.DAY)
    day = dayinput.prepare(
        dayinput.DayRequest(spark, spec, st, located, catalog.data_columns(spark, spec), str(layout.root / "scratch")),
        common.DAY,
    )
    open_schema = conform.struct_type(day.columns, spec.begin_column)
    outputs = iter(range(1_000_000))

    def target() -> str:
        return str(layout.root / "out" / str(next(outputs)))

    def open_rows():
        return spark.read.schema(open_schema).parquet(st.open_partition.location)

    def routed():
        return daily.route_open(open_rows(), day.changes, keys=spec.keys)

    def hashed_pass():
        rows = routed()
        observation = Observation(f"bench_hash_{next(outputs)}")
        digest = row_digest(rows.drop(SLOT)).cast("decimal(38,0)")
        observed = rows.observe(observation, F.count(F.lit(1)).alias("rows"), F.sum(digest).alias("hash"))
        observed.write.mode("append").partitionBy(SLOT).parquet(target())
        observation.get  # noqa: B018  (the figures, as a writer recording them would read them)

    def timed(write):
        started = time.perf_counter()
        write()
        return time.perf_counter() - started

    runs = {
        "copy": lambda: common.time_copy(spark, spec.table, target()),
        "lookup": lambda: timed(lambda: routed().where(F.col(SLOT) == Slot.OPEN).drop(SLOT).write.parquet(target())),
        "big pass": lambda: timed(lambda: routed().write.mode("append").partitionBy(SLOT).parquet(target())),
        "hashed": lambda: timed(hashed_pass),
    }
    print(
        f"{args.rows:,} open rows, increment of {day.rows:,} rows; Spark {spark.version},"
        f" {spark.sparkContext.defaultParallelism} cores",
        flush=True,
    )
    samples, discarded = common.Samples(), common.Samples()
    for round_no in range(args.repeats + 1):  # round 0 warms the JVM up for every method
        print(f"  {'warm-up round (not counted)' if round_no == 0 else f'round {round_no}/{args.repeats}'}", flush=True)
        for method in METHODS:
            common.measured(meter, samples if round_no else discarded, method, runs[method])
    spark.stop()
    report(samples)


def report(samples) -> None:
    base, base_cpu = samples.median("copy"), samples.cpu_median("copy")
    print()
    print(f"{'method':<10}{'median s':>10}{'/copy':>8}{'CPU s':>8}{'/copy':>8}  samples s")
    for method in METHODS:
        median, cpu_median = samples.median(method), samples.cpu_median(method)
        cpu_text = f"{cpu_median:>8.2f}{cpu_median / base_cpu:>8.2f}" if cpu_median and base_cpu else f"{'':>16}"
        print(
            f"{method:<10}{median:>10.2f}{median / base:>8.2f}{cpu_text}  "
            + " ".join(f"{s:.2f}" for s in samples.seconds[method])
        )
    ratios = " ".join(f"{m.replace(' ', '_')}/copy={samples.median(m) / base:.2f}" for m in METHODS[1:])
    print(f"RESULT {ratios}")


if __name__ == "__main__":
    main()
