"""The spec's type check (pure Python, at load) agrees with Spark's own parser and the metastore."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import _parse_datatype_string

from tests.support import D1, TableFixture
from zipper.jobs import merge
from zipper.jobs.init import init_table
from zipper.table import catalog, check, state
from zipper.tablespec.model import TableSpec
from zipper.tablespec.sparktypes import check_atomic_type, check_type

STORABLE = [
    "boolean",
    "TINYINT",
    "byte",
    "smallint",
    "short",
    "int",
    "Integer",
    "bigint",
    "long",
    "float",
    "real",
    "double",
    "date",
    "timestamp",
    "timestamp_ltz",
    "string",
    " string ",
    "binary",
    "decimal",
    "dec(7)",
    "numeric(10, 2)",
    "DECIMAL( 38 , 38 )",
    "decimal(1)",
    "string collate utf8_lcase",
    "array<int>",
    "array< array<string> >",
    "map<string,int>",
    "map<string, struct<a:int, b:array<date>>>",
    "struct<a:int>",
    "struct<a int, `b`: string>",
    "struct<int:int not null comment 'the count'>",
]
NOT_SPARK = [
    "integr",
    "strng",
    "decimal(40,2)",
    "decimal(5,7)",
    "decimal(5,)",
    "decimal()",
    "int(5)",
    "array<int",
    "array<int>>",
    "map<int>",
    "int,",
    "struct<a:int,>",
    "array<int not null>",
    "timestamp(3)",
    "array",
    "decimal(5,2,1)",
]
NOT_IN_HIVE = [
    "time",
    "time(3)",
    "timestamp_ntz",
    "variant",
    "void",
    "interval",
    "interval day to second",
    "array<timestamp_ntz>",
    "struct<a:variant>",
]
# Spark parses these; its readers refuse char and varchar, Hive's table definition the others.
REFUSED = {
    "char(5)": "declare string",
    "varchar(20)": "declare string",
    "character(3)": "declare string",
    "struct<>": "a struct needs at least one field",
    "decimal(0,0)": "decimal precision is 1 to 38",
    "struct<`b c`:int>": "field names are letters, digits and _",
}
# Spark reads a field list (even an empty one) without struct<> as a struct; a column's type is one type.
STRUCT_SHORTHAND = ["a int", "a: int, b string", ""]


def _spark_parses(text: str) -> bool:
    try:
        _parse_datatype_string(text)
    except Exception:
        return False
    return True


def _refused(check, text: str) -> str | None:
    try:
        check(text)
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("text", STORABLE)
def test_what_the_spec_accepts_spark_parses(spark, text):
    assert _refused(check_type, text) is None
    assert _spark_parses(text)


@pytest.mark.parametrize("text", NOT_SPARK + STRUCT_SHORTHAND)
def test_what_the_spec_refuses_as_no_type_spark_refuses_too_but_for_the_struct_shorthand(spark, text):
    message = _refused(check_type, text)
    assert message is not None and f"{text!r} is not a Spark SQL type" in message
    assert _spark_parses(text) == (text in STRUCT_SHORTHAND)


def _table_with(spark, tmp_path, name: str, columns: list[tuple[str, str]]):
    spec = TableSpec.model_validate(
        dict(name=name, table=f"db_{name}.{name}", keys=["id"], source=dict(path="/nowhere"), start_date="2024-01-01")
    )
    catalog.create_table(spark, spec, [("id", "bigint"), *columns], str(tmp_path / name), {state.P_SPEC_NAME: name})
    catalog.add_partitions(spark, spec, {"9999-12-31": str(tmp_path / name / "open")})
    return spec


def test_every_accepted_type_makes_a_table_that_merges(spark, tmp_path, unique_name):
    declared = {f"c{i}": text for i, text in enumerate(STORABLE)}
    t = TableFixture(tmp_path, unique_name, columns={"id": "bigint", "name": "string", **declared})

    def rows(name_of_1):  # NULL in every typed column, as each type
        data = spark.createDataFrame([(1, name_of_1), (2, "b")], "id bigint, name string")
        return data.select("id", "name", *[F.lit(None).cast(text).alias(c) for c, text in declared.items()])

    rows("a").write.parquet(str(t.data / "base"))
    rows("a2").write.parquet(str(t.increment_dir(D1)))
    init_table(spark, t.spec, D1 - dt.timedelta(days=1))
    result = merge.merge_date(spark, t.spec, D1)

    assert (result.counts["changed"], result.counts["unchanged"], result.counts["open_after"]) == (1, 1, 2)
    types = dict(catalog.data_columns(spark, t.spec))
    assert {c: types[c] for c in declared} == {
        c: _parse_datatype_string(text).simpleString() for c, text in declared.items()
    }
    assert spark.table(t.table).where("end_dt = '9999-12-31'").orderBy("id").select("name").collect() == [
        ("a2",),
        ("b",),
    ]
    assert check.run_checks(spark, t.spec)["ok"]


@pytest.mark.parametrize("text", NOT_IN_HIVE)
def test_types_refused_as_not_storable_parse_in_spark_but_make_no_table(spark, tmp_path, unique_name, text):
    message = _refused(check_type, text)
    assert message is not None and "a Hive table cannot store it" in message
    assert _spark_parses(text)
    with pytest.raises(Exception):  # noqa: B017 - Spark refuses it with one error or another, any will do
        _table_with(spark, tmp_path, unique_name, [("v", _parse_datatype_string(text).simpleString())])


@pytest.mark.parametrize("text, why", sorted(REFUSED.items()))
def test_types_spark_parses_and_zipper_cannot_use_are_refused_saying_why(spark, text, why):
    assert why in _refused(check_type, text)
    assert _spark_parses(text)


def test_every_accepted_csv_type_reads_a_csv_column(spark, tmp_path):
    atomic = [text for text in STORABLE if _refused(check_atomic_type, text) is None]
    assert "array<int>" not in atomic and "int" in atomic and "decimal(1)" in atomic
    assert "a CSV column holds one value" in _refused(check_atomic_type, "map<string,int>")
    path = tmp_path / "types.csv"
    path.write_text(",".join("" for _ in atomic) + "\n")
    schema = ", ".join(f"c{i} {text}" for i, text in enumerate(atomic))
    rows = spark.read.schema(schema).option("mode", "FAILFAST").csv(str(path)).collect()
    assert len(rows) == 1 and len(rows[0]) == len(atomic)
