"""Where a zipper table's files go: every directory and slot, named in one place.

A table's location holds `versions/`, and under it one directory per run, named by its run id,
written once and never changed: a publish points partitions at directories inside it, so no
reader ever sees a half-written file. `versions/empty` stays empty: partitions not yet
published point there. Inside a run's directory, rows sit in slots, `zipper_slot=<slot>/`, as
Spark's `partitionBy` writes them from the slot column the transforms set: the daily merge's
new open rows and closed versions, a rebuild's one closed slot per end value, a correction's
one rewritten slot per partition. No pyspark here: the transforms, the table store and the jobs
all read these names, and the layers below the jobs must agree on them without importing
each other."""

from __future__ import annotations

from enum import StrEnum

SLOT = "zipper_slot"  # the column whose value is a row's slot directory
VERSIONS = "versions"
EMPTY = "empty"
CLOSED_PREFIX = "closed-"  # + an end value: a rebuild's closed partition
CORRECTED_PREFIX = "corrected_"  # + an end value: a correction's rewritten partition
REMOVED_VERSIONS = "removed_versions"  # a correction's removed versions' dates (no keys)
ERASED_KEYS = "erased_keys"  # an erasure's salted key hashes
CHANGE_SET = "zipper_changes"  # a day's change set, written once and read several times; deleted before the publish


class Slot(StrEnum):
    """The daily merge's slots: the new open rows, the versions it closes, the open rows whose
    keys the day names (set aside for the small job, never published), and the deletes of keys
    that were not open (counted, never written)."""

    OPEN = "open"
    CLOSED = "closed"
    TOUCHED = "touched"
    NONE = "none"


def versions_root(location: str) -> str:
    return f"{location}/{VERSIONS}"


def run_dir(location: str, run_id: str) -> str:
    """A run's own directory: nothing reads it until a publish points a partition inside it."""
    return f"{versions_root(location)}/{run_id}"


def empty_dir(location: str) -> str:
    """A directory that stays empty: pending partitions point here until they are published."""
    return f"{versions_root(location)}/{EMPTY}"


def slot_dir(run_root: str, slot: str) -> str:
    """The directory of one slot of a run."""
    return f"{run_root}/{SLOT}={slot}"


def closed_slot(end: str) -> str:
    """A rebuild's slot for the closed partition of `end`."""
    return CLOSED_PREFIX + end


def corrected_slot(end: str) -> str:
    """A correction's slot for the rewritten partition of `end`."""
    return CORRECTED_PREFIX + end
