"""Make an input match the table's columns, or say exactly which columns do not.

Increments may evolve the table (`evolve`): a new column is added, a missing one is NULL in
the day's new versions, a type that widens safely widens the table's column; any other type
change is an error. The base of `zipper init` must match exactly (`to_table_columns`)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from zipper.core import fs
from zipper.inputs import csv_values, sources
from zipper.core.errors import ColumnTypeMismatch, InputError, SpecError, column_type_mismatch
from zipper.tablespec.model import INTERNAL_PREFIX, TableSpec

# (from, to) pairs that never lose information.
SAFE_WIDENINGS = {
    ("tinyint", "smallint"), ("tinyint", "int"), ("tinyint", "bigint"),
    ("smallint", "int"), ("smallint", "bigint"),
    ("int", "bigint"),
    ("float", "double"),
    ("tinyint", "double"), ("smallint", "double"), ("int", "double"),
}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def float_and_double(one: str | None, other: str | None) -> bool:
    """Whether two types of one key column are float and double: a value column widens from one
    to the other exactly, a key cannot (0.1 as a float is 0.10000000149011612 as a double, another
    key)."""
    return {one, other} == {"float", "double"}


def reads_as(narrow: str, wide: str) -> bool:
    """Whether every value of type `narrow` is a value of type `wide`, exactly: the integer and
    float widenings, and a decimal with no more integer digits and no more places than the other
    (decimal(5,1) into decimal(10,2)). Only these are read into the wider type; the table's own
    decimal columns are never altered (older files keep their precision)."""
    if (narrow, wide) in SAFE_WIDENINGS:
        return True
    small, large = _DECIMAL.fullmatch(narrow), _DECIMAL.fullmatch(wide)
    if not (small and large):
        return False
    (p1, s1), (p2, s2) = (map(int, m.groups()) for m in (small, large))
    return s1 <= s2 and p1 - s1 <= p2 - s2


def struct_type(columns: list[tuple[str, str]], begin_column: str | None = None):
    """The Spark schema of `columns` (name, Spark SQL type), plus the string begin column."""
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    fields = [StructField(name, _parse_datatype_string(kind), True) for name, kind in columns]
    if begin_column:
        fields.append(StructField(begin_column, StringType(), True))
    return StructType(fields)


def read_input(spark, spec: TableSpec, located, source, table_columns: list[tuple[str, str]] | None, ds: str,
               what: str):
    """An input (increment or base) read with lower-case column names and the checks every
    reader needs: no two names differing only in case, none of the table's own columns, every
    key present. `table_columns` is the schema an empty input gets; without it (None) an empty
    input reads as None."""
    schema = struct_type(table_columns) if table_columns is not None else None
    try:
        df = sources.read(spark, located, source, schema, ds=ds)
    except InputError as exc:
        raise exc.reworded(exc.detail, table=spec.table, ds=ds) from None
    if df is None:
        return None
    df = lower_case_columns(df, spec, ds, what)
    check_shape(df, spec, ds, what)
    if located.format == "csv":
        csv_values.refuse_rounding(spark, [f.path for f in located.files], spec.keys, spec.table, ds)
    return df


@contextlib.contextmanager
def explained_column_types(spark, spec: TableSpec, ds: str, located, suffix: str = ""):
    """Turns Spark's failure on a file of the input whose column has another type than the one
    the input is read as into an InputError naming the file, the column and both types. Spark
    names its reader's class (SchemaColumnConvertNotSupportedException) and Parquet's physical
    type; the same file fails the same way on every try. Happens where Spark does not merge the
    files' schemas: the reader option mergeSchema off, or a source table's partition."""
    with explained_column_types_of(spark, spec, {ds: located}, suffix):
        yield


@contextlib.contextmanager
def explained_column_types_of(spark, spec: TableSpec, located: dict, suffix: str = ""):
    """`explained_column_types` for the inputs of several dates read together (a rerun's check,
    a rebuild): `located` maps a date (or its ISO text) to its input; the error names the date
    whose input holds the file. `suffix` ends the message (`; nothing was changed`)."""
    try:
        yield
    except fs.jvm_failures() as exc:  # a Spark failure; anything else is not a file's doing
        mismatch = column_type_mismatch(exc)
        holder = _input_holding(located, mismatch.file) if mismatch is not None else None
        if holder is None:
            raise  # not a type mismatch, or in one of the table's own files: not the input's doing
        ds, inp = holder
        reason = mismatch.reason(_type_in_file(spark, mismatch.file, mismatch.column))
        raise mistyped_file(spec, ds, inp, mismatch.file, reason, suffix) from None


def mistyped_file(spec: TableSpec, ds: str, inp, path: str, reason: str, suffix: str = "") -> InputError:
    """The error of a file of the input `inp` of `ds` holding a column in another type than the
    input is read as: `reason` names the column and both types."""
    if inp.format == "table":
        read_as = f"the type the table {inp.table} declares"
    else:
        read_as = "its type in another file of the input; every file must give a column one type"
    return InputError(f"cannot read file {fs.name_of(path)} of {inp.description}: {reason}, {read_as}{suffix}",
                      table=spec.table, ds=ds)


def refuse_mistyped_files(spark, spec: TableSpec, read: dict, suffix: str = "") -> None:
    """Each Parquet file Spark reads with a schema not its own (`sources.files_read_as_another`) holds
    every column it shares with that schema in a type Spark reads as the column's: checked from the
    files' footers, without reading their data. A rerun's check reads only the keys of its dates'
    inputs, so a file holding another column as a string where the input is read as int failed
    only at its date's merge, after the restore. `read` maps a date to (its input, the schema its
    input is read with, as `read_input` gives it)."""
    footers = None
    for day in sorted(read):
        inp, schema = read[day]
        for path in sources.files_read_as_another(spark, inp, spec.source):
            footers = footers or sources.FileSchemas(spark)
            try:
                held = footers.schema_of(path, inp.description)
            except InputError as exc:
                raise exc.reworded(exc.detail + suffix, table=spec.table, ds=str(day)) from None
            found = mistyped_column(held, schema) if held is not None else None
            if found is not None:
                column, in_file, read_as = found
                reason = ColumnTypeMismatch(path, column, "", read_as).reason(in_file)
                raise mistyped_file(spec, str(day), inp, path, reason, suffix)


def mistyped_column(held, read, name: str = "") -> tuple[str, str, str] | None:
    """(column, as `outer.inner`; its type in the file; the type it is read as) of the first column
    of a file's schema `held` that Spark cannot read as `read` has it, or None: types match by
    field name (in any case), a field only one of them has is no matter (read as NULL), and a type
    the file holds narrower than it is read (`reads_as`: int as bigint) is read so."""
    def unreadable(in_file: str, read_as: str) -> bool:
        return not (in_file == read_as or in_file == "void" or reads_as(in_file, read_as))

    return _first_field(held, read, unreadable, name)


# ORC's schema evolution converts these without a word; text and fractions lose values as others.
_TEXT = ("string", "binary") + tuple(f"{kind}(" for kind in ("varchar", "char"))
_FRACTIONAL = ("float", "double", "decimal")
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")


def lossy_conversion(held, read, name: str = "") -> tuple[str, str, str] | None:
    """(column, as `outer.inner`; its type in the file; the type it is read as) of the first column
    a file holds as text where it is read as another type, or as a fraction where it is read as an
    integer: the conversions of ORC's schema evolution that can lose values. None if there is none."""
    def lossy(in_file: str, read_as: str) -> bool:
        text_to_other = in_file.startswith(_TEXT) and not read_as.startswith(_TEXT)
        return text_to_other or (in_file.startswith(_FRACTIONAL) and read_as in _INTEGRAL)

    return _first_field(held, read, lossy, name)


