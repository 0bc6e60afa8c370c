"""The checks across a table spec's keys, run once at load after each key has checked its own value.

A key's own type says what one value may be; these say which values may go together (a key
column that is also the end column, a tracked column that is not declared). They live apart
from the model so that it reads as its keys. Each failure is a `KeyValueError` naming the key
to fix, and the checks run in a fixed order: a spec with several problems reports the same first.
"""

from __future__ import annotations

from zipper.tablespec.modes import EndStyle, SourceMode

# the types of an `updated_at` column (and so of valid_from and valid_to), as Spark names them
VALIDITY_TYPES = ("date", "timestamp")
INTERNAL_PREFIX = "zipper_"  # zipper's own columns (zipper.inputs.column_checks refuses input columns so named)


class KeyValueError(ValueError):
    """A check across keys that is about one of them: the loader names `key`, not '(top level)'."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


class CrossChecks:
    """The checks of `TableSpec`, which inherits them and runs `_check_across_keys` once its keys
    are read: a mixin, so that this module needs no import of the model."""

    def _check_across_keys(self) -> None:
        """Every check across the spec's keys, in the order its first problem is reported."""
        if len(set(self.keys)) != len(self.keys):
            raise KeyValueError("keys", f"a column is listed twice: {self.keys}")
        if self.begin_column == self.end_column:
            raise KeyValueError("end_column", f"begin_column and end_column must differ (both {self.end_column!r})")
        self._check_validity_columns()
        self._check_deleted_column()
        self._check_internal_names()
        reserved = {self.begin_column, self.end_column, *self.own_columns}
        if reserved & set(self.keys):
            raise KeyValueError("keys", f"keys may not use the reserved columns {sorted(reserved)}")
        if isinstance(self.track_columns, list):
            if not self.track_columns:
                raise KeyValueError("track_columns", "give 'all' or a non-empty list")
            clash = (set(self.keys) | reserved) & set(self.track_columns)
            if clash:
                raise KeyValueError(
                    "track_columns", f"track_columns may not list key or reserved columns: {sorted(clash)}"
                )
        self._check_track_columns_except(reserved)
        self._check_dates()
        self._check_source_columns(reserved)
        if self.columns is not None:
            missing = [k for k in self.keys if k not in self.columns]
            if missing:
                raise KeyValueError("columns", f"columns must include the keys; missing {missing}")
            if reserved & set(self.columns):
                raise KeyValueError("columns", f"columns may not include the reserved columns {sorted(reserved)}")
            self._check_tracked_are_declared()
            self._check_updated_at_declared()

    def _check_internal_names(self) -> None:
        """No column a spec names may look like one of zipper's own."""
        named = {
            "keys": list(self.keys),
            "columns": list(self.columns or {}),
            "begin_column": [self.begin_column],
            "end_column": [self.end_column],
            "track_columns": self.track_columns if isinstance(self.track_columns, list) else [],
            "track_columns_except": list(self.track_columns_except or []),
            "source.sequence_by": [self.source.sequence_by] if self.source.sequence_by else [],
            "source.updated_at": [self.source.updated_at] if self.source.updated_at else [],
            **{key: [name] for key, name in zip(("valid_from_column", "valid_to_column"), self.validity_columns)},
            "deleted_column": list(self.tombstone_columns),
        }
        if self.source.mode == SourceMode.CDC:
            named["source.op_column"] = [self.source.operation_column]
        for key, names in named.items():
            internal = [n for n in names if n.lower().startswith(INTERNAL_PREFIX)]
            if internal:
                raise KeyValueError(
                    key, f"{internal}: names starting with {INTERNAL_PREFIX!r} are reserved for zipper's own columns"
                )

    def _check_dates(self) -> None:
        """The sensor's wait, the merge dates and the open end must agree with each other."""
        if self.airflow.sensor.skip_after is not None and not self.source.skips_missing_input:
            raise KeyValueError(
                "airflow.sensor.skip_after",
                "only for source.on_missing_input: skip (a table that fails on a missing input waits until"
                " the sensor's timeout)",
            )
        if self.end_date and self.end_date < self.start_date:
            raise KeyValueError("end_date", f"end_date {self.end_date} is before start_date {self.start_date}")
        last = self.end_date or self.start_date
        if self.closed_end(last) >= self.open_end:  # as plan.check_in_schedule, for the last date
            after = (
                "after every run date"
                if self.end_style == EndStyle.EXCLUSIVE
                else "on or after every run date (inclusive)"
            )
            raise KeyValueError("open_end", f"open_end {self.open_end} must be {after} (the last is {last})")

    def _check_source_columns(self, reserved: set[str]) -> None:
        """The operation, `updated_at` and sequence columns of the source are data of their own."""
        if self.source.mode == SourceMode.CDC and self.source.operation_column in set(self.keys) | reserved | {
            self.source.sequence_by
        }:
            raise KeyValueError(
                "source.op_column",
                f"source.op_column {self.source.operation_column!r} may not be a key, sequence or reserved column",
            )
        operation = {self.source.operation_column} if self.source.mode == SourceMode.CDC else set()
        if self.source.updated_at and self.source.updated_at in set(self.keys) | reserved | operation:
            raise KeyValueError(
                "source.updated_at",
                f"source.updated_at {self.source.updated_at!r} may not be a key, operation or reserved column",
            )
        if self.source.sequence_by in set(self.keys) | reserved:
            raise KeyValueError(
                "source.sequence_by",
                f"source.sequence_by {self.source.sequence_by!r} may not be a key or reserved column",
            )

    def _check_validity_columns(self) -> None:
        """`valid_from_column` and `valid_to_column` name zipper's own columns of a table with
        `source.updated_at`; without it they mean nothing, and two tools disagreeing on a name would
        go unnoticed. `updated_at` orders the day's changes, so a `sequence_by` must be the same column."""
        updated_at, sequence = self.source.updated_at, self.source.sequence_by
        if not updated_at:
            given = sorted({"valid_from_column", "valid_to_column"} & self.model_fields_set)
            if given:
                raise KeyValueError(given[0], "only with source.updated_at (the versions' validity comes from it)")
            return
        if sequence and sequence != updated_at:
            raise KeyValueError(
                "source.sequence_by",
                f"source.updated_at {updated_at!r} orders a key's changes within a day; source.sequence_by"
                f" {sequence!r} would order them otherwise: leave it out (or give the same column)",
            )
        names = [self.valid_from_column, self.valid_to_column]
        if len(set(names)) != 2:
            raise KeyValueError(
                "valid_to_column", f"valid_from_column and valid_to_column must differ (both {names[0]!r})"
            )
        clash = sorted(set(names) & {self.begin_column, self.end_column, updated_at})
        if clash:
            raise KeyValueError(
                "valid_from_column" if self.valid_from_column in clash else "valid_to_column",
                f"{clash}: the validity columns must differ from begin_column, end_column and source.updated_at",
            )

    def _check_deleted_column(self) -> None:
        """`deleted_column` names zipper's own column of a table with `hard_deletes: new_record`;
        without it the name means nothing."""
        if not self.source.keeps_tombstones:
            if "deleted_column" in self.model_fields_set:
                raise KeyValueError("deleted_column", "only with source.hard_deletes: new_record (its tombstones)")
            return
        others = {
            self.begin_column,
            self.end_column,
            self.source.sequence_by,
            self.source.updated_at,
            *self.validity_columns,
            self.source.operation_column if self.source.mode == SourceMode.CDC else None,
        }
        if self.deleted_column in others:
            raise KeyValueError(
                "deleted_column",
                f"{self.deleted_column!r}: the deleted column must differ from begin_column, end_column,"
                " source.sequence_by, source.updated_at, the validity columns and source.op_column",
            )

    def _check_updated_at_declared(self) -> None:
        """With declared columns, `updated_at` must be one of them, typed date or timestamp: its values
        become the versions' `valid_from`."""
        updated_at = self.source.updated_at
        if not updated_at:
            return
        if updated_at not in self.columns:
            raise KeyValueError("source.updated_at", f"{updated_at!r} is not among the declared columns")
        kind = self.columns[updated_at].strip().lower()
        if kind not in VALIDITY_TYPES:
            raise KeyValueError(
                "source.updated_at", f"column {updated_at!r} has type {kind}; it must be a date or timestamp"
            )

    def _check_track_columns_except(self, reserved: set[str]) -> None:
        """One way of naming the tracked columns at a time: the two lists would contradict."""
        if self.track_columns_except is None:
            return
        if isinstance(self.track_columns, list):
            raise KeyValueError(
                "track_columns_except",
                "give track_columns (the columns that open a version) or track_columns_except (those that"
                " do not), not both",
            )
        if not self.track_columns_except:
            raise KeyValueError("track_columns_except", "give a non-empty list (or leave it out to track every column)")
        if len(set(self.track_columns_except)) != len(self.track_columns_except):
            raise KeyValueError("track_columns_except", f"a column is listed twice: {self.track_columns_except}")
        clash = (set(self.keys) | reserved) & set(self.track_columns_except)
        if clash:
            raise KeyValueError(
                "track_columns_except", f"track_columns_except may not list key or reserved columns: {sorted(clash)}"
            )

    def _check_tracked_are_declared(self) -> None:
        """A misspelt tracked column fails at load when the spec declares its columns (both sides
        are lower-cased identifiers); without `columns` only the table can tell, at merge."""
        if isinstance(self.track_columns, list):
            unknown = [c for c in self.track_columns if c not in self.columns]
            if unknown:
                raise KeyValueError("track_columns", f"not among the declared columns: {unknown}")
        if self.track_columns_except is not None:
            unknown = [c for c in self.track_columns_except if c not in self.columns]
            if unknown:
                raise KeyValueError("track_columns_except", f"not among the declared columns: {unknown}")
            if not [c for c in self.columns if c not in self.keys and c not in self.track_columns_except]:
                raise KeyValueError(
                    "track_columns_except", "leaves no column to track: every change would update in place"
                )
