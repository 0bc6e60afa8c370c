"""The spec's `source:` and `base:` sections: where a table's input comes from.

A source's keys depend on its mode and format, and its checks say which goes with which. These
sections live apart from the table's own keys (`model`), which hold each of them as one key."""

from __future__ import annotations

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from zipper.tablespec.fields import (
    CsvColumnType,
    Identifier,
    PartitionTemplate,
    QualifiedTable,
    ReaderOptions,
    StrictModel,
    Template,
    choice,
)
from zipper.tablespec.modes import DeleteMatch, HardDeletes, OnAnomaly, OnMissingInput, SourceFormat, SourceMode

# Which source keys each mode accepts (besides mode, format, path, table, partition, options).
MODE_KEYS: dict[str, set[SourceMode]] = {
    "op_column": {SourceMode.CDC},
    "delete_match": {SourceMode.CDC},
    "sequence_by": {SourceMode.UPSERT, SourceMode.CDC},
    "updated_at": {SourceMode.UPSERT, SourceMode.CDC, SourceMode.LANDING_ZONE, SourceMode.SNAPSHOT},
    "hard_deletes": {SourceMode.SNAPSHOT, SourceMode.CDC, SourceMode.LANDING_ZONE},
    "on_anomaly": {SourceMode.LANDING_ZONE},
    # a landing zone's day without a new file is an ordinary empty day already
    "on_missing_input": {SourceMode.UPSERT, SourceMode.CDC, SourceMode.SNAPSHOT},
    "ignore_null_updates": {SourceMode.UPSERT, SourceMode.CDC, SourceMode.LANDING_ZONE},
}
# Why a mode refuses a key, where the mode's meaning says it (added to the refusal's line).
MODE_KEY_REASONS: dict[tuple[str, SourceMode], str] = {
    ("ignore_null_updates", SourceMode.SNAPSHOT): "a snapshot row is the whole state of its key",
}


