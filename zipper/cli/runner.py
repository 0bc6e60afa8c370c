"""One run of a verb about a table: its spec, its settings, Spark opened only when the verb needs
it, and for a verb that writes, the table's lock taken after the dates are checked."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from typing import TYPE_CHECKING

from zipper.cli.failures import report_line
from zipper.core.errors import StateError, ZipperError
from zipper.core.reports import RunAction
from zipper.runtime import client_runs, locks, metastore, profile
from zipper.runtime.session import build_session, is_connect, release_session, start_server_early
from zipper.runtime.settings import SessionSettings
from zipper.tablespec.loader import find_spec

if TYPE_CHECKING:
    from zipper.cli.verb import Verb


def progress(line: str) -> None:
    """A job's step as it happens, flushed: a long run shows where it is."""
    print(line, flush=True)


def run_date(args: argparse.Namespace) -> str | None:
    """The date a run is about, as typed: named in its lock and its error lines."""
    return getattr(args, "ds", None) or getattr(args, "first", None)


class Runner:
    """Holds the parsed arguments and opens Spark only when a verb needs it."""

    def __init__(self, args: argparse.Namespace, verb: Verb):
        self.args = args
        self.verb = verb
        self.path, self.spec = find_spec(args.name, args.specs)
        self._spark = None
        self._lock: locks.HeldLock | None = None  # the table's lock, while a writing verb holds it
        self.new_metastore: str | None = None  # the Derby database this command had to create, if any
        self.profile: profile.Profile | None = None  # --profile: the run's calls, counted as it runs

    def settings(self) -> SessionSettings:
        """Where the table is; for a verb that needs a table, refused when the warehouse never had a metastore."""
        settings = SessionSettings.from_env(
            self.args.warehouse, self.args.verbose, f"zipper {self.args.verb} {self.spec.name}"
        )
        if self.verb.refuses_new_metastore and not settings.has_metastore():
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
            if self._lock is not None:
                self._claim_server_work(settings)
            if not self.spec.keys:  # a landing zone's keys come from the table or its _metadata.json
                from zipper.jobs.keys import resolve_keys  # on use: the data path loads pyspark; --help does not

                self.spec = resolve_keys(self._spark, self.spec)
            if self._lock is not None:
                self._clear_killed_run()
        return self._spark

    def run(self) -> int:
        ds = run_date(self.args)
        try:
            if not self.verb.writes:
                return self.run_verb()
            if self.verb.check_dates:
                self.verb.check_dates(self)  # a bad date is said before the lock (and its folder) or Spark
            with locks.table_lock(
                self.settings(), self.spec.table, self.describe(), ds
            ) as lock:  # before any Spark starts
                self._lock = lock
                try:
                    return self.run_verb()
                finally:
                    self._lock = None
        except metastore.MetastoreUnavailable as exc:  # said of the server: name the table it was for
            if exc.table:
                raise
            raise exc.reworded(exc.detail, table=self.spec.table, ds=ds) from None
        finally:
            release_session(self._spark)  # a client's session on the server, its cache with it

    def _claim_server_work(self, settings: SessionSettings) -> None:
        """Tag this run's work on the Spark server and note it in the table's lock; stop what a
        killed run of the table left running there, before this run clears its files."""
        assert self._lock is not None
        self._lock.note(**client_runs.tag_run(self._spark, self.spec.table))
        killed = self._lock.left_by
        if killed is None or not is_connect(self._spark):
            return
        stopped = client_runs.stop_killed_run(settings, killed)
        if stopped:
            progress(
                f"stopped {len(stopped)} operation(s) the killed run `{killed.get('run')}` (pid {killed.get('pid')})"
                " left running on the Spark server"
            )

    def _clear_killed_run(self) -> None:
        """Delete what the table lock's last holder, killed or failed, wrote and never published
        (its work on the server stopped first), so that no directory is left for an hour: a run
        whose Spark server died could not delete its own."""
        lock = self._lock
        if lock is None or lock.left_by is None:
            return
        killed = lock.left_by
        try:
            since = dt.datetime.fromisoformat(str(lock.unfinished_since))
        except ValueError:
            return  # a holder that did not say when it took the lock
        if since.tzinfo is None:
            since = since.replace(tzinfo=dt.UTC)  # the lock's times are UTC
        from zipper.table import state, vacuum  # on use: the data path loads pyspark; --help does not

        cleared = vacuum.clear_killed_run(state.read_state(self._spark, self.spec), since)
        lock.cleared()
        if cleared:
            progress(
                f"cleared {len(cleared)} directory(ies) the unfinished run `{killed.get('run')}` (pid"
                f" {killed.get('pid')}) wrote and never published"
            )

    def describe(self) -> str:
        """This run as another run refused by its table lock reads it."""
        shown = [self.args.verb, self.spec.name]
        for flag, attr in (("--ds", "ds"), ("--from", "first"), ("--to", "last")):
            if getattr(self.args, attr, None):
                shown += [flag, getattr(self.args, attr)]
        return "zipper " + " ".join(shown)

    def run_verb(self) -> int:
        if not getattr(self.args, "profile", False):
            return self._run_verb()
        with profile.recording(lambda: self._spark) as self.profile:
            try:
                return self._run_verb()
            finally:
                self.profile.seconds = self.profile.elapsed()
                with contextlib.suppress(Exception):  # said on the way out: never the run's failure
                    print("\n".join(self.profile.lines(self.describe())), file=sys.stderr, flush=True)

    def _run_verb(self) -> int:
        try:
            return self.verb.run(self)
        except StateError as exc:
            if self.new_metastore is None or isinstance(exc, metastore.MetastoreUnavailable):
                raise  # a server that stopped answering mid-run is no sign of a mistyped warehouse
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

            with csv_values.explained(self._spark, self.spec.table, self.spec.keys, run_date(self.args)):
                raise

    def report(self, result) -> None:
        """The run's report; one that changed the table also names its columns and types (`columns`), which
        the Airflow tasks give their lineage events (a catalog lookup on the open session, no Spark job)."""
        report = result.report()
        if getattr(self.args, "json_report", False) and self._spark is not None and result.action != RunAction.NOOP:
            report["columns"] = table_columns(self._spark, self.spec.table)
        if self.profile is not None:
            report["profile"] = self.profile.report()
        report_line(self.args, report)

    def table(self):
        """The table's handle, whose verbs run the jobs; opens Spark (and so resolves the keys) first."""
        if self._spark is None:
            start_server_early(self.settings())  # its JVM boots while the data path loads
        from zipper.jobs.handle import ZipperTable  # on use: the data path loads pyspark; --help does not

        spark = self.spark
        return ZipperTable(spark, self.spec)


def table_columns(spark, table: str) -> list[list[str]]:
    """`[[name, type], ...]` of the table as the catalog has it; none when it cannot be read (the run has
    already committed: a report without columns is still its report)."""
    try:
        return [[f.name, f.dataType.simpleString()] for f in spark.table(table).schema.fields]
    except Exception:  # noqa: BLE001 - lineage detail only; the run's outcome stands
        return []
