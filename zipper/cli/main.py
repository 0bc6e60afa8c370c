"""The `zipper` command. spark_jobs/zipper_job.py runs this same code under spark-submit."""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import os
import sys
import traceback

from zipper.cli import output, service_verbs, spec_verbs
from zipper.core.dates import iso_date
from zipper.core.errors import InputError, StateError, ZipperError, java_messages, summarize_failure
from zipper.core.paths import user_path
from zipper.core.reports import ERROR_PREFIX, EXIT_NOT_NOOP, INTERRUPTED, REPORT_PREFIX
from zipper.jobs.plan import check_in_schedule
from zipper.runtime import locks, metastore
from zipper.runtime.session import SessionSettings, build_session
from zipper.tablespec.loader import find_spec

EXIT_ERROR = 1
EXIT_CHECK_FAILED = 3
EXIT_NO_VERSION = 4  # `history` of a key the table never held: as grep's "no match", apart from errors (1)
EXIT_BROKEN_PIPE = 141  # as a process killed by SIGPIPE, what a shell pipeline expects
NAME_HELP = "the table's spec name (`name:` of a spec in --specs)"
EXIT_CODES = (
    "exit codes: 0 done; 1 an error (one line on stderr); 2 a usage error; 3 `check` found a violation;"
    " 4 `history` found no version of the key; 10 `merge --no-spark`: not a no-op it could tell without Spark;"
    " 130 interrupted; 141 the reader closed the pipe"
)
# Verbs that only read an existing table: on the embedded default they must not create a new,
# empty metastore where a mistyped --warehouse points (and then advise `zipper init` there).
READ_ONLY_VERBS = ("status", "slice", "history", "check", "vacuum", "rerun")
# Verbs that write the table: one at a time per table (runtime.locks), refused rather than queued.
WRITING_VERBS = ("init", "merge", "rerun", "rebuild", "vacuum", "correct")


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
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = verbs.add_parser("init", parents=[common], help="create the table (and load the base)")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--ds", help="the base holds the state at the end of this date (default: start_date - 1)")

    p = verbs.add_parser("merge", parents=[common], help="merge one day's increment")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--ds", required=True, help="the run date, YYYY-MM-DD")
    p.add_argument(
        "--json-report",
        action="store_true",
        dest="json_report",
        help=f"also print one line '{REPORT_PREFIX}{{...}}' (JSON) for schedulers",
    )
    p.add_argument(
        "--no-spark",
        action="store_true",
        dest="no_spark",
        help="only a no-op told without Spark (the date committed with the same input): otherwise do nothing"
        f" and exit {EXIT_NOT_NOOP}",
    )

    p = verbs.add_parser(
        "rerun",
        parents=[common],
        help="restore the table to the day before --from and replay --from..--to in one application",
    )
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--from", required=True, dest="first", metavar="D", help="first date to replay, YYYY-MM-DD")
    p.add_argument("--to", dest="last", metavar="E", help="last date to replay (default: the last committed date)")
    p.add_argument(
        "--uncommit-later",
        action="store_true",
        dest="uncommit_later",
        help="allow a --to before the last committed date: the dates after it are no longer committed",
    )
    p.add_argument(
        "--undo-corrections",
        action="store_true",
        dest="undo_corrections",
        help="replay the inputs as they are over versions a `zipper correct` fix or delete changed (it is marked undone)",
    )
    p.add_argument(
        "--json-report",
        action="store_true",
        dest="json_report",
        help=f"also print one line '{REPORT_PREFIX}{{...}}' (JSON) for schedulers",
    )

    p = verbs.add_parser(
        "rebuild", parents=[common], help="build the table from the base and every increment, published at once"
    )
    p.add_argument("name", help=NAME_HELP)
    p.add_argument(
        "--to",
        dest="last",
        metavar="E",
        help="last date to build (default: the last committed date; required for a new table)",
    )
    p.add_argument(
        "--uncommit-later",
        action="store_true",
        dest="uncommit_later",
        help="allow a --to before the last committed date: the dates after it are no longer committed",
    )
    p.add_argument(
        "--undo-corrections",
        action="store_true",
        dest="undo_corrections",
        help="replay the inputs as they are over versions a `zipper correct` fix or delete changed (it is marked undone)",
    )

    p = verbs.add_parser(
        "correct",
        parents=[common],
        help="erase keys from every version, fix values in past versions, or delete versions: one commit",
        description="Row-level corrections, published in one metastore transaction (docs/corrections.md)."
        " One of: --erase-key (or --keys-file); --set with --where; --delete with --where.",
    )
    p.add_argument("name", help=NAME_HELP)
    p.add_argument(
        "--erase-key",
        action="append",
        default=[],
        dest="erase_keys",
        metavar="COL=VALUE",
        help="a key to remove from every version; one per key column",
    )
    p.add_argument(
        "--keys-file", dest="keys_file", metavar="FILE", help="a CSV file of keys to erase (header: key columns)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        dest="assignments",
        metavar="COL=VALUE",
        help="a new value for the matching versions (NULL for none); repeatable",
    )
    p.add_argument("--delete", action="store_true", help="remove the matching versions")
    p.add_argument("--where", metavar="PREDICATE", help="which versions: col = 'x' AND (n > 3 OR c IS NULL) ...")
    p.add_argument("--from", dest="first", metavar="D", help="only versions valid on D or later")
    p.add_argument("--to", dest="last", metavar="E", help="only versions valid on E or earlier")
    p.add_argument("--reason", required=True, help="why: kept in the commit log")
    p.add_argument("--dry-run", action="store_true", help="show the matched versions per partition; write nothing")
    p.add_argument(
        "--purge",
        action="store_true",
        help="after an erasure, remove at once the superseded directories that still hold the erased rows",
    )
    p.add_argument(
        "--json-report",
        action="store_true",
        dest="json_report",
        help=f"also print one line '{REPORT_PREFIX}{{...}}' (JSON) for schedulers",
    )

    p = verbs.add_parser("status", parents=[common], help="committed state as JSON")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--recent", type=_commit_count, default=10, help="how many recent commits to list (default 10)")

    p = verbs.add_parser("slice", parents=[common], help="the table as of a date")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument(
        "--as-of",
        required=True,
        dest="as_of",
        metavar="D",
        help="the table as of the end of this date, YYYY-MM-DD (base date .. last committed date)",
    )
    p.add_argument(
        "--format",
        choices=["csv", "json", "parquet"],
        default="csv",
        help="csv (default), json (one object per line) or parquet (needs --out DIR)",
    )
    p.add_argument("--out", help="file to write (a directory for parquet); default stdout")

    p = verbs.add_parser("history", parents=[common], help="every version of one key")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--key", action="append", required=True, metavar="COL=VALUE", help="repeat for composite keys")
    p.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="table (default, one line per version), csv or json (one object per line)",
    )

    p = verbs.add_parser("check", parents=[common], help="verify every invariant on the live table")
    p.add_argument("name", help=NAME_HELP)

    p = verbs.add_parser("vacuum", parents=[common], help="remove unreferenced version directories")
    p.add_argument("name", help=NAME_HELP)
    p.add_argument("--retention-days", type=_non_negative, help="override the spec's retention_days")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")

    verbs.add_parser(
        "schema", parents=[common], help="print the spec's JSON Schema, for editors (yaml-language-server) and CI"
    )
    p = verbs.add_parser(
        "validate", parents=[common], help="check specs without Spark or a metastore: one line per problem, exit 1"
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="spec names to check (default: every spec in --specs)")
    p = verbs.add_parser(
        "metastore",
        parents=[common],
        help="start, stop or show the warehouse's metastore server (started on demand by any run)",
    )
    p.add_argument("action", choices=service_verbs.ACTIONS, help="start | stop | status (JSON)")
    return parser


