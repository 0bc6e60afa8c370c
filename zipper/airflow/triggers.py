"""The deferrable form of the increment sensor: the triggerer checks, the worker slot is free."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from zipper.airflow.readiness import increment_ready


class IncrementEventStatus(StrEnum):
    """What the trigger's one event says, and what the sensor resumes on: the increment is there,
    the sensor stops waiting without it (`skip_after`), or the check itself failed."""

    READY = "ready"
    SKIPPED = "skipped"
    ERROR = "error"


class IncrementTrigger(BaseTrigger):
    """Fires once the increment of `ds` is there; checks every `poke_interval` seconds, the first
    time one interval after the deferral. With `skip_at` (a POSIX time: the sensor's `skip_after`),
    a check after it that finds nothing there fires `skipped`: the merge commits the date so."""

    def __init__(self, spec_path: str, ds: str, poke_interval: float = 300.0, skip_at: float | None = None):
        super().__init__()
        self.spec_path = spec_path
        self.ds = ds
        self.poke_interval = poke_interval
        self.skip_at = skip_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"spec_path": self.spec_path, "ds": self.ds, "poke_interval": self.poke_interval, "skip_at": self.skip_at},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            # The sensor checked just before it deferred: wait first. A trigger that fires within
            # a second of the deferral can meet Airflow's race (apache/airflow#72716), where the
            # scheduler takes the deferring attempt's exit for the resumed one's and fails it.
            await asyncio.sleep(self.poke_interval)
            try:
                readiness = await asyncio.to_thread(increment_ready, self.spec_path, self.ds)
            except Exception as exc:  # a bad spec or an unreachable store: report, do not spin
                yield TriggerEvent({"status": IncrementEventStatus.ERROR, "message": f"{type(exc).__name__}: {exc}"})
                return
            if readiness.ready:
                yield TriggerEvent({"status": IncrementEventStatus.READY, "checked": readiness.checked})
                return
            if self.skip_at is not None and not readiness.writing and time.time() >= self.skip_at:
                yield TriggerEvent({"status": IncrementEventStatus.SKIPPED, "checked": readiness.checked})
                return
            self.log.info("not yet: %s", readiness.checked)
