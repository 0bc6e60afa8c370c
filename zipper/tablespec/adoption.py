"""The `adopt:` section: an SCD2 table written by hand (the article's zipper SQL) that `zipper adopt`
takes over as this spec's table, its history kept.

Hand-written zipper tables differ in the few things this section names: the begin and end
columns, whether the end is the last day a version held (inclusive) or the first it no longer
did (exclusive), what the open end is (`9999-12-31`, another date, or NULL), and whether the
table keeps a whole copy per date under a `dt` column. Every other column is a data column."""

from __future__ import annotations

import datetime as dt

from pydantic import Field, model_validator

from zipper.tablespec.fields import Identifier, QualifiedTable, StrictModel, choice
from zipper.tablespec.modes import EndStyle

ADOPTED_OPEN_END_DEFAULT = dt.date(9999, 12, 31)


class AdoptSpec(StrictModel):
    """Where the table to take over is and how its validity columns are written."""

    table: QualifiedTable = Field(description="The existing table (database.table); it is read, never changed.")
    begin_column: Identifier = Field(description="Its column holding a version's first date (a date or `YYYY-MM-DD`).")
    end_column: Identifier = Field(
        description="Its column holding a version's end date (a date or `YYYY-MM-DD`), its open end for open versions."
    )
    end_style: choice(EndStyle) = Field(
        description="`inclusive`: a closed version's end is the last day it held (the article's `end_date = d - 1`);"
        " `exclusive`: the first day it no longer held. Given, never guessed: the two differ by a day."
    )
    open_end: dt.date | None = Field(
        default=ADOPTED_OPEN_END_DEFAULT,
        description="The end value of its open versions: a date (`9999-12-31`, `3000-12-31`, ...) or `null` when"
        " open versions have a NULL end.",
    )
    snapshot_column: Identifier | None = Field(
        default=None,
        description="A column (a `dt` partition) under which the table keeps a whole copy of itself per date:"
        " the copy of `--through` is adopted. Without it, the table's rows are one history.",
    )

    deleted_column: Identifier | None = Field(
        default=None,
        description="With `source.hard_deletes: new_record`: its column that marks a deleted key's version (a"
        " boolean, or a number that is not 0), which becomes the spec's `deleted_column`. Without it, no version"
        " of the table is a deleted key's.",
    )

    @property
    def own_columns(self) -> tuple[str, ...]:
        """Its columns that say a version's validity, not data."""
        return tuple(c for c in (self.begin_column, self.end_column, self.snapshot_column, self.deleted_column) if c)

    @model_validator(mode="after")
    def _distinct_columns(self) -> AdoptSpec:
        named = list(self.own_columns)
        if len({c.lower() for c in named}) < len(named):
            raise ValueError(f"begin_column, end_column, snapshot_column and deleted_column must differ: {named}")
        return self
