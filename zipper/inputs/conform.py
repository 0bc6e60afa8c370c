"""Make an input match the table's columns, or say exactly which columns do not.

Increments may evolve the table (`evolve`): a new column is added, a missing one is NULL in
the day's new versions, a type that widens safely widens the table's column; any other type
change is an error. The base of `zipper init` must match exactly (`to_table_columns`)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from zipper.core.errors import InputError, SpecError
from zipper.inputs import csv_values, reader
from zipper.inputs.column_checks import check_shape, lower_case_columns
from zipper.inputs.column_types import SAFE_WIDENINGS, data_type, float_and_double, reads_as
from zipper.tablespec.model import TableSpec
from zipper.tablespec.modes import SourceFormat, Tracked


def struct_type(columns: list[tuple[str, str]], begin_column: str | None = None):
    """The Spark schema of `columns` (name, Spark SQL type), plus the string begin column."""
    fields = [StructField(name, data_type(kind), True) for name, kind in columns]
    if begin_column:
        fields.append(StructField(begin_column, StringType(), True))
    return StructType(fields)


def read_input(
    spark, spec: TableSpec, located, source, table_columns: list[tuple[str, str]] | None, ds: str, what: str
):
    """An input (increment or base) read with lower-case column names and the checks every
    reader needs: no two names differing only in case, none of the table's own columns, every
    key present. `table_columns` is the schema an empty input gets (without the table's own
    columns, which no input has); without it (None) an empty input reads as None."""
    own = spec.own_columns
    schema = struct_type([(c, t) for c, t in table_columns if c not in own]) if table_columns is not None else None
    try:
        df = reader.read(spark, located, source, schema, ds=ds)
    except InputError as exc:
        raise exc.reworded(exc.detail, table=spec.table, ds=ds) from None
    if df is None:
        return None
    df = lower_case_columns(df, spec, ds, what)
    check_shape(df, spec, ds, what)
    if located.format == SourceFormat.CSV:
        csv_values.refuse_rounding(spark, [f.path for f in located.files], spec.keys, spec.table, ds)
    return df


def to_table_columns(df, table_columns: list[tuple[str, str]], spec: TableSpec, ds: str, what: str):
    """Select the table's columns in order, widening types safely; anything else is an error."""
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    want = dict(table_columns)
    extra = sorted(set(have) - set(want))
    missing = sorted(set(want) - set(have))
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"columns not in the table {extra}")
        if missing:
            parts.append(f"table columns missing {missing}")
        raise InputError(f"{what} does not match the table: " + "; ".join(parts), table=spec.table, ds=ds)
    selected = []
    for name, table_type in table_columns:
        input_type = have[name]
        if input_type == table_type:
            selected.append(F.col(name))
        elif reads_as(input_type, table_type) or input_type == "void":
            selected.append(F.col(name).cast(table_type).alias(name))
        else:
            raise InputError(
                f"{what} column {name!r} has type {input_type}, the table has {table_type}",
                table=spec.table,
                ds=ds,
            )
    return df.select(*selected)


def tracked_columns(spec: TableSpec, columns: list[str], ds: str | None = None) -> list[str]:
    """The columns whose change makes a new version; a listed one the table lacks is a spec
    error here (of the date `ds` being merged), not an unresolved column deep in Spark's plan."""
    if spec.track_columns == Tracked.ALL and spec.track_columns_except is not None:
        return _tracked_but(spec, columns, ds)
    if spec.track_columns == Tracked.ALL:  # the validity and deleted columns are the merge's own, never compared
        return [c for c in columns if c not in spec.keys and c not in spec.own_columns]
    unknown = [c for c in spec.track_columns if c not in columns]
    if unknown:
        raise SpecError(
            f"{spec.origin or spec.name}: key 'track_columns': {unknown} not among the table's columns"
            f" {[c for c in columns if c not in spec.keys and c not in spec.own_columns]}",
            table=spec.table,
            ds=ds,
        )
    return list(spec.track_columns)


