"""The deferrable form of the increment sensor: the triggerer checks, the worker slot is free."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from zipper.airflow.readiness import increment_ready


class IncrementTrigger(BaseTrigger):
    """Fires once the increment of `ds` is there; checks every `poke_interval` seconds, the first
    time one interval after the deferral."""

    def __init__(self, spec_path: str, ds: str, poke_interval: float = 300.0):
        super().__init__()
        self.spec_path = spec_path
        self.ds = ds
        self.poke_interval = poke_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"spec_path": self.spec_path, "ds": self.ds, "poke_interval": self.poke_interval},
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
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            if readiness.ready:
                yield TriggerEvent({"status": "ready", "checked": readiness.checked})
                return
            self.log.info("not yet: %s", readiness.checked)
