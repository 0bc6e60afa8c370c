"""The daily audit: reconcile what the merge counted with what it wrote, before publishing.

Cheap by design: row counts come from Parquet footers (of the files read and of the files
written) and from the small key-only pass, so no data is read twice. `zipper check` does the
full scan."""

from __future__ import annotations

from dataclasses import dataclass

from zipper.core.errors import AuditError


@dataclass(frozen=True)
class Tally:
    """What a day's merge read and wrote, counted from the files' footers and by its small job: the
    figures the audit holds against one another (`reconcile`)."""

    open_recorded: int  # open rows the last commit recorded
    open_read: int  # rows in the files it points to
    input_rows: int
    kinds: dict[str, int]  # touched rows by what the day does to them (and `vanished` deletes)
    untouched: int  # open rows the big pass kept
    touched: int  # open rows the big pass set aside
    open_written: int
    closed_written: int
    max_closed_begin: str | None
    input_keys: int | None = None  # with `source.updated_at`: the keys of the day's versions


def reconcile(tally: Tally, *, ds: str, table: str) -> dict:
    """Check the identities that hold for every correct merge; return the summary counts.

    open_recorded: rows the last commit recorded; open_read: rows in the files it points to;
    untouched / touched: open rows the big pass kept / set aside; kinds: touched rows by what
    the day does to them, and deletes of keys that were not open (`vanished`), counted by the
    small job; the written counts come from the new files' footers. Every open row goes one way
    or the other, every touched row meets exactly one increment row, the open slot gains one row
    per key that was not open and loses one per deleted key, and each changed or deleted key
    closes one version. `deleted` is in the summary only where the mode can delete.

    With `source.updated_at` the increment holds several versions of a key (`input_keys`: its keys),
    and the versions a day opened and closed (`intraday`, kinds) are closed rows beginning on ds, as
    are late versions with nothing to split (`late`).

    With tombstones (`hard_deletes: new_record`), each deleted key's tombstone (`tombstone`) is an
    open row the day writes, and a tombstone deleted again (`still_deleted`) is matched and kept."""
    kinds, input_rows, input_keys = tally.kinds, tally.input_rows, tally.input_keys
    open_read, open_recorded, untouched, touched = tally.open_read, tally.open_recorded, tally.untouched, tally.touched
    open_written, closed_written, max_closed_begin = tally.open_written, tally.closed_written, tally.max_closed_begin
    changed, updated, unchanged = kinds["changed"], kinds["updated"], kinds["unchanged"]
    deleted, vanished, intraday = kinds.get("deleted", 0), kinds.get("vanished", 0), kinds.get("intraday", 0)
    tombstones, still_deleted = kinds.get("tombstone", 0), kinds.get("still_deleted", 0)
    late = kinds.get("late", 0)  # late versions with nothing to split, closed in the day's partition
    # keys with only late changes: their open rows, as the late changes leave them or end them
    late_gone = kinds.get("late_gone", 0)
    matched = changed + updated + unchanged + deleted + still_deleted + kinds.get("late_open", 0) + late_gone
    keys = input_rows if input_keys is None else input_keys
    new = keys - matched - vanished
    problems = []
    if open_read != open_recorded:
        problems.append(f"open rows read {open_read} != {open_recorded} recorded at the last commit")
    if untouched + touched != open_read:
        problems.append(f"open rows kept {untouched} + set aside {touched} != {open_read} read")
    if touched != matched:
        problems.append(f"open rows set aside {touched} != {matched} matched to the increment")
    if matched + vanished > keys:
        problems.append(f"keys found open {matched} + deletes of keys not open {vanished} > {keys} increment keys")
    if "tombstone" in kinds and tombstones != deleted:
        problems.append(f"tombstones written {tombstones} != {deleted} deleted keys")
    if open_written != open_read + new - deleted - late_gone + tombstones:
        plus = f" + {tombstones} tombstones" if "tombstone" in kinds else ""
        plus += f" - {late_gone} ended by late keys' changes" if late_gone else ""
        problems.append(
            f"open rows written {open_written} != {open_read} open before + {new} new keys - {deleted} deleted{plus}"
        )
    if closed_written != changed + deleted + intraday + late:
        within = f" + {intraday} versions within the day" if "intraday" in kinds else ""
        within += f" + {late} late versions" if late else ""
        problems.append(f"closed rows written {closed_written} != {changed} changed + {deleted} deleted keys{within}")
    if max_closed_begin is not None and (max_closed_begin > ds or (max_closed_begin == ds and not intraday + late)):
        problems.append(f"a closed row began on {max_closed_begin}, not before {ds}")
    if problems:
        raise AuditError("audit failed, nothing published: " + "; ".join(problems), table=table, ds=ds)
    summary = {
        "input": input_rows,
        "new": new,
        "changed": changed,
        "unchanged": unchanged,
        "updated_in_place": updated,
        "closed": closed_written,
        "open_before": open_read,
        "open_after": open_written,
    }
    if "deleted" in kinds:
        summary["deleted"] = deleted
    if "intraday" in kinds:
        summary["versions_within_day"] = intraday
    if "tombstone" in kinds:
        summary["tombstones"] = tombstones
    return summary