def untracked_columns(spec: TableSpec, columns: list[str], tracked: list[str]) -> list[str]:
    """The data columns updated in place: neither keys, `tracked` (`tracked_columns`), nor zipper's own."""
    return [c for c in columns if c not in tracked and c not in spec.keys and c not in spec.own_columns]


def _tracked_but(spec: TableSpec, columns: list[str], ds: str | None) -> list[str]:
    """Every data column but the keys and `track_columns_except`: a column added later is tracked
    too. An excluded column the table lacks is a spec error, as a misspelt tracked one is."""
    data = [c for c in columns if c not in spec.keys and c not in spec.own_columns]
    unknown = [c for c in spec.track_columns_except if c not in columns]
    if unknown:
        raise SpecError(
            f"{spec.origin or spec.name}: key 'track_columns_except': {unknown} not among the table's columns {data}",
            table=spec.table,
            ds=ds,
        )
    tracked = [c for c in data if c not in spec.track_columns_except]
    if not tracked:
        raise SpecError(
            f"{spec.origin or spec.name}: key 'track_columns_except': {list(spec.track_columns_except)} leaves no"
            " column to track: every change would update in place",
            table=spec.table,
            ds=ds,
        )
    return tracked


@dataclass(frozen=True)
class ColumnChanges:
    """What a day's input does to the table's columns."""

    added: tuple[tuple[str, str], ...] = ()  # (name, type), appended to the table
    missing: tuple[str, ...] = ()  # table columns the input lacks: NULL in the day's new versions
    widened: tuple[tuple[str, str, str], ...] = ()  # (name, table type, wider input type)
    float_inputs: tuple[str, ...] = ()  # double columns the input has as float (read widened; not reported)

    @property
    def alters_table(self) -> bool:
        return bool(self.added or self.widened)

    def report(self) -> dict:
        """For the run's counts: only what happened."""
        report = {}
        if self.added:
            report["columns_added"] = [f"{name} {kind}" for name, kind in self.added]
        if self.missing:
            report["columns_missing"] = list(self.missing)
        if self.widened:
            report["columns_widened"] = [f"{name} {old} -> {new}" for name, old, new in self.widened]
        return report

    def record(self) -> dict:
        """For the commit record, so that a run can finish what a crash after the publish left."""
        return {"added": [list(c) for c in self.added], "widened": [[name, new] for name, _, new in self.widened]}


def evolve(
    input_columns: list[tuple[str, str]], table_columns: list[tuple[str, str]], spec: TableSpec, ds: str, what: str
) -> tuple[list[tuple[str, str]], ColumnChanges]:
    """The table's columns once this input is merged, and what changed; a type change that is
    not a safe widening (either way) fails naming the column and both types."""
    have = dict(input_columns)
    columns, missing, widened, float_inputs = [], [], [], []
    for name, table_type in table_columns:
        input_type = have.get(name)
        if name in spec.keys and float_and_double(input_type, table_type):
            raise InputError(
                f"{what} key column {name!r} has type {input_type}, the table has {table_type}; a float key and a"
                " double key are different values (0.1 as a float is 0.10000000149011612 as a double): send the key"
                f" as {table_type}",
                table=spec.table,
                ds=ds,
            )
        if input_type is None:
            missing.append(name)
        elif (input_type, table_type) == ("float", "double"):
            float_inputs.append(name)
        elif input_type != table_type and not reads_as(input_type, table_type) and input_type != "void":
            if (table_type, input_type) not in SAFE_WIDENINGS:
                raise InputError(
                    f"{what} column {name!r} has type {input_type}, the table has {table_type}; a column cannot"
                    " change type (only int -> bigint and float -> double widen; a decimal input may have fewer digits)",
                    table=spec.table,
                    ds=ds,
                )
            widened.append((name, table_type, input_type))
            table_type = input_type
        columns.append((name, table_type))
    known = dict(table_columns)
    added = [(name, kind) for name, kind in input_columns if name not in known]
    untyped = [name for name, kind in added if kind == "void"]
    if untyped:
        raise InputError(f"{what} has new columns without a type (only NULLs): {untyped}", table=spec.table, ds=ds)
    return columns + added, ColumnChanges(tuple(added), tuple(missing), tuple(widened), tuple(float_inputs))


