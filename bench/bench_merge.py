"""Benchmark: one daily zipper merge against a copy floor and the article's hand-written SQL.

Three ways to move a dimension's open partition from D-1 to D, timed in one local SparkSession:

  copy     read the open partition and write it back as Parquet: the I/O any merge must pay,
           so merge/copy says how much the merge logic itself costs on top;
  article  the classic "left join + union all" INSERT OVERWRITE (sql/article_left_join_union_all.sql)
           on a plain Hive table holding the same rows: what zipper replaces;
  merge    zipper's merge_date through audit and publish.

The methods alternate inside each round, so drift on a shared machine (another Spark job, page
cache) hits all three alike, and the median of the rounds is reported. One warm-up round
(`--warmup`, left out of the medians) runs all three first, so that none is timed while the
JVM is still compiling its code. Everything
lives in a fresh temp directory that is deleted at the end (unless --keep).

    .venv/bin/python bench/bench_merge.py                          # 5,000,000 rows, 3 rounds
    .venv/bin/python bench/bench_merge.py --rows 200000 --repeats 1 --warmup 0  # smoke run

`--late N` times instead a table with `source.updated_at` and N days of history (each day changes
1% of the keys): the day after them, 1% of the keys changed, merged on two tables built alike,
once with every change at the day's time and once with every change late (older than its key's
open version, splitting versions in all N history partitions). Target: late/plain <= 1.5. It also
times a plain copy of those N partitions (read and written back, no logic): the least a day that
rewrites them could cost on top of the plain day, whatever the merge does.

    .venv/bin/python bench/bench_merge.py --rows 1000000 --late 30
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DAY = dt.date(2024, 6, 1)  # the merged date D; the base is the state at D - 1
DATABASE = "bench"
KEYS = ["user_id"]
BEGIN, END = "begin_dt", "end_dt"
OPEN_END = "9999-12-31"
CITIES = ["Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "Chengdu", "Wuhan", "Xi'an"]
METHODS = ("copy", "article", "merge")
MB = 1024 * 1024


# ---------------------------------------------------------------- setup


@dataclass(frozen=True)
class Layout:
    """Where everything goes inside the one temp directory, so cleanup is a single rmtree."""

    root: Path

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def base(self) -> str:
        return str(self.data / "base")

    def increment(self, day: dt.date) -> str:
        return str(self.data / "incr" / f"ds={day.isoformat()}")

    def copy_target(self, round_no: int) -> str:
        return str(self.root / "copy" / f"round_{round_no}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows in the base dimension")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each times copy, article and merge once")
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="rounds run first and left out of the medians (JIT and caches warm for all three)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, data) for inspection")
    parser.add_argument(
        "--late", type=int, default=0, help="history days: time a day of 1%% late changes against the same day on time"
    )
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.repeats < 1 or args.warmup < 0:
        parser.error("--rows must be >= 1000, --repeats >= 1 and --warmup >= 0")
    return args


def start_session(layout: Layout):
    """The session zipper builds for a driver of its own (no tuning), so the merge is timed as users
    run it. A classic driver in this process, whatever ZIPPER_SPARK_RUNNER says: the meter reads
    the driver JVM's heap and CPU, and a Spark Connect client has no JVM here (the default server
    runner failed the bench before its first round)."""
    from zipper.runtime.session import build_session
    from zipper.runtime.settings import SessionSettings, SparkRunner

    settings = SessionSettings(warehouse=str(layout.warehouse), app_name="zipper bench", runner=SparkRunner.DRIVER)
    spark = build_session(settings)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
    return spark


# ---------------------------------------------------------------- data


def dimension_rows(ids, version: int, updated):
    """Typed dimension rows derived from `id` alone, so base and increment agree on every key.

    `version` salts the hashes: version 1 of a key differs from version 0 in balance (and
    `updated`), so every re-sent key is a real change."""
    from pyspark.sql import functions as F

    def bucket(salt: str, size: int):
        return F.pmod(F.xxhash64(F.col("id"), F.lit(version), F.lit(salt)), F.lit(size))

    return ids.select(
        (F.col("id") + 1).alias("user_id"),
        F.concat(F.lit("user_"), F.col("id").cast("string")).alias("name"),
        F.element_at(F.array(*[F.lit(c) for c in CITIES]), (bucket("city", len(CITIES)) + 1).cast("int")).alias("city"),
        (bucket("balance", 100_000_000) / 100).cast("decimal(12,2)").alias("balance"),
        bucket("level", 10).cast("int").alias("level"),
        updated.alias("updated"),
    )


def generate(spark, layout: Layout, rows: int) -> dict[str, int]:
    """Base at D-1 plus the increment of D: 1% re-sent existing keys (changed), 0.2% new keys."""
    from pyspark.sql import functions as F

    yesterday = F.lit(DAY - dt.timedelta(days=1))
    base = dimension_rows(spark.range(rows), 0, F.date_sub(yesterday, (F.col("id") % 365).cast("int")))
    base.write.parquet(layout.base)

    changed, new = rows // 100, rows // 500
    step = rows // changed  # spread the changed keys evenly over the key space
    today = F.lit(DAY)
    changed_rows = dimension_rows(spark.range(changed).select((F.col("id") * step).alias("id")), 1, today)
    new_rows = dimension_rows(spark.range(rows, rows + new), 0, today)
    changed_rows.unionByName(new_rows).coalesce(1).write.parquet(layout.increment(DAY))
    return {"base": rows, "changed": changed, "new": new}


def register_increment(spark, layout: Layout) -> str:
    """The article SQL names its increment as a table; point one at the same Parquet files."""
    name = f"{DATABASE}.incr"
    spark.sql(f"CREATE TABLE `{DATABASE}`.`incr` USING parquet LOCATION '{layout.increment(DAY)}'")
    return name


def disk_mb(path: str) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / MB


# ---------------------------------------------------------------- the three methods


def zipper_spec(layout: Layout, round_no: int):
    """One table per round: a zipper table merges a date once, so each round needs a fresh one."""
    from zipper.tablespec.model import TableSpec

    return TableSpec.model_validate(
        dict(
            name=f"t_merge_{round_no}",
            table=f"{DATABASE}.t_merge_{round_no}",
            keys=KEYS,
            source=dict(mode="upsert", format="parquet", path=f"{layout.data}/incr/ds={{{{ ds }}}}"),
            base=dict(format="parquet", path=layout.base),
            start_date=DAY,
        )
    )


def data_columns(spark, layout: Layout) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in spark.read.parquet(layout.base).schema.fields]


def create_article_table(spark, layout: Layout, round_no: int, columns: list[tuple[str, str]]) -> str:
    """The article's own copy: a plain Hive table, base rows open since D-1. Not timed."""
    table = f"{DATABASE}.article_{round_no}"
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in columns)
    spark.sql(
        f"CREATE TABLE `{DATABASE}`.`article_{round_no}` ({ddl}, `{BEGIN}` STRING)"
        f" PARTITIONED BY (`{END}` STRING) STORED AS PARQUET"
    )
    names = ", ".join(f"`{name}`" for name, _ in columns)
    spark.sql(
        f"INSERT OVERWRITE TABLE `{DATABASE}`.`article_{round_no}` PARTITION (`{END}` = '{OPEN_END}')"
        f" SELECT {names}, '{(DAY - dt.timedelta(days=1)).isoformat()}' FROM parquet.`{layout.base}`"
    )
    return table


