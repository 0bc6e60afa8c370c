"""Typed table specs, validated once at load so every later step can trust them.

The table's own keys are here; the checks across them are in `crosschecks`, the `source:` and
`base:` sections in `source`, the value types of the keys in `fields`."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from zipper.tablespec.adoption import AdoptSpec
from zipper.tablespec.crosschecks import INTERNAL_PREFIX as INTERNAL_PREFIX
from zipper.tablespec.crosschecks import VALIDITY_TYPES as VALIDITY_TYPES
from zipper.tablespec.crosschecks import CrossChecks
from zipper.tablespec.fields import ColumnType, Identifier, QualifiedTable, StrictModel, TrackedColumns, choice
from zipper.tablespec.modes import EndStyle, OnPastDate, SensorMode, SourceMode, Tracked
from zipper.tablespec.source import BaseSpec as BaseSpec
from zipper.tablespec.source import SourceSpec as SourceSpec

OPEN_END_DEFAULT = dt.date(9999, 12, 31)
SKIP_AFTER_DEFAULT = 6 * 3600  # seconds a `skip` table's sensor waits for the day's input after the date ends

DAILY_CRON = re.compile(r"^(\d{1,2}) (\d{1,2}) \* \* \*$")
DAILY_PRESETS = ("@daily", "@midnight")


def _daily_schedule(value: str) -> str:
    """A zipper table takes one increment per date, so only schedules that fire once a day make sense."""
    value = " ".join(value.split())
    if value in DAILY_PRESETS:
        return value
    match = DAILY_CRON.match(value)
    if not match or int(match.group(1)) > 59 or int(match.group(2)) > 23:
        raise ValueError(
            f"{value!r} is not a daily schedule: use '@daily' or a cron expression 'M H * * *' (one run per date)"
        )
    return value


class SensorSpec(StrictModel):
    """How the DAG waits for the day's increment before merging."""

    enabled: bool = Field(default=True, description="Wait for the day's increment before merging.")
    mode: choice(SensorMode) = Field(
        default=SensorMode.RESCHEDULE,
        description="`reschedule` frees the worker slot between checks; `poke` holds it; `deferrable` waits in"
        " the triggerer (needs `airflow triggerer`).",
    )
    poke_interval: int = Field(default=300, ge=1, description="Seconds between checks.")
    timeout: int = Field(default=172800, ge=1, description="Seconds before the sensor fails.")
    skip_after: int | None = Field(
        default=None,
        ge=0,
        description="`source.on_missing_input: skip` only (default 21600, 6 hours): seconds after the date"
        " ends (the run's data interval end) that the sensor waits for the day's input; then it succeeds"
        " without it, and the merge commits the date as skipped.",
    )

    @property
    def skip_after_seconds(self) -> int:
        return SKIP_AFTER_DEFAULT if self.skip_after is None else self.skip_after


class AirflowSpec(StrictModel):
    """Scheduling of the table's DAG. Only read by the Airflow integration; the engine ignores it."""

    schedule: Annotated[str, AfterValidator(_daily_schedule)] = Field(
        default="@daily",
        description="`@daily` (or `@midnight`) or a cron `M H * * *`: one run per date; the run of date D starts"
        " when D ends.",
    )
    owner: str = Field(default="zipper", min_length=1, description="The DAG's owner.")
    tags: list[str] = Field(default=[], description="The DAG's tags (`zipper` is always one).")
    retries: int = Field(
        default=1,
        ge=0,
        description="Retries of the merge, for failures another try may fix: the increment not there (or not"
        " whole) yet, a failed read, a busy metastore, a concurrent publish, Spark, JVM and I/O failures, a"
        " failed audit. Bad input and a bad spec fail at once, without retry.",
    )
    retry_delay_minutes: float = Field(default=5, ge=0, description="Minutes between retries.")
    spark_conn_id: str = Field(
        default="zipper_spark",
        min_length=1,
        description=(
            "The Spark connection of the merge, rerun and correct tasks: `spark_connect` (a client of its server) or"
            " `spark` (spark-submit); if it does not exist, a client of the warehouse's own Spark Connect server."
        ),
    )
    pool: str = Field(
        default="zipper_merges", min_length=1, description="The Airflow pool of the merge and rerun tasks."
    )
    sensor: SensorSpec = Field(default=SensorSpec(), description="How the DAG waits for the day's increment.")


