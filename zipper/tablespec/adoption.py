"""The `adopt:` section: an SCD2 table written by hand (the article's zipper SQL) that `zipper adopt`
takes over as this spec's table, its history kept.

Hand-written zipper tables differ in the few things this section names: the begin and end
columns and how they write a date, whether the end is the last day a version held (inclusive) or
the first it no longer did (exclusive), what the open end is (`9999-12-31`, another date, or
NULL), and whether the table keeps a whole copy per date under a `dt` column. Every other column
is a data column."""

from __future__ import annotations

import datetime as dt

from pydantic import Field, model_validator

from zipper.tablespec.fields import Identifier, QualifiedTable, StrictModel, choice
from zipper.tablespec.modes import EndStyle

ADOPTED_OPEN_END_DEFAULT = dt.date(9999, 12, 31)


class AdoptSpec(StrictModel):
    """Where the table to take over is and how its validity columns are written."""

    table: QualifiedTable = Field(description="The existing table (database.table); it is read, never changed.")
    begin_column: Identifier = Field(
        description="Its column holding a version's first date (a date, or text as `date_format` says)."
    )
    end_column: Identifier = Field(
        description="Its column holding a version's end date (a date, or text as `date_format` says), its open end"
        " for open versions."
    )
    date_format: str | None = Field(
        default=None,
        description="How its begin, end and snapshot columns write a date when they are text or numbers, as a Spark"
        " datetime pattern: `yyyyMMdd` (`20231201`, text or a number), `yyyy/MM/dd`, `dd.MM.yyyy`. Without it they"
        " are dates or `YYYY-MM-DD` text.",
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

    valid_from_column: Identifier | None = Field(
        default=None,
        description="With `source.updated_at`: its column holding the time a version became valid (a timestamp"
        " or date), which becomes the spec's `valid_from_column`; with `valid_to_column`.",
    )
    valid_to_column: Identifier | None = Field(
        default=None,
        description="With `source.updated_at`: its column holding the time a version stopped being valid, which"
        " becomes the spec's `valid_to_column` (open versions get the open end at midnight, as zipper writes them).",
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
        named = (self.begin_column, self.end_column, self.snapshot_column, *self.validity_columns, self.deleted_column)
        return tuple(c for c in named if c)

    @property
    def validity_columns(self) -> tuple[str, ...]:
        """Its valid-from and valid-to columns, or none."""
        return (self.valid_from_column, self.valid_to_column) if self.valid_from_column else ()

    @model_validator(mode="after")
    def _whole_dates(self) -> AdoptSpec:
        pattern = self.date_format
        if pattern is not None and not all(part in pattern for part in ("yyyy", "MM", "dd")):
            raise ValueError(
                f"date_format {pattern!r} must write a whole date: a Spark datetime pattern with yyyy, MM and dd,"
                " such as yyyyMMdd"
            )
        return self

    @model_validator(mode="after")
    def _validity_pair(self) -> AdoptSpec:
        if bool(self.valid_from_column) != bool(self.valid_to_column):
            raise ValueError("valid_from_column and valid_to_column go together: name both or neither")
        return self

    @model_validator(mode="after")
    def _distinct_columns(self) -> AdoptSpec:
        named = list(self.own_columns)
        if len({c.lower() for c in named}) < len(named):
            raise ValueError(f"the columns adopt names must differ: {named}")
        return self
