"""An SCD2 table written by hand, read as zipper's versions (`zipper adopt`): pure
DataFrame -> DataFrame functions.

A hand-written table says a version's validity in its own way: begin and end as dates, text or
numbers, an inclusive or exclusive end, an open end that is a date or NULL. `normalized` reads
every row as one form (its begin date, whether it is open, its exclusive end); `problems` finds
what keeps the rows from being one chain of versions per key; `versions` writes them in zipper's
form."""

from __future__ import annotations

from enum import StrEnum

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zipper.tablespec.modes import EndStyle

BEGIN = "zipper_adopt_begin"  # the version's first date
OPEN = "zipper_adopt_open"  # whether the version is open
END = "zipper_adopt_end"  # the first date it no longer held (NULL when open): the date whose run closed it
PROBLEM = "zipper_adopt_problem"


class Problem(StrEnum):
    """What keeps a key's rows from being one chain of versions, as the refusal names it."""

    NULL_KEY = "a NULL key"
    BEGIN_NOT_DATE = "a begin that is not a date"
    END_NOT_DATE = "an end that is not a date"
    NO_DAY = "a version that ends before it begins"
    AFTER_THROUGH = "a version that begins or ends after --through"
    OPEN_TWICE = "more than one open version"
    OVERLAP = "versions that overlap"
    GAP = "a gap between versions"


def as_date(column: str, date_format: str | None = None) -> Column:
    """`column` read as a date, NULL where it is not one: a date as it is, text as `YYYY-MM-DD`, or
    text and numbers as the Spark datetime pattern `date_format` writes them (`yyyyMMdd`)."""
    if date_format is None:
        return F.expr(f"try_cast(`{column}` AS DATE)")
    return F.try_to_timestamp(F.col(column).cast("string"), F.lit(date_format)).cast("date")


def normalized(
    rows: DataFrame,
    *,
    begin_column: str,
    end_column: str,
    end_style: EndStyle,
    open_end: str | None,
    date_format: str | None = None,
) -> DataFrame:
    """`rows` with BEGIN, OPEN and END beside their own columns. A version is open when its end
    is `open_end` (NULL when `open_end` is None); a closed one's END is its end, plus a day when
    the end is inclusive. A begin or end that is not a date (as `date_format` writes one) leaves
    BEGIN or END NULL."""
    end = as_date(end_column, date_format)
    is_open = F.col(end_column).isNull() if open_end is None else (end == F.lit(open_end).cast("date"))
    closed_end = end if end_style == EndStyle.EXCLUSIVE else F.date_add(end, 1)
    return rows.select(
        "*",
        as_date(begin_column, date_format).alias(BEGIN),
        F.coalesce(is_open, F.lit(False)).alias(OPEN),
        F.when(F.coalesce(is_open, F.lit(False)), F.lit(None).cast("date")).otherwise(closed_end).alias(END),
    )


def key_text(keys: list[str]) -> Column:
    """A key as the refusal shows it: its value, or its values in parentheses."""
    parts = [F.coalesce(F.col(k).cast("string"), F.lit("NULL")) for k in keys]
    return parts[0] if len(keys) == 1 else F.concat(F.lit("("), F.concat_ws(", ", *parts), F.lit(")"))