class SourceSpec(StrictModel):
    """Where the day's input comes from and what its rows mean (`mode`); `path` and `partition`
    are Jinja templates of `ds`.

    upsert: each row is the full new state of its key. cdc: each row also carries an operation
    (`op_column`: 0 insert or update, 1 delete). landing_zone: a folder of numbered change files
    with `__rowMarker__` and `_metadata.json`. snapshot: the complete current source."""

    mode: SourceMode = Field(
        default=SourceMode.UPSERT,
        description="What a row of the input means: `upsert` (the full new state of its key), `cdc` (a change"
        " with an operation column), `landing_zone` (numbered change files) or `snapshot` (the whole source).",
    )
    format: choice(SourceFormat) = Field(
        default=SourceFormat.PARQUET,
        description="`parquet`, `csv` (with a header), `orc`, or `table` (a Hive table); `landing_zone` reads"
        " Parquet only.",
    )
    path: Template | None = Field(
        default=None,
        description="Required for files. A Jinja template with `ds`, `ds_nodash`, `prev_ds`, `next_ds`; globs"
        " allowed; relative to the spec file's folder. For `landing_zone`, the table's folder. Rendered once at"
        " load with a sample date, so a typo (`{{ dss }}`) fails there.",
    )
    table: QualifiedTable | None = Field(default=None, description="`format: table` only: the Hive table to read.")
    partition: PartitionTemplate | None = Field(
        default=None,
        description="`format: table` only: a partition filter such as `\"ds = '{{ ds }}'\"` (only `col = 'value'`"
        " terms joined by AND or commas, each column once; checked at load).",
    )
    options: ReaderOptions = Field(
        default={},
        description="Spark reader options (`{header: true, sep: ';'}`). YAML booleans and numbers pass as Spark's"
        " text (`true`, `0.5`); names ignore case as in Spark (`mergeschema: false` overrides zipper's default"
        " `mergeSchema: true`); one option in two spellings is refused.",
    )
    # The column types of a CSV input (CSV has none); columns not listed take the table's types.
    schema_: dict[Identifier, CsvColumnType] | None = Field(
        default=None,
        alias="schema",
        description="`format: csv` only: `{column: spark_sql_type}` for the CSV's columns. Others take the"
        " table's type; a column the table lacks is read as string, or, for the first merge of a new table,"
        " typed by Spark's inference.",
    )
    op_column: Identifier | None = Field(
        default=None,
        description="`cdc` only (default `sys_op`): the operation column, `0` insert or update, `1` delete;"
        " not stored.",
    )
    delete_match: choice(DeleteMatch) | None = Field(
        default=None,
        description="`cdc` only (default `all_columns`): a delete must carry every other column of the open"
        " row; `key`: only the key.",
    )
    sequence_by: Identifier | None = Field(
        default=None,
        description="`upsert` and `cdc` only: a column ordering several rows of one key in a day; the last wins.",
    )
    updated_at: Identifier | None = Field(
        default=None,
        description="A date or timestamp column saying when each change happened (a landing zone's deletes carry"
        " it too). Versions get `valid_from` and `valid_to` (`valid_from_column`, `valid_to_column`) in its type,"
        " and every change of a key in a day is kept as its own version, in this column's order (it orders a"
        " day's changes as `sequence_by` does). A key missing from a snapshot is deleted at the midnight after"
        " the run date. A table made without it needs to be loaded again to turn it on.",
    )
    hard_deletes: choice(HardDeletes) | None = Field(
        default=None,
        description="`snapshot`, `cdc` and `landing_zone` only (default `invalidate`): a deleted key (missing from"
        " the snapshot, a delete) has its open version closed; `new_record` also opens a tombstone version, its"
        " last values with `deleted_column` true, until the key comes back; `ignore` (`snapshot` only) leaves"
        " keys missing from the snapshot open.",
    )
    on_anomaly: choice(OnAnomaly) | None = Field(
        default=None,
        description="`landing_zone` only (default `warn`): an insert of an open key, or an update or delete of a"
        " key that is not open: `warn` applies it as an upsert (or ignores the delete) and counts it;"
        " `error` fails the merge.",
    )

    on_missing_input: choice(OnMissingInput) | None = Field(
        default=None,
        description="`upsert`, `cdc` and `snapshot` only (default `fail`): a date whose input is missing (its"
        " path matches nothing; for `format: table`, its partition is absent) fails the merge; `skip` commits it"
        " as a day without changes, recorded as skipped (no input). An input that is there but empty is an"
        " ordinary empty day either way.",
    )
    ignore_null_updates: bool | None = Field(
        default=None,
        description="`upsert`, `cdc` and `landing_zone` only (default `false`): a NULL in an update keeps the"
        " key's current value (the open version's, or what the key's previous change of the day left), for"
        " sources that send only the changed columns. An insert of a key that is not open keeps its NULLs; a"
        " delete is still a delete.",
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator(*MODE_KEYS)
    @classmethod
    def _only_for_its_modes(cls, value, info: ValidationInfo):
        mode = str(info.data.get("mode", SourceMode.UPSERT))  # as the spec spells it, in the message
        allowed = MODE_KEYS[info.field_name]
        if value is not None and mode not in allowed:
            reason = MODE_KEY_REASONS.get((info.field_name, mode))
            raise ValueError(
                f"only for mode {' or '.join(sorted(allowed))}, not {mode!r}{f': {reason}' if reason else ''}"
            )
        return value

    @field_validator("hard_deletes")
    @classmethod
    def _ignore_for_snapshots(cls, value, info: ValidationInfo):
        """Only a snapshot can leave a deleted key open: a delete that changes nothing is no delete."""
        mode = info.data.get("mode", SourceMode.UPSERT)
        if value == HardDeletes.IGNORE and mode is not SourceMode.SNAPSHOT:
            raise ValueError(f"'ignore' is only for mode snapshot, not {str(mode)!r} (use invalidate or new_record)")
        return value

    @field_validator("schema_")
    @classmethod
    def _csv_only(cls, value, info: ValidationInfo):
        if value is not None and info.data.get("format") != SourceFormat.CSV:
            raise ValueError("only for format 'csv' (the other formats carry their types)")
        return value

    @model_validator(mode="after")
    def _location(self) -> SourceSpec:
        if self.mode is SourceMode.LANDING_ZONE:
            if self.format != SourceFormat.PARQUET:
                raise ValueError("mode 'landing_zone' reads Parquet change files; format must be 'parquet'")
            if not self.path or self.partition:
                raise ValueError("mode 'landing_zone' needs 'path' (the table's folder) and no 'partition'")
        if self.format == SourceFormat.TABLE:
            if not self.table:
                raise ValueError("format 'table' needs 'table' (database.table)")
            if self.path:
                raise ValueError("format 'table' reads 'table', not 'path'")
        elif not self.path:
            raise ValueError(f"format {str(self.format)!r} needs 'path'")
        return self

    @property
    def order_column(self) -> str | None:
        """The column ordering a key's changes within a day: `sequence_by`, or `updated_at`, which
        implies it (a spec giving both names one column, checked at load)."""
        return self.sequence_by or self.updated_at

    @property
    def order_key(self) -> str:
        """The spec key that names the order column, as messages name it."""
        return "sequence_by" if self.sequence_by else "updated_at"

    @property
    def operation_column(self) -> str:
        return self.op_column or "sys_op"

    @property
    def deletes_need_all_columns(self) -> bool:
        return (self.delete_match or DeleteMatch.ALL_COLUMNS) == DeleteMatch.ALL_COLUMNS

    @property
    def invalidate_missing(self) -> bool:
        """Whether a key missing from a snapshot is closed (invalidate, new_record)."""
        return self.hard_deletes != HardDeletes.IGNORE

    @property
    def keeps_tombstones(self) -> bool:
        """Whether a deleted key gets a tombstone version (`hard_deletes: new_record`)."""
        return self.hard_deletes == HardDeletes.NEW_RECORD

    @property
    def anomalies_are_errors(self) -> bool:
        return self.on_anomaly == OnAnomaly.ERROR

    @property
    def skips_missing_input(self) -> bool:
        return self.on_missing_input == OnMissingInput.SKIP

    @property
    def fills_null_updates(self) -> bool:
        return bool(self.ignore_null_updates)

    @property
    def csv_schema(self) -> dict[str, str]:
        return dict(self.schema_ or {})


class BaseSpec(StrictModel):
    """A full snapshot loaded once by `zipper init` as the table's first open state."""

    format: choice(SourceFormat) = Field(
        default=SourceFormat.PARQUET, description="`parquet`, `csv` (with a header), `orc`, or `table` (a Hive table)."
    )
    path: Template | None = Field(
        default=None, description="Required for files: the snapshot's files (a Jinja template, like `source.path`)."
    )
    table: QualifiedTable | None = Field(default=None, description="`format: table` only: the Hive table to load.")
    options: ReaderOptions = Field(default={}, description="Spark reader options, as for `source.options`.")

    @model_validator(mode="after")
    def _location(self) -> BaseSpec:
        if self.format == SourceFormat.TABLE and not self.table:
            raise ValueError("format 'table' needs 'table' (database.table)")
        if self.format != SourceFormat.TABLE and not self.path:
            raise ValueError(f"format {str(self.format)!r} needs 'path'")
        return self
