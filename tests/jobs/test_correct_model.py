"""Model-based test of corrections: generated days, erasures, value fixes, deletes, reruns and
later days against a plain-Python reference.

The reference holds the table as rows. An erasure drops a key's rows and keeps it out of every
input of the dates up to it; a fix sets `score` on the versions whose `name` matches, then makes
consecutive versions equal in both columns one; a delete drops the matching versions. A rerun
from D (told to undo value fixes and deletes) keeps what ended before D, reopens what was valid
on D - 1, and merges D.. again with the reference merge of test_model, from the inputs less the
erased keys. After each step the table equals the reference and `zipper check` passes. On a
plain table and on one with `ignore_null_updates` (a NULL keeps the open version's value, the
one a fix set included)."""

from __future__ import annotations

import datetime as dt
import itertools
import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.jobs.test_model import ATTRS, MODEL_SETTINGS, SINGLE, SINGLE_KEYS, ZipperModel, scenarios
from tests.support import TableFixture, day, table_rows
from zipper.core.errors import InputError
from zipper.jobs import correct, merge, replay
from zipper.jobs.init import init_table
from zipper.table import check

OPEN = "9999-12-31"
_tables = itertools.count()
CORRECTION_SETTINGS = settings(MODEL_SETTINGS, max_examples=2)
NAMES = [None, "x", "y", ""]


@st.composite
def correction_scenarios(draw):
    """(end_style, base, days, operations); an operation is ("erase", key) | ("delete", name) |
    ("set", name, score) | ("rerun", from day) | ("day", rows): a new date."""
    end_style, base, days = draw(scenarios(SINGLE_KEYS))
    operations = []
    for _ in range(draw(st.integers(2, 4))):
        kind = draw(st.sampled_from(["erase", "delete", "set", "rerun", "day"]))
        if kind == "erase":
            operations.append(("erase", draw(st.integers(0, 5))))
        elif kind == "delete":
            operations.append(("delete", draw(st.sampled_from(NAMES))))
        elif kind == "set":
            operations.append(("set", draw(st.sampled_from(NAMES)), draw(st.sampled_from([None, 0, 5]))))
        elif kind == "rerun":
            operations.append(("rerun", draw(st.integers(1, len(days)))))
        else:
            rows = draw(st.lists(st.tuples(SINGLE_KEYS, ATTRS), max_size=4, unique_by=lambda r: r[0]))
            operations.append(("day", [k + a for k, a in rows]))
    return end_style, base, days, operations


class Reference:
    """The table as rows (id, name, score, begin, end), and the erasures (key, date of the table then)."""

    def __init__(self, end_style: str, base: list[tuple], days: list[list[tuple]], ignore_nulls: bool = False):
        self.end_style = end_style
        self.ignore_nulls = ignore_nulls  # source.ignore_null_updates: a NULL keeps the open version's value
        self.days = [list(rows) for rows in days]
        self.base = list(base)
        self.erased: list[tuple[int, int]] = []
        model = ZipperModel(end_style, base, 1, ignore_nulls=ignore_nulls)
        for n, rows in enumerate(days, start=1):
            model.merge(day(n), rows)
        self.rows = model.rows()

    @property
    def last(self) -> int:
        return len(self.days)

    def follows(self, previous: tuple, following: tuple) -> bool:
        """`previous` ended where `following` began (no gap)."""
        begin = dt.date.fromisoformat(following[3])
        end = begin if self.end_style == "exclusive" else begin - dt.timedelta(days=1)
        return previous[4] == end.isoformat()

    def erase(self, key: int) -> None:
        self.rows = [r for r in self.rows if r[0] != key]
        self.erased.append((key, self.last))

    def delete(self, name) -> None:
        self.rows = [r for r in self.rows if r[1] != name]  # None == None: `name IS NULL`

    def fix(self, name, score) -> bool:
        """Whether the fix changes a row (else the engine refuses it)."""
        fixed = {i for i, r in enumerate(self.rows) if r[1] == name}
        if not any(self.rows[i][2] != score for i in fixed):
            return False
        rows = [(r[0], r[1], score if i in fixed else r[2], r[3], r[4], i in fixed) for i, r in enumerate(self.rows)]
        result = []
        for _, versions in itertools.groupby(sorted(rows, key=lambda r: (r[0], r[3])), key=lambda r: r[0]):
            runs: list[list[tuple]] = []
            for v in versions:
                if runs and self.follows(runs[-1][-1], v) and runs[-1][-1][1:3] == v[1:3]:
                    runs[-1].append(v)
                else:
                    runs.append([v])
            for run in runs:
                if len(run) > 1 and any(v[5] for v in run):
                    last = run[-1]
                    result.append((last[0], last[1], last[2], run[0][3], last[4]))
                else:
                    result.extend(v[:5] for v in run)
        self.rows = result
        return True

    def rerun(self, first: int) -> None:
        """Keep what ended before `first`, reopen what was valid on first - 1, merge first.. again."""
        model = ZipperModel(self.end_style, [], 1, ignore_nulls=self.ignore_nulls)
        before = day(first - 1).isoformat()
        for r in self.rows:
            valid = r[3] <= before and (r[4] > before if self.end_style == "exclusive" else r[4] >= before)
            if valid:
                model.open[(r[0],)] = ((r[1], r[2]), r[3])
                model.history[(r[0],)] = [(r[1], r[2])]
            elif r[4] < model.closed_end(day(first)):
                model.closed.append(((r[0],), (r[1], r[2]), r[3], r[4]))
        for n in range(first, self.last + 1):
            gone = {key for key, at in self.erased if at >= n}
            model.merge(day(n), [row for row in self.days[n - 1] if row[0] not in gone])
        self.rows = model.rows()

    def add_day(self, rows: list[tuple]) -> None:
        self.days.append(list(rows))
        model = ZipperModel(self.end_style, [], 1, ignore_nulls=self.ignore_nulls)
        for r in self.rows:
            if r[4] == OPEN:
                model.open[(r[0],)] = ((r[1], r[2]), r[3])
                model.history[(r[0],)] = [(r[1], r[2])]
            else:
                model.closed.append(((r[0],), (r[1], r[2]), r[3], r[4]))
        model.merge(day(self.last), rows)
        self.rows = model.rows()