def problems(
    normal: DataFrame,
    *,
    keys: list[str],
    end_column: str,
    open_end: str | None,
    through: str,
    validity: tuple[str, ...] = (),
) -> DataFrame:
    """Each problem found (PROBLEM), with how many keys have it (`keys`) and up to five of them
    (`examples`, sorted): one small aggregate over the whole table. A gap is one of them: the
    caller decides whether it may stay (a key deleted, then back). `validity`: the valid-from and
    valid-to columns, with which a version may begin and end on one date (it lived within the day,
    as zipper keeps them) when it is valid for a while."""
    order = [F.col(BEGIN).asc_nulls_first(), F.col(END).asc_nulls_last()]
    by_key = Window.partitionBy(*keys).orderBy(*order, *[F.col(c).asc_nulls_last() for c in validity[:1]])
    previous_end, previous_open = F.lag(END).over(by_key), F.lag(OPEN).over(by_key)
    opens = F.sum(F.col(OPEN).cast("int")).over(Window.partitionBy(*keys))
    end_missing = F.col(end_column).isNotNull() & F.col(END).isNull() & ~F.col(OPEN)
    if open_end is not None:  # a NULL end where open versions end on a date
        end_missing = end_missing | F.col(end_column).isNull()
    checks = [
        (
            Problem.NULL_KEY,
            F.greatest(*[F.col(k).isNull() for k in keys]) if len(keys) > 1 else F.col(keys[0]).isNull(),
        ),
        (Problem.BEGIN_NOT_DATE, F.col(BEGIN).isNull()),
        (Problem.END_NOT_DATE, end_missing),
        (Problem.NO_DAY, _no_time(validity)),
        (
            Problem.AFTER_THROUGH,
            (F.col(BEGIN) > F.lit(through).cast("date")) | (F.col(END) > F.lit(through).cast("date")),
        ),
        (Problem.OPEN_TWICE, opens > 1),
        (Problem.OVERLAP, (F.col(BEGIN) < previous_end) | (previous_open & (opens <= 1))),
        (Problem.GAP, F.col(BEGIN) > previous_end),
    ]
    # the windows first, then the array of problems (a window inside a generator is not analysed)
    found = [f"zipper_adopt_{number}" for number in range(len(checks))]
    named = normal.select(
        key_text(keys).alias("key"),
        *[F.when(test, F.lit(str(name))).alias(column) for column, (name, test) in zip(found, checks, strict=True)],
    )
    flagged = named.select("key", F.explode(F.array_compact(F.array(*found))).alias(PROBLEM))
    return flagged.groupBy(PROBLEM).agg(
        F.count_distinct("key").alias("keys"), F.slice(F.array_sort(F.collect_set("key")), 1, 5).alias("examples")
    )


def _no_time(validity: tuple[str, ...]) -> Column:
    """A version that holds no day; with validity columns, one that ends on the date it begins
    holds a while if its validity does."""
    if not validity:
        return F.col(END) <= F.col(BEGIN)
    valid_from, valid_to = validity
    within_day = (F.col(END) == F.col(BEGIN)) & (F.col(valid_from) < F.col(valid_to))
    return (F.col(END) <= F.col(BEGIN)) & ~F.coalesce(within_day, F.lit(False))


def closings(normal: DataFrame) -> DataFrame:
    """Versions per date whose run closed them (END; NULL: the open ones)."""
    return normal.groupBy(END).count()


def versions(
    normal: DataFrame,
    *,
    columns: list[str],
    begin_column: str,
    end_column: str,
    end_style: EndStyle,
    open_end: str,
    valid_to: tuple[str, str] | None = None,
) -> DataFrame:
    """The rows in zipper's form: the data `columns`, the begin as `YYYY-MM-DD` text in
    `begin_column`, and in `end_column` the table's open end for open versions, else the end the
    run of their END gives (that date, or the day before it with inclusive ends). `valid_to`:
    the valid-to column and its type, which open versions get as the open end at midnight."""
    closed = F.col(END) if end_style == EndStyle.EXCLUSIVE else F.date_sub(F.col(END), 1)
    end = F.when(F.col(OPEN), F.lit(open_end)).otherwise(F.date_format(closed, "yyyy-MM-dd"))
    shown = [F.col(c) for c in columns]
    if valid_to is not None:
        name, kind = valid_to
        until = F.when(F.col(OPEN), F.lit(open_end).cast(kind)).otherwise(F.col(name))
        shown = [until.alias(name) if c == name else F.col(c) for c in columns]
    return normal.select(*shown, F.date_format(BEGIN, "yyyy-MM-dd").alias(begin_column), end.alias(end_column))
