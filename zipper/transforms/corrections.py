"""Row-level corrections as pure DataFrame -> DataFrame functions (`zipper correct`).

The job decides which versions match; these say what the versions of the keys it touches
become. A value fix rewrites the matched versions in place (it never opens a version) and then
makes consecutive versions of a key that the fix made equal in every tracked column one
version spanning both, as the daily merges would have made them. An erasure or a row delete
only removes rows, so it needs no function here beyond the key hashes."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zipper.core.layout import CORRECTED_PREFIX, SLOT
from zipper.transforms.equality import comparable, same
from zipper.transforms.predicates import column_ref

FIXED = "zipper_fixed"  # the version matched the correction's predicate
STATUS = "zipper_status"  # what the correction does to a version
SAME, CHANGED, ABSORBED = "same", "changed", "absorbed"  # absorbed: merged into the next version of its run
_RUN = "zipper_run"
_STARTS = "zipper_starts"
_DIFFERS = "zipper_differs"
_KEY_HASH, _ERASED = "zipper_key_hash", "zipper_erased"  # a fixed version's new values differ from its old ones


def key_hash(keys: list[str], salt: str) -> Column:
    """A key's salted hash: SHA-256 of the salt and the key's columns as JSON. Computed the same
    way over the table, over a keys file and over a rerun's inputs, so an erased key is found
    again by its hash alone (the key itself is never recorded)."""
    return F.sha2(F.concat(F.lit(salt), F.to_json(F.struct(*[column_ref(k).alias(k) for k in keys]))), 256)


def previous_end(begin: Column, inclusive: bool) -> Column:
    """The end value of the version that the version beginning on `begin` followed without a gap:
    closed by the run of `begin`, it ends on `begin` (exclusive) or the day before (inclusive)."""
    if not inclusive:
        return begin
    return F.date_format(F.date_sub(F.to_date(begin), 1), "yyyy-MM-dd")


def fixed_versions(
    versions: DataFrame,
    matched: Column,
    assignments: dict[str, Column],
    *,
    keys: list[str],
    begin_column: str,
    end_column: str,
    tracked: list[str],
    types: dict[str, DataType],
    inclusive: bool,
    deleted_column: str | None = None,
    valid_from_column: str | None = None,
) -> DataFrame:
    """Every version of the touched keys after a value fix, each with its STATUS.

    `versions`: all versions of the keys holding a matched version (with the end column);
    `matched`: which of them the fix applies to; `assignments`: column -> its new value. A fixed
    version takes the new values (CHANGED where one differs). Then, per key in begin order, a run of consecutive versions
    (each ending where the next begins) that are equal in every `tracked` column, holding at
    least one fixed version, becomes its last version with the run's first begin; the others are
    ABSORBED. A version the fix or a merge changed is CHANGED; the rest are SAME (their
    partitions need not be written again). Columns and their order are kept, plus STATUS.
    `deleted_column`: the tombstones' flag. A tombstone holds its key's last values, so a run
    never spans a change of the flag: a key's last version and its tombstone stay two, as the
    merges made them (one would say the key was deleted from its last version's begin).
    `valid_from_column`: with validity columns, a merged run is valid from its first version's
    valid-from, as it begins at its first version's begin (the later ones' would leave the key
    with no valid version before them); and versions that lived within a day, which share their
    begin with the next version, are ordered by it."""
    names = versions.columns
    differs = F.lit(False)
    for name, value in assignments.items():
        differs = differs | ~same(column_ref(name), value, types[name])
    with_fix = versions.withColumn(FIXED, F.coalesce(matched, F.lit(False))).withColumn(_DIFFERS, differs)
    with_fix = with_fix.select(
        *[
            F.when(F.col(FIXED), assignments[n]).otherwise(column_ref(n)).alias(n)
            if n in assignments
            else column_ref(n)
            for n in names
        ],
        FIXED,
        _DIFFERS,
    )
    # versions that lived within a day share their begin with the next: their valid-from orders them
    in_time = [n for n in (begin_column, valid_from_column) if n]
    order = Window.partitionBy(*[column_ref(k) for k in keys]).orderBy(*[column_ref(n) for n in in_time])
    follows = F.lag(column_ref(end_column)).over(order) == previous_end(column_ref(begin_column), inclusive)
    for name in [*tracked, *([deleted_column] if deleted_column else [])]:
        follows = follows & same(F.lag(column_ref(name)).over(order), column_ref(name), types[name])
    starts = (~F.coalesce(follows, F.lit(False))).cast("int")
    numbered = with_fix.withColumn(_STARTS, starts).withColumn(
        _RUN, F.sum(_STARTS).over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    run = Window.partitionBy(*[column_ref(k) for k in keys], F.col(_RUN))
    merged_run = F.max(F.col(FIXED).cast("int")).over(run) == 1
    merged_run = merged_run & (F.count(F.lit(1)).over(run) > 1)
    last_in_run = F.row_number().over(run.orderBy(*[column_ref(n).desc() for n in in_time])) == 1
    run_first = {n: F.min(column_ref(n)).over(run) for n in in_time}
    # the run's last version takes its first's begin (and valid-from): changed where they differ
    moved = F.lit(False)
    for name, first in run_first.items():
        moved = moved | ~same(first, column_ref(name), types[name])
    status = (
        F.when(merged_run & ~last_in_run, F.lit(ABSORBED))
        .when((F.col(FIXED) & F.col(_DIFFERS)) | (merged_run & moved), F.lit(CHANGED))
        .otherwise(F.lit(SAME))
    )
    return numbered.select(
        *[
            F.when(merged_run, run_first[n]).otherwise(column_ref(n)).alias(n) if n in run_first else column_ref(n)
            for n in names
        ],
        status.alias(STATUS),
    )


def without_keys(
    rows: DataFrame, hashes: DataFrame, keys: list[str], salt: str, until: Column | None = None
) -> DataFrame:
    """`rows` less those whose key's salted hash is in `hashes` (a column `key_hash`): an erased
    key kept out of an input a rerun or rebuild replays. `until`: only the rows it holds true for
    (the dates up to the erasure); a key arriving later is new data."""
    hashed = rows.withColumn(_KEY_HASH, key_hash(keys, salt))
    found = hashed.join(
        F.broadcast(hashes.select(F.col("key_hash").alias(_ERASED))), F.col(_KEY_HASH) == F.col(_ERASED), "left"
    )
    gone = F.col(_ERASED).isNotNull()
    if until is not None:
        gone = gone & until
    return found.where(~gone).drop(_KEY_HASH, _ERASED)


# -- what a correction selects and writes (the job `zipper correct` runs these) ------------------


@dataclass
class Selection:
    """The versions a correction matches, as functions of a DataFrame of the table's rows."""

    describe: str  # for messages
    matched: Column | None = None  # a predicate (set, delete)
    keys: DataFrame | None = None  # the typed keys to erase
    key_count: int = 0
    assignments: dict[str, Column] = field(default_factory=dict)
    assignment_texts: dict[str, str] = field(default_factory=dict)
    where: str = ""

    def matching(self, rows: DataFrame, key_columns: list[str]) -> DataFrame:
        if self.keys is not None:
            return rows.join(F.broadcast(self.keys), key_columns, "left_semi")
        return rows.where(self.matched)

    def rest(self, rows: DataFrame, key_columns: list[str]) -> DataFrame:
        if self.keys is not None:
            return rows.join(F.broadcast(self.keys), key_columns, "left_anti")
        return rows.where(~self.matched)


