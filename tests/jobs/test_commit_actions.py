"""Each commit record says what committed its date, for the commit log (`zipper status`, the
Airflow view): a daily merge, a rerun's replay, or a rebuild."""

from __future__ import annotations

from tests.support import TableFixture, day
from zipper.jobs import merge, rebuild, replay
from zipper.table.state import read_state


def actions(spark, spec) -> dict[str, str]:
    return {ds: commit.action for ds, commit in sorted(read_state(spark, spec).commits.items())}


def test_merges_replays_and_rebuilds_are_told_apart(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    for n, city in ((1, "Paris"), (2, "Lyon"), (3, "Nice")):
        t.write_increment(spark, day(n), [(2, "bob", city)])
        merge.merge_date(spark, t.spec, day(n))
    assert actions(spark, t.spec) == {day(n).isoformat(): "merge" for n in (1, 2, 3)}

    replay.rerun(spark, t.spec, day(2))
    assert actions(spark, t.spec) == {
        day(1).isoformat(): "merge",
        day(2).isoformat(): "replay",
        day(3).isoformat(): "replay",
    }

    rebuild.rebuild(spark, t.spec)
    assert actions(spark, t.spec) == {day(n).isoformat(): "rebuild" for n in (1, 2, 3)}
