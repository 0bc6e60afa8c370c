"""The set-based rebuild transform, row by row: versions, their ends in both styles, counts."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.support import plan_section
from zipper.transforms import timelines as rt

DATED = "id bigint, name string, city string, zipper_ds string"
VERSIONS = "id bigint, name string, city string, begin_dt string, end_dt string"
OPEN = "9999-12-31"

ROWS = [
    (1, "a", "x", "2024-01-01"),  # base
    (1, "a", "x", "2024-01-02"),  # re-sent unchanged
    (1, "A", "x", "2024-01-03"),  # only the untracked name differs: updated in place
    (1, "A", None, "2024-01-05"),  # value -> NULL: a new version
    (1, "A", None, "2024-01-06"),  # NULL -> NULL: unchanged
    (1, "A", "x", "2024-01-07"),  # back to the first value: a new version
    (2, "b", None, "2024-01-03"),  # a new key
    (3, "c", "y", "2024-01-01"),  # base only
]


def timeline(end_style="exclusive", tracked=("city",), **options):
    return rt.Timeline(
        keys=["id"],
        columns=["id", "name", "city"],
        tracked=list(tracked),
        end_style=end_style,
        open_end=OPEN,
        **options,
    )


def marked(spark, tracked=("city",)):
    return rt.marked(spark.createDataFrame(ROWS, DATED), timeline(tracked=tracked))


def versions(spark, end_style, tracked=("city",)):
    return rt.versions(marked(spark, tracked), timeline(end_style, tracked))


@pytest.mark.parametrize(
    "end_style, closed", [("exclusive", ("2024-01-05", "2024-01-07")), ("inclusive", ("2024-01-04", "2024-01-06"))]
)
def test_versions_hold_their_last_row_and_end_where_the_next_begins(spark, end_style, closed):
    expected = [
        (1, "A", "x", "2024-01-01", closed[0]),  # the in-place update of 01-03 is kept when it closes
        (1, "A", None, "2024-01-05", closed[1]),
        (1, "A", "x", "2024-01-07", OPEN),
        (2, "b", None, "2024-01-03", OPEN),
        (3, "c", "y", "2024-01-01", OPEN),
    ]
    assertDataFrameEqual(versions(spark, end_style), spark.createDataFrame(expected, VERSIONS), checkRowOrder=False)


def test_every_column_tracked_makes_a_name_change_a_version(spark):
    result = versions(spark, "exclusive", tracked=("name", "city")).where("id = 1").orderBy("begin_dt")
    assert [(r.name, r.city, r.begin_dt, r.end_dt) for r in result.collect()] == [
        ("a", "x", "2024-01-01", "2024-01-03"),
        ("A", "x", "2024-01-03", "2024-01-05"),
        ("A", None, "2024-01-05", "2024-01-07"),
        ("A", "x", "2024-01-07", OPEN),
    ]


def test_daily_counts_and_slots(spark):
    counts = {r.zipper_ds: (r.new, r.changed, r.unchanged, r.updated) for r in rt.daily_counts(marked(spark)).collect()}
    assert counts == {
        "2024-01-01": (2, 0, 0, 0),
        "2024-01-02": (0, 0, 1, 0),
        "2024-01-03": (1, 0, 0, 1),
        "2024-01-05": (0, 1, 0, 0),
        "2024-01-06": (0, 0, 1, 0),
        "2024-01-07": (0, 1, 0, 0),
    }
    slots = sorted(r.zipper_slot for r in rt.with_slot(versions(spark, "exclusive"), "end_dt", OPEN).collect())
    assert slots == ["closed-2024-01-05", "closed-2024-01-07", "open", "open", "open"]


@pytest.mark.parametrize("tracked", [("city",), ("name", "city")])
def test_marking_compares_each_column_with_the_previous_row_once(spark, tracked):
    """The tracked columns tell a changed row; only the untracked ones are left to tell unchanged
    from updated (the tracked ones were compared again there, to the same answer)."""
    plan = plan_section(marked(spark, tracked), "Analyzed Logical Plan")
    assert plan.count("<=>") == len(["name", "city"])


def test_map_columns_mark_versions_by_their_entries(spark):
    rows = spark.createDataFrame(
        [
            (1, {"a": 1, "b": 2}, "2024-01-01"),
            (1, {"b": 2, "a": 1}, "2024-01-02"),  # the same entries in another order: unchanged
            (1, {"a": 1}, "2024-01-03"),  # an entry gone: a new version
        ],
        "id bigint, tags map<string,int>, zipper_ds string",
    )
    result = rt.marked(rows, rt.Timeline(keys=["id"], columns=["id", "tags"], tracked=["tags"]))
    assert [r.zipper_kind for r in result.orderBy("zipper_ds").collect()] == ["new", "unchanged", "changed"]


SNAPSHOTS = [
    (1, "a", "x", "2024-01-01"),  # base
    (1, "a", "x", "2024-01-02"),
    (1, "a", "x", "2024-01-04"),  # missing from the snapshot of 01-03: deleted there, back here
    (2, "b", "y", "2024-01-01"),
    (2, "B", "y", "2024-01-02"),  # updated in place, then missing from every later snapshot
    (3, "c", None, "2024-01-04"),  # new on the last date
]
SNAPSHOT_DATES = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")  # 01-03: a snapshot of key 9 only


@pytest.mark.parametrize("tombstones", [False, True])
def test_a_key_missing_from_the_next_snapshot_is_deleted_there_or_gets_a_tombstone(spark, tombstones):
    """A delete ends the version where the key's presence stops (on the next snapshot date, not
    the next date it is seen); without tombstones the key comes back new, with them the tombstone
    (the version's values, deleted true) is closed by a change."""
    rows = spark.createDataFrame([*SNAPSHOTS, (9, "z", "z", "2024-01-03")], DATED)
    columns = ["id", "name", "city", "gone"] if tombstones else ["id", "name", "city"]
    rows = rows.selectExpr("*", "CAST(NULL AS boolean) AS gone") if tombstones else rows
    line = rt.Timeline(
        keys=["id"],
        columns=columns,
        tracked=["city"],
        open_end=OPEN,
        tombstone="gone" if tombstones else None,
        snapshot_dates=SNAPSHOT_DATES,
    )
    marked = rt.marked(rows.select(*columns, "zipper_ds"), line)
    kinds = sorted((r.id, r.zipper_ds, r.zipper_kind) for r in rt.with_deletes(marked).collect())
    back = "changed" if tombstones else "new"
    assert [k for k in kinds if k[0] != 9] == [
        (1, "2024-01-01", "new"),
        (1, "2024-01-02", "unchanged"),
        (1, "2024-01-03", "deleted"),
        (1, "2024-01-04", back),
        (2, "2024-01-01", "new"),
        (2, "2024-01-02", "updated"),
        (2, "2024-01-03", "deleted"),
        (3, "2024-01-04", "new"),
    ]
    found = sorted(tuple(r) for r in rt.versions(marked, line).where("id < 9").collect())
    # collapsed, as the rebuild keeps them: key 1's unchanged row of 01-02 still ends on 01-03
    kept = rt.collapsed(marked)
    assert sorted(tuple(r) for r in rt.versions(kept, line).where("id < 9").collect()) == found
    assert sorted(map(tuple, rt.daily_counts(kept).collect())) == sorted(map(tuple, rt.daily_counts(marked).collect()))
    if tombstones:
        assert found == [
            (1, "a", "x", False, "2024-01-01", "2024-01-03"),
            (1, "a", "x", False, "2024-01-04", OPEN),
            (1, "a", "x", True, "2024-01-03", "2024-01-04"),
            (2, "B", "y", False, "2024-01-01", "2024-01-03"),
            (2, "B", "y", True, "2024-01-03", OPEN),
            (3, "c", None, False, "2024-01-04", OPEN),
        ]
    else:
        assert found == [
            (1, "a", "x", "2024-01-01", "2024-01-03"),
            (1, "a", "x", "2024-01-04", OPEN),
            (2, "B", "y", "2024-01-01", "2024-01-03"),
            (3, "c", None, "2024-01-04", OPEN),
        ]