@dataclass
class Rewrite:
    """What a correction writes: the rows of each rewritten partition, and what to audit them by.

    `passed` are the rows the correction passes through unchanged (an erasure's or a delete's:
    every row it does not remove; a fix's: the rows of the keys it does not touch); `rows` are
    them plus the rows it changes. The write counts and hashes `passed` as it reads them, and the
    audit compares that with the same rows read back from the files written."""

    passed: DataFrame  # with SLOT, without the end column
    changes: DataFrame | None  # a fix's new versions of the keys it touches (with SLOT); None: only removals
    removed: dict[str, int]  # end -> versions removed (erased, deleted)
    coalesced: dict[str, int]  # end -> versions merged into their next
    changed: dict[str, int]  # end -> versions whose values or begin changed
    outside: Callable[[DataFrame], DataFrame]  # the written rows that must be `passed`, as they were
    fixed_keys: DataFrame | None = None  # a fix's keys: the only ones whose open versions it writes anew
    persisted: list[DataFrame] = field(default_factory=list)  # unpersisted once published or failed
    observation: Observation = field(default_factory=lambda: Observation(f"zipper_correct_{secrets.token_hex(6)}"))


def slot(end: Column) -> Column:
    """The rewritten partition a row goes to (`layout.corrected_slot` of its end value)."""
    return F.concat(F.lit(CORRECTED_PREFIX), end)