def loss_of(in_file: str) -> str:
    """What `lossy_conversion`'s conversion of a column held as `in_file` loses."""
    return "do not parse (as NULL)" if in_file.startswith(_TEXT) else "have a fraction (cut off)"


def _first_field(held, read, differs, name: str = "") -> tuple[str, str, str] | None:
    """The first field (by name, in any case; through structs, arrays and maps) whose types, as
    Spark's simple strings, `differs(in_file, read_as)` says apart: (its path, both types)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(held, StructType) and isinstance(read, StructType):
        in_file = {f.name.lower(): f.dataType for f in held.fields}
        wanted = [(f"{name}.{f.name}" if name else f.name, f) for f in read.fields if f.name.lower() in in_file]
        return next(filter(None, (_first_field(in_file[f.name.lower()], f.dataType, differs, path)
                                  for path, f in wanted)), None)
    if isinstance(held, ArrayType) and isinstance(read, ArrayType):
        return _first_field(held.elementType, read.elementType, differs, name)
    if isinstance(held, MapType) and isinstance(read, MapType):
        return (_first_field(held.keyType, read.keyType, differs, name)
                or _first_field(held.valueType, read.valueType, differs, name))
    in_file, read_as = held.simpleString(), read.simpleString()
    return (name, in_file, read_as) if differs(in_file, read_as) else None


def _input_holding(located: dict, path: str | None):
    """(date as ISO text, input) of the earliest input among `located` that holds `path`, or None."""
    if path is None:
        return None
    wanted = fs.spelled_alike(path)
    for ds, inp in sorted(located.items(), key=lambda item: str(item[0])):
        if inp is not None and wanted in {fs.spelled_alike(f.path) for f in inp.files}:
            return str(ds), inp
    return None


def _type_in_file(spark, path: str, column: str) -> str | None:
    """The column's type as Spark reads the file alone (`string` where Parquet says BINARY), or None
    (unreadable; or inside an array or a map, which Spark names by Parquet's own levels)."""
    from pyspark.sql.types import StructType

    try:  # the explanation must never hide the failure it explains
        kind = sources.FileSchemas(spark).schema_of(path, "")
    except InputError:
        return None
    for part in column.split("."):
        fields = {f.name.lower(): f.dataType for f in kind.fields} if isinstance(kind, StructType) else {}
        if part.lower() not in fields:
            return None
        kind = fields[part.lower()]
    return kind.simpleString()


def refuse_internal_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """The merge tags rows with columns of its own (`zipper_op`, `zipper_slot`, ...): an input
    column of that name would be taken for one (a `zipper_op` value 'delete' deleted its key)."""
    internal = sorted(c for c in columns if c.lower().startswith(INTERNAL_PREFIX))
    if internal:
        raise InputError(f"{what} has columns {internal}: names starting with {INTERNAL_PREFIX!r} are reserved for"
                         " zipper's own columns; rename them in the source", table=spec.table, ds=ds)


# The metastore keeps a column's name in a VARCHAR(767) (COLUMNS_V2.COLUMN_NAME): a longer one
# fails the ALTER TABLE that adds it, which runs after the day's publish.
MAX_COLUMN_NAME = 767
# Characters of a column name Hive's Parquet reader (ParquetHiveSerDe) cannot parse, besides white
# space: Spark writes and reads the table, Hive fails on all of it.
HIVE_PARQUET_UNPARSED = ",;{}()="


def refuse_unstorable_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """Names the table cannot take, refused before anything is written: Hive reads a dot as a
    struct field, a backtick ends a quoted name, its Parquet reader cannot parse white space and
    a few more characters, and the metastore holds at most 767 characters."""
    def why(name: str) -> str | None:
        if len(name) > MAX_COLUMN_NAME:
            return f"{len(name)} characters, more than the metastore's {MAX_COLUMN_NAME}"
        if "." in name:
            return "a dot"
        if "`" in name:
            return "a backtick"
        unparsed = next((c for c in name if c.isspace() or c in HIVE_PARQUET_UNPARSED), None)
        if unparsed is not None:
            shown = "white space" if unparsed.isspace() else repr(unparsed)
            return f"{shown}, which Hive's Parquet reader cannot parse"
        return None

    bad = [(name, reason) for name in columns if (reason := why(name))]
    if bad:
        shown = ", ".join(f"{name if len(name) <= 40 else name[:40] + '...'!r} ({reason})" for name, reason in bad[:5])
        raise InputError(f"{what} has columns a Hive table cannot take: {shown}; rename them in the source",
                         table=spec.table, ds=ds)


def refuse_padded_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """White space at either end of a name is a typo far more often than a name (a CSV header
    `id, name`): such a column was added beside `name`, which went NULL in the day's versions."""
    padded = [name for name in columns if name != name.strip()]
    if padded:
        raise InputError(f"{what} has columns with white space before or after their names: {padded[:5]}; rename"
                         " them in the source (a CSV header is read as written: 'id, name' names ' name')",
                         table=spec.table, ds=ds)


def refuse_bad_names(columns: list[str], spec: TableSpec, ds: str, what: str) -> None:
    """The checks of an input's column names, for every reader (check_shape, the landing zone's)."""
    refuse_internal_names(columns, spec, ds, what)
    refuse_padded_names(columns, spec, ds, what)
    refuse_unstorable_names(columns, spec, ds, what)


def refuse_unwritable_types(df, spec: TableSpec, ds: str, what: str) -> None:
    """A nested type whose field names Spark cannot write back as a type name (`struct<f g:int>`):
    the table's columns are kept as type names, so such a column failed later with an empty
    ParseException."""
    from pyspark.sql.types import _parse_datatype_string

    for field in df.schema.fields:
        kind = field.dataType.simpleString()
        if "struct<" not in kind:
            continue
        try:
            _parse_datatype_string(kind)
        except fs.jvm_failures():  # Spark's parser refuses it (a ParseException)
            raise InputError(f"{what} column {field.name!r} has type {kind}, whose nested field names a Hive table"
                             " cannot take (a space, a dot, ...); rename them in the source", table=spec.table,
                             ds=ds) from None


# Spark types a Hive table cannot store (the spec refuses them by name: zipper.tablespec.sparktypes),
# by the class name of their Spark type.
_NOT_IN_HIVE = {"TimestampNTZType": "timestamp_ntz", "DayTimeIntervalType": "interval",
                "YearMonthIntervalType": "interval", "CalendarIntervalType": "interval", "VariantType": "variant",
                "TimeType": "time"}
NTZ_HINT = " (a Parquet timestamp without a time zone, such as pandas' naive datetimes): write it adjusted to UTC"


def _unstorable(data_type) -> str | None:
    """The first type inside `data_type` that a Hive table cannot store, by name; else None."""
    from zipper.transforms.equality import nested_types

    return next(filter(None, (_NOT_IN_HIVE.get(type(t).__name__) for t in nested_types(data_type))), None)


def refuse_unstorable_types(df, spec: TableSpec, ds: str, what: str) -> None:
    """A type Spark reads and a Hive table cannot store: the table's creation (or the column's
    addition) failed with Hive's 'type expected at the position 7 of ...'."""
    for field in df.schema.fields:
        bad = _unstorable(field.dataType)
        if bad:
            hint = NTZ_HINT if bad == "timestamp_ntz" else ""
            raise InputError(f"{what} column {field.name!r} has type {field.dataType.simpleString()}, which a Hive"
                             f" table cannot store{hint}", table=spec.table, ds=ds)


def refuse_map_keys(df, spec: TableSpec, ds: str, what: str) -> None:
    """Spark can neither group nor join on a map (at any depth), so a map cannot be a key."""
    from zipper.transforms.equality import holds_map

    types = {f.name: f.dataType for f in df.schema.fields}
    for key in spec.keys:
        if key in types and holds_map(types[key]):
            raise InputError(f"{what} key column {key!r} has type {types[key].simpleString()}: a key cannot hold a"
                             " map (Spark cannot compare maps)", table=spec.table, ds=ds)


def lower_case_columns(df, spec: TableSpec, ds: str, what: str):
    names = df.columns
    lowered = [n.lower() for n in names]
    clashes = sorted({n for n in lowered if lowered.count(n) > 1})
    if clashes:
        raise InputError(f"{what} has columns that differ only in case: {clashes}", table=spec.table, ds=ds)
    if names == lowered:
        return df
    return df.select(*[df[f"`{n}`"].alias(n.lower()) for n in names])


def check_shape(df, spec: TableSpec, ds: str, what: str) -> None:
    reserved = sorted({spec.begin_column, spec.end_column} & set(df.columns))
    if reserved:
        raise InputError(f"{what} must not contain the table's own columns {reserved}", table=spec.table, ds=ds)
    refuse_bad_names(df.columns, spec, ds, what)
    refuse_unwritable_types(df, spec, ds, what)
    refuse_unstorable_types(df, spec, ds, what)
    refuse_map_keys(df, spec, ds, what)
    missing_keys = [k for k in spec.keys if k not in df.columns]
    if missing_keys:
        found = df.columns
        shown = (f"its columns: {found[:10]}{' ...' if len(found) > 10 else ''}" if found
                 else "it has no columns: an empty file?")
        raise InputError(f"{what} lacks key columns {missing_keys} ({shown})", table=spec.table, ds=ds)


def to_table_columns(df, table_columns: list[tuple[str, str]], spec: TableSpec, ds: str, what: str):
    """Select the table's columns in order, widening types safely; anything else is an error."""
    from pyspark.sql import functions as F

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
    if spec.track_columns == "all":
        return [c for c in columns if c not in spec.keys]
    unknown = [c for c in spec.track_columns if c not in columns]
    if unknown:
        raise SpecError(f"{spec.origin or spec.name}: key 'track_columns': {unknown} not among the table's columns"
                        f" {[c for c in columns if c not in spec.keys]}", table=spec.table, ds=ds)
    return list(spec.track_columns)


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


def evolve(input_columns: list[tuple[str, str]], table_columns: list[tuple[str, str]], spec: TableSpec, ds: str,
           what: str) -> tuple[list[tuple[str, str]], ColumnChanges]:
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


def widened_from_float(changes: ColumnChanges) -> set[str]:
    return {name for name, old, new in changes.widened if (old, new) == ("float", "double")}


def float_precision_columns(columns: list[tuple[str, str]], changes: ColumnChanges, earlier: frozenset[str]
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
    from pyspark.sql import functions as F

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
