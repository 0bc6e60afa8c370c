"""`zipper status`: the committed state as a report, from a TableState however it was read.

No pyspark here: the same report comes from a Spark session's catalog (inspect.status) or from
the metastore's thrift API without a JVM (thrift_catalog), and the two must be equal: both read
through the one HiveCatalog (zipper.table.hive_catalog)."""

from __future__ import annotations

from zipper.core.errors import StateError
from zipper.table import state
from zipper.tablespec.model import TableSpec


def initialized(st: state.TableState, spec: TableSpec, metastore: str) -> state.TableState:
    """`st` if the table exists, is zipper's and is initialized; else the error that says what to do.
    `metastore`: where it was looked for, in words a user can check ("warehouse /data/wh")."""
    if not st.exists:
        raise StateError(
            f"table does not exist in the metastore of {metastore};"
            f" check --warehouse (or ZIPPER_WAREHOUSE), or run `zipper init {spec.name}`",
            table=spec.table,
        )
    state.check_owned(st, spec)  # a changed end_style would shift every date filter of the reads
    if not st.initialized:
        raise StateError(f"table is not initialized; run `zipper init {spec.name}`", table=spec.table)
    return st


def report(st: state.TableState, spec: TableSpec, recent: int = 10) -> dict:
    commits = sorted(st.commits.values(), key=lambda c: c.ds)
    partitions = (
        [{"end": st.open_partition.end, "rows": st.open_rows, "kind": "open", "location": st.open_partition.location}]
        + [
            {
                "end": p.end,
                "rows": int(p.params.get(state.ROWS, 0)),
                "kind": "closed",
                "ds": p.params[state.DS],
                "location": p.location,
            }
            for p in st.closed
        ]
        + [{"end": p.end, "rows": 0, "kind": "pending", "location": p.location} for p in st.pending]
    )
    return {
        "name": spec.name,
        "table": spec.table,
        "last_committed": st.last_committed.isoformat(),
        "base_date": st.init_ds.isoformat() if st.init_ds else None,
        "adopted_from": st.adopted_from,
        "open_rows": st.open_rows,
        "closed_rows": sum(c.rows for c in commits),
        "end_style": str(spec.end_style),
        # a rerun a crash interrupted: the table is behind, and the same rerun (or any merge) finishes it
        "replay_interrupted": (
            {"from": st.replay.first.isoformat(), "to": st.replay.last.isoformat(), "run_id": st.replay.run_id}
            if st.replay
            else None
        ),
        "partitions": partitions,
        # dates committed without changes for want of input (on_missing_input: skip), oldest first
        "skipped_dates": [{"ds": c.ds, "skipped": c.skipped} for c in commits if c.skipped],
        "recent_commits": [
            {
                "ds": c.ds,
                "action": str(c.action),
                "run_id": c.run_id,
                "committed_at": c.committed_at,
                "fingerprint": c.fingerprint,
                "counts": c.counts,
                "skipped": c.skipped,
            }
            for c in commits[::-1][: max(recent, 0)]  # not commits[-recent:]: -0 is 0, which lists them all
        ],
        # row-level corrections (`zipper correct`), newest first; an erasure's keys only as a count
        "corrections": [
            {
                "run_id": c.run_id,
                "action": "correct",
                "kind": str(c.kind),
                "reason": c.reason,
                "by": c.by,
                "committed_at": c.committed_at,
                "as_of": c.as_of,
                "what": c.describe(),
                "undone_by": c.undone_by or None,
                "counts": c.counts,
            }
            for c in st.corrections[::-1]
        ],
        # column renames and drops (`zipper alter`), newest first
        "alters": st.alters[::-1],
    }