def valid_within(
    begin_column: str, end_column: str, first: dt.date | None, last: dt.date | None, *, exclusive: bool
) -> Column:
    """Versions valid on some day of first..last (a version is never split: it is fixed whole)."""
    condition = F.lit(True)
    if last:
        condition = condition & (column_ref(begin_column) <= F.lit(last.isoformat()))
    if first:
        start, end = F.lit(first.isoformat()), column_ref(end_column)
        condition = condition & (end > start if exclusive else end >= start)
    return condition


def typed_values(texts: dict[str, str], types: dict[str, str]) -> dict[str, Column]:
    """--set values typed by their columns (NULL: none; a value that does not read: null)."""
    return {
        name: (F.lit(None) if text.upper() == "NULL" else F.lit(text)).try_cast(types[name])
        for name, text in texts.items()
    }


def typed_keys(raw: DataFrame, keys: list[str], types: dict[str, str]) -> DataFrame:
    """Keys given as text, typed as the key columns; each text kept as `raw_<i>` for messages."""
    return raw.select(
        *[column_ref(k).alias(f"raw_{i}") for i, k in enumerate(keys)],
        *[column_ref(k).try_cast(types[k]).alias(k) for k in keys],
    )


def unread_key(keys: list[str]) -> Column:
    """A typed key with a column that did not read as its type."""
    unread = F.lit(False)
    for k in keys:
        unread = unread | F.col(k).isNull()
    return unread


def slotted(rows: DataFrame, columns: list[str], end_column: str) -> DataFrame:
    """`columns` and the rewritten partition each row goes to."""
    return rows.select(*[column_ref(c) for c in columns], slot(column_ref(end_column)).alias(SLOT))


def removed_partitions(
    table: DataFrame, selection: Selection, ends: list[str], keys: list[str], end_column: str
) -> DataFrame:
    """An erasure's or a delete's rows passed through: each partition in `ends`, less the matched versions."""
    columns = [c for c in table.columns if c != end_column]
    touched = table.where(column_ref(end_column).isin(ends))
    return slotted(selection.rest(touched, keys), columns, end_column)


def fixed_partitions(
    table: DataFrame, fixed: DataFrame, fixed_keys: DataFrame, ends: list[str], keys: list[str], end_column: str
) -> tuple[DataFrame, DataFrame]:
    """A value fix's partitions in `ends`: the rows of the other keys passed through, and the fixed
    keys' new versions (`fixed_versions` less the ABSORBED), each with its SLOT."""
    end = column_ref(end_column)
    columns = [c for c in table.columns if c != end_column]
    passed = table.where(end.isin(ends)).join(fixed_keys, keys, "left_anti")
    new = fixed.where(end.isin(ends) & (F.col(STATUS) != ABSORBED))
    return slotted(passed, columns, end_column), slotted(new, columns, end_column)


def row_hash(rows: DataFrame, columns: list[str]) -> Column:
    """A row's hash over `columns` (maps as their sorted entries: Spark refuses to hash a map)."""
    types = {f.name: f.dataType for f in rows.schema.fields}
    return F.xxhash64(*[comparable(column_ref(c), types[c]) for c in columns]).cast("decimal(38,0)")


def fingerprint(rows: DataFrame, columns: list[str]) -> list[Column]:
    """Rows and the sum of their hashes: equal for two sets of rows that are the same rows."""
    return [F.count(F.lit(1)).alias("rows"), F.coalesce(F.sum(row_hash(rows, columns)), F.lit(0)).alias("hash")]


def with_slot_from_path(rows: DataFrame, end_column: str) -> DataFrame:
    """Rows read back from the rewritten directories, with their partition's end value (from their
    file's directory: a predicate may name the end column) and SLOT."""
    end = F.regexp_extract(F.input_file_name(), f"{SLOT}={CORRECTED_PREFIX}([^/]+)/", 1)
    return rows.withColumn(end_column, end).withColumn(SLOT, slot(column_ref(end_column)))


def keys_twice(rows: DataFrame, fixed_keys: DataFrame, keys: list[str]) -> DataFrame:
    """The fixed keys that `rows` (an open partition) holds more than once."""
    opened = rows.join(fixed_keys, keys, "left_semi")
    return opened.groupBy(*[column_ref(k) for k in keys]).count().where(F.col("count") > 1)