def article_sql(table: str, increment: str, columns: list[tuple[str, str]]) -> str:
    from zipper.core import sqltemplates

    return sqltemplates.render(
        "article_left_join_union_all.sql",
        table=table,
        columns=[name for name, _ in columns],
        keys=KEYS,
        begin_column=BEGIN,
        end_column=END,
        ds=DAY.isoformat(),
        open_end=OPEN_END,
        increment=increment,
    )


def split_insert(sql: str) -> tuple[str, str]:
    """(INSERT OVERWRITE ... PARTITION (...) header, the SELECT it writes) of the rendered article."""
    match = re.search(r"^(INSERT OVERWRITE TABLE .*?)$\n(.*)", sql, flags=re.M | re.S)
    if not match:
        raise ValueError("the article template no longer starts with INSERT OVERWRITE TABLE")
    return match.group(1), match.group(2)


def is_self_overwrite_refusal(exc: Exception) -> bool:
    text = str(exc).lower()
    return "overwrite" in text and "being read from" in text


@contextmanager
def article_settings(spark):
    """The article overwrites only the partitions it emits (dynamic partitions); zipper's session
    default is static, so switch for the article alone and restore afterwards."""
    previous = spark.conf.get("spark.sql.sources.partitionOverwriteMode")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.sql("SET hive.exec.dynamic.partition=true")
    spark.sql("SET hive.exec.dynamic.partition.mode=nonstrict")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", previous)


