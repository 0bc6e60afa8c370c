"""`--profile`: what a run spent its time on, counted as it happens.

A small day's merge costs its round trips, not its rows: each Spark execution on a warm server
takes 0.1-0.3 s, each plan analysis tens of milliseconds, each metastore call a few. So the
profile counts and times them by kind: Spark executions (each one or more jobs), plan analyses
and settings asked of the Spark Connect server, metastore calls over thrift, and zipper's
file-system operations (listings, footers, deletes). Each Spark execution is listed with the
step of zipper that asked for it, so a slow step shows by name.

Recording patches the few places every such call passes through (the Spark Connect client's
request methods, the thrift client's calls, `zipper.core.fs`'s functions) for the length of a
`with`, and restores them after. A classic driver has no client requests: its Spark jobs are
counted from the driver's status tracker instead."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

ZIPPER_ROOT = str(Path(__file__).resolve().parents[1])


class CallKind(StrEnum):
    """What a counted call is, in the order the profile lists them."""

    EXECUTION = "spark executions"
    ANALYSIS = "spark plan analyses"
    SETTING = "spark settings"
    SPARK_JOB = "spark jobs"  # a classic driver's, from its status tracker
    METASTORE = "metastore calls"
    FILES = "file-system calls"


@dataclass
class Tally:
    count: int = 0
    seconds: float = 0.0


@dataclass
class Profile:
    """The calls of one run, by kind; `steps`: each Spark execution with the step that asked for it."""

    tallies: dict[CallKind, Tally] = field(default_factory=dict)
    steps: list[tuple[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    _depth: dict[CallKind, int] = field(default_factory=dict)

    def add(self, kind: CallKind, seconds: float, count: int = 1) -> None:
        tally = self.tallies.setdefault(kind, Tally())
        tally.count += count
        tally.seconds += seconds

    def timed(self, kind: CallKind, call: Callable, step: bool = False) -> Callable:
        """`call`, counted and timed as `kind` (only the outermost of nested calls of one kind)."""

        @functools.wraps(call)
        def counted(*args, **kwargs):
            depth = self._depth.get(kind, 0)
            if depth:
                return call(*args, **kwargs)
            self._depth[kind] = 1
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self._depth[kind] = 0
                took = time.perf_counter() - started
                self.add(kind, took)
                if step:
                    self.steps.append((_asking_step(), took))

        return counted

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def report(self) -> dict:
        """The profile as the JSON report carries it (so far, when the run has not ended)."""
        return {
            "seconds": round(self.seconds or self.elapsed(), 3),
            **{
                str(kind): {"calls": t.count, "seconds": round(t.seconds, 3)}
                for kind, t in sorted(self.tallies.items(), key=lambda kv: list(CallKind).index(kv[0]))
            },
            "spark_executions": [{"step": s, "seconds": round(t, 3)} for s, t in self.steps],
        }

    def lines(self, what: str) -> list[str]:
        """The profile as printed: a line per kind, then each Spark execution with its step."""
        lines = [f"profile of {what}: {self.seconds:.2f} s"]
        counted = 0.0
        for kind in CallKind:
            tally = self.tallies.get(kind)
            if tally is None:
                continue
            if kind != CallKind.SPARK_JOB:
                counted += tally.seconds
            lines.append(f"  {kind:<22} {tally.count:>5}  {tally.seconds:7.3f} s")
        lines.append(
            f"  {'the rest':<22} {'':>5}  {max(self.seconds - counted, 0.0):7.3f} s  (zipper's own work, waits)"
        )
        for number, (step, took) in enumerate(self.steps, 1):
            lines.append(f"  execution {number}: {took:.3f} s  {step}")
        return lines


def _asking_step() -> str:
    """The innermost frames of zipper's own code on the stack: the step that asked for a call."""
    frames = []
    frame = sys._getframe(2)
    while frame is not None and len(frames) < 2:
        filename = frame.f_code.co_filename
        if filename.startswith(ZIPPER_ROOT) and not filename.endswith("profile.py"):
            module = Path(filename).stem
            frames.append(f"{module}.{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(frames) or "?"


@contextlib.contextmanager
def _patched(owner, name: str, replacement) -> Iterator[None]:
    original = owner.__dict__[name]
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _spark_connect_patches(profile: Profile, stack: contextlib.ExitStack) -> None:
    try:
        from pyspark.sql.connect.client.core import SparkConnectClient
    except ImportError:  # no Spark Connect client in this environment: nothing of it to count
        return
    for name, kind, step in (
        ("_execute_and_fetch", CallKind.EXECUTION, True),
        ("_execute", CallKind.EXECUTION, True),
        ("_analyze", CallKind.ANALYSIS, False),
        ("config", CallKind.SETTING, False),
    ):
        if name in SparkConnectClient.__dict__:
            stack.enter_context(
                _patched(SparkConnectClient, name, profile.timed(kind, SparkConnectClient.__dict__[name], step))
            )


def _metastore_patches(profile: Profile, stack: contextlib.ExitStack) -> None:
    """The thrift client's calls: each generated method `x` with its `send_x` is one round trip."""
    from pymetastore.hive_metastore import ThriftHiveMetastore

    client = ThriftHiveMetastore.Client
    for name, call in list(client.__dict__.items()):
        if callable(call) and f"send_{name}" in client.__dict__:
            stack.enter_context(_patched(client, name, profile.timed(CallKind.METASTORE, call)))


def _file_patches(profile: Profile, stack: contextlib.ExitStack) -> None:
    """zipper's file operations: the public functions of `zipper.core.fs` that touch files, and the
    table's footer reads (`zipper.table.file_format`)."""
    from zipper.core import fs
    from zipper.table import file_format

    for name in (
        "mkdirs",
        "delete",
        "glob",
        "list_data_files",
        "list_dirs",
        "list_files",
        "du",
        "exists",
        "read_text",
        "copy",
        "unfinished_writes",
        "broken_links",
    ):
        if name in fs.__dict__:
            stack.enter_context(_patched(fs, name, profile.timed(CallKind.FILES, fs.__dict__[name])))
    # the table's footer reads: one file call per directory counted
    stack.enter_context(
        _patched(file_format, "rows_in_files", profile.timed(CallKind.FILES, file_format.rows_in_files))
    )


def _classic_jobs(spark) -> set[int]:
    """The job ids a classic driver's status tracker knows (none on a Spark Connect client)."""
    context = getattr(spark, "sparkContext", None) if spark is not None else None
    if context is None or type(spark).__module__.startswith("pyspark.sql.connect"):
        return set()
    try:
        return set(context.statusTracker().getJobIdsForGroup(None))
    except Exception:  # noqa: BLE001 - a driver gone: nothing to count
        return set()


@contextlib.contextmanager
def recording(session: Callable[[], object] | None = None) -> Iterator[Profile]:
    """Count and time the calls made inside the block. `session`: returns the run's Spark session
    once open (None before), for a classic driver's job count."""
    profile = Profile()
    with contextlib.ExitStack() as stack:
        _spark_connect_patches(profile, stack)
        _metastore_patches(profile, stack)
        _file_patches(profile, stack)
        before = _classic_jobs(session() if session else None)
        try:
            yield profile
        finally:
            profile.seconds = profile.elapsed()
            jobs = _classic_jobs(session() if session else None) - before
            if jobs:
                profile.add(CallKind.SPARK_JOB, 0.0, len(jobs))
