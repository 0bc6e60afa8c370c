"""The verbs that run a Spark job writing the table: `init`, `adopt`, `merge`, `rerun`, `rebuild`, `correct`, `alter`.

Each has its arguments, the check of its dates (made before the table's lock or Spark, so that a
typo costs nothing) and its run. The jobs run through the table handle (`runner.table()`), imported on use: `--help` loads no pyspark."""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import os
import sys
from typing import TYPE_CHECKING

from zipper.cli.arguments import (
    add_accept_large_change,
    add_dry_run,
    add_json_report,
    add_name,
    add_profile,
    add_replay_flags,
    parse_date,
)
from zipper.cli.runner import progress
from zipper.core.alter import AlterRequest
from zipper.core.corrections import CorrectionKind, CorrectionRequest
from zipper.core.reports import EXIT_NOT_NOOP, dry_run_lines
from zipper.jobs.plan import check_in_schedule
from zipper.runtime import metastore

if TYPE_CHECKING:
    from zipper.cli.runner import Runner

# -- init ---------------------------------------------------------------------------------------


def init_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--ds", help="the base holds the state at the end of this date (default: start_date - 1)")


def init_dates(runner: Runner) -> None:
    parse_date(runner.args.ds, "--ds", runner.spec.table)


def run_init(runner: Runner) -> int:
    ds = parse_date(runner.args.ds, "--ds", runner.spec.table)
    print(runner.table().init(ds).summary())
    return 0


# -- adopt --------------------------------------------------------------------------------------


def adopt_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument(
        "--through", required=True, metavar="D", help="the adopted table holds every change up to this date"
    )
    parser.add_argument(
        "--allow-gaps", action="store_true", help="keep a key's gaps between versions (deleted, then back)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", dest="dry_run", help="read and check the table, print what would be adopted"
    )


def adopt_dates(runner: Runner) -> None:
    parse_date(runner.args.through, "--through", runner.spec.table)


def run_adopt(runner: Runner) -> int:
    through = parse_date(runner.args.through, "--through", runner.spec.table)
    result = runner.table().adopt(through, allow_gaps=runner.args.allow_gaps, dry_run=runner.args.dry_run)
    print(result.summary())
    return 0


# -- merge --------------------------------------------------------------------------------------


def merge_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--ds", required=True, help="the run date, YYYY-MM-DD")
    add_accept_large_change(parser)
    add_json_report(parser)
    add_dry_run(parser, "write and audit the date")
    add_profile(parser)
    parser.add_argument(
        "--no-spark",
        action="store_true",
        dest="no_spark",
        help="only a no-op told without Spark (the date committed with the same input): otherwise do nothing"
        f" and exit {EXIT_NOT_NOOP}",
    )


def merge_dates(runner: Runner) -> None:
    check_in_schedule(runner.spec, parse_date(runner.args.ds, "--ds", runner.spec.table))


def run_merge(runner: Runner) -> int:
    spec = runner.spec
    ds = parse_date(runner.args.ds, "--ds", spec.table)
    check_in_schedule(spec, ds)  # a date outside the spec's dates fails before Spark starts
    result = None if runner.args.dry_run else noop_without_spark(runner, ds)
    if result is None and runner.args.no_spark:
        print(
            f"zipper: {spec.table} {ds}: not a no-op told without Spark; nothing was done"
            f" (exit {EXIT_NOT_NOOP}): merge it without --no-spark",
            file=sys.stderr,
        )
        return EXIT_NOT_NOOP
    if result is None:
        result = runner.table().merge(
            ds, progress=progress, accept_large_change=runner.args.accept_large_change, dry_run=runner.args.dry_run
        )
    print_result(result)
    runner.report(result)
    return 0


def print_result(result) -> None:
    """The run's summary; a dry run's also the guard's verdict and the sample of keys it would change."""
    print(result.summary())
    if result.counts.get("dry_run"):
        for line in dry_run_lines(result.table, result.ds, result.counts["sample"], result.counts.get("guard")):
            print(line)


def noop_without_spark(runner: Runner, ds: dt.date):
    """The merge's no-op result when the warehouse's metastore server and a plain listing of the
    input tell that `ds` is committed with the same input (jobs.noop); None otherwise."""
    settings = runner.settings()
    if settings.metastore != metastore.MetastoreMode.LOCAL or not settings.has_metastore():
        return None
    from zipper.jobs import noop  # on use: --help loads no table code
    from zipper.table.thrift_catalog import ThriftCatalog

    with ThriftCatalog(metastore.local_uri(settings.warehouse_path)) as reader:
        return noop.committed_noop(runner.spec, ds, reader)


# -- rerun and rebuild --------------------------------------------------------------------------


def rerun_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument("--from", required=True, dest="first", metavar="D", help="first date to replay, YYYY-MM-DD")
    parser.add_argument("--to", dest="last", metavar="E", help="last date to replay (default: the last committed date)")
    add_replay_flags(parser)
    add_accept_large_change(parser)
    add_json_report(parser)
    add_dry_run(parser, "replay the dates on a copy of the table's metastore entry")
    add_profile(parser)


def rerun_dates(runner: Runner) -> None:
    parse_date(runner.args.last, "--to", runner.spec.table)
    check_in_schedule(runner.spec, parse_date(runner.args.first, "--from", runner.spec.table))


