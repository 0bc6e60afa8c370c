"""The daily audit: reconcile what the merge counted with what it wrote, before publishing.

Cheap by design: the counts come from the write itself (DataFrame.observe) and the written
row counts from Parquet footers, so no data is read twice. `zipper check` does the full scan."""

from __future__ import annotations

from zipper.engine import fs
from zipper.errors import AuditError


def written_rows(spark, directory: str) -> int:
    """Rows in the Parquet files of a directory, from the footers."""
    files = fs.list_data_files(spark, [directory]) if fs.exists(spark, directory) else []
    local = [fs.local_path(f.path) for f in files]
    if all(local):
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(path).metadata.num_rows for path in local)
    return spark.read.parquet(directory).count()


def reconcile(counts: dict, *, open_before: int, input_rows: int, open_written: int, closed_written: int,
              max_closed_begin: str | None, ds: str, table: str) -> dict:
    """Check the identities that hold for every correct merge; return the summary counts."""
    carried, unchanged, updated = counts["carried"], counts["unchanged"], counts["updated"]
    changed, closed, new = counts["changed"], counts["closed"], counts["new"]
    open_after = carried + unchanged + updated + changed + new
    problems = []
    if carried + unchanged + updated + closed != open_before:
        problems.append(
            f"open rows read {carried + unchanged + updated + closed} != {open_before} recorded at the last commit"
        )
    if new + changed + unchanged + updated != input_rows:
        problems.append(f"increment rows accounted {new + changed + unchanged + updated} != {input_rows} read")
    if closed != changed:
        problems.append(f"closed rows {closed} != changed keys {changed}")
    if open_written != open_after:
        problems.append(f"open rows written {open_written} != {open_after} computed")
    if closed_written != closed:
        problems.append(f"closed rows written {closed_written} != {closed} computed")
    if max_closed_begin is not None and max_closed_begin >= ds:
        problems.append(f"a closed row began on {max_closed_begin}, not before {ds}")
    if problems:
        raise AuditError("audit failed, nothing published: " + "; ".join(problems), table=table, ds=ds)
    return {
        "input": input_rows,
        "new": new,
        "changed": changed,
        "unchanged": unchanged,
        "updated_in_place": updated,
        "closed": closed,
        "open_before": open_before,
        "open_after": open_after,
    }


def reconcile_restore(*, rows_read: int, rows_written: int, expected: int, first: str, table: str) -> None:
    """A restore to the day before `first` must give back exactly the open rows that the run of
    `first` started from (its recorded `open_before`), and write every row it read."""
    problems = []
    if rows_read != expected:
        problems.append(f"restored open rows {rows_read} != {expected} open before the run of {first} (its commit record)")
    if rows_written != rows_read:
        problems.append(f"open rows written {rows_written} != {rows_read} restored")
    if problems:
        raise AuditError("restore audit failed, nothing published: " + "; ".join(problems), table=table, ds=first)


def reconcile_rebuild(*, expected: dict[str, int], written: dict[str, int], last: str, table: str) -> None:
    """Rows written per directory (Parquet footers) must equal the rows each date's counts call for."""
    problems = [
        f"{slot}: {written.get(slot, 0)} rows written != {rows} computed"
        for slot, rows in sorted(expected.items())
        if written.get(slot, 0) != rows
    ]
    if problems:
        shown = "; ".join(problems[:10]) + (f" ... ({len(problems)} directories)" if len(problems) > 10 else "")
        raise AuditError("rebuild audit failed, nothing published: " + shown, table=table, ds=last)
