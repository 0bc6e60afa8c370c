"""The change-volume guard: a day that changes far more of the open rows than the table's usual is
refused before it is published.

What a data engineer fears most is not a crash but a wrong day published: a half-loaded snapshot
that closes half the table merges without an error. The day's audit has already counted what it
does to the open rows; here that count is held against two limits from the spec's `guard`
settings, and the day is refused only when it passes both: a share of the open rows, and a
multiple of the median of the table's recent committed days (so a table whose days are always
large is not refused for being itself). On a table's first days, before a median means
anything, the share alone decides: a snapshot that lost half its keys on the second day is the
very accident to stop. Small tables' days and days someone accepted (`--accept-large-change`)
pass. No Spark: the counts and the commit records
are at hand."""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass

from zipper.core.errors import LargeChangeError
from zipper.table import state
from zipper.tablespec.model import TableSpec

CHANGED_KINDS = ("changed", "deleted", "updated_in_place")  # what a day does to open rows, as the audit counts it


def changed_open_rows(counts: dict) -> int:
    """The open rows a day closed (changed or deleted keys) or updated in place."""
    return sum(int(counts.get(kind, 0) or 0) for kind in CHANGED_KINDS)


@dataclass(frozen=True)
class Volume:
    """A day's change volume against the table's usual."""

    changed: int  # open rows the day closes, deletes or updates in place
    open_before: int
    median: float | None  # of the recent committed days' changed open rows; None: too few days yet (the share decides)
    days: int  # committed days the median is taken over

    @property
    def fraction(self) -> float:
        return self.changed / self.open_before if self.open_before else 0.0


def volume(spec: TableSpec, st: state.TableState, ds: dt.date, counts: dict) -> Volume:
    """The day's volume and the median of the latest `recent_days` committed days before `ds` (a date
    committed without input is not a usual day: left out)."""
    settings = spec.guard
    before = [c for c in st.commits.values() if c.ds < ds.isoformat() and not c.skipped]
    recent = sorted(before, key=lambda c: c.ds)[-settings.recent_days :]
    median = (
        statistics.median(changed_open_rows(c.counts) for c in recent) if len(recent) >= settings.min_days else None
    )
    return Volume(changed_open_rows(counts), int(counts.get("open_before", 0) or 0), median, len(recent))


def refusal(spec: TableSpec, found: Volume) -> str | None:
    """Why the guard refuses a day of this volume, in words (figures against the limits); None when it passes."""
    settings = spec.guard
    if not settings.enabled or found.changed < settings.min_rows or found.fraction <= settings.max_fraction:
        return None
    if found.median is None:  # no usual day yet: the share alone decides (a half-lost second snapshot)
        return (
            f"the day closes, deletes or updates {found.changed:,} of {found.open_before:,} open rows"
            f" ({found.fraction:.0%}; limit {settings.max_fraction:.0%}); with {found.days} committed"
            f" day{'s' if found.days != 1 else ''} the table has no usual day yet (its median needs"
            f" {settings.min_days}), so the share alone decides"
        )
    usual = max(found.median, 1.0)
    if found.changed <= settings.max_median_multiple * usual:
        return None
    return (
        f"the day closes, deletes or updates {found.changed:,} of {found.open_before:,} open rows"
        f" ({found.fraction:.0%}; limit {settings.max_fraction:.0%}), {found.changed / usual:.1f}x the median of its"
        f" last {found.days} committed days ({found.median:g}; limit {settings.max_median_multiple:g}x)"
    )


def check(spec: TableSpec, st: state.TableState, ds: dt.date, counts: dict, *, accepted: bool, accept: str) -> None:
    """Refuse the day (LargeChangeError, one line) when its volume passes both limits, unless
    `accepted`. `accept`: how to accept it, for the message (the command, or the form's toggle)."""
    if accepted:
        return
    why = refusal(spec, volume(spec, st, ds, counts))
    if why is None:
        return
    raise LargeChangeError(
        f"change-volume guard: {why}; nothing was published. If the change is real, accept it: {accept}",
        table=spec.table,
        ds=ds.isoformat(),
    )


@dataclass(frozen=True)
class Verdict:
    """What the guard says of a day it does not enforce (a dry run, a run on a copy): it passes, or
    it would refuse it, and why. Shown as `passes` or `would refuse: <why>`."""

    refusal: str | None = None  # why it would refuse the day; None: it passes

    @property
    def passes(self) -> bool:
        return self.refusal is None

    def __str__(self) -> str:
        return "passes" if self.passes else f"would refuse: {self.refusal}"


def verdict(spec: TableSpec, st: state.TableState, ds: dt.date, counts: dict, *, accepted: bool) -> Verdict:
    """The guard's verdict on a day without enforcing it; an `accepted` day passes."""
    why = refusal(spec, volume(spec, st, ds, counts))
    return Verdict(None if accepted else why)
