"""`zipper check`: every invariant of a zipper table, verified on the live data."""

from __future__ import annotations

from pathlib import PurePosixPath

from zipper.core import sqltemplates
from zipper.core.dates import DAY, date_range
from zipper.table import inspect, state, store
from zipper.tablespec.model import TableSpec
from zipper.transforms.collected import as_collected, as_written

EXAMPLES = 20


def _rows(df, limit: int = EXAMPLES) -> tuple[int, list[dict]]:
    examples = [r.asDict() for r in as_collected(df.limit(limit)).collect()]  # keys as history takes them
    count = len(examples) if len(examples) < limit else df.count()
    return count, [{k: _example_value(v) for k, v in e.items()} for e in examples]


def _example_value(value):
    """A value of an example row as JSON holds it, and as `zipper history --key` takes it back."""
    value = as_written(value)
    return value if isinstance(value, (int, float, type(None))) else str(value)


def run_checks(spark, spec: TableSpec) -> dict:
    st = inspect.require_initialized(spark, spec)
    last = st.last_committed
    context = dict(
        table=spec.table,
        keys=spec.keys,
        begin_column=spec.begin_column,
        end_column=spec.end_column,
        end_style=spec.end_style,
        open_end=spec.open_end.isoformat(),
        last_committed=last.isoformat(),
        last_closed_end=spec.closed_end(last).isoformat(),
        validity=spec.validity_columns,
    )
    results = []
    for template in sqltemplates.template_names("check"):
        count, examples = _rows(spark.sql(sqltemplates.render(template, **context)))
        results.append({"check": PurePosixPath(template).stem, "violations": count, "examples": examples})

    # What the data says against what the commits recorded.
    recorded = []
    open_rows = store.rows_in(st.open_partition.location)
    if open_rows != st.open_rows:
        recorded.append({"partition": st.open_partition.end, "rows": open_rows, "recorded": st.open_rows})
    for part in st.closed:
        rows = store.rows_in(part.location)
        if rows != int(part.params.get(state.ROWS, -1)):
            recorded.append({"partition": part.end, "rows": rows, "recorded": int(part.params.get(state.ROWS, -1))})
    results.append({"check": "row_counts_match_commits", "violations": len(recorded), "examples": recorded})

    first = (st.init_ds or spec.start_date - DAY) + DAY
    missing = (
        [d.isoformat() for d in date_range(first, last) if d.isoformat() not in st.commits] if last >= first else []
    )
    results.append({"check": "every_date_committed", "violations": len(missing), "examples": missing[:EXAMPLES]})
    results.append(
        {
            "check": "no_pending_partitions",
            "violations": len(st.pending),
            "examples": [{"partition": p.end, "location": p.location} for p in st.pending],
        }
    )
    failed = [r["check"] for r in results if r["violations"]]
    return {
        "table": spec.table,
        "last_committed": last.isoformat(),
        "ok": not failed,
        "failed": failed,
        "checks": results,
    }
