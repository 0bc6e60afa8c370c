"""Decide what a merge of date D must do, from the committed state alone (no Spark)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from zipper.core.dates import DAY, date_range, describe_dates
from zipper.core.errors import RefusedBySpecError, StateError
from zipper.inputs.sources import NO_INPUT
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import EndStyle, OnPastDate


class PlanAction(StrEnum):
    """What a merge of a date must do. init_and_apply: create the table, then merge the date.
    apply: merge the next date. noop: already committed with the same input. replay: restore and
    replay from the first changed date. resume: finish an interrupted replay, then plan again."""

    INIT_AND_APPLY = "init_and_apply"
    APPLY = "apply"
    NOOP = "noop"
    REPLAY = "replay"
    RESUME = "resume"


@dataclass(frozen=True)
class Plan:
    action: PlanAction
    reason: str
    # replay: restore to replay_from - 1 and replay replay_from..replay_to;
    # resume: finish the interrupted replay replay_from..replay_to, then plan the merge again.
    replay_from: dt.date | None = None
    replay_to: dt.date | None = None


@dataclass(frozen=True)
class RerunPlan:
    """What `zipper rerun` does: restore (or not), then replay `dates` in order."""

    restore_from: dt.date | None  # restore the table to the end of restore_from - 1; None: no restore
    dates: list[dt.date]
    marker_from: dt.date  # the replay recorded on the table until its last date is published
    marker_to: dt.date
    notes: list[str] = field(default_factory=list)
    # Resuming an interrupted replay (the first note says so): what that note adds to the
    # resumption itself, for a caller that has already said it resumes (a merge).
    resume_news: list[str] | None = None


def init_date(spec: TableSpec, requested: dt.date | None) -> dt.date:
    """The date whose end-of-day state `zipper init` creates; the first merge is the day after."""
    earliest = spec.first_merge_date() - DAY
    if requested is None:
        return earliest
    where = {"table": spec.table, "ds": requested.isoformat()}
    if requested < earliest:
        raise StateError(
            f"--ds is before {earliest}, the day before start_date: its next date, the first merge,"
            f" would be before start_date and could never run; init with --ds {earliest} or later",
            **where,
        )
    if requested >= spec.open_end:
        raise StateError(f"--ds is not before open_end {spec.open_end}", **where)
    return requested


def check_in_schedule(spec: TableSpec, ds: dt.date) -> None:
    where = {"table": spec.table, "ds": ds.isoformat()}
    if ds < spec.start_date:
        raise StateError(f"date is before the spec's start_date {spec.start_date}", **where)
    if spec.end_date and ds > spec.end_date:
        raise StateError(f"date is after the spec's end_date {spec.end_date}", **where)
    if spec.closed_end(ds) >= spec.open_end:
        # its closed versions would go to the open partition's own end value, replacing it
        raise StateError(
            f"date would close versions on {spec.closed_end(ds)}, not before open_end {spec.open_end}:"
            f" the last run date is {spec.open_end - DAY if spec.end_style == EndStyle.EXCLUSIVE else spec.open_end}"
            " (set end_date, or a later open_end)",
            **where,
        )


def plan_merge(
    spec: TableSpec,
    ds: dt.date,
    *,
    initialized: bool,
    last_committed: dt.date | None,
    init_ds: dt.date | None,
    committed_fingerprints: dict[str, str],
    current_fingerprint: Callable[[dt.date], str],
    pending_replay: tuple[dt.date, dt.date] | None = None,
) -> Plan:
    """`pending_replay`: (from, to) of a replay a crash interrupted, the table being behind `to`."""
    check_in_schedule(spec, ds)
    where = {"table": spec.table, "ds": ds.isoformat()}
    if not initialized:
        if ds == spec.first_merge_date():
            return Plan(PlanAction.INIT_AND_APPLY, "table does not exist yet; creating it first")
        raise StateError(
            f"table is not initialized; run `zipper init {spec.name}` (the first merge date is {spec.first_merge_date()})",
            **where,
        )
    if pending_replay is not None:
        first, last = pending_replay
        interrupted = f"a replay of {first}..{last} was interrupted with the table at {last_committed}"
        if spec.on_past_date == OnPastDate.ERROR:
            raise RefusedBySpecError(
                f"{interrupted}; the spec says on_past_date: error, so finish it explicitly:"
                f" `zipper rerun {spec.name} --from {first} --to {last}`",
                **where,
            )
        return Plan(PlanAction.RESUME, f"{interrupted}; finishing it first", first, last)
    if ds > last_committed + DAY:
        missing = date_range(last_committed + DAY, ds - DAY)
        raise StateError(
            f"table is at {last_committed}; merge the missing dates first: {describe_dates(missing)}", **where
        )
    if init_ds is not None and ds <= init_ds:
        raise StateError(f"date is not after the table's base date {init_ds}; the base already holds it", **where)
    # the dates committed without input before `ds` (on_missing_input: skip): one whose input has
    # appeared since is replayed from, by this merge as by one of that date
    skipped = sorted(dt.date.fromisoformat(d) for d, f in committed_fingerprints.items() if f == NO_INPUT)
    checked = [d for d in skipped if d < ds] + date_range(ds, last_committed)
    changed = [d for d in checked if committed_fingerprints.get(d.isoformat()) != current_fingerprint(d)]
    if ds == last_committed + DAY and not changed:
        return Plan(PlanAction.APPLY, f"table is at {last_committed}")
    if not changed:
        if ds == last_committed:
            return Plan(PlanAction.NOOP, f"already committed with the same input (table is at {last_committed})")
        return Plan(
            PlanAction.NOOP, f"table is at {last_committed}; {ds}..{last_committed} were committed with the same input"
        )
    reason = f"table is at {last_committed} and the input of {describe_dates(changed)} differs from what was committed"
    if spec.on_past_date == OnPastDate.ERROR:
        raise RefusedBySpecError(
            f"{reason}; the spec says on_past_date: error, so replay it explicitly:"
            f" `zipper rerun {spec.name} --from {changed[0]}`",
            **where,
        )
    # Dates before the first changed one would replay to exactly what is committed: start there.
    return Plan(PlanAction.REPLAY, reason, changed[0], last_committed)


def plan_rerun(
    spec: TableSpec,
    first: dt.date,
    last: dt.date | None,
    *,
    initialized: bool,
    last_committed: dt.date | None,
    init_ds: dt.date | None,
    pending_replay: tuple[dt.date, dt.date] | None,
    committed_fingerprints: dict[str, str],
    current_fingerprint: Callable[[dt.date], str],
    uncommit_later: bool = False,
) -> RerunPlan:
    """Restore to first - 1 and replay first..last (default: the last committed date).

    An interrupted replay (`pending_replay`) is resumed rather than restarted when the rerun
    starts inside it: its dates already replayed are kept unless their input changed since.
    A `last` before the last committed date leaves the dates after it uncommitted: only with
    `uncommit_later`, since their scheduled runs, already done, would have to run again."""
    where = {"table": spec.table, "ds": first.isoformat()}
    check_in_schedule(spec, first)
    if last is not None and last < first:
        raise StateError(f"--to {last} is before --from {first}", **where)
    if not initialized:
        raise StateError(
            f"table is not initialized; run `zipper init {spec.name}` or `zipper merge` its first date", **where
        )
    if init_ds is not None and first <= init_ds:
        raise StateError(f"date is not after the table's base date {init_ds}; the base already holds it", **where)
    if pending_replay is not None and first >= pending_replay[0]:
        span = _resumed_span(pending_replay, last, last_committed, committed_fingerprints, current_fingerprint)
    else:
        span = _new_span(spec, first, last, last_committed, pending_replay)
    notes = span.notes + _uncommitted_notes(spec, first, last, span, last_committed, uncommit_later)
    return RerunPlan(
        restore_from=span.start if span.start <= last_committed else None,
        dates=date_range(span.start, span.end),
        marker_from=span.marker_from,
        marker_to=span.end,
        notes=notes,
        resume_news=span.resume_news,
    )


@dataclass(frozen=True)
class _Span:
    """Where a rerun starts and ends, where its marker starts, and what the plan says of it."""

    start: dt.date
    end: dt.date
    marker_from: dt.date
    notes: list[str]
    resume_news: list[str] | None = None


def _resumed_span(
    pending_replay: tuple[dt.date, dt.date],
    last: dt.date | None,
    last_committed: dt.date,
    committed_fingerprints: dict[str, str],
    current_fingerprint: Callable[[dt.date], str],
) -> _Span:
    """A rerun inside an interrupted replay resumes it: its dates already replayed are kept
    unless their input changed since (the replay then starts at the first changed one)."""
    pending_from, pending_to = pending_replay
    changed = [
        d
        for d in date_range(pending_from, last_committed)
        if committed_fingerprints.get(d.isoformat()) != current_fingerprint(d)
    ]
    resume_news = [f"the input of {describe_dates(changed)} changed since it was replayed"] if changed else []
    resuming = f"resuming the interrupted replay of {pending_from}..{pending_to} (table at {last_committed})"
    return _Span(
        start=changed[0] if changed else last_committed + DAY,
        end=last or pending_to,
        marker_from=pending_from,
        notes=["; ".join([resuming, *resume_news])],
        resume_news=resume_news,
    )


def _new_span(
    spec: TableSpec,
    first: dt.date,
    last: dt.date | None,
    last_committed: dt.date,
    pending_replay: tuple[dt.date, dt.date] | None,
) -> _Span:
    """A rerun from `first`, taking over an interrupted replay that started after it; the dates
    before `first` must be committed."""
    notes = []
    if pending_replay is not None:
        notes.append(f"an interrupted replay of {pending_replay[0]}..{pending_replay[1]} is taken over by this one")
        end = last or pending_replay[1]
    else:
        end = last or last_committed
    if first > last_committed + DAY:
        missing = date_range(last_committed + DAY, first - DAY)
        raise StateError(
            f"table is at {last_committed}; merge the missing dates first: {describe_dates(missing)}",
            table=spec.table,
            ds=first.isoformat(),
        )
    return _Span(start=first, end=end, marker_from=first, notes=notes)


def _uncommitted_notes(
    spec: TableSpec, first: dt.date, last: dt.date | None, span: _Span, last_committed: dt.date, uncommit_later: bool
) -> list[str]:
    """Refuses an empty span or one that ends out of the schedule; an end before the last
    committed date leaves the later dates uncommitted, only with `uncommit_later`, and said."""
    where = {"table": spec.table, "ds": first.isoformat()}
    end, start = span.end, span.start
    if end < start and last is None:
        raise StateError(
            f"nothing to replay: the table is at {last_committed}, before {first}; merge {first}"
            f" (`zipper merge {spec.name} --ds {first}`), or give --to (to_date) to merge several dates",
            **where,
        )
    if end < start:
        raise StateError(f"--to {end} is before {start}, where the replay would start", **where)
    check_in_schedule(spec, end)
    later = describe_dates(date_range(end + DAY, last_committed)) if end < last_committed else ""
    if later and not uncommit_later:
        raise StateError(
            f"--to {end} is before the last committed date {last_committed}: {later} would no longer be"
            f" committed (and their done runs would have to run again); pass --uncommit-later (the rerun"
            f" DAG's uncommit_later) to do that, or leave out --to (to_date) to replay up to"
            f" {last_committed}",
            **where,
        )
    if later:
        return [f"the table will be at {end}: {later} will no longer be committed; merge them again to bring them back"]
    return []


def source_kind(spec: TableSpec) -> str:
    """The source mode as messages name it, e.g. `cdc with sequence_by`."""
    return str(spec.source.mode) + (f" with {spec.source.order_key}" if spec.source.order_column else "")


def plan_from_state(spec: TableSpec, ds: dt.date, st, current_fingerprint: Callable[[dt.date], str]) -> Plan:
    """`plan_merge` with what a table's committed state (table.state.TableState) says: the merge
    plans so through Spark, and jobs.noop without it; one call, so the two cannot differ."""
    return plan_merge(
        spec,
        ds,
        initialized=st.initialized,
        last_committed=st.last_committed,
        init_ds=st.init_ds,
        committed_fingerprints={d: c.fingerprint for d, c in st.commits.items()},
        current_fingerprint=current_fingerprint,
        pending_replay=(st.replay.first, st.replay.last) if st.replay else None,
    )
