"""`zipper merge --dry-run` end to end: the date written and audited, its counts and a sample of
keys whose history would differ (before and after) printed and reported, and nothing published:
the table's rows, partitions and commits as they were, no directory left under the table."""

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
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    assert zipper_in_one_jvm(root, ["init", "dim"]) == [0]
    return root


def _files(root) -> list[str]:
    """Every path under the warehouse but the metastore's own and Spark's logs."""
    found = []
    for folder, dirs, files in os.walk(root / "warehouse"):
        dirs[:] = [d for d in dirs if d not in ("metastore_db",) and not d.startswith((".", "spark"))]
        found += [os.path.relpath(os.path.join(folder, name), root) for name in dirs + files]
    return sorted(p for p in found if ".db" in p)


def test_a_dry_run_merge_shows_the_day_and_publishes_nothing(workspace):
    status = zipper(workspace, "status", "dim").stdout
    files = _files(workspace)
    assert any("zipper_slot=open" in p for p in files), files  # the open partition, as init wrote it

    seen = probe(workspace, "dw.dim", "merge", "dim", "--ds", day(1), "--dry-run", "--json-report")
    assert seen["exit"] == 0, seen["stderr"]
    out = seen["stdout"]
    assert f"dw.dim {day(1)}: dry run, would commit: 1 new, 1 changed, 0 re-sent unchanged, 1 closed;" in out
    assert f"dw.dim {day(1)}: dry run: nothing was published; change-volume guard: passes" in out
    lines = out.splitlines()
    at = lines.index("  key id=2")
    assert lines[at + 1].startswith("    before id=2, name=bob, city=Rome, begin_dt=2023-12-31, end_dt=9999-12-31")
    assert lines[at + 2].startswith("    after  id=2, name=bob, city=Rome, begin_dt=2023-12-31, end_dt=2024-01-01")
    assert lines[at + 3].startswith("    after  id=2, name=bob, city=Paris, begin_dt=2024-01-01, end_dt=9999-12-31")
    assert lines[lines.index("  key id=3") + 1] == "    before (none)"
    assert "  key id=1" not in lines  # re-sent nowhere: its history does not differ
    report = json.loads(next(line for line in lines if line.startswith(REPORT_PREFIX))[len(REPORT_PREFIX) :])
    assert report["counts"]["dry_run"] is True and [s["key"] for s in report["counts"]["sample"]] == [
        {"id": "2"},
        {"id": "3"},
    ]

    assert seen["after"] == seen["before"]  # rows and partitions
    assert zipper(workspace, "status", "dim").stdout == status  # commits and the open partition's params
    assert _files(workspace) == files  # no run directory left behind