@dataclass
class Article:
    """Runs the article SQL; falls back to a staging table if Spark refuses to read and
    overwrite the same table in one statement (then both steps are timed together)."""

    staged: bool = False

    def run(self, spark, table: str, sql: str) -> float:
        with article_settings(spark):
            return self._run(spark, table, sql)

    def _run(self, spark, table: str, sql: str) -> float:
        if not self.staged:
            started = time.perf_counter()
            try:
                spark.sql(sql)
                return time.perf_counter() - started
            except Exception as exc:  # AnalysisException, raised before anything is written
                if not is_self_overwrite_refusal(exc):
                    raise
                self.staged = True
        return self._run_staged(spark, table, sql)

    @staticmethod
    def _run_staged(spark, table: str, sql: str) -> float:
        header, select = split_insert(sql)
        stage = f"`{DATABASE}`.`{table.split('.')[1]}_stage`"
        spark.sql(f"DROP TABLE IF EXISTS {stage}")
        started = time.perf_counter()
        spark.sql(f"CREATE TABLE {stage} USING parquet AS {select}")
        spark.sql(f"{header} SELECT * FROM {stage}")
        return time.perf_counter() - started


def time_copy(spark, table: str, target: str) -> float:
    """Read the open partition through the metastore and write it back: the I/O floor."""
    started = time.perf_counter()
    spark.table(table).where(f"`{END}` = '{OPEN_END}'").drop(END).write.parquet(target)
    return time.perf_counter() - started


def time_merge(spark, spec) -> tuple[float, object]:
    from zipper.jobs import merge

    started = time.perf_counter()
    result = merge.merge_date(spark, spec, DAY)
    return time.perf_counter() - started, result


def partition_counts(spark, table: str) -> dict[str, int]:
    """Rows per end partition, to check the article did the same work as the merge. Not timed."""
    return {row[0]: row[1] for row in spark.table(table).groupBy(END).count().collect()}


# ---------------------------------------------------------------- memory


