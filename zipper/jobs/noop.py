"""Is the merge of date D a no-op? Told without Spark, from the committed state (read over the
metastore's thrift API) and the input as plain Python lists it (inputs.local_input).

The daily merge plans from the same two things (`merge._planned` → `plan.plan_merge`): when
every date from D to the last committed one is committed with the input it has now, it does
nothing. Told here, that answer costs no JVM, no SparkSession and no Spark driver's start-up;
anything this check cannot tell exactly (an input it cannot list as Hadoop would, a table a
killed run left to recover, a replay to resume, a date not committed yet) is None, and the
merge runs as always and decides."""

from __future__ import annotations

import datetime as dt
import time

from zipper.core.errors import ZipperError
from zipper.core.reports import RunAction
from zipper.inputs import local_input
from zipper.jobs.plan import PlanAction, plan_from_state
from zipper.jobs.result import RunResult
from zipper.table import state
from zipper.tablespec.model import TableSpec


def committed_noop(spec: TableSpec, ds: dt.date, reader) -> RunResult | None:
    """The merge's no-op result for `ds` when it is one, else None (not one, or not known here).
    `reader`: a catalog reader with `column_types` (table.thrift_catalog.ThriftCatalog)."""
    started = time.monotonic()
    if not local_input.supported(spec):
        return None
    st = state.state_from(reader, spec)
    if not st.initialized or st.pending or st.replay is not None:
        return None  # a table to create, a killed run's partitions to drop, a replay to finish: the merge's
    if ds > st.last_committed:
        return None  # a date to merge
    if not _columns_complete(st, reader.column_types(spec)):
        return None  # a run killed between its publish and its ALTER: the merge finishes it
    try:
        state.check_owned(st, spec, ds)
        plan = plan_from_state(spec, ds, st, lambda day: local_input.increment_fingerprint(spec, day))
    except (local_input.Unknown, ZipperError):
        return None  # the merge says what is wrong, or lists the input through Hadoop
    if plan.action != PlanAction.NOOP:
        return None
    return RunResult(spec.table, ds.isoformat(), RunAction.NOOP, plan.reason, seconds=time.monotonic() - started)


def _columns_complete(st: state.TableState, types: dict[str, str]) -> bool:
    """Whether the table has the columns the last commit recorded as added or widened."""
    recorded = st.recorded_column_change
    wanted = recorded["added"] + recorded["widened"]
    altered = all(old.lower() not in types and new.lower() in types for old, new in recorded["renamed"])
    altered = altered and all(name.lower() not in types for name, _ in recorded["dropped"])
    return altered and all(_type_name(types.get(name.lower(), "")) == _type_name(kind) for name, kind in wanted)


def _type_name(kind: str) -> str:
    return kind.lower().replace(" ", "")
