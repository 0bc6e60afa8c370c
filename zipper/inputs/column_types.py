"""Comparisons of Spark SQL types, as their simple strings and as schemas: which read as which
without losing a value, and which conversions can lose one. Pure: no session, no files."""

from __future__ import annotations

import re

from pyspark.sql.types import ArrayType, DataType, MapType, StructType, _parse_datatype_string

# (from, to) pairs that never lose information.
SAFE_WIDENINGS = {
    ("tinyint", "smallint"),
    ("tinyint", "int"),
    ("tinyint", "bigint"),
    ("smallint", "int"),
    ("smallint", "bigint"),
    ("int", "bigint"),
    ("float", "double"),
    ("tinyint", "double"),
    ("smallint", "double"),
    ("int", "double"),
}


def data_type(kind: str) -> DataType:
    """The Spark type a type name spells (`bigint`, `decimal(10,2)`, `array<string>`). Parsed by
    the session each time, a round trip on a Spark Connect client: with a process-wide cache of
    the parses a late-changes model test failed on a scenario that passed without it (cause not
    found; docs/performance.md), so it is not taken for now."""
    return _parse_datatype_string(kind)


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
    if isinstance(held, StructType) and isinstance(read, StructType):
        in_file = {f.name.lower(): f.dataType for f in held.fields}
        wanted = [(f"{name}.{f.name}" if name else f.name, f) for f in read.fields if f.name.lower() in in_file]
        return next(
            filter(None, (_first_field(in_file[f.name.lower()], f.dataType, differs, path) for path, f in wanted)), None
        )
    if isinstance(held, ArrayType) and isinstance(read, ArrayType):
        return _first_field(held.elementType, read.elementType, differs, name)
    if isinstance(held, MapType) and isinstance(read, MapType):
        return _first_field(held.keyType, read.keyType, differs, name) or _first_field(
            held.valueType, read.valueType, differs, name
        )
    in_file, read_as = held.simpleString(), read.simpleString()
    return (name, in_file, read_as) if differs(in_file, read_as) else None