class HeapMeter:
    """Peak JVM heap (sum over heap pools of each pool's peak) since the last reset.

    In local mode the driver JVM also runs the tasks, so this is the whole job's heap. Summing
    per-pool peaks can overstate the simultaneous peak a little; it never understates it."""

    def __init__(self, spark):
        jvm = spark._jvm
        self._pools = [
            p
            for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
            if str(p.getType().toString()) == "Heap memory"
        ]
        self._max = jvm.java.lang.Runtime.getRuntime().maxMemory()
        self._pid = jvm.java.lang.ProcessHandle.current().pid()

    def reset(self) -> None:
        for pool in self._pools:
            pool.resetPeakUsage()

    def peak_mb(self) -> float:
        return sum(p.getPeakUsage().getUsed() for p in self._pools) / MB

    @property
    def max_mb(self) -> float:
        return self._max / MB

    def cpu_seconds(self) -> float | None:
        """CPU time the JVM has used so far (user + system), when /proc has it. Less sensitive
        than wall time to other work on a shared machine, so the report gives both."""
        try:
            fields = Path(f"/proc/{self._pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def jvm_rss_peak_mb(self) -> float | None:
        """The JVM process's peak resident set (VmHWM), when /proc has it."""
        try:
            for line in Path(f"/proc/{self._pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None


def python_rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------- rounds


@dataclass
class Samples:
    """Per method (any names: bench_floor times other methods): seconds, JVM CPU, peak heap."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cpu_seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    peak_heap_mb: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, method: str, seconds: float, cpu_seconds: float | None, heap_mb: float) -> None:
        self.seconds[method].append(seconds)
        if cpu_seconds is not None:
            self.cpu_seconds[method].append(cpu_seconds)
        self.peak_heap_mb[method] = max(self.peak_heap_mb[method], heap_mb)

    def median(self, method: str) -> float:
        return statistics.median(self.seconds[method])

    def cpu_median(self, method: str) -> float | None:
        return statistics.median(self.cpu_seconds[method]) if self.cpu_seconds[method] else None


def prepare_round(spark, layout: Layout, round_no: int, columns) -> tuple[object, str]:
    """Fresh zipper table (init from the base) and fresh article table, both at D-1. Not timed."""
    from zipper.jobs.init import init_table

    spec = zipper_spec(layout, round_no)
    init_table(spark, spec)
    return spec, create_article_table(spark, layout, round_no, columns)


def measured(meter: HeapMeter, samples: Samples, method: str, run) -> object:
    """Run one timed method; `run` returns seconds or (seconds, result)."""
    meter.reset()
    cpu_before = meter.cpu_seconds()
    outcome = run()
    cpu_after = meter.cpu_seconds()
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    seconds, result = outcome if isinstance(outcome, tuple) else (outcome, None)
    samples.add(method, seconds, cpu, meter.peak_mb())
    print(f"    {method:<8} {seconds:8.2f} s" + (f"  JVM CPU {cpu:6.2f} s" if cpu is not None else ""), flush=True)
    return result


def run_rounds(
    spark, layout: Layout, repeats: int, warmup: int, increment: str, meter: HeapMeter
) -> tuple[Samples, Article]:
    """`warmup` rounds, then `repeats` measured ones. A warm-up round runs all three methods,
    so each has its code generated and compiled by the JVM before it is measured."""
    columns = data_columns(spark, layout)
    samples, discarded, article = Samples(), Samples(), Article()
    for round_no in range(1, warmup + repeats + 1):
        spec, article_table = prepare_round(spark, layout, round_no, columns)
        warming = round_no <= warmup
        label = (
            f"warm-up round {round_no}/{warmup} (not counted)" if warming else f"round {round_no - warmup}/{repeats}"
        )
        print(f"  {label}", flush=True)
        into = discarded if warming else samples
        sql = article_sql(article_table, increment, columns)
        measured(meter, into, "copy", lambda: time_copy(spark, spec.table, layout.copy_target(round_no)))  # noqa: B023 - measured() calls it at once
        measured(meter, into, "article", lambda: article.run(spark, article_table, sql))  # noqa: B023 - measured() calls it at once
        result = measured(meter, into, "merge", lambda: time_merge(spark, spec))  # noqa: B023 - measured() calls it at once
        print(f"    merge:   {result.summary()}")
        print(
            f"    article: rows per {END} {dict(sorted(partition_counts(spark, article_table).items()))}"
            + (" (staged: SELECT into a staging table, then INSERT OVERWRITE; both timed)" if article.staged else ""),
            flush=True,
        )
    return samples, article


# ---------------------------------------------------------------- report


def report(args, samples: Samples, article: Article, meter: HeapMeter) -> None:
    medians = {m: samples.median(m) for m in METHODS}
    print()
    print(f"{'method':<9}{'median s':>10}{'peak heap MB':>14}  samples s")
    for m in METHODS:
        label = m + ("*" if m == "article" and article.staged else "")
        shown = " ".join(f"{s:.2f}" for s in samples.seconds[m])
        print(f"{label:<9}{medians[m]:>10.2f}{samples.peak_heap_mb[m]:>14.0f}  {shown}")
    if article.staged:
        print("* Spark refused INSERT OVERWRITE reading its own target: SELECT staged to a table, both steps timed")
    merge_copy = medians["merge"] / medians["copy"]
    merge_article = medians["merge"] / medians["article"]
    cpu = {m: samples.cpu_median(m) for m in METHODS}
    if all(cpu.values()):
        print(
            "JVM CPU s (median): "
            + "   ".join(f"{m} {cpu[m]:.2f}" for m in METHODS)
            + f"   merge/copy {cpu['merge'] / cpu['copy']:.2f}   merge/article {cpu['merge'] / cpu['article']:.2f}"
        )
    peak_heap = max(samples.peak_heap_mb.values())
    jvm_rss = meter.jvm_rss_peak_mb()
    print(f"merge/copy {merge_copy:.2f}   merge/article {merge_article:.2f}")
    print(
        f"driver memory: peak heap {peak_heap:.0f} MB of {meter.max_mb:.0f} MB max"
        + (f", JVM peak RSS {jvm_rss:.0f} MB" if jvm_rss is not None else "")
        + f", Python peak RSS {python_rss_peak_mb():.0f} MB"
    )
    print(
        f"RESULT rows={args.rows} copy={medians['copy']:.1f}s article={medians['article']:.1f}s"
        f" merge={medians['merge']:.1f}s merge/copy={merge_copy:.2f} merge/article={merge_article:.2f}"
        f" peak_driver_heap={peak_heap:.0f}MB python_rss={python_rss_peak_mb():.0f}MB"
    )


# ---------------------------------------------------------------- late changes (--late)


def late_spec(layout: Layout, name: str):
    """A table with `source.updated_at`: every change of a key its own version, validity from `updated`."""
    from zipper.tablespec.model import TableSpec

    return TableSpec.model_validate(
        dict(
            name=name,
            table=f"{DATABASE}.{name}",
            keys=KEYS,
            source=dict(
                mode="upsert", format="parquet", path=f"{layout.data}/{name}/ds={{{{ ds }}}}", updated_at="updated"
            ),
            base=dict(format="parquet", path=layout.base),
            start_date=DAY,
        )
    )


def run_late(spark, layout: Layout, rows: int, days: int) -> dict[str, float]:
    """Two tables built alike over `days` days (day n changes the 1% of keys with id % 100 == n,
    closing their base version in that day's partition: a table whose history partitions each
    hold 1% of its rows), then the last day: 1% of the keys, spread evenly over the days' keys,
    changed at that day (plain) or at the day before the one their base version closed (late:
    each splits a version in one of the `days` partitions)."""
    from pyspark.sql import functions as F

    from zipper.jobs import merge
    from zipper.jobs.init import init_table

    if not 1 <= days <= 100:
        raise SystemExit("--late takes 1 to 100 history days")
    base = dimension_rows(spark.range(rows), 0, F.date_sub(F.lit(DAY), 400 + (F.col("id") % 365).cast("int")))
    base.write.parquet(layout.base)
    dates = [DAY + dt.timedelta(days=n) for n in range(days + 1)]
    specs = {kind: late_spec(layout, f"t_late_{kind}") for kind in ("plain", "late")}
    for n, date in enumerate(dates[:-1]):
        day_rows = dimension_rows(spark.range(rows).where(F.col("id") % 100 == n), 1, F.lit(date))
        for spec in specs.values():
            day_rows.coalesce(1).write.parquet(f"{layout.data}/{spec.name}/ds={date}")
    last = dates[-1]
    # 1% of the keys: id = 100 k + k % days, so id % 100 spreads them evenly over the history days
    chosen = spark.range(0, rows // 100).select((F.col("id") * 100 + F.col("id") % days).alias("id"))
    when = F.element_at(
        F.array(*[F.lit(d - dt.timedelta(days=1)) for d in dates[:-1]]), (F.col("id") % 100 + 1).cast("int")
    )
    dimension_rows(chosen, 2, F.lit(last)).coalesce(1).write.parquet(f"{layout.data}/t_late_plain/ds={last}")
    dimension_rows(chosen, 2, when).coalesce(1).write.parquet(f"{layout.data}/t_late_late/ds={last}")
    started = time.perf_counter()
    for spec in specs.values():
        init_table(spark, spec)
        for date in dates[:-1]:
            merge.merge_date(spark, spec, date)
    print(f"built two tables of {days} history days in {time.perf_counter() - started:.1f} s", flush=True)
    seconds = {}
    for kind in ("plain", "late"):
        started = time.perf_counter()
        result = merge.merge_date(spark, specs[kind], last)
        seconds[kind] = time.perf_counter() - started
        print(f"  {kind:<6} {seconds[kind]:8.2f} s  {result.summary()}", flush=True)
    seconds["copy"] = copy_history(spark, layout, specs["late"], dates[-1])
    print(
        f"RESULT rows={rows} history_days={days} plain={seconds['plain']:.1f}s late={seconds['late']:.1f}s"
        f" late/plain={seconds['late'] / seconds['plain']:.2f} history_copy={seconds['copy']:.1f}s"
        f" (plain+copy)/plain={(seconds['plain'] + seconds['copy']) / seconds['plain']:.2f}"
    )
    return seconds


def copy_history(spark, layout: Layout, spec, last: dt.date) -> float:
    """The least a day that rewrites the history partitions costs on top of a day without: one Spark
    job that reads them (every closed partition but the day's) and writes them back, one directory
    each, with no logic at all. Timed twice; the faster is reported."""
    from pyspark.sql import functions as F

    end = spec.end_column
    history = spark.table(spec.table).where((F.col(end) < last.isoformat()) & (F.col(end) != spec.open_end.isoformat()))
    timings = []
    for n in range(2):
        started = time.perf_counter()
        history.repartition(F.col(end)).write.partitionBy(end).parquet(f"{layout.root}/history_copy_{n}")
        timings.append(time.perf_counter() - started)
    print(f"  copy of the history partitions (no logic) {min(timings):8.2f} s", flush=True)
    return min(timings)


def main(argv=None) -> int:
    args = parse_args(argv)
    layout = Layout(Path(tempfile.mkdtemp(prefix="zipper-bench-")))
    spark = None
    from zipper.runtime.metastore import MetastoreService

    server = MetastoreService(layout.warehouse)
    try:
        server.ensure()  # the warehouse's metastore server, stopped by its pid at the end
        spark = start_session(layout)
        if args.late:
            run_late(spark, layout, args.rows, args.late)
            return 0
        meter = HeapMeter(spark)
        started = time.perf_counter()
        sizes = generate(spark, layout, args.rows)
        print(
            f"generated base {sizes['base']:,} rows ({disk_mb(layout.base):.0f} MB Parquet),"
            f" increment {sizes['changed']:,} changed + {sizes['new']:,} new for {DAY}"
            f" in {time.perf_counter() - started:.1f} s; Spark {spark.version},"
            f" {spark.sparkContext.defaultParallelism} cores; {layout.root}",
            flush=True,
        )
        increment = register_increment(spark, layout)
        samples, article = run_rounds(spark, layout, args.repeats, args.warmup, increment, meter)
        report(args, samples, article, meter)
    finally:
        if spark is not None:
            spark.stop()
        server.stop()
        if args.keep:
            print(f"kept {layout.root}")
        else:
            shutil.rmtree(layout.root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
