"""What reruns, rebuilds and past-date replays owe to the table's corrections: corrections last.

An erasure is permanent: every input replayed for a date up to the erasure is read without the
erased keys (found again by their salted hashes), so no rerun brings them back; a key arriving
in a later date's input is new data. A value fix or a row delete is never silently undone: a
replay that would make its versions again from the inputs is refused, naming it, unless the
caller says to undo it (`--undo-corrections`); its record then says which run undid it, and
the refusal gives the command that applies it again."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from zipper.core.corrections import CorrectionKind
from zipper.core.dates import DAY
from zipper.core.errors import StateError
from zipper.table import state, store
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import EndStyle
from zipper.transforms import corrections


def input_filter(spark, spec: TableSpec, st: state.TableState, ds: dt.date) -> Callable[[DataFrame], DataFrame] | None:
    """The input of `ds` without the keys of every erasure published when the table was at `ds`
    or later (None when there is none)."""
    records = [c for c in st.corrections if c.kind == CorrectionKind.ERASE and c.as_of >= ds.isoformat()]
    if not records:
        return None
    hashes = [(store.read_written(spark, c.hashes), c.salt) for c in records]

    def without_erased(rows: DataFrame) -> DataFrame:
        for erased, salt in hashes:
            rows = corrections.without_keys(rows, erased, spec.keys, salt)
        return rows

    return without_erased


def dated_filter(spark, spec: TableSpec, st: state.TableState, ds_column: str) -> Callable[[DataFrame], DataFrame]:
    """A rebuild's rows (the base and every increment, each tagged with its date in `ds_column`)
    without the erased keys' rows of the dates up to each erasure."""
    records = [
        (store.read_written(spark, c.hashes), c.salt, c.as_of) for c in st.corrections if c.kind == CorrectionKind.ERASE
    ]

    def without_erased(rows: DataFrame) -> DataFrame:
        for erased, salt, as_of in records:
            rows = corrections.without_keys(rows, erased, spec.keys, salt, until=F.col(ds_column) <= F.lit(as_of))
        return rows

    return without_erased


def undone(
    spec: TableSpec, st: state.TableState, first: dt.date | None, undo: bool, run_id: str, verb: str
) -> dict[str, str]:
    """The records of the value fixes and row deletes a replay from `first` (a rebuild: None)
    would make again from the inputs, marked as undone by `run_id`, for the replay's first
    publish to carry. Refused, naming them and how to proceed, unless `undo`."""
    hit = [
        c
        for c in st.corrections
        if c.kind != CorrectionKind.ERASE and not c.undone_by and (first is None or c.touched_last >= first.isoformat())
    ]
    if not hit:
        return {}
    if not undo:
        latest = max(dt.date.fromisoformat(c.touched_last) for c in hit)
        later = f", or rerun from {latest + DAY} or later" if first is not None and latest < st.last_committed else ""
        more = f" and {len(hit) - 1} more" if len(hit) > 1 else ""
        raise StateError(
            f"the {verb} would make again from the inputs the versions that {hit[0].describe()}{more} changed,"
            f" undoing it; pass --undo-corrections to replay the inputs as they are (then apply it again:"
            f" `{reapply_command(spec, hit[0])}`){later}; nothing was changed",
            table=spec.table,
            ds=first.isoformat() if first else None,
        )
    params: dict[str, str] = {}
    for c in hit:
        params.update(dataclasses.replace(c, undone_by=run_id).params())
    return params


def reapply_command(spec: TableSpec, c: state.Correction) -> str:
    """The `zipper correct` command that applies a recorded value fix or delete again."""
    argv = ["zipper", "correct", spec.name]
    if c.kind == CorrectionKind.SET:
        for column, value in c.assignments.items():
            argv += ["--set", f"{column}={value}"]
    else:
        argv.append("--delete")
    argv += ["--where", c.where]
    argv += ["--from", c.first] if c.first else []
    argv += ["--to", c.last] if c.last else []
    argv += ["--reason", c.reason]
    return shlex.join(argv)


def removed_open_at(spark, spec: TableSpec, st: state.TableState, day: dt.date, commit_run: str) -> int:
    """Versions open at the end of `day` that corrections published after the commit run
    `commit_run` removed: the open rows that commit recorded less these are what a restore to
    `day` gives back (run ids sort by time)."""
    dirs = [c.removed for c in st.corrections if c.removed and c.run_id > commit_run]
    if not dirs:
        return 0
    versions = store.read_written(spark, *dirs)  # begin, end, versions: how many removed versions had those dates
    text = F.lit(day.isoformat())
    valid = (F.col("begin") <= text) & (
        F.col("end") > text if spec.end_style == EndStyle.EXCLUSIVE else F.col("end") >= text
    )
    return int(versions.where(valid).agg(F.sum("versions")).first()[0] or 0)
