"""Model-based test of corrections: generated days, erasures, value fixes, deletes, reruns and
later days against a plain-Python reference.

The reference holds the table as rows. An erasure drops a key's rows and keeps it out of every
input of the dates up to it; a fix sets `score` on the versions whose `name` matches, then makes
consecutive versions equal in both columns one; a delete drops the matching versions. A rerun
from D (told to undo value fixes and deletes) keeps what ended before D, reopens what was valid
on D - 1, and merges D.. again with the reference merge of test_model, from the inputs less the
erased keys. After each step the table equals the reference and `zipper check` passes. Here on a
plain table and on one with `ignore_null_updates` (a NULL keeps the open version's value, the
one a fix set included); test_correct_model_options.py runs the same on a snapshot table that
keeps tombstones, an upsert table with untracked columns and one with `source.updated_at`
(validity columns; ValidityReference)."""

from __future__ import annotations

import datetime as dt
import itertools
import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.jobs.test_model import (
    ATTRS,
    MODEL_SETTINGS,
    SINGLE,
    SINGLE_KEYS,
    UPDATED,
    ValidityModel,
    ZipperModel,
    changed_at,
    scenarios,
)
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
    """The table as rows (id, name, score, [deleted,] begin, end), and the erasures (key, date of
    the table then). `tombstones`: a snapshot table with `hard_deletes: new_record`, whose rows
    carry the deleted flag; else an upsert table."""

    def __init__(
        self,
        end_style: str,
        base: list[tuple],
        days: list[list[tuple]],
        ignore_nulls: bool = False,
        tombstones: bool = False,
        untracked: bool = False,
    ):
        self.end_style = end_style
        self.ignore_nulls = ignore_nulls  # source.ignore_null_updates: a NULL keeps the open version's value
        self.tombstones = tombstones
        self.untracked = untracked  # track_columns: [name]: score is updated in place
        self.days = [list(rows) for rows in days]
        self.base = list(base)
        self.erased: list[tuple[int, int]] = []
        model = self._model(base)
        for n, rows in enumerate(days, start=1):
            self._merge(model, day(n), rows)
        self.rows = model.rows()

    def _model(self, base: list[tuple] = ()) -> ZipperModel:
        return ZipperModel(
            self.end_style,
            list(base),
            1,
            tracked=(0,) if self.untracked else None,
            ignore_nulls=self.ignore_nulls,
            tombstones=self.tombstones,
        )

    def _merge(self, model: ZipperModel, ds: dt.date, rows: list[tuple]) -> None:
        if self.tombstones:
            model.merge_snapshot(ds, rows, invalidate=True)  # a key missing from the snapshot: its tombstone
        else:
            model.merge(ds, rows)

    @property
    def last(self) -> int:
        return len(self.days)

    def follows(self, previous: tuple, following: tuple) -> bool:
        """`previous` ended where `following` began (no gap)."""
        begin = dt.date.fromisoformat(following[-2])
        end = begin if self.end_style == "exclusive" else begin - dt.timedelta(days=1)
        return previous[-1] == end.isoformat()

    def erase(self, key: int) -> None:
        self.rows = [r for r in self.rows if r[0] != key]
        self.erased.append((key, self.last))

    def delete(self, name) -> None:
        self.rows = [r for r in self.rows if r[1] != name]  # None == None: `name IS NULL`

    def fix(self, name, score) -> bool:
        """Whether the fix changes a row (else the engine refuses it). Consecutive versions equal in
        every column but begin and end (the deleted flag too) become one."""
        fixed = {i for i, r in enumerate(self.rows) if r[1] == name}
        if not any(self.rows[i][2] != score for i in fixed):
            return False
        rows = [(*r[:2], score if i in fixed else r[2], *r[3:]) for i, r in enumerate(self.rows)]
        order = sorted(range(len(rows)), key=lambda i: (rows[i][0], *self._in_time(rows[i])))
        result = []
        for _, indexes in itertools.groupby(order, key=lambda i: rows[i][0]):
            runs: list[list[int]] = []
            for i in indexes:
                last = runs[-1][-1] if runs else None
                if (
                    last is not None
                    and self.follows(rows[last], rows[i])
                    and self._compared(rows[last]) == self._compared(rows[i])
                ):
                    runs[-1].append(i)
                else:
                    runs.append([i])
            for run in runs:
                if len(run) > 1 and any(i in fixed for i in run):
                    result.append(self._joined(rows[run[0]], rows[run[-1]]))
                else:
                    result.extend(rows[i] for i in run)
        self.rows = result
        return True

    def _in_time(self, row: tuple) -> tuple:
        """What orders a key's versions: their begin."""
        return (row[-2],)

    def _compared(self, row: tuple) -> tuple:
        """What two following versions must share to become one: the tracked columns (the flag too)."""
        return row[1:2] if self.untracked else row[1:-2]

    def _joined(self, first: tuple, last: tuple) -> tuple:
        """A run of equal versions as one: the last one's values from the first one's begin."""
        return (*last[:-2], first[-2], last[-1])

    def _state(self, model: ZipperModel, valid) -> None:
        """`model` holding the rows: those `valid` open (or a tombstone), the rest closed."""
        for r in self.rows:
            attrs, deleted = (r[1:3], r[3]) if self.tombstones else (r[1:3], False)
            if valid(r):
                (model.dead if deleted else model.open)[r[:1]] = (attrs, r[-2])
                model.history[r[:1]] = [attrs]
            else:
                model.closed.append((r[:1], r[1:-2], r[-2], r[-1]))

    def rerun(self, first: int) -> None:
        """Keep what ended before `first`, reopen what was valid on first - 1, merge first.. again."""
        model = self._model()
        before = day(first - 1).isoformat()
        ended = model.closed_end(day(first))

        def valid(r):
            return r[-2] <= before and (r[-1] > before if self.end_style == "exclusive" else r[-1] >= before)

        self._state(model, valid)
        model.closed = [c for c in model.closed if c[3] < ended]
        if self.untracked:  # the table cannot say what score held then: the inputs up to first - 1 do
            held = self._model([row for row in self.base if row[0] not in {key for key, _ in self.erased}])
            for n in range(1, first):
                gone = {key for key, at in self.erased if at >= n}
                self._merge(held, day(n), [row for row in self.days[n - 1] if row[0] not in gone])
            for key, (attrs, begin) in model.open.items():
                if key in held.open:
                    model.open[key] = (attrs[:1] + held.open[key][0][1:], begin)
        for n in range(first, self.last + 1):
            gone = {key for key, at in self.erased if at >= n}
            self._merge(model, day(n), [row for row in self.days[n - 1] if row[0] not in gone])
        self.rows = model.rows()

    def add_day(self, rows: list[tuple]) -> None:
        self.days.append(list(rows))
        model = self._model()
        self._state(model, lambda r: r[-1] == OPEN)
        self._merge(model, day(self.last), rows)
        self.rows = model.rows()


