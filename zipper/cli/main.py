"""The `zipper` command. spark_jobs/zipper_job.py runs this same code under spark-submit.

The verbs themselves are records in cli/verbs.py; this module builds the parser from them, runs
the one asked for, and turns any failure into one line on stderr and an exit code."""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from zipper.cli import output
from zipper.cli.failures import fail, one_line, server_stopped
from zipper.cli.runner import Runner
from zipper.cli.verbs import BY_NAME, VERBS
from zipper.core.errors import ZipperError
from zipper.core.hms import MetastoreUnreachable
from zipper.core.reports import INTERRUPTED
from zipper.runtime.settings import SessionSettings

EXIT_BROKEN_PIPE = 141  # as a process killed by SIGPIPE, what a shell pipeline expects
EXIT_CODES = (
    "exit codes: 0 done; 1 an error (one line on stderr); 2 a usage error; 3 `check` found a violation,"
    " or `metastore status` or `spark status` found no server running; 4 `history` found no version of the key;"
    " 10 `merge --no-spark`: not a no-op it could tell without Spark; 130 interrupted; 141 the reader closed the pipe"
)


def _common(top_level: bool) -> argparse.ArgumentParser:
    """Options accepted before or after the verb; after the verb they must not reset a value given before."""
    default = None if top_level else argparse.SUPPRESS
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--specs", metavar="DIR", default=default, help="folder of table specs (env ZIPPER_SPECS; default dags/tables)"
    )
    common.add_argument(
        "--warehouse",
        metavar="DIR",
        default=default,
        help="warehouse folder; its metastore database is DIR/metastore_db, served by `zipper metastore`"
        " (env ZIPPER_WAREHOUSE; default ./warehouse)",
    )
    common.add_argument(
        "--verbose",
        action="store_true",
        default=False if top_level else argparse.SUPPRESS,
        help="show Spark's log and full traces",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common(top_level=False)
    parser = argparse.ArgumentParser(
        prog="zipper",
        description="Daily SCD type 2 (zipper) tables on Hive.",
        parents=[_common(top_level=True)],
        epilog=EXIT_CODES,
    )
    subparsers = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        verb.add_arguments(
            subparsers.add_parser(verb.name, parents=[common], help=verb.help, description=verb.description)
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    output.escape_what_stdout_cannot_hold()
    verb = BY_NAME[args.verb]
    runner = None
    try:
        if not verb.needs_table:  # about spec files or the warehouse's servers only: no table, no Spark
            return verb.run(args)
        runner = Runner(args, verb)
        code = runner.run()
        sys.stdout.flush()  # a closed pipe fails here, in reach of the handlers below
        return code
    except MetastoreUnreachable as exc:  # over thrift, mid-run: said as a Spark client's failure is
        if args.verbose:
            traceback.print_exc()
        stopped = server_stopped(_warehouse(args))
        return fail(args, exc, f"{_where(args, runner)}: {stopped}" if stopped and runner else str(exc))
    except ZipperError as exc:
        if args.verbose:
            traceback.print_exc()
        return fail(args, exc, str(exc))
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # `zipper slice ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # Spark, Java and I/O failures
        if args.verbose:
            traceback.print_exc()
        where = _where(args, runner)
        hint = "" if args.verbose else " (run with --verbose for the full trace)"
        return fail(args, exc, f"{where + ': ' if where else ''}{one_line(exc, _warehouse(args))}{hint}")


def _where(args, runner) -> str:
    """The table and the date the verb is about (a slice's --as-of too), as an error line starts."""
    when = getattr(args, "ds", None) or getattr(args, "first", None) or getattr(args, "as_of", None)
    return " ".join(filter(None, [runner.spec.table if runner else None, when]))


def _warehouse(args) -> str:
    return str(SessionSettings.from_env(getattr(args, "warehouse", None)).warehouse_path)


if __name__ == "__main__":
    sys.exit(main())
