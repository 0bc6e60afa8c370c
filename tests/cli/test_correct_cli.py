"""`zipper correct` end to end: its flags, its dry run, its one-line refusals, the erasure's purge,
and the correction in `zipper status` (read over thrift, no JVM)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.cli.helpers import day, make_spec, write_parquet, zipper, zipper_in_one_jvm
from tests.cli.test_cli import assert_one_line_error

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("correct")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    assert zipper_in_one_jvm(root, ["init", "dim"], ["merge", "dim", "--ds", day(1)]) == [0, 0]
    return root


def test_flags_that_do_not_make_one_correction_are_refused_before_spark(workspace):
    for args, fragment in [
        (
            ["--where", "id = 1"],
            "give one of --erase-key (or --keys-file), --set with --where, or --delete with --where",
        ),
        (["--set", "city=Oslo"], "--set needs --where PREDICATE"),
        (["--delete", "--set", "city=x", "--where", "id = 1"], "got set and delete"),
        (["--erase-key", "id=1", "--where", "id = 1"], "--where, --from and --to do not apply"),
        (["--delete", "--where", "id = 1", "--purge"], "--purge follows an erasure"),
        (["--delete", "--where", "id = 1", "--from", "2024-02-30"], "--from '2024-02-30' is not a date"),
    ]:
        result = zipper(workspace, "correct", "dim", *args, "--reason", "test")
        assert_one_line_error(result, "dw.dim", fragment)
    result = zipper(workspace, "correct", "dim", "--delete", "--where", "id = 1")
    assert result.returncode == 2 and "--reason" in result.stderr  # argparse: a required flag


def test_a_dry_run_a_refusal_and_an_erasure_with_its_purge(workspace):
    result = zipper(workspace, "correct", "dim", "--delete", "--where", "city = 'Rome'", "--reason", "r", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == "dw.dim: dry run of the --where `city` = 'Rome': 1 version matched in 1 partition; nothing was written"
    )
    assert lines[1] == f"  end_dt={day(1)}: 1 version"
    assert "bob" in lines[2] and "Rome" in lines[2]

    result = zipper(workspace, "correct", "dim", "--delete", "--where", "town = 'Rome'", "--reason", "r")
    assert_one_line_error(result, "dw.dim", "town", "--where")

    result = zipper(
        workspace, "correct", "dim", "--erase-key", "id=2", "--reason", "erasure request 7", "--purge", "--json-report"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "correction " in out and "erased 2 versions of 1 key in 2 partitions" in out
    assert "dw.dim: purged " in out and "held the erased rows" in out
    # no file of the table holds bob any more: the superseded directories went at once
    tables = [pq.read_table(f) for f in (workspace / "warehouse" / "dw.db" / "dim").rglob("*.parquet")]
    names = [name for t in tables if "name" in t.column_names for name in t.column("name").to_pylist()]
    assert "ann" in names and "bob" not in names
    report = json.loads(next(line for line in out.splitlines() if line.startswith("zipper-report: "))[15:])
    assert report["action"] == "correct" and report["counts"]["removed"] == 2

    status = zipper(workspace, "status", "dim")
    assert status.returncode == 0, status.stderr
    [listed] = json.loads(status.stdout)["corrections"]
    assert (listed["kind"], listed["reason"], listed["counts"]["removed"]) == ("erase", "erasure request 7", 2)
    assert "bob" not in status.stdout
