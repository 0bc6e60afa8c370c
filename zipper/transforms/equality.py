"""NULL-safe equality of two column values of any table type.

Spark's `<=>` refuses maps (DATATYPE_MISMATCH.INVALID_ORDERING_TYPE), also inside arrays and
structs, so a table with a map column could not merge. A map compares here as its entries
sorted by key, which is what two equal maps share whatever order their entries were built in."""

from __future__ import annotations

from collections.abc import Iterator
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DoubleType, MapType, StructType


def all_of(conditions: list[Column]) -> Column:
    """True where every condition holds (true for none): one column the transforms' rules share."""
    return reduce(lambda a, b: a & b, conditions, F.lit(True))


def any_of(conditions: list[Column]) -> Column:
    """True where any condition holds (false for none)."""
    return reduce(lambda a, b: a | b, conditions, F.lit(False))


def nested_types(data_type: DataType) -> Iterator[DataType]:
    """`data_type` and every type inside it (array elements, map keys then values, struct fields), depth first."""
    yield data_type
    if isinstance(data_type, ArrayType):
        yield from nested_types(data_type.elementType)
    elif isinstance(data_type, MapType):
        yield from nested_types(data_type.keyType)
        yield from nested_types(data_type.valueType)
    elif isinstance(data_type, StructType):
        for f in data_type.fields:
            yield from nested_types(f.dataType)


def holds_map(data_type: DataType) -> bool:
    return any(isinstance(t, MapType) for t in nested_types(data_type))


def comparable(column: Column, data_type: DataType) -> Column:
    """`column` in a form `<=>` takes, equal exactly when the values are equal: maps (at any
    depth) become their entries sorted by key; every other value is left as it is."""
    if not holds_map(data_type):
        return column
    if isinstance(data_type, MapType):  # keys are unique and never maps, so the order is total
        values = data_type.valueType
        return F.array_sort(F.map_entries(F.transform_values(column, lambda _, v: comparable(v, values))))
    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        return F.transform(column, lambda e: comparable(e, element))
    fields = [comparable(column[f.name], f.dataType).alias(f.name) for f in data_type.fields]
    return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*fields))


def same(left: Column, right: Column, data_type: DataType) -> Column:
    """left <=> right for values of `data_type`."""
    return comparable(left, data_type).eqNullSafe(comparable(right, data_type))


def float_exact(value: Column) -> Column:
    """Whether a double is exactly a float's value (0.10000000149011612 is, 0.1 is not)."""
    return value.cast("float").cast("double") == value


def equal_at_float_precision(old: Column, new: Column) -> Column:
    """`same`, or two doubles one of which is exactly a float, that are the same float: a column
    stored as float (before it widened to double, or an input read as float) holds 0.1 as
    0.10000000149011612, which is not another value. Beyond the float range (1e300 and 2e300
    both become Infinity as floats) only exactly equal values are equal."""
    narrow_old, narrow_new = old.cast("float"), new.cast("float")
    finite = F.abs(narrow_old) < F.lit(float("inf")).cast("float")  # false for NaN too
    near = (narrow_old == narrow_new) & finite & (float_exact(old) | float_exact(new))
    return same(old, new, DoubleType()) | F.coalesce(near, F.lit(False))


def types_of(df: DataFrame) -> dict[str, DataType]:
    return {f.name: f.dataType for f in df.schema.fields}
