"""The verbs that read a live table or tidy it: `status`, `slice`, `history`, `check`, `vacuum`.

They answer while a merge runs, with the last committed state. `status` reads the commit record
over thrift without a JVM; the others open Spark through the table's handle (Runner.table)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from zipper.cli import output
from zipper.cli.arguments import add_name, commit_count, non_negative, parse_date
from zipper.core.paths import user_path
from zipper.runtime import metastore

if TYPE_CHECKING:
    from zipper.cli.runner import Runner

EXIT_CHECK_FAILED = 3
EXIT_NO_VERSION = 4  # `history` of a key the table never held: as grep's "no match", apart from errors (1)


def status_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--recent", type=commit_count, default=10, help="how many recent commits to list (default 10)")


def run_status(runner: Runner) -> int:
    settings = runner.settings()
    # the warehouse's server answers over thrift: no JVM, no Spark
    if settings.metastore == metastore.MetastoreMode.LOCAL:
        from zipper.table import state, status, thrift_catalog  # on use: --help loads no table code

        with thrift_catalog.ThriftCatalog(metastore.local_uri(settings.warehouse_path)) as reader:
            st = state.state_from(reader, runner.spec)
        where = f"warehouse {settings.warehouse_path}"
        report = status.report(status.initialized(st, runner.spec, where), runner.spec, runner.args.recent)
    else:
        report = runner.table().status(runner.args.recent)
    print(json.dumps(report, indent=2))
    return 0


def slice_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument(
        "--as-of",
        required=True,
        dest="as_of",
        metavar="D",
        help="the table as of the end of this date, YYYY-MM-DD (base date .. last committed date)",
    )
    parser.add_argument(
        "--format",
        choices=output.format_choices(output.RowFormat.CSV, output.RowFormat.JSON, output.RowFormat.PARQUET),
        default=output.RowFormat.CSV.value,
        help="csv (default), json (one object per line) or parquet (needs --out DIR)",
    )
    parser.add_argument("--out", help="file to write (a directory for parquet); default stdout")


def run_slice(runner: Runner) -> int:
    as_of = parse_date(runner.args.as_of, "--as-of", runner.spec.table)
    df = runner.table().slice(as_of)
    output.write_rows(df, runner.args.format, runner.args.out, runner.spec.table)
    return 0


def history_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--key", action="append", required=True, metavar="COL=VALUE", help="repeat for composite keys")
    parser.add_argument(
        "--format",
        choices=output.format_choices(output.RowFormat.TABLE, output.RowFormat.CSV, output.RowFormat.JSON),
        default=output.RowFormat.TABLE.value,
        help="table (default, one line per version), csv or json (one object per line)",
    )


def run_history(runner: Runner) -> int:
    from zipper.table import inspect  # on use: the data path loads pyspark; --help does not

    table = runner.table()  # first: a landing zone's keys are only known once Spark has read them
    key = inspect.parse_key(table.spec, runner.args.key)
    columns, rows = output.collected(table.history(key))
    if not rows:  # an empty table or CSV header looked like a key with no columns set, and exited 0
        shown = ", ".join(f"{k}={key[k]}" for k in runner.spec.keys)
        print(f"zipper: {runner.spec.table}: no version of {shown}: the table never held this key", file=sys.stderr)
        return EXIT_NO_VERSION
    if runner.args.format == output.RowFormat.TABLE:
        output.print_table_rows(columns, rows, noun=("version", "versions"))
    else:
        output.write_text_rows(columns, rows, runner.args.format, None, runner.spec.table)
    return 0


def check_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)


def run_check(runner: Runner) -> int:
    report = runner.table().check()
    print(json.dumps(report, indent=2, default=str))
    if not report["ok"]:
        print(f"zipper: {runner.spec.table}: check failed: {', '.join(report['failed'])}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return 0


def vacuum_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--retention-days", type=non_negative, help="override the spec's retention_days")
    parser.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")


def run_vacuum(runner: Runner) -> int:
    report = runner.table().vacuum(runner.args.retention_days, runner.args.dry_run)
    verb = "would remove" if report["dry_run"] else "removed"
    for item in report["removed"]:  # what went (or would go): a dry run is a preview of exactly this
        print(f"{report['table']}: {verb} {user_path(item['directory'])} ({item['bytes']} bytes)")
    for copy in report.get("dry_run_copies", []):
        print(f"{report['table']}: {verb} {copy}, a killed dry run's copy of the table's metastore entry")
    young = f", {report['kept_young']} of them younger than an hour" if report.get("kept_young") else ""
    if report.get("purged_for_erasure"):
        young += f"; {report['purged_for_erasure']} removed before their retention: they held erased rows"
    n = len(report["removed"])
    print(
        f"{report['table']}: {verb} {n} director{'y' if n == 1 else 'ies'} ({report['removed_bytes']} bytes),"
        f" kept {report['kept']}{young}; retention {report['retention_days']} days"
    )
    return 0
