"""The source modes' strategies (`SourceStrategy`): `mode_of(spec)` picks a spec's one, and the
merge and the rerun ask it instead of testing the mode."""

from __future__ import annotations

import datetime as dt

from zipper.core.dates import describe_dates
from zipper.core.errors import InputError, ZipperError
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
    """Every date's increment (for a landing zone, as the table in state `st` sees it: a
    committed date's kept copy); fails naming every date whose increment is missing or unreadable."""
    mode, located, failed = mode_of(spec), {}, []
    for day in dates:
        try:
            located[day] = mode.locate(spark, spec, st, day)
        except InputError as exc:
            failed.append((day, exc))
    if failed:
        missing, first = describe_dates([d for d, _ in failed]), failed[0][1]
        raise _retried_first([exc for _, exc in failed]).reworded(
            f"increments missing for {missing} ({first.detail}); nothing was changed",
            table=spec.table,
            ds=failed[0][0].isoformat(),
        )
    return located


def _retried_first(errors: list[ZipperError]) -> ZipperError:
    """The error that says what several say together: one that another try may fix, if any."""
    return next((e for e in errors if not e.final), errors[0])
