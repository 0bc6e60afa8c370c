"""Benchmark: a row-level correction against a plain copy of the partitions it rewrites.

A table of `--keys` keys (default 2,500,000), each with a closed version in one of 30 history
partitions and an open version: 5,000,000 rows. A correction touching 1% of the keys (spread
over every partition) is timed side by side with its floor, in one local SparkSession built
like the CLI's, alternating, median of `--repeats` rounds after one warm-up round:

  copy    read the partitions the correction rewrites (all 31) through the metastore and write
          them back as Parquet: what any rewrite of those partitions must do;
  erase   `zipper correct --keys-file` of 1% of the keys (both versions of each removed);
  fix     `zipper correct --set note=fixed --where "bucket = 7"` (1% of the keys, both versions).

Each correction writes fresh directories, audits and publishes; the table is put back between
rounds by pointing its partitions at the directories it had (a correction never changes them).

    .venv/bin/python bench/bench_correct.py                       # 5,000,000 rows, 1 + 3 rounds
    .venv/bin/python bench/bench_correct.py --keys 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import stop_on_sigterm  # noqa: E402  (bench/ is not a package on the path when run as a script)

DAYS = 30
BASE_DAY = dt.date(2024, 1, 1)
METHODS = ("copy", "erase", "fix")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=2_500_000, help="keys; each has two versions")
    parser.add_argument("--repeats", type=int, default=3, help="measured rounds after one warm-up round")
    args = parser.parse_args(argv)
    if args.keys < 10_000 or args.repeats < 1:
        parser.error("--keys must be >= 10000 and --repeats >= 1")
    return args


def day(n: int) -> dt.date:
    return BASE_DAY + dt.timedelta(days=n)


def make_table(spark, root: Path, keys: int):
    """A zipper table published as a rebuild would publish it: one closed version per key in
    the partition of day 1 + id % 30, and its successor open since that day."""
    from pyspark.sql import functions as F

    from zipper.jobs.init import init_table
    from zipper.table import publish, state
    from zipper.tablespec.model import TableSpec

    base = root / "base"
    spark.createDataFrame([], "id bigint, bucket int, city string, note string").write.parquet(str(base))
    spec = TableSpec.model_validate(
        dict(
            name="bench_correct",
            table="bench.bench_correct",
            keys=["id"],
            source=dict(mode="upsert", format="parquet", path=str(root / "incr" / "ds={{ ds }}")),
            base=dict(format="parquet", path=str(base)),
            start_date=day(1),
        )
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    init_table(spark, spec, day(0))
    st = state.read_state(spark, spec)
    run_id = state.new_run_id()
    run_root = state.run_dir(st, run_id)
    ids = spark.range(keys)
    changed = (F.col("id") % DAYS + 1).cast("int")
    changed_on = F.date_format(F.date_add(F.lit(day(0)), changed), "yyyy-MM-dd")
    columns = [F.col("id"), (F.col("id") % 100).cast("int").alias("bucket")]
    closed = ids.select(
        *columns,
        F.concat(F.lit("city_"), (F.col("id") % 97).cast("string")).alias("city"),
        F.lit("first").alias("note"),
        F.lit(day(0).isoformat()).alias("begin_dt"),
        F.concat(F.lit("zipper_closed_"), changed_on).alias("zipper_slot"),
    )
    opened = ids.select(
        *columns,
        F.concat(F.lit("town_"), (F.col("id") % 89).cast("string")).alias("city"),
        F.lit("second").alias("note"),
        changed_on.alias("begin_dt"),
        F.lit("zipper_open").alias("zipper_slot"),
    )
    closed.unionByName(opened).write.partitionBy("zipper_slot").parquet(run_root)
    per_day = {d: keys // DAYS + (1 if (d - 1) < keys % DAYS else 0) for d in range(1, DAYS + 1)}
    counts = {
        day(d): {
            "input": n,
            "new": 0,
            "changed": n,
            "unchanged": 0,
            "updated_in_place": 0,
            "closed": n,
            "open_before": keys,
            "open_after": keys,
        }
        for d, n in per_day.items()
    }
    closed_dirs = {day(d): f"{run_root}/zipper_slot=zipper_closed_{day(d).isoformat()}" for d in per_day}
    publish.publish_rebuild(
        spark,
        spec,
        st,
        publish.RebuildCommit(
            run_id,
            run_root,
            day(DAYS),
            f"{run_root}/zipper_slot=zipper_open",
            keys,
            closed_dirs,
            counts,
            {d: "bench" for d in closed_dirs},
            {state.INIT_DS: day(0).isoformat(), state.INIT_FINGERPRINT: "bench"},
        ),
    )
    return spec


def main(argv=None) -> None:
    stop_on_sigterm()
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="zipper-bench-correct-"))
    from zipper.runtime.metastore import MetastoreService

    try:
        with MetastoreService(root / "warehouse").for_this_run():  # stopped, by its pid, at the end
            run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args, root: Path) -> None:
    from pyspark.sql import functions as F

    from zipper.jobs import correct
    from zipper.runtime.session import build_session
    from zipper.runtime.settings import SessionSettings
    from zipper.table import catalog, state

    spark = build_session(SessionSettings(warehouse=str(root / "warehouse"), app_name="zipper bench correct"))
    started = time.monotonic()
    spec = make_table(spark, root, args.keys)
    made = state.read_state(spark, spec)
    print(f"table of {2 * args.keys} rows in {DAYS + 1} partitions made in {time.monotonic() - started:.0f} s")
    keys_file = root / "erase.csv"
    erased = range(7, args.keys, 100)  # 1% of the keys, every partition
    keys_file.write_text("id\n" + "\n".join(str(k) for k in erased) + "\n")
    outputs = iter(range(1_000_000))

    def put_back() -> None:
        catalog.repoint(spark, spec, [made.open_partition, *made.closed], expected_run=None)

    def copy() -> None:
        touched = [p.end for p in [made.open_partition, *made.closed]]
        rows = spark.table(spec.table).where(F.col(spec.end_column).isin(touched))
        rows.write.partitionBy(spec.end_column).parquet(str(root / "copy" / str(next(outputs))))

    def erase() -> None:
        request = correct.Request("erase", "bench", "bench", keys_file=str(keys_file))
        result = correct.correct(spark, spec, request)
        assert result.counts["removed"] == 2 * len(erased), result.counts

    def fix() -> None:
        request = correct.Request("set", "bench", "bench", where="bucket = 7", assignments=("note=fixed",))
        result = correct.correct(spark, spec, request)
        assert result.counts["changed"] == 2 * len(erased), result.counts

    runs = {"copy": copy, "erase": erase, "fix": fix}
    samples: dict[str, list[float]] = {m: [] for m in METHODS}
    for round_no in range(args.repeats + 1):
        for method in METHODS:
            put_back()
            began = time.monotonic()
            runs[method]()
            seconds = time.monotonic() - began
            if round_no > 0:
                samples[method].append(seconds)
            print(f"round {round_no}{' (warm-up)' if round_no == 0 else ''}: {method} {seconds:.1f} s", flush=True)
    median = {m: statistics.median(s) for m, s in samples.items()}
    for m in METHODS:
        print(f"{m:6} median {median[m]:.1f} s  samples {[round(s, 1) for s in samples[m]]}")
    print(
        f"RESULT rows={2 * args.keys} partitions={DAYS + 1} copy={median['copy']:.1f}s erase={median['erase']:.1f}s"
        f" fix={median['fix']:.1f}s erase/copy={median['erase'] / median['copy']:.2f}"
        f" fix/copy={median['fix'] / median['copy']:.2f}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
