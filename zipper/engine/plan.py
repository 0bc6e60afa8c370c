"""Decide what a merge of date D must do, from the committed state alone (no Spark)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable

from zipper.errors import StateError
from zipper.spec.model import TableSpec

DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Plan:
    action: str  # "init_and_apply" | "apply" | "noop"
    reason: str


def date_range(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + DAY * i for i in range((last - first).days + 1)]


def describe_dates(dates: list[dt.date], limit: int = 10) -> str:
    shown = ", ".join(d.isoformat() for d in dates[:limit])
    return shown + (f" ... ({len(dates)} dates)" if len(dates) > limit else "")


def init_date(spec: TableSpec, requested: dt.date | None) -> dt.date:
    """The date whose end-of-day state `zipper init` creates; the first merge is the day after."""
    return requested if requested is not None else spec.first_merge_date() - DAY


def check_in_schedule(spec: TableSpec, ds: dt.date) -> None:
    if ds < spec.start_date:
        raise StateError(f"date is before the spec's start_date {spec.start_date}", table=spec.table, ds=ds.isoformat())
    if spec.end_date and ds > spec.end_date:
        raise StateError(f"date is after the spec's end_date {spec.end_date}", table=spec.table, ds=ds.isoformat())


def plan_merge(
    spec: TableSpec,
    ds: dt.date,
    *,
    initialized: bool,
    last_committed: dt.date | None,
    init_ds: dt.date | None,
    committed_fingerprints: dict[str, str],
    current_fingerprint: Callable[[dt.date], str],
) -> Plan:
    check_in_schedule(spec, ds)
    where = {"table": spec.table, "ds": ds.isoformat()}
    if not initialized:
        if ds == spec.first_merge_date():
            return Plan("init_and_apply", "table does not exist yet; creating it first")
        raise StateError(
            f"table is not initialized; run `zipper init {spec.name}` (the first merge date is {spec.first_merge_date()})",
            **where,
        )
    if ds == last_committed + DAY:
        return Plan("apply", f"table is at {last_committed}")
    if ds > last_committed + DAY:
        missing = date_range(last_committed + DAY, ds - DAY)
        raise StateError(f"table is at {last_committed}; merge the missing dates first: {describe_dates(missing)}", **where)
    if init_ds is not None and ds <= init_ds:
        raise StateError(f"date is not after the table's base date {init_ds}; the base already holds it", **where)
    changed = [
        d for d in date_range(ds, last_committed)
        if committed_fingerprints.get(d.isoformat()) != current_fingerprint(d)
    ]
    if not changed:
        if ds == last_committed:
            return Plan("noop", f"already committed with the same input (table is at {last_committed})")
        return Plan("noop", f"table is at {last_committed}; {ds}..{last_committed} were committed with the same input")
    raise StateError(
        f"table is at {last_committed} and the input of {describe_dates(changed)} differs from what was committed;"
        f" replaying past dates is `zipper rerun` (not available yet)",
        **where,
    )
