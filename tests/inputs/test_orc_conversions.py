"""Which of ORC's silent conversions of a file's column to the table's type can lose values."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    VarcharType,
)

from zipper.inputs.column_types import lossy_conversion


def struct(**fields) -> StructType:
    return StructType([StructField(name, kind) for name, kind in fields.items()])


def test_text_read_as_another_type_and_a_fraction_read_as_an_integer_can_lose_values():
    assert lossy_conversion(struct(id=LongType(), score=StringType()), struct(id=LongType(), score=DoubleType())) == (
        "score",
        "string",
        "double",
    )
    assert lossy_conversion(struct(AMT=DecimalType(7, 2)), struct(amt=IntegerType())) == ("amt", "decimal(7,2)", "int")
    nested = struct(s=struct(a=ArrayType(VarcharType(3))))
    assert lossy_conversion(nested, struct(s=struct(a=ArrayType(IntegerType())))) == ("s.a", "varchar(3)", "int")


def test_conversions_that_keep_every_value_are_hives_schema_evolution_and_taken():
    held = struct(id=IntegerType(), score=DoubleType(), name=VarcharType(3), n=IntegerType())
    read = struct(id=LongType(), score=StringType(), name=StringType(), n=DoubleType(), gone=StringType())
    assert lossy_conversion(held, read) is None
