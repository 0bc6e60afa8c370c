"""The record of one `zipper` verb: what the parser, the dispatch and the checks before a run need to
know of it. The records themselves are the table in cli/verbs.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """A verb with only the common options (--specs, --warehouse, --verbose)."""


@dataclass(frozen=True)
class Verb:
    """One verb, said once: its help and arguments, how it runs, and what is checked before it runs."""

    name: str
    help: str
    # run(Runner) for a verb that needs a table; run(argparse.Namespace) for one that does not
    run: Callable[[Any], int]
    add_arguments: Callable[[argparse.ArgumentParser], None] = no_arguments
    description: str | None = None
    # about a table named on the command line (a spec, its settings, maybe Spark), or else about
    # spec files or the metastore server only
    needs_table: bool = True
    # writes the table: one run at a time per table (runtime.locks), a second refused rather than queued
    writes: bool = False
    # the verb's dates and flags, checked before a writing verb takes the lock (and makes its folder) or Spark
    check_dates: Callable[[Any], None] | None = None
    # on the warehouse's own metastore, a warehouse without a metastore database is a mistyped --warehouse:
    # refused, rather than a new, empty metastore created there (then advising `zipper init` there)
    refuses_new_metastore: bool = False
