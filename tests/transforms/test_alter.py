"""The pure transforms of `zipper alter`: a column renamed in place, and a column dropped with the
versions that differed only in it made one."""

from __future__ import annotations

from pyspark.testing import assertDataFrameEqual

from zipper.transforms import alter

SCHEMA = "id bigint, city string, phone string, begin_dt string, end_dt string"
OPEN = "9999-12-31"


def test_a_rename_keeps_every_value_and_the_column_order(spark):
    rows = [(1, "Oslo", "555", "2024-01-01", OPEN)]
    got = alter.renamed(spark.createDataFrame(rows, SCHEMA), "phone", "mobile")
    assertDataFrameEqual(
        got, spark.createDataFrame(rows, "id bigint, city string, mobile string, begin_dt string, end_dt string")
    )
    assert got.columns == ["id", "city", "mobile", "begin_dt", "end_dt"]


def test_a_drop_merges_consecutive_versions_that_differed_only_in_the_dropped_column(spark):
    """Key 1: the phone changed on 01-02 and the city on 01-04: without the phone, its first two
    versions are one (the earlier begin, the later end, in the later one's partition). Key 2: the
    same city again after a gap is not merged. Key 3: the phone changed twice, ending open: one
    open version."""
    rows = [
        (1, "Oslo", "555", "2024-01-01", "2024-01-02"),
        (1, "Oslo", "556", "2024-01-02", "2024-01-04"),
        (1, "Rome", "556", "2024-01-04", OPEN),
        (2, "Nice", "1", "2024-01-01", "2024-01-02"),
        (2, "Nice", "2", "2024-01-03", OPEN),
        (3, "Lyon", "7", "2024-01-01", "2024-01-02"),
        (3, "Lyon", "8", "2024-01-02", "2024-01-03"),
        (3, "Lyon", "9", "2024-01-03", OPEN),
    ]
    versions = spark.createDataFrame(rows, SCHEMA)
    types = {f.name: f.dataType for f in versions.schema.fields}
    got = alter.dropped(
        versions,
        "phone",
        keys=["id"],
        begin_column="begin_dt",
        end_column="end_dt",
        tracked=["city", "phone"],
        types=types,
        inclusive=False,
    )
    status_schema = "id bigint, city string, begin_dt string, end_dt string, zipper_status string"
    assertDataFrameEqual(
        got,
        spark.createDataFrame(
            [
                (1, "Oslo", "2024-01-01", "2024-01-02", "absorbed"),
                (1, "Oslo", "2024-01-01", "2024-01-04", "changed"),
                (1, "Rome", "2024-01-04", OPEN, "same"),
                (2, "Nice", "2024-01-01", "2024-01-02", "same"),
                (2, "Nice", "2024-01-03", OPEN, "same"),
                (3, "Lyon", "2024-01-01", "2024-01-02", "absorbed"),
                (3, "Lyon", "2024-01-01", "2024-01-03", "absorbed"),
                (3, "Lyon", "2024-01-01", OPEN, "changed"),
            ],
            status_schema,
        ),
    )
    assertDataFrameEqual(
        alter.merged_away(got),
        spark.createDataFrame(
            [
                (1, "Oslo", "2024-01-01", "2024-01-04"),
                (1, "Rome", "2024-01-04", OPEN),
                (2, "Nice", "2024-01-01", "2024-01-02"),
                (2, "Nice", "2024-01-03", OPEN),
                (3, "Lyon", "2024-01-01", OPEN),
            ],
            "id bigint, city string, begin_dt string, end_dt string",
        ),
    )


def test_a_drop_on_a_table_with_validity_times_follows_them_within_a_day(spark):
    """With `source.updated_at` a day holds several versions of a key (begin = end): they follow
    one another when one's valid_to is the next's valid_from. Key 1's three versions differed only
    in the phone: one version, from the first valid_from and begin to the last valid_to and end.
    Key 2's second version does not start where its first ended: both stay."""
    schema = "id bigint, city string, phone string, vf string, vt string, begin_dt string, end_dt string"
    rows = [
        (1, "Oslo", "1", "01-01 09:00", "01-02 10:00", "2024-01-01", "2024-01-02"),
        (1, "Oslo", "2", "01-02 10:00", "01-02 11:00", "2024-01-02", "2024-01-02"),
        (1, "Oslo", "3", "01-02 11:00", "END", "2024-01-02", OPEN),
        (2, "Rome", "1", "01-01 09:00", "01-02 10:00", "2024-01-01", "2024-01-02"),
        (2, "Rome", "2", "01-02 12:00", "END", "2024-01-02", OPEN),
    ]
    versions = spark.createDataFrame(rows, schema)
    got = alter.dropped(
        versions,
        "phone",
        keys=["id"],
        begin_column="begin_dt",
        end_column="end_dt",
        tracked=["city", "phone"],
        types={f.name: f.dataType for f in versions.schema.fields},
        inclusive=False,
        validity=("vf", "vt"),
    )
    assertDataFrameEqual(
        alter.merged_away(got),
        spark.createDataFrame(
            [
                (1, "Oslo", "01-01 09:00", "END", "2024-01-01", OPEN),
                (2, "Rome", "01-01 09:00", "01-02 10:00", "2024-01-01", "2024-01-02"),
                (2, "Rome", "01-02 12:00", "END", "2024-01-02", OPEN),
            ],
            "id bigint, city string, vf string, vt string, begin_dt string, end_dt string",
        ),
    )
    assert sorted(r[alter.STATUS] for r in got.collect()) == ["absorbed", "absorbed", "changed", "same", "same"]