def where_name(name) -> str:
    return "name IS NULL" if name is None else f"name = '{name}'"


@pytest.mark.slow
@pytest.mark.parametrize("option", ["plain", "ignore_null_updates"])
@CORRECTION_SETTINGS
@given(scenario=correction_scenarios())
@example(
    scenario=(  # a fix that merges versions, an erasure, then a rerun over both
        "exclusive",
        [(1, "x", 5), (2, "y", 0)],
        [[(1, "y", 5)], [(1, "x", 5), (3, "x", 0)], [(2, "", 5)]],
        [("set", "y", 5), ("erase", 3), ("rerun", 1), ("day", [(3, "x", 0), (1, None, None)])],
    )
)
def test_corrections_reruns_and_later_days_match_the_reference(spark, tmp_path_factory, scenario, option):
    """`ignore_null_updates`: a later day's NULL keeps the value a fix set, and a rerun fills from
    the versions it reopens, as the reference does."""
    end_style, base, days, operations = scenario
    fills = option == "ignore_null_updates"
    t = TableFixture(
        tmp_path_factory.mktemp("c"),
        f"correct_{os.getpid()}_{next(_tables)}",
        keys=SINGLE["keys"],
        schema=SINGLE["schema"],
        end_style=end_style,
        source={"ignore_null_updates": True} if fills else None,
    )
    t.write_base(spark, base)
    for n, rows in enumerate(days, start=1):
        t.write_increment(spark, day(n), rows)
    init_table(spark, t.spec)
    replay.rerun(spark, t.spec, day(1), day(len(days)))
    ref = Reference(end_style, base, days, ignore_nulls=fills)
    assert table_rows(spark, t.table) == sorted(ref.rows, key=_order)

    for operation in operations:
        kind = operation[0]
        ask = {"reason": "model", "by": "test"}
        if kind == "erase":
            held = any(r[0] == operation[1] for r in ref.rows)
            if held:
                correct.correct(spark, t.spec, correct.Request("erase", erase_keys=(f"id={operation[1]}",), **ask))
                ref.erase(operation[1])
        elif kind == "delete":
            matched = any(r[1] == operation[1] for r in ref.rows)
            request = correct.Request("delete", where=where_name(operation[1]), **ask)
            if matched:
                correct.correct(spark, t.spec, request)
                ref.delete(operation[1])
            else:
                with pytest.raises(InputError, match="matches no version"):
                    correct.correct(spark, t.spec, request)
        elif kind == "set":
            _, name, score = operation
            value = "NULL" if score is None else str(score)
            request = correct.Request("set", where=where_name(name), assignments=(f"score={value}",), **ask)
            if any(r[1] == name for r in ref.rows) and ref.fix(name, score):
                correct.correct(spark, t.spec, request)
            else:
                with pytest.raises(InputError):
                    correct.correct(spark, t.spec, request)
        elif kind == "rerun":
            replay.rerun(spark, t.spec, day(operation[1]), undo_corrections=True)
            ref.rerun(operation[1])
        else:
            t.write_increment(spark, day(ref.last + 1), operation[1])
            merge.merge_date(spark, t.spec, day(ref.last + 1))
            ref.add_day(operation[1])
        assert table_rows(spark, t.table) == sorted(ref.rows, key=_order), operation
    assert check.run_checks(spark, t.spec)["ok"]


def _order(row: tuple):
    return tuple("" if v is None else str(v) for v in row)