class GuardSpec(StrictModel):
    """The change-volume guard: a day that closes, deletes or changes far more of the open rows than
    the table's usual is refused before it is published (`zipper.table.guard`). Both limits must be
    passed: a share of the open rows, and a multiple of the median of the recent committed days."""

    enabled: bool = Field(default=True, description="Refuse a day whose change volume is far above the table's usual.")
    max_fraction: float = Field(
        default=0.3,
        gt=0,
        le=1,
        description="Share of the open rows a day may close, delete or update in place before it is refused"
        " (when it also passes `max_median_multiple`).",
    )
    max_median_multiple: float = Field(
        default=10,
        gt=0,
        description="Multiple of the median of the recent committed days' changed open rows (a median under 1"
        " counts as 1) a day may reach before it is refused (when it also passes `max_fraction`).",
    )
    min_rows: int = Field(default=100, ge=0, description="A day changing fewer open rows than this is never refused.")
    recent_days: int = Field(
        default=30, ge=1, description="How many of the latest committed days the median is taken over."
    )
    min_days: int = Field(
        default=5,
        ge=1,
        description="A table with fewer committed days than this (its first days) has no usual yet: on those"
        " days the share of open rows (max_fraction) alone decides.",
    )


class TableSpec(CrossChecks, StrictModel):
    """One zipper table: where its daily input comes from, its keys, and how its versions are dated."""

    name: Identifier = Field(
        description="The table's name in zipper (the DAG is `zipper_<name>`); kept in lower case, unique across"
        " the specs folder. Of two files using one name or table, the one named after its spec is kept."
    )
    table: QualifiedTable = Field(
        description="The Hive table, `database.table` (the database is created if missing); quoted in all"
        " generated SQL."
    )
    source: SourceSpec = Field(description="Where the day's input comes from and what its rows mean.")
    # Empty only for a landing zone, whose `_metadata.json` supplies them when the table is created.
    keys: list[Identifier] = Field(
        default=[],
        validate_default=True,
        description="Required (except for `landing_zone`, which can take them from `_metadata.json`): the"
        " business key columns. A NULL or repeated key in one day's input fails the merge.",
    )
    base: BaseSpec | None = Field(
        default=None, description="A snapshot `zipper init` loads as the table's first open state."
    )
    start_date: dt.date = Field(description="The first merge date.")
    end_date: dt.date | None = Field(default=None, description="The last merge date, if the table has one.")
    begin_column: Identifier = Field(
        default="begin_dt", description="The column holding a version's first date (text `YYYY-MM-DD`)."
    )
    end_column: Identifier = Field(
        default="end_dt",
        description="The column holding a version's end date (text `YYYY-MM-DD`); the partition column.",
    )
    valid_from_column: Identifier = Field(
        default="valid_from",
        description="With `source.updated_at`: the column holding the time a version became valid (its row's"
        " `updated_at`), in that column's type.",
    )
    valid_to_column: Identifier = Field(
        default="valid_to",
        description="With `source.updated_at`: the column holding the time a version stopped being valid (the next"
        " version's `valid_from`, or the delete's `updated_at`); `open_end` at midnight for open versions.",
    )
    deleted_column: Identifier = Field(
        default="is_deleted",
        description="With `source.hard_deletes: new_record`: the boolean column that is true on a deleted key's"
        " tombstone version and false on every other; zipper's own, like `begin_column`. A table made without it"
        " needs to be loaded again to turn `new_record` on.",
    )
    open_end: dt.date = Field(
        default=OPEN_END_DEFAULT,
        description="The end value (and partition) of open versions; every run date must close versions before"
        " it, checked against `end_date` at load and against every run date.",
    )
    end_style: choice(EndStyle) = Field(
        default=EndStyle.EXCLUSIVE,
        description="`exclusive`: a version closed by the run of D ends on D; `inclusive`: on D - 1. Fixed when the"
        " table is created: a spec whose `end_style` (or `keys`) differs from the table's is refused.",
    )
    track_columns: TrackedColumns = Field(
        default=Tracked.ALL,
        description="`all`, or the columns that open a new version; changes in the others update the open version"
        " in place. With `columns` declared, each must be one of them and not a key (checked at load).",
    )
    track_columns_except: list[Identifier] | None = Field(
        default=None,
        description="The columns whose changes update the open version in place; every other column (but the"
        " keys) opens a new version, columns added later included. Not with a `track_columns` list. With"
        " `columns` declared, each must be one of them (checked at load); without, the merge checks them.",
    )
    retention_days: int = Field(
        default=7, ge=0, description="How long `zipper vacuum` keeps superseded data directories."
    )
    on_past_date: choice(OnPastDate) = Field(
        default=OnPastDate.REPLAY,
        description="A merge of a past date whose input (or a later date's) changed: `replay` restores and replays"
        " from the first changed date; `error` refuses and names the `zipper rerun` command to run.",
    )
    columns: dict[Identifier, ColumnType] | None = Field(
        default=None,
        description="`{name: spark_sql_type}`: the table's columns when there is no base; types are checked at load.",
    )
    adopt: AdoptSpec | None = Field(
        default=None,
        description="An SCD2 table written by hand that `zipper adopt` takes over as this table, its history kept"
        " (the docs page Moving from hand-written zipper SQL).",
    )
    description: str = Field(default="", description="Free text, shown as the DAG's description.")
    airflow: AirflowSpec = Field(default=AirflowSpec(), description="How the table's DAG is scheduled.")
    guard: GuardSpec = Field(
        default=GuardSpec(),
        description="The change-volume guard: a day that changes far more open rows than usual is refused.",
    )
    _origin: Path | None = PrivateAttr(default=None)

    @property
    def origin(self) -> Path | None:
        """The spec file this was loaded from; relative source paths resolve against its folder."""
        return self._origin

    @field_validator("keys")
    @classmethod
    def _keys_given(cls, value: list[str], info: ValidationInfo) -> list[str]:
        source = info.data.get("source")
        if not value and (source is None or source.mode is not SourceMode.LANDING_ZONE):
            raise ValueError(
                "at least one key column is required (only mode landing_zone can take them from _metadata.json)"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TableSpec:
        self._check_across_keys()
        return self

    @property
    def validity_columns(self) -> tuple[str, ...]:
        """zipper's own columns of a table with `source.updated_at` (valid from, valid to), else none.
        Stored after the data columns, they are written by the merge, never read from an input."""
        if not self.source.updated_at:
            return ()
        return (self.valid_from_column, self.valid_to_column)

    @property
    def tombstone_columns(self) -> tuple[str, ...]:
        """zipper's own column of a table with `hard_deletes: new_record` (true on tombstones), else
        none. Stored after the data columns, written by the merge, never read from an input."""
        return (self.deleted_column,) if self.source.keeps_tombstones else ()

    @property
    def tombstone_column(self) -> str | None:
        return self.deleted_column if self.source.keeps_tombstones else None

    @property
    def own_columns(self) -> tuple[str, ...]:
        """zipper's own data columns: the validity columns and the deleted column, where the spec has them."""
        return (*self.validity_columns, *self.tombstone_columns)

    @property
    def database(self) -> str:
        return self.table.split(".")[0]

    @property
    def table_name(self) -> str:
        return self.table.split(".")[1]

    def closed_end(self, ds: dt.date) -> dt.date:
        """The end value (and partition) of versions closed by the run of `ds`."""
        return ds if self.end_style == EndStyle.EXCLUSIVE else ds - dt.timedelta(days=1)

    def closed_by(self, end: dt.date) -> dt.date:
        """The date whose run closes versions with this end value (`closed_end`'s inverse)."""
        return end if self.end_style == EndStyle.EXCLUSIVE else end + dt.timedelta(days=1)

    def first_merge_date(self) -> dt.date:
        return self.start_date

    def with_keys(self, keys: list[str]) -> TableSpec:
        """This spec with its key columns resolved (a landing zone's, from `_metadata.json`)."""
        resolved = self.model_copy(update={"keys": list(keys)})
        resolved._origin = self._origin
        return resolved