def with_validity(spec: TableSpec, columns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """An input's (or a base's) data columns, and, with `source.updated_at`, the validity columns
    the merge writes, in that column's type (they evolve with it; None when the input lacks it);
    with `hard_deletes: new_record`, the deleted column, a boolean."""
    tombstone = [(name, "boolean") for name in spec.tombstone_columns]
    kind = dict(columns).get(spec.source.updated_at) if spec.validity_columns else None
    if kind is None:
        return [*columns, *tombstone]
    return [*columns, *[(name, kind) for name in spec.validity_columns], *tombstone]


# The rest of the refusal's line for each option that adds zipper's own columns ({missing}: those
# the table lacks).
VALIDITY_REFUSAL = (
    "the table was made without the columns {missing}, and its versions' validity can only be computed"
    " from the inputs: load it again as a new table (a new `table:`, or drop this one and its files)"
    " from start_date; nothing was changed"
)
TOMBSTONE_REFUSAL = (
    "the table was made without the deleted column {missing[0]!r} that new_record writes: load it again as"
    " a new table (a new `table:`, or drop this one and its files, then `zipper init` and merge from"
    " start_date), or keep hard_deletes: invalidate; nothing was changed"
)


def missing_own_columns(spec: TableSpec, table_columns: list[tuple[str, str]], ds: str | None) -> None:
    """A table made before its spec turned `source.updated_at` or `hard_deletes: new_record` on lacks
    that option's own columns (`spec.own_columns`). Only the inputs could fill them (the versions'
    validity, the versions closed by deletes), so the day is refused and nothing is changed. The
    line names the option, `updated_at` first."""
    names = {name for name, _ in table_columns}
    for key, columns, refusal in (
        ("source.updated_at", spec.validity_columns, VALIDITY_REFUSAL),
        ("source.hard_deletes", spec.tombstone_columns, TOMBSTONE_REFUSAL),
    ):
        missing = [c for c in columns if c not in names]
        if missing:
            raise SpecError(
                f"{spec.origin or spec.name}: key '{key}': {refusal.format(missing=missing)}", table=spec.table, ds=ds
            )


def widened_from_float(changes: ColumnChanges) -> set[str]:
    return {name for name, old, new in changes.widened if (old, new) == ("float", "double")}


def float_precision_columns(
    columns: list[tuple[str, str]], changes: ColumnChanges, earlier: frozenset[str]
) -> frozenset[str]:
    """The double columns a day compares at float precision (`equality.equal_at_float_precision`):
    those its input has as float, those it widens from float, and `earlier`, those an earlier
    commit widened from float (their open rows hold floats). A column that was always double and
    is fed doubles compares exactly."""
    doubles = {name for name, kind in columns if kind == "double"}
    return frozenset((set(changes.float_inputs) | widened_from_float(changes) | set(earlier)) & doubles)


def to_columns(df, columns: list[tuple[str, str]], keep: tuple[str, ...] = ()):
    """The input as exactly these columns, in order: cast where the type differs, NULL where
    the input lacks one; `keep` columns of the input follow unchanged."""
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    selected = []
    for name, kind in columns:
        if name not in have:
            selected.append(F.lit(None).cast(kind).alias(name))
        elif have[name] == kind:
            selected.append(F.col(name))
        else:
            selected.append(F.col(name).cast(kind).alias(name))
    return df.select(*selected, *[F.col(c) for c in keep])