def _non_negative(text: str, unit: str = "days") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {unit}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: {unit} cannot be negative")
    return value


def _commit_count(text: str) -> int:
    """`status --recent`: a negative count listed every commit but the oldest few."""
    return _non_negative(text, "commits")


def parse_date(value: str | None, flag: str, table: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return iso_date(value)
    except ValueError:
        raise InputError(f"{flag} {value!r} is not a date (YYYY-MM-DD)", table=table) from None


def _progress(line: str) -> None:
    print(line, flush=True)


class Runner:
    """Holds the parsed arguments and opens Spark only when a verb needs it."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.path, self.spec = find_spec(args.name, args.specs)
        self._spark = None
        self.new_metastore: str | None = None  # the Derby database this command had to create, if any

    def settings(self) -> SessionSettings:
        """Where the table is; for a verb that only reads, refused when the warehouse never had a metastore."""
        settings = SessionSettings.from_env(
            self.args.warehouse, self.args.verbose, f"zipper {self.args.verb} {self.spec.name}"
        )
        if self.args.verb in READ_ONLY_VERBS and not settings.has_metastore():
            raise StateError(
                f"no metastore at {settings.warehouse_path}/metastore_db: nothing was ever created in"
                " this warehouse; check --warehouse (or ZIPPER_WAREHOUSE)",
                table=self.spec.table,
            )
        return settings

    @property
    def spark(self):
        if self._spark is None:
            settings = self.settings()
            if not settings.has_metastore():
                self.new_metastore = f"{settings.warehouse_path}/metastore_db"
            self._spark = build_session(settings)
            if not self.spec.keys:  # a landing zone's keys come from the table or its _metadata.json
                from zipper.jobs.keys import resolve_keys  # on use: the data path loads pyspark; --help does not

                self.spec = resolve_keys(self._spark, self.spec)
        return self._spark

    def run(self) -> int:
        ds = getattr(self.args, "ds", None) or getattr(self.args, "first", None)
        try:
            if self.args.verb not in WRITING_VERBS:
                return self.run_verb()
            self.check_dates()  # a bad date is said before the lock (and its folder) or Spark
            with locks.table_lock(self.settings(), self.spec.table, self.describe(), ds):  # before any Spark starts
                return self.run_verb()
        except metastore.MetastoreUnavailable as exc:  # said of the server: name the table it was for
            if exc.table:
                raise
            raise exc.reworded(exc.detail, table=self.spec.table, ds=ds) from None

    def check_dates(self) -> None:
        """The dates of a merge or rerun: each a date, the first inside the spec's schedule."""
        if self.args.verb == "merge":
            check_in_schedule(self.spec, parse_date(self.args.ds, "--ds", self.spec.table))
        elif self.args.verb == "rerun":
            parse_date(self.args.last, "--to", self.spec.table)
            check_in_schedule(self.spec, parse_date(self.args.first, "--from", self.spec.table))
        elif self.args.verb == "init":
            parse_date(self.args.ds, "--ds", self.spec.table)
        elif self.args.verb == "rebuild":
            parse_date(self.args.last, "--to", self.spec.table)
        elif self.args.verb == "correct":
            self.correction_request()

    def describe(self) -> str:
        """This run as another run refused by its table lock reads it."""
        shown = [self.args.verb, self.spec.name]
        for flag, attr in (("--ds", "ds"), ("--from", "first"), ("--to", "last")):
            if getattr(self.args, attr, None):
                shown += [flag, getattr(self.args, attr)]
        return "zipper " + " ".join(shown)

    def run_verb(self) -> int:
        try:
            return getattr(self, "do_" + self.args.verb)()
        except StateError as exc:
            if self.new_metastore is None:
                raise
            # most likely a mistyped --warehouse: the table is elsewhere
            raise StateError(
                f"{exc.detail} (this command created a new, empty metastore at {self.new_metastore}:"
                " check --warehouse or ZIPPER_WAREHOUSE)",
                table=exc.table,
                ds=exc.ds,
            ) from None
        except ZipperError:
            raise
        except Exception:  # a CSV value that does not parse (init, rebuild): say which column and row
            if self._spark is None:
                raise
            from zipper.inputs import csv_values  # on use: the data path loads pyspark; --help does not

            ds = getattr(self.args, "ds", None) or getattr(self.args, "first", None)
            with csv_values.explained(self._spark, self.spec.table, self.spec.keys, ds):
                raise

    def do_init(self) -> int:
        from zipper.jobs.init import init_table  # on use: the data path loads pyspark; --help does not

        ds = parse_date(self.args.ds, "--ds", self.spec.table)
        print(init_table(self.spark, self.spec, ds).summary())
        return 0

    def do_merge(self) -> int:
        ds = parse_date(self.args.ds, "--ds", self.spec.table)
        check_in_schedule(self.spec, ds)  # a date outside the spec's dates fails before Spark starts
        result = self.noop_without_spark(ds)
        if result is None and self.args.no_spark:
            print(
                f"zipper: {self.spec.table} {ds}: not a no-op told without Spark; nothing was done"
                f" (exit {EXIT_NOT_NOOP}): merge it without --no-spark",
                file=sys.stderr,
            )
            return EXIT_NOT_NOOP
        if result is None:
            from zipper.jobs import merge  # on use: the data path loads pyspark; --help does not

            result = merge.merge_date(self.spark, self.spec, ds, progress=_progress)
        print(result.summary())
        self.report(result)
        return 0

    def noop_without_spark(self, ds: dt.date):
        """The merge's no-op result when the warehouse's metastore server and a plain listing of the
        input tell that `ds` is committed with the same input (jobs.noop); None otherwise."""
        settings = self.settings()
        if settings.metastore != "local" or not settings.has_metastore():
            return None
        from zipper.jobs import noop  # on use: --help loads no table code
        from zipper.table.thrift_catalog import ThriftCatalog

        with ThriftCatalog(metastore.local_uri(settings.warehouse_path)) as reader:
            return noop.committed_noop(self.spec, ds, reader)

    def do_rerun(self) -> int:
        from zipper.jobs import replay  # on use: the data path loads pyspark; --help does not

        first = parse_date(self.args.first, "--from", self.spec.table)
        last = parse_date(self.args.last, "--to", self.spec.table)
        check_in_schedule(self.spec, first)  # before Spark starts
        result = replay.rerun(
            self.spark,
            self.spec,
            first,
            last,
            progress=_progress,
            uncommit_later=self.args.uncommit_later,
            undo_corrections=self.args.undo_corrections,
        )
        print(result.summary())
        self.report(result)
        return 0

    def do_rebuild(self) -> int:
        from zipper.jobs import rebuild  # on use: the data path loads pyspark; --help does not

        last = parse_date(self.args.last, "--to", self.spec.table)
        print(
            rebuild.rebuild(
                self.spark,
                self.spec,
                last,
                progress=_progress,
                uncommit_later=self.args.uncommit_later,
                undo_corrections=self.args.undo_corrections,
            ).summary()
        )
        return 0

    def correction_request(self):
        """The correction asked for, its flags checked before the lock or Spark."""
        from zipper.jobs.correct import Request  # on use: the data path loads pyspark; --help does not

        a, table = self.args, self.spec.table
        erase = bool(a.erase_keys or a.keys_file)
        kinds = [kind for kind, given in (("erase", erase), ("set", a.assignments), ("delete", a.delete)) if given]
        if len(kinds) != 1:
            raise InputError(
                "give one of --erase-key (or --keys-file), --set with --where, or --delete with --where"
                + (f"; got {' and '.join(kinds)}" if kinds else ""),
                table=table,
            )
        kind = kinds[0]
        if kind == "erase" and (a.where or a.first or a.last):
            raise InputError(
                "an erasure removes every version of its keys: --where, --from and --to do not apply", table=table
            )
        if a.erase_keys and a.keys_file:
            raise InputError("give --erase-key or --keys-file, not both", table=table)
        if kind != "erase" and not (a.where or "").strip():
            raise InputError(f"--{'set' if kind == 'set' else 'delete'} needs --where PREDICATE", table=table)
        if a.purge and kind != "erase":
            raise InputError("--purge follows an erasure (--erase-key or --keys-file)", table=table)
        if not a.reason.strip():
            raise InputError("--reason is empty; say why, for the commit log", table=table)
        return Request(
            kind=kind,
            reason=a.reason.strip(),
            by=os.environ.get("ZIPPER_RUN_BY") or _user(),
            where=a.where or "",
            assignments=tuple(a.assignments),
            erase_keys=tuple(a.erase_keys),
            keys_file=a.keys_file or "",
            first=parse_date(a.first, "--from", table),
            last=parse_date(a.last, "--to", table),
            dry_run=a.dry_run,
        )

    def do_correct(self) -> int:
        from zipper.jobs import correct  # on use: the data path loads pyspark; --help does not

        request = self.correction_request()
        result = correct.correct(self.spark, self.spec, request, progress=_progress)
        print(result.summary())
        self.report(result)
        if request.kind == "erase" and not request.dry_run:
            if self.args.purge:
                report = self.table().vacuum()
                n = report["purged_for_erasure"]
                print(
                    f"{self.spec.table}: purged {n} superseded director{'y' if n == 1 else 'ies'} that held the erased"
                    f" rows; removed {len(report['removed'])} in all"
                )
            else:
                print(
                    f"{self.spec.table}: the directories this erasure superseded still hold the erased rows;"
                    f" run `zipper vacuum {self.spec.name}` to remove them now"
                )
        return 0

    def report(self, result) -> None:
        report_line(self.args, result.report())

    def table(self):
        """The handle of the verbs that read or tidy the table; opens Spark (and so resolves the keys) first."""
        from zipper.table.handle import ZipperTable  # on use: the data path loads pyspark; --help does not

        spark = self.spark
        return ZipperTable(spark, self.spec)

    def do_status(self) -> int:
        settings = self.settings()
        if settings.metastore == "local":  # the warehouse's server answers over thrift: no JVM, no Spark
            from zipper.table import state, status, thrift_catalog  # on use: --help loads no table code

            with thrift_catalog.ThriftCatalog(metastore.local_uri(settings.warehouse_path)) as reader:
                st = state.state_from(reader, self.spec)
            where = f"warehouse {settings.warehouse_path}"
            report = status.report(status.initialized(st, self.spec, where), self.spec, self.args.recent)
        else:
            report = self.table().status(self.args.recent)
        print(json.dumps(report, indent=2))
        return 0

    def do_slice(self) -> int:
        as_of = parse_date(self.args.as_of, "--as-of", self.spec.table)
        df = self.table().slice(as_of)
        output.write_rows(df, self.args.format, self.args.out, self.spec.table)
        return 0

    def do_history(self) -> int:
        from zipper.table import inspect  # on use: the data path loads pyspark; --help does not

        table = self.table()  # first: a landing zone's keys are only known once Spark has read them
        key = inspect.parse_key(table.spec, self.args.key)
        columns, rows = output.collected(table.history(key))
        if not rows:  # an empty table or CSV header looked like a key with no columns set, and exited 0
            shown = ", ".join(f"{k}={key[k]}" for k in self.spec.keys)
            print(f"zipper: {self.spec.table}: no version of {shown}: the table never held this key", file=sys.stderr)
            return EXIT_NO_VERSION
        if self.args.format == "table":
            output.print_table_rows(columns, rows, noun=("version", "versions"))
        else:
            output.write_text_rows(columns, rows, self.args.format, None, self.spec.table)
        return 0

    def do_check(self) -> int:
        report = self.table().check()
        print(json.dumps(report, indent=2, default=str))
        if not report["ok"]:
            print(f"zipper: {self.spec.table}: check failed: {', '.join(report['failed'])}", file=sys.stderr)
            return EXIT_CHECK_FAILED
        return 0

    def do_vacuum(self) -> int:
        report = self.table().vacuum(self.args.retention_days, self.args.dry_run)
        verb = "would remove" if report["dry_run"] else "removed"
        for item in report["removed"]:  # what went (or would go): a dry run is a preview of exactly this
            print(f"{report['table']}: {verb} {user_path(item['directory'])} ({item['bytes']} bytes)")
        young = f", {report['kept_young']} of them younger than an hour" if report.get("kept_young") else ""
        if report.get("purged_for_erasure"):
            young += f"; {report['purged_for_erasure']} removed before their retention: they held erased rows"
        n = len(report["removed"])
        print(
            f"{report['table']}: {verb} {n} director{'y' if n == 1 else 'ies'} ({report['removed_bytes']} bytes),"
            f" kept {report['kept']}{young}; retention {report['retention_days']} days"
        )
        return 0


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's user without a passwd entry
        return f"uid {os.getuid()}"


def report_line(args: argparse.Namespace, report: dict) -> None:
    """With --json-report, one line `zipper-report: {...}` on stdout for schedulers."""
    if getattr(args, "json_report", False):
        print(REPORT_PREFIX + json.dumps(report), flush=True)


def failure_report(exc: BaseException, line: str) -> dict:
    """A failed run for schedulers: `final` when another try would fail the same way (a bad
    spec or input), so that they fail the task at once rather than retry it."""
    return {"failed": True, "final": isinstance(exc, ZipperError) and exc.final, "error": line}


def _fail(args: argparse.Namespace, exc: BaseException, line: str) -> int:
    """The report of the failure (with --json-report), then the one error line on stderr."""
    report_line(args, failure_report(exc, line))
    print(f"{ERROR_PREFIX}{line}", file=sys.stderr)
    return EXIT_ERROR


# What the Hive client's failures say when the metastore server does not answer.
UNREACHABLE = ("TTransportException", "Could not connect to meta store", "java.net.ConnectException")


def _one_line(exc: BaseException, warehouse: str | None = None) -> str:
    """The useful part of a Spark/Java failure, without the JVM stack."""
    chain = java_messages(exc) or [str(exc).strip() or type(exc).__name__]
    text = " ".join(chain)
    if warehouse and any(marker in text for marker in UNREACHABLE) and metastore.mode() == "local":
        server = metastore.MetastoreService(warehouse).recorded()
        where = f" at {server.uri}" if server else ""
        return (
            f"the metastore server{where} stopped answering during this run; the run stopped, and the table is as"
            " its last commit says (`zipper status`, which starts the server again). `zipper metastore status`"
            f" shows the server, its log is {warehouse}/metastore/server.log"
        )
    if "XSDB6" in text or "Another instance of Derby" in text:
        where = f" at {warehouse}/metastore_db" if warehouse else ""
        return (
            f"the embedded Derby metastore{where} is in use by another process (it allows one JVM at a time);"
            " wait for it or stop it, or use an external metastore"
        )
    return summarize_failure(exc)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    output.escape_what_stdout_cannot_hold()
    runner = None
    try:
        if args.verb in spec_verbs.VERBS:  # about spec files only: no table, no Spark
            return spec_verbs.run(args)
        if args.verb in service_verbs.VERBS:  # the metastore server: no table, no Spark
            return service_verbs.run(args)
        runner = Runner(args)
        code = runner.run()
        sys.stdout.flush()  # a closed pipe fails here, in reach of the handlers below
        return code
    except ZipperError as exc:
        if args.verbose:
            traceback.print_exc()
        return _fail(args, exc, str(exc))
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # `zipper slice ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # Spark, Java and I/O failures
        if args.verbose:
            traceback.print_exc()
        # the date the verb is about: a slice's --as-of too (a Spark failure reading it)
        when = getattr(args, "ds", None) or getattr(args, "first", None) or getattr(args, "as_of", None)
        where = " ".join(filter(None, [runner.spec.table if runner else None, when]))
        hint = "" if args.verbose else " (run with --verbose for the full trace)"
        warehouse = str(SessionSettings.from_env(getattr(args, "warehouse", None)).warehouse_path)
        return _fail(args, exc, f"{where + ': ' if where else ''}{_one_line(exc, warehouse)}{hint}")


if __name__ == "__main__":
    sys.exit(main())
