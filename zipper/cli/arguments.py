"""What several verbs share on their command line: the table's name, --json-report, and the reading
of typed values (dates, counts), so that every verb words a bad value the same way."""

from __future__ import annotations

import argparse
import datetime as dt

from zipper.core.dates import iso_date
from zipper.core.errors import InputError
from zipper.core.reports import REPORT_PREFIX

NAME_HELP = "the table's spec name (`name:` of a spec in --specs)"


def add_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help=NAME_HELP)


def add_json_report(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json-report",
        action="store_true",
        dest="json_report",
        help=f"also print one line '{REPORT_PREFIX}{{...}}' (JSON) for schedulers",
    )


def add_profile(parser: argparse.ArgumentParser) -> None:
    """`merge`, `rerun`, `rebuild` and `correct` can say where their time went."""
    parser.add_argument(
        "--profile",
        action="store_true",
        help="at the end, print to stderr the run's Spark executions (each with its step), plan analyses,"
        " metastore and file-system calls, counted and timed (also in --json-report as `profile`)",
    )


def add_replay_flags(parser: argparse.ArgumentParser) -> None:
    """`rerun` and `rebuild` replay dates alike, so they take the same two permissions."""
    parser.add_argument(
        "--uncommit-later",
        action="store_true",
        dest="uncommit_later",
        help="allow a --to before the last committed date: the dates after it are no longer committed",
    )
    parser.add_argument(
        "--undo-corrections",
        action="store_true",
        dest="undo_corrections",
        help="replay the inputs as they are over versions a `zipper correct` fix or delete changed (it is marked undone)",
    )


def add_dry_run(parser: argparse.ArgumentParser, what: str) -> None:
    """`merge`, `rerun` and `rebuild` show what they would change, publishing nothing."""
    parser.add_argument(
        "--dry-run",
        action="store_true",
        dest="dry_run",
        help=f"{what}, print the counts and a sample of keys whose history would differ (before and after);"
        " publish nothing, leave nothing behind",
    )


def add_accept_large_change(parser: argparse.ArgumentParser) -> None:
    """`merge` and `rerun` publish days the change-volume guard checks (the spec's `guard`)."""
    parser.add_argument(
        "--accept-large-change",
        action="store_true",
        dest="accept_large_change",
        help="publish a day even if it changes far more open rows than the table's usual (the spec's guard)",
    )


def non_negative(text: str, unit: str = "days") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {unit}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: {unit} cannot be negative")
    return value


def commit_count(text: str) -> int:
    """`status --recent`: a negative count listed every commit but the oldest few."""
    return non_negative(text, "commits")


def parse_date(value: str | None, flag: str, table: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return iso_date(value)
    except ValueError:
        raise InputError(f"{flag} {value!r} is not a date (YYYY-MM-DD)", table=table) from None
