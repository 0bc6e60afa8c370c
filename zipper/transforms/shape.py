"""What a merge variant changes, as data: one record per date (`MergeShape`), read by the transforms.

A table's merge differs by its spec (keys, tracked columns, begin and end columns, validity columns
with `source.updated_at`, a tombstone column with `hard_deletes: new_record`, fill-nulls with
`ignore_null_updates`) and by its day (the columns it has, the double columns compared at float
precision, whether the change set carries deletes). The job builds the shape once; each transform
takes frames and the shape, and reads the fields it needs. A new variant is a field here and the
transforms that read it, not a flag threaded through the calls.

No pyspark here: the shape is built and compared before any Spark session is asked anything."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from zipper.tablespec.model import TableSpec

# The kinds the small job counts (`daily.day_rows`, `daily.day_versions`): what the day did to each
# key it names. The tombstone kinds belong to tables with a deleted column, `intraday` to those with
# several versions of a key a day.
CHANGED, UPDATED, UNCHANGED, DELETED, VANISHED = "changed", "updated", "unchanged", "deleted", "vanished"
INTRADAY = "intraday"  # a version the day both opened and closed
TOMBSTONE, STILL_DELETED = "tombstone", "still_deleted"


@dataclass(frozen=True)
class MergeShape:
    """Everything a variant of the daily merge changes, for one date of one table.

    `columns`: the day's data columns in table order (keys among them); `tracked`: those whose
    change opens a new version. `ds`: the date merged; `closed_end`: the end value of its closed
    partition; `end_lag`: days from a closed partition's end value to the date whose load closed
    it (1 with `end_style: inclusive`). `validity`: (valid_from, valid_to) with `source.updated_at`
    (`updated_at` its column), when a key may have several versions a day. `tombstone`: the deleted
    column of a table that keeps tombstones. `deletes`: the change set may delete keys.
    `fill_nulls`: a NULL of the day keeps the open value. `float_precision`: double columns
    compared as floats. (How the day's rows meet the open ones, by broadcast or by a shuffle, is
    the job's choice, not the variant's: the transforms take it beside the shape.)"""

    keys: tuple[str, ...]
    columns: tuple[str, ...]
    tracked: tuple[str, ...]
    begin_column: str
    ds: str
    end_column: str = "end_dt"
    closed_end: str = ""
    open_end: str = "9999-12-31"
    end_lag: int = 0
    validity: tuple[str, str] | None = None
    updated_at: str | None = None
    tombstone: str | None = None
    deletes: bool = False
    fill_nulls: bool = False
    float_precision: frozenset[str] = frozenset()

    def __post_init__(self):
        for name in ("keys", "columns", "tracked"):  # a caller's lists, kept as tuples
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def date(self) -> dt.date:
        """The date merged, as a date (errors and state name it so)."""
        return dt.date.fromisoformat(self.ds)

    @property
    def versioned(self) -> bool:
        """Several versions of a key a day, each valid from its `updated_at` (`daily.day_versions`)."""
        return self.validity is not None

    @property
    def values(self) -> list[str]:
        """The columns that are not keys."""
        return [c for c in self.columns if c not in self.keys]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds the day's small job counts, each 0 if nothing of that kind happened."""
        kinds = (CHANGED, UPDATED, UNCHANGED)
        kinds += (DELETED, VANISHED) if self.deletes else ()
        kinds += (INTRADAY,) if self.versioned else ()
        kinds += (TOMBSTONE, STILL_DELETED) if self.tombstone else ()
        return kinds

    @classmethod
    def of(
        cls,
        spec: TableSpec,
        ds: dt.date,
        columns: list[str],
        tracked: list[str],
        *,
        deletes: bool,
        float_precision: frozenset[str] = frozenset(),
    ) -> MergeShape:
        """The shape of `spec`'s merge of `ds`, a day with `columns` (`tracked` among them)."""
        closed_end = spec.closed_end(ds)
        return cls(
            keys=tuple(spec.keys),
            columns=tuple(columns),
            tracked=tuple(tracked),
            begin_column=spec.begin_column,
            ds=ds.isoformat(),
            end_column=spec.end_column,
            closed_end=closed_end.isoformat(),
            open_end=spec.open_end.isoformat(),
            end_lag=(ds - closed_end).days,
            validity=tuple(spec.validity_columns) if spec.validity_columns else None,
            updated_at=spec.source.updated_at,
            tombstone=spec.tombstone_column,
            deletes=deletes,
            fill_nulls=spec.source.fills_null_updates,
            float_precision=float_precision,
        )
