"""`ZipperTable`: one table's read and upkeep operations behind one handle.

In the spirit of delta's `DeltaTable`: callers (the CLI, notebooks) hold the session and the
spec once, and call the operations by name. Each method delegates to the function that does
the work, with the same arguments. Restoring is not here: a rerun's restore reads the inputs
(`zipper.jobs.replay.restore`), which the table layer does not import."""

from __future__ import annotations

import datetime as dt

from zipper.table import check, inspect, vacuum
from zipper.tablespec.model import TableSpec


class ZipperTable:
    """A zipper table, as the spec names it, in the metastore `spark` uses."""

    def __init__(self, spark, spec: TableSpec):
        self.spark = spark
        self.spec = spec

    def status(self, recent: int = 10) -> dict:
        """The committed state, with the `recent` latest commits (`inspect.status`)."""
        return inspect.status(self.spark, self.spec, recent)

    def history(self, key: dict[str, str]):
        """Every version of one key, as a DataFrame (`inspect.history`)."""
        return inspect.history(self.spark, self.spec, key)

    def slice(self, as_of: dt.date):
        """The table as of the end of `as_of`, as a DataFrame (`inspect.slice_as_of`)."""
        return inspect.slice_as_of(self.spark, self.spec, as_of)

    def check(self) -> dict:
        """Every invariant, verified on the live table (`check.run_checks`)."""
        return check.run_checks(self.spark, self.spec)

    def vacuum(self, retention_days: int | None = None, dry_run: bool = False, now: dt.datetime | None = None) -> dict:
        """Remove version directories no partition or commit refers to (`vacuum.vacuum`)."""
        return vacuum.vacuum(self.spark, self.spec, retention_days, dry_run, now)
