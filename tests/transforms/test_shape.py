"""The merge shape: what a variant changes, as data, built from a spec without Spark."""

from __future__ import annotations

import datetime as dt

from zipper.tablespec.model import TableSpec
from zipper.transforms import shape


def _spec(**source) -> TableSpec:
    return TableSpec.model_validate(
        {
            "name": "people",
            "table": "dw.people",
            "keys": ["id"],
            "start_date": "2024-01-01",
            "source": {"path": "/data/people/{{ ds }}", "format": "parquet", **source},
        }
    )


def test_a_plain_upsert_day_counts_the_three_kinds_of_an_open_key():
    day = shape.MergeShape.of(_spec(), dt.date(2024, 1, 5), ["id", "name"], ["name"], deletes=False)
    assert day.kinds == (shape.CHANGED, shape.UPDATED, shape.UNCHANGED)
    assert (day.ds, day.closed_end, day.end_lag, day.versioned) == ("2024-01-05", "2024-01-05", 0, False)
    assert day.keys == ("id",) and day.values == ["name"]


def test_each_variant_is_a_field_and_the_kinds_it_adds():
    spec = _spec(mode="cdc", op_column="op", sequence_by="ts", updated_at="ts", hard_deletes="new_record")
    day = shape.MergeShape.of(spec, dt.date(2024, 1, 5), ["id", "name", "ts"], ["name"], deletes=True)
    assert day.versioned and day.validity == (spec.valid_from_column, spec.valid_to_column)
    assert day.tombstone == spec.deleted_column and day.updated_at == "ts"
    assert day.kinds == (
        shape.CHANGED,
        shape.UPDATED,
        shape.UNCHANGED,
        shape.DELETED,
        shape.VANISHED,
        shape.INTRADAY,
        shape.TOMBSTONE,
        shape.STILL_DELETED,
    )