class ValidityReference(Reference):
    """The table of an upsert spec with `source.updated_at` (ts untracked): rows (id, name, score,
    ts, valid_from, valid_to, begin, end). A day's rows change one minute apart, in their order
    (test_model's `changed_at`), so its days are kept with their times. A fix joins equal
    consecutive versions into one valid from the first one's valid_from until the last one's
    valid_to (an update in place, as a merge makes it). A rerun takes ts from the open rows the run
    of the date before it wrote (the table holds only the latest)."""

    def __init__(self, end_style: str, base: list[tuple], days: list[list[tuple]]):
        super().__init__(end_style, timed(0, base), [timed(n, rows) for n, rows in enumerate(days, start=1)])

    def _model(self, base: list[tuple] = ()) -> ValidityModel:
        return ValidityModel(self.end_style, list(base))

    def _merge(self, model: ZipperModel, ds: dt.date, rows: list[tuple]) -> None:
        model.merge_versions(ds, [(row, "upsert") for row in rows], deletes=False)

    def _in_time(self, row: tuple) -> tuple:
        """Versions that lived within a day share their begin with the next: valid_from orders them."""
        return (row[-2], row[4])

    def _compared(self, row: tuple) -> tuple:
        return row[1:3]  # name and score: ts is not tracked

    def _joined(self, first: tuple, last: tuple) -> tuple:
        """The last one's values and valid_to, the first one's valid_from and begin."""
        return (*last[:4], first[4], last[5], first[-2], last[-1])

    def _state(self, model: ZipperModel, valid) -> None:
        for r in self.rows:
            if valid(r):
                model.versions[r[:1]] = [r[1:4], r[-2], r[4], False]
            else:
                model.ended.append((r[:1], r[1:4], r[-2], r[-1], r[4], r[5], False))

    def rerun(self, first: int) -> None:
        """Reopen what was valid on first - 1 with ts as the run of first - 1 left it (the latest of
        the key's rows up to then, erased rows left out), then merge first.. again."""
        held = self._model([row for row in self.base if row[0] not in {key for key, _ in self.erased}])
        for n in range(1, first):
            gone = {key for key, at in self.erased if at >= n}
            self._merge(held, day(n), [row for row in self.days[n - 1] if row[0] not in gone])
        model = self._model()
        before, ended = day(first - 1).isoformat(), model.closed_end(day(first))

        def valid(r):
            return r[-2] <= before and (r[-1] > before if self.end_style == "exclusive" else r[-1] >= before)

        self._state(model, valid)
        model.ended = [v for v in model.ended if v[3] < ended]
        for key, version in model.versions.items():
            if key in held.versions:
                version[0] = version[0][:2] + held.versions[key][0][2:]
        for n in range(first, self.last + 1):
            gone = {key for key, at in self.erased if at >= n}
            self._merge(model, day(n), [row for row in self.days[n - 1] if row[0] not in gone])
        self.rows = model.rows()

    def add_day(self, rows: list[tuple]) -> None:
        super().add_day(timed(self.last + 1, rows))


