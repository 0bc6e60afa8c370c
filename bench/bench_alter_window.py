"""Measurement: what a reader sees while `zipper alter` renames or drops a column.

An alter publishes in two metastore calls: every partition re-pointed at files under the new
column names (one `alter_partitions`), then the table's own column list edited (one
`alter_table`, two on a Hive 2 metastore for a drop that moves types). Between the two, a reader
whose query takes the table's columns before the second call and reads the new files sees the
renamed or dropped column as NULL. This run measures that window and counts such reads:

  alters   `--alters` renames of `city` to `town` and back, then one drop of `level`, on a
           generated `--rows`-row table, in this process (a Spark Connect client of the
           warehouse's warm server); the time from the end of the first call to the end of the
           last is recorded for each;
  reader   meanwhile a second Spark Connect session reads the table in a loop (`SELECT *`) and
           counts the reads in which a column that every row fills holds a NULL.

    .venv/bin/python bench/bench_alter_window.py              # the figures of docs/alter.md
    .venv/bin/python bench/bench_alter_window.py --alters 4   # smoke run
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import bench_metastore as hosted  # noqa: E402  (bench/ is not a package on the path when run as a script)
import bench_replay as replay  # noqa: E402
from bench_small import environment_for_commands  # noqa: E402
from benchkit import stop_on_sigterm  # noqa: E402

NAME = replay.NAME
FILLED = ("city", "town", "level")  # every row of the generated table fills these (under either name)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows in the generated table")
    parser.add_argument("--alters", type=int, default=20, help="renames (city to town and back) before the drop")
    return parser.parse_args(argv)


class Reader(threading.Thread):
    """Reads the table in a loop until stopped; counts reads, and reads with a NULL in a filled column."""

    def __init__(self, url: str, table: str):
        super().__init__(daemon=True)
        self.url, self.table = url, table
        self.reads = self.half_seen = self.failed = 0
        self.examples: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(self.url).create()
        try:
            while not self.stop.is_set():
                try:
                    rows = spark.table(self.table).toArrow()  # one query, as a reader's SELECT * is
                    filled = [c for c in rows.column_names if c in FILLED]
                    row = {c: rows.column(c).null_count for c in filled}
                except Exception as error:  # noqa: BLE001 - a read refused mid-change counts as failed, not seen
                    self.failed += 1
                    if len(self.examples) < 3:
                        self.examples.append(f"failed: {str(error).splitlines()[0][:160]}")
                    continue
                self.reads += 1
                nulls = {c: row[c] for c in filled if row[c]}
                if nulls:
                    self.half_seen += 1
                    if len(self.examples) < 3:
                        self.examples.append(f"NULL in {nulls}")
        finally:
            spark.stop()


def main(argv=None) -> int:
    args = parse_args(argv)
    from zipper.core.alter import AlterKind, AlterRequest
    from zipper.jobs.handle import ZipperTable
    from zipper.runtime.session import build_session, release_session, server_url
    from zipper.runtime.settings import SessionSettings, SparkRunner
    from zipper.table import catalog
    from zipper.tablespec.loader import find_spec

    stop_on_sigterm()
    load_at_start = os.getloadavg()
    layout = hosted.Layout(Path(tempfile.mkdtemp(prefix="zipper-bench-alter-")))
    print(f"{hosted.machine_line(load_at_start)}; {layout.root}", flush=True)
    windows: dict[str, list[float]] = {"rename": [], "drop": []}
    marks: dict[str, float] = {}
    # the two calls' ends: the partitions' publish, and the columns' write (`planned_column_edit`'s
    # returned call where the version plans it, else `edit_data_columns`)
    patched = [n for n in ("repoint", "edit_data_columns", "planned_column_edit") if hasattr(catalog, n)]
    originals = {name: getattr(catalog, name) for name in patched}

    def marked(call, mark):
        def wrapped(*a, **k):
            try:
                return call(*a, **k)
            finally:
                marks[mark] = time.perf_counter()

        return wrapped

    replacements = {
        "repoint": marked(originals["repoint"], "repoint"),
        "edit_data_columns": marked(originals["edit_data_columns"], "columns"),
        "planned_column_edit": lambda *a, **k: marked(originals["planned_column_edit"](*a, **k), "columns"),
    }

    environment_for_commands()
    try:
        replay.generate(layout.root, args.rows, 1)
        replay.write_spec(layout.root, 1)
        seconds, _ = hosted.zipper(layout, "init", NAME)
        print(f"init: {seconds:.1f} s (the metastore and Spark servers started)", flush=True)
        settings = SessionSettings(warehouse=str(layout.warehouse), app_name="bench_alter", runner=SparkRunner.SERVER)
        spark = build_session(settings)
        _, spec = find_spec(NAME, str(layout.root / "specs"))
        reader = Reader(server_url(settings), spec.table)
        reader.start()
        for name in patched:
            setattr(catalog, name, replacements[name])
        try:
            table = ZipperTable(spark, spec)
            names = ("city", "town")
            for n in range(args.alters):
                old, new = names[n % 2], names[(n + 1) % 2]
                table.alter(AlterRequest(AlterKind.RENAME, old, new))
                windows["rename"].append(marks["columns"] - marks["repoint"])
            table.alter(AlterRequest(AlterKind.DROP, "level"))
            windows["drop"].append(marks["columns"] - marks["repoint"])
            time.sleep(1)
        finally:
            for name in patched:
                setattr(catalog, name, originals[name])
            reader.stop.set()
            reader.join(timeout=60)
            release_session(spark)
        print()
        print(f"machine: {hosted.machine_line(load_at_start)}")
        for kind, seconds in windows.items():
            shown = " ".join(f"{s * 1000:.0f}" for s in seconds)
            print(
                f"{kind}: {len(seconds)} alters; window ms median {statistics.median(seconds) * 1000:.0f}"
                f", max {max(seconds) * 1000:.0f} ({shown})"
            )
        print(
            f"reader: {reader.reads} reads, {reader.half_seen} with a NULL in a filled column, {reader.failed} failed"
        )
        for example in reader.examples:
            print(f"  {example}")
        rename, drop = statistics.median(windows["rename"]), windows["drop"][0]
        print(
            f"RESULT rows={args.rows} rename_window_ms={rename * 1000:.0f} drop_window_ms={drop * 1000:.0f}"
            f" reads={reader.reads} half_seen={reader.half_seen} failed={reader.failed}"
        )
        return 0
    finally:
        hosted.stop_servers(layout)
        shutil.rmtree(layout.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