def run_rerun(runner: Runner) -> int:
    args, spec = runner.args, runner.spec
    first = parse_date(args.first, "--from", spec.table)
    last = parse_date(args.last, "--to", spec.table)
    check_in_schedule(spec, first)  # before Spark starts
    result = runner.table().rerun(
        first,
        last,
        progress=progress,
        uncommit_later=args.uncommit_later,
        undo_corrections=args.undo_corrections,
        accept_large_change=args.accept_large_change,
        dry_run=args.dry_run,
    )
    print_result(result)
    runner.report(result)
    return 0


def rebuild_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument(
        "--to",
        dest="last",
        metavar="E",
        help="last date to build (default: the last committed date; required for a new table)",
    )
    add_replay_flags(parser)
    add_dry_run(parser, "rebuild on a copy of the table's metastore entry")
    add_profile(parser)


def rebuild_dates(runner: Runner) -> None:
    parse_date(runner.args.last, "--to", runner.spec.table)


def run_rebuild(runner: Runner) -> int:
    last = parse_date(runner.args.last, "--to", runner.spec.table)
    result = runner.table().rebuild(
        last,
        progress=progress,
        uncommit_later=runner.args.uncommit_later,
        undo_corrections=runner.args.undo_corrections,
        dry_run=runner.args.dry_run,
    )
    print_result(result)
    return 0


# -- correct ------------------------------------------------------------------------------------

CORRECT_DESCRIPTION = (
    "Row-level corrections, published in one metastore transaction (docs/corrections.md)."
    " One of: --erase-key (or --keys-file); --set with --where; --delete with --where."
)


def correct_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument(
        "--erase-key",
        action="append",
        default=[],
        dest="erase_keys",
        metavar="COL=VALUE",
        help="a key to remove from every version; one per key column",
    )
    parser.add_argument(
        "--keys-file", dest="keys_file", metavar="FILE", help="a CSV file of keys to erase (header: key columns)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="assignments",
        metavar="COL=VALUE",
        help="a new value for the matching versions (NULL for none); repeatable",
    )
    parser.add_argument("--delete", action="store_true", help="remove the matching versions")
    parser.add_argument("--where", metavar="PREDICATE", help="which versions: col = 'x' AND (n > 3 OR c IS NULL) ...")
    parser.add_argument("--from", dest="first", metavar="D", help="only versions valid on D or later")
    parser.add_argument("--to", dest="last", metavar="E", help="only versions valid on E or earlier")
    parser.add_argument("--reason", required=True, help="why: kept in the commit log")
    parser.add_argument("--dry-run", action="store_true", help="show the matched versions per partition; write nothing")
    parser.add_argument(
        "--purge",
        action="store_true",
        help="after an erasure, remove at once the superseded directories that still hold the erased rows",
    )
    add_json_report(parser)
    add_profile(parser)


def correction_request(runner: Runner) -> CorrectionRequest:
    """The correction asked for, its flags checked before the lock or Spark (CorrectionRequest)."""
    a = runner.args
    return CorrectionRequest.from_flags(
        erase_keys=a.erase_keys,
        keys_file=a.keys_file,
        assignments=a.assignments,
        delete=a.delete,
        table=runner.spec.table,
        reason=a.reason,
        by=os.environ.get("ZIPPER_RUN_BY") or _user(),
        where=a.where or "",
        first=a.first,
        last=a.last,
        dry_run=a.dry_run,
        purge=a.purge,
    )


def correct_dates(runner: Runner) -> None:
    """A correction's flags and dates, all checked before the lock: the request is built and dropped."""
    correction_request(runner)


def run_correct(runner: Runner) -> int:
    request = correction_request(runner)
    table = runner.table()
    result = table.correct(request, progress=progress)
    spec = runner.spec
    print(result.summary())
    runner.report(result)
    if request.kind == CorrectionKind.ERASE and not request.dry_run:
        if request.purge:
            report = table.vacuum()
            n = report["purged_for_erasure"]
            print(
                f"{spec.table}: purged {n} superseded director{'y' if n == 1 else 'ies'} that held the erased"
                f" rows; removed {len(report['removed'])} in all"
            )
        else:
            print(
                f"{spec.table}: the directories this erasure superseded still hold the erased rows;"
                f" run `zipper vacuum {spec.name}` to remove them now"
            )
    return 0


# -- alter --------------------------------------------------------------------------------------

ALTER_DESCRIPTION = (
    "Rename or drop a column in every version of the table, published in one metastore transaction"
    " (docs/alter.md). Edit the spec first: a column the spec still names, a key and zipper's own"
    " columns are refused."
)


def alter_arguments(parser: argparse.ArgumentParser) -> None:
    add_name(parser)
    parser.add_argument(
        "--rename-column", dest="rename", metavar="OLD=NEW", help="give column OLD the name NEW in every version"
    )
    parser.add_argument(
        "--drop-column",
        dest="drop",
        metavar="COLUMN",
        help="remove COLUMN from every version; versions that differed only in it become one",
    )
    parser.add_argument("--reason", default="", help="why: kept in the alter's record")
    add_json_report(parser)


def alter_request(runner: Runner) -> AlterRequest:
    """The alter asked for, its flags checked before the lock or Spark."""
    a = runner.args
    return AlterRequest.from_flags(
        rename=a.rename,
        drop=a.drop,
        table=runner.spec.table,
        reason=a.reason,
        by=os.environ.get("ZIPPER_RUN_BY") or _user(),
    )


def alter_dates(runner: Runner) -> None:
    """An alter's flags, checked before the lock: the request is built and dropped."""
    alter_request(runner)


def run_alter(runner: Runner) -> int:
    result = runner.table().alter(alter_request(runner), progress=progress)
    print(result.summary())
    runner.report(result)
    return 0


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's user without a passwd entry
        return f"uid {os.getuid()}"