def timed(n: int, rows: list[tuple]) -> list[tuple]:
    """Day `n`'s rows with their ts: one minute apart in their order (the base's at midnight)."""
    return [row + (changed_at(day(n), 0 if n == 0 else seq),) for seq, row in enumerate(rows, start=1)]


def where_name(name) -> str:
    return "name IS NULL" if name is None else f"name = '{name}'"


def scenarios_of_corrections(test):
    """The generated scenarios and the explicit ones every option runs."""
    test = example(
        scenario=(  # a fix that joins a key's two versions, a base key erased and a version deleted, then a
            # rerun whose restore is before both
            "exclusive",
            [(1, "x", 0), (2, "y", 0)],
            [[(1, "x", 5)], [(2, "x", 5)]],
            [("set", "x", 5), ("erase", 1), ("delete", "y"), ("rerun", 2), ("day", [(1, "y", 5)])],
        )
    )(test)
    test = example(
        scenario=(  # a fix that merges versions, an erasure, then a rerun over both
            "exclusive",
            [(1, "x", 5), (2, "y", 0)],
            [[(1, "y", 5)], [(1, "x", 5), (3, "x", 0)], [(2, "", 5)]],
            [("set", "y", 5), ("erase", 3), ("rerun", 1), ("day", [(3, "x", 0), (1, None, None)])],
        )
    )(test)
    return given(scenario=correction_scenarios())(test)


@pytest.mark.slow
@pytest.mark.parametrize("option", ["plain", "ignore_null_updates"])
@CORRECTION_SETTINGS
@scenarios_of_corrections
def test_corrections_reruns_and_later_days_match_the_reference(spark, tmp_path_factory, scenario, option):
    run_corrections(spark, tmp_path_factory, scenario, option)


def run_corrections(spark, tmp_path_factory, scenario, option: str) -> None:
    """`ignore_null_updates`: a later day's NULL keeps the value a fix set, and a rerun fills from
    the versions it reopens, as the reference does. `tombstones`: each day is a snapshot whose
    missing keys get a tombstone (`hard_deletes: new_record`); fixes, deletes and erasures reach
    tombstones too, a fix never joins one to a live version, and a rerun reopens them.
    `untracked`: score is updated in place, and a rerun takes it from the inputs before its first
    date. `updated_at`: the validity columns follow a fix that joins versions; a rerun takes ts from the
    open rows the run before its first date wrote."""
    end_style, base, days, operations = scenario
    fills, tombstones, untracked, validity = (
        option == name for name in ("ignore_null_updates", "tombstones", "untracked", "updated_at")
    )
    source = {"ignore_null_updates": True} if fills else None
    if tombstones:
        source = {"mode": "snapshot", "hard_deletes": "new_record"}
    if validity:
        ref = ValidityReference(end_style, base, days)
        base, days = ref.base, ref.days
    else:
        ref = Reference(end_style, base, days, ignore_nulls=fills, tombstones=tombstones, untracked=untracked)
    t = TableFixture(
        tmp_path_factory.mktemp("c"),
        f"correct_{os.getpid()}_{next(_tables)}",
        keys=SINGLE["keys"],
        schema=(UPDATED if validity else SINGLE)["schema"],
        end_style=end_style,
        source={"updated_at": "ts"} if validity else source,
        **({"track_columns": ["name", "score"]} if validity else {"track_columns": ["name"]} if untracked else {}),
    )
    t.write_base(spark, base)
    for n, rows in enumerate(days, start=1):
        t.write_increment(spark, day(n), rows)
    init_table(spark, t.spec)
    replay.rerun(spark, t.spec, day(1), day(len(days)))
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
            ref.add_day(operation[1])
            t.write_increment(spark, day(ref.last), ref.days[-1])
            merge.merge_date(spark, t.spec, day(ref.last))
        assert table_rows(spark, t.table) == sorted(ref.rows, key=_order), operation
    assert check.run_checks(spark, t.spec)["ok"]


def _order(row: tuple):
    return tuple("" if v is None else str(v) for v in row)
