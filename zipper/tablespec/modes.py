"""What a source's rows mean, as one type: a `str` enum, so it still equals the spec's text."""

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
