"""`zipper merge --dry-run` end to end: the date written and audited, its counts, the change-volume
guard's verdict and a sample of keys whose history would differ (before and after) printed and
reported, and nothing published: the table's rows, partitions and commits as they were, no
directory left under the table."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper, zipper_in_one_jvm
from zipper.core.reports import REPORT_PREFIX

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("dryrun")
    # a guard that refuses day 2 (2 of 3 open rows, 2x the median of day 1's 1): shown, not failed
    make_spec(root, guard={"max_fraction": 0.5, "max_median_multiple": 1.5, "min_rows": 0, "min_days": 1})
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    write_parquet(
        root / "data" / "incr" / f"ds={day(2)}", [(1, "ann", "Bergen"), (2, "bob", "Lyon"), (3, "cid", "Nice")]
    )
    assert zipper_in_one_jvm(root, ["init", "dim"], ["merge", "dim", "--ds", day(1)]) == [0, 0]
    return root


def _files(root) -> list[str]:
    """Every path under the table's database folder."""
    found = []
    for folder, dirs, files in os.walk(root / "warehouse"):
        dirs[:] = [d for d in dirs if d not in ("metastore_db", "metastore", "logs")]
        found += [os.path.relpath(os.path.join(folder, name), root) for name in dirs + files]
    return sorted(p for p in found if ".db" in p)


def test_a_dry_run_merge_shows_the_day_and_publishes_nothing(workspace):
    status = zipper(workspace, "status", "dim").stdout
    files = _files(workspace)
    assert any("zipper_slot=open" in p for p in files), files  # the open partition, as the merge wrote it

    seen = probe(workspace, "dw.dim", "merge", "dim", "--ds", day(2), "--dry-run", "--json-report")
    assert seen["exit"] == 0, seen["stderr"]
    out = seen["stdout"]
    assert f"dw.dim {day(2)}: dry run, would commit: 0 new, 2 changed, 1 re-sent unchanged, 2 closed;" in out
    assert (
        f"dw.dim {day(2)}: dry run: nothing was published; change-volume guard: would refuse: the day closes,"
        " deletes or updates 2 of 3 open rows (67%; limit 50%), 2.0x the median"
    ) in out
    lines = out.splitlines()
    at = lines.index("  key id=2")
    assert lines[at + 1 : at + 6] == [
        f"    before id=2, name=bob, city=Rome, begin_dt={day(0)}, end_dt={day(1)}",
        f"    before id=2, name=bob, city=Paris, begin_dt={day(1)}, end_dt=9999-12-31",
        f"    after  id=2, name=bob, city=Rome, begin_dt={day(0)}, end_dt={day(1)}",
        f"    after  id=2, name=bob, city=Paris, begin_dt={day(1)}, end_dt={day(2)}",
        f"    after  id=2, name=bob, city=Lyon, begin_dt={day(2)}, end_dt=9999-12-31",
    ]
    assert "  key id=1" in lines and "  key id=3" not in lines  # re-sent unchanged: its history does not differ
    report = json.loads(next(line for line in lines if line.startswith(REPORT_PREFIX))[len(REPORT_PREFIX) :])
    counts = report["counts"]
    assert counts["dry_run"] is True and counts["guard"].startswith("would refuse: ")
    assert [s["key"] for s in counts["sample"]] == [{"id": "1"}, {"id": "2"}]

    assert seen["after"] == seen["before"]  # rows and partitions
    assert zipper(workspace, "status", "dim").stdout == status  # commits and the open partition's params
    assert _files(workspace) == files  # no run directory left behind


def test_a_dry_run_rerun_shows_each_date_and_the_keys_it_would_change_and_publishes_nothing(workspace):
    """`zipper rerun --dry-run`: the rerun on a copy of the table's metastore entry, its dates' counts,
    the sample, and the table, its commits and its files as they were, no copy left in the metastore."""
    increment = workspace / "data" / "incr" / f"ds={day(1)}"
    status = zipper(workspace, "status", "dim").stdout
    files = _files(workspace)
    write_parquet(increment, [(2, "bob", "Milan"), (3, "cid", "Nice")])  # bob moved elsewhere that day
    try:
        seen = probe(workspace, "dw.dim", "rerun", "dim", "--from", day(1), "--dry-run", "--json-report")
    finally:
        write_parquet(increment, [(2, "bob", "Paris"), (3, "cid", "Nice")])
    assert seen["exit"] == 0, seen["stderr"]
    out = seen["stdout"]
    assert "dw.dim: dry run: replayed 2024-01-01 (1 date); table at 2024-01-01;" in out, out
    assert f"dw.dim {day(1)}: dry run: nothing was published; change-volume guard: passes" in out
    lines = out.splitlines()
    at = lines.index("  key id=2")
    assert lines[at + 1 : at + 5] == [
        f"    before id=2, name=bob, city=Rome, begin_dt={day(0)}, end_dt={day(1)}",
        f"    before id=2, name=bob, city=Paris, begin_dt={day(1)}, end_dt=9999-12-31",
        f"    after  id=2, name=bob, city=Rome, begin_dt={day(0)}, end_dt={day(1)}",
        f"    after  id=2, name=bob, city=Milan, begin_dt={day(1)}, end_dt=9999-12-31",
    ]
    assert "  key id=1" not in lines and "  key id=3" not in lines
    report = json.loads(next(line for line in lines if line.startswith(REPORT_PREFIX))[len(REPORT_PREFIX) :])
    assert report["counts"]["dry_run"] is True and [s["key"] for s in report["counts"]["sample"]] == [{"id": "2"}]
    assert report["replayed"][0]["counts"]["changed"] == 1 and report["replayed"][0]["counts"]["dry_run"] is True

    assert seen["after"] == seen["before"]
    assert zipper(workspace, "status", "dim").stdout == status
    assert _files(workspace) == files
