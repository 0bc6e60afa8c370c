"""Dates: as the CLI and the DAG forms take them, and the runs of days a job walks."""

from __future__ import annotations

import datetime as dt
import re

DAY = dt.timedelta(days=1)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def iso_date(text: str) -> dt.date:
    """YYYY-MM-DD only: Python 3.11's `date.fromisoformat` also reads `20240104` and
    `2024-W01-4`, which a run date written by hand should not be. ValueError otherwise."""
    if not _ISO_DATE.match(text):
        raise ValueError(f"{text!r} is not YYYY-MM-DD")
    return dt.date.fromisoformat(text)


def date_of(value: dt.date | dt.datetime) -> dt.date:
    """The day of a date or timestamp value (a source's `updated_at`)."""
    return value.date() if isinstance(value, dt.datetime) else value


def date_range(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + DAY * i for i in range((last - first).days + 1)]


def describe_dates(dates: list[dt.date], limit: int = 10) -> str:
    shown = ", ".join(d.isoformat() for d in dates[:limit])
    return shown + (f" ... ({len(dates)} dates)" if len(dates) > limit else "")


def utc_now_iso() -> str:
    """Now in UTC to the second, as commit records, server records and logs write it."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
