"""The spec's closed choices, each as one type: `str` enums, so they still equal the spec's text
(and JSON, messages and metastore properties keep writing it)."""

from __future__ import annotations

from enum import StrEnum


class SourceMode(StrEnum):
    """upsert: each row is its key's full new state. cdc: each row also carries an operation.
    landing_zone: a folder of numbered change files with row markers. snapshot: the complete
    current source."""

    UPSERT = "upsert"
    CDC = "cdc"
    LANDING_ZONE = "landing_zone"
    SNAPSHOT = "snapshot"


class SourceFormat(StrEnum):
    """How a source or base is read: files of a format, or a Hive table."""

    PARQUET = "parquet"
    CSV = "csv"
    ORC = "orc"
    TABLE = "table"


class EndStyle(StrEnum):
    """exclusive: a version closed by the run of D ends on D; inclusive: on D - 1."""

    EXCLUSIVE = "exclusive"
    INCLUSIVE = "inclusive"


class OnPastDate(StrEnum):
    """A merge of a past date whose input changed: replay from the first changed date, or refuse."""

    REPLAY = "replay"
    ERROR = "error"


class DeleteMatch(StrEnum):
    """cdc: what a delete must carry of the open row: every other column, or only the key."""

    ALL_COLUMNS = "all_columns"
    KEY = "key"


class HardDeletes(StrEnum):
    """A deleted key (missing from a snapshot, a cdc or landing-zone delete): its open version is
    closed (invalidate), closed and followed by a tombstone version (new_record), or, for a
    snapshot only, left open (ignore)."""

    INVALIDATE = "invalidate"
    NEW_RECORD = "new_record"
    IGNORE = "ignore"


class OnAnomaly(StrEnum):
    """landing_zone: a change that does not fit the open rows is counted (warn) or fails the merge."""

    WARN = "warn"
    ERROR = "error"


class OnMissingInput(StrEnum):
    """A date whose input is not there: the merge fails (and is retried), or commits the date as
    a day without changes (weekends, holidays)."""

    FAIL = "fail"
    SKIP = "skip"


class SensorMode(StrEnum):
    """How the DAG's sensor waits: reschedule frees the worker slot between checks, poke holds it,
    deferrable waits in the triggerer."""

    RESCHEDULE = "reschedule"
    POKE = "poke"
    DEFERRABLE = "deferrable"


class Tracked(StrEnum):
    """`track_columns: all`: every column but the keys opens a new version (the other choice is a
    list of the columns that do)."""

    ALL = "all"