def reconcile_restore(*, rows_read: int, rows_written: int, expected: int, first: str, table: str) -> None:
    """A restore to the day before `first` must give back exactly the open rows that the run of
    `first` started from (its recorded `open_before`), and write every row it read."""
    problems = []
    if rows_read != expected:
        problems.append(
            f"restored open rows {rows_read} != {expected} open before the run of {first} (its commit record)"
        )
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


def reconcile_correction(
    *,
    end_column: str,
    counts: dict[str, dict[str, int]],
    recorded: dict[str, str | None],
    passed_read: tuple[int, int],
    passed_written: tuple[int, int],
    open_keys_twice: int,
    table: str,
    ds: str,
) -> None:
    """A correction's identities, per rewritten partition: rows before minus removed minus
    coalesced equals rows written; the rows read equal the rows its commit recorded; the rows
    the correction passes through (those of the keys outside it, or every row it does not
    remove) are written as they were read: their count and the sum of their hashes, each row
    hashed with its partition; and the open partition holds no key twice."""
    problems = []
    for end, c in sorted(counts.items()):
        where = f"{end_column}={end}"
        if c["after"] != c["before"] - c["removed"] - c["coalesced"]:
            problems.append(
                f"{where}: {c['after']} rows written != {c['before']} before - {c['removed']} removed"
                f" - {c['coalesced']} coalesced"
            )
        if recorded.get(end) not in (None, str(c["before"])):
            problems.append(f"{where}: {c['before']} rows read != {recorded[end]} its commit recorded")
    if passed_read != passed_written:
        problems.append(
            f"the rows outside the correction changed ({passed_read[0]} read, {passed_written[0]} written,"
            f" or their values)"
        )
    if open_keys_twice:
        problems.append(f"the open partition would hold {open_keys_twice} keys twice")
    if problems:
        shown = "; ".join(problems[:10]) + (f" ... ({len(problems)} problems)" if len(problems) > 10 else "")
        raise AuditError("correction audit failed, nothing published: " + shown, table=table, ds=ds)


def reconcile_alter(
    *,
    end_column: str,
    counts: dict[str, dict[str, int]],
    recorded: dict[str, str | None],
    rows_written: tuple[int, int],
    rows_read_back: tuple[int, int],
    table: str,
    ds: str,
) -> None:
    """A column rename's or drop's identities, per partition: rows before minus the versions a
    drop merged into their next equals rows written (a rename merges none); the rows read equal
    the rows its commit recorded; and every row written reads back the same (count and the sum
    of the rows' hashes, each row hashed with its partition)."""
    problems = []
    for end, c in sorted(counts.items()):
        where = f"{end_column}={end}"
        if c["after"] != c["before"] - c["merged"]:
            problems.append(f"{where}: {c['after']} rows written != {c['before']} before - {c['merged']} merged")
        if recorded.get(end) not in (None, str(c["before"])):
            problems.append(f"{where}: {c['before']} rows read != {recorded[end]} its commit recorded")
    if rows_written != rows_read_back:
        problems.append(
            f"the rows read back differ from those written ({rows_written[0]} written, {rows_read_back[0]} read"
            " back, or their values)"
        )
    if problems:
        shown = "; ".join(problems[:10]) + (f" ... ({len(problems)} problems)" if len(problems) > 10 else "")
        raise AuditError("alter audit failed, nothing published: " + shown, table=table, ds=ds)
