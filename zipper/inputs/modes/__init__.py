"""The source modes' strategies (`SourceStrategy`): `mode_of(spec)` picks a spec's one, and the
jobs ask it instead of testing the mode."""

from __future__ import annotations

import datetime as dt

from zipper.inputs import sources
from zipper.inputs.modes.base import SourceStrategy
from zipper.inputs.modes.cdc import Cdc
from zipper.inputs.modes.landing_zone import LandingZone
from zipper.inputs.modes.snapshot import Snapshot
from zipper.inputs.modes.upsert import Upsert
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceMode

STRATEGIES: dict[SourceMode, SourceStrategy] = {
    strategy.mode: strategy for strategy in (Upsert(), Cdc(), LandingZone(), Snapshot())
}


def mode_of(spec: TableSpec) -> SourceStrategy:
    """The strategy of the spec's source mode."""
    return STRATEGIES[SourceMode(spec.source.mode)]


def locate_dates(spark, spec: TableSpec, dates: list[dt.date], st=None) -> dict[dt.date, sources.Input]:
    """Every date's increment (as the table in state `st` sees it: for a landing zone, a committed
    date's kept copy); fails naming every date whose increment is missing or unreadable."""
    return mode_of(spec).locate_dates(spark, spec, dates, st)
