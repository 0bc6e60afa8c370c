"""One run at a time writes a table: a lock per table, held by the run for its whole length.

The daily merge, a rerun, a rebuild, init and vacuum of one table read its state, write new
directories and publish them. With the warehouse's metastore served to many processes, two such
runs of one table could otherwise both start; the publish's own check (catalog.repoint's
expected run, under the metastore's table lock) refuses the second to publish, but only after it
did all its work. This lock, the fast path on one machine, refuses the second at once,
before any Spark starts, and names the run that holds it. Runs of different tables never wait.

The lock is a file under the warehouse's metastore folder (`metastore/locks/<table>.lock`),
locked with flock: the kernel releases it when its process ends, however it ends. It covers the
processes of one machine, which is what the warehouse's own metastore serves; with an external
metastore shared by several machines the publish's check, under the metastore's own table lock,
is what remains.

A holder empties the file when it finishes. One that was killed, or whose run failed, leaves its
record there: the next holder reads it (`HeldLock.left_by`), stops that run's work on the Spark
server and deletes what it wrote and never published (cli.runner), then says so (`cleared`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from zipper.core.dates import utc_now_iso
from zipper.core.errors import StateError
from zipper.runtime.settings import SessionSettings

# A holder's record field: when the earliest holder whose unpublished writes are not cleared yet
# took the lock (its own "since", or an earlier unfinished holder's), for the next holder to clear from.
UNFINISHED_SINCE = "unfinished_since"


class TableBusy(StateError):
    """Another run holds the table's lock. Not final: a later try finds it free."""


@dataclass
class HeldLock:
    """A table's lock while this run holds it."""

    handle: IO[str] | None  # None: no lock file (an external metastore's tables)
    record: dict
    left_by: dict | None = None  # the record of a holder that was killed or failed, which left it in the file

    def note(self, **fields: str) -> None:
        """Add `fields` to this holder's record, for the next holder to read should this run be killed."""
        self.record.update(fields)
        if self.handle is not None:
            _write(self.handle, self.record)

    @property
    def unfinished_since(self) -> str | None:
        """When the earliest holder whose writes no one has cleared yet took the lock (None: none)."""
        return self.record.get(UNFINISHED_SINCE)

    def cleared(self) -> None:
        """Say that what unfinished holders wrote is cleared: the next holder need not look again."""
        if self.record.pop(UNFINISHED_SINCE, None) is not None and self.handle is not None:
            _write(self.handle, self.record)


@contextlib.contextmanager
def table_lock(settings: SessionSettings, table: str, what: str, ds: str | None = None) -> Iterator[HeldLock]:
    """Hold `table`'s lock for the block, or raise TableBusy naming the holder. `what`: this run,
    as the holder's description another run will read (`zipper merge dim_user --ds 2024-01-03`)."""
    record = {"pid": os.getpid(), "run": what, "since": utc_now_iso()}
    if not settings.on_this_machine:
        yield HeldLock(None, record)
        return
    folder = settings.warehouse_path / "metastore" / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{table}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise TableBusy(
                f"another run is writing this table now ({_holder(handle.read())}); nothing of this run was"
                " published. Run it again once that one has ended: it plans from the table as it is then"
                " (a date already committed is a no-op)",
                table=table,
                ds=ds,
            ) from None
        finished = False
        try:
            handle.seek(0)
            left_by = _killed_holder(handle.read())
            if left_by is not None:  # kept until this run clears what it wrote (HeldLock.cleared)
                record[UNFINISHED_SINCE] = left_by.get(UNFINISHED_SINCE) or left_by.get("since")
            held = HeldLock(handle, record, left_by)
            _write(handle, record)
            yield held
            finished = True
        finally:
            # a run that failed leaves its record, as a killed one does: the next holder clears what
            # it wrote, which a dead server kept it from doing; one that finished without clearing
            # an earlier holder's writes (it never opened Spark) passes that holder's record on
            if finished and held.unfinished_since is None:
                handle.seek(0)
                handle.truncate()
            elif finished:
                _write(handle, {**(held.left_by or {}), UNFINISHED_SINCE: held.unfinished_since})
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write(handle: IO[str], record: dict) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(record) + "\n")
    handle.flush()


def _killed_holder(text: str) -> dict | None:
    """The record a holder left in the file: it was killed, or its run failed."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _holder(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"`{holder['run']}`, pid {holder['pid']}, since {holder['since']}"
    except (ValueError, KeyError, TypeError):
        return "a run that has not said which yet"
