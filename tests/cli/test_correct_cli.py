"""`zipper correct` end to end: its flags, its dry run, its one-line refusals, the erasure's purge,
and the correction in `zipper status` (read over thrift, no JVM)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow.parquet as pq
import pytest

from tests import support
from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper, zipper_in_one_jvm
from tests.cli.test_cli import assert_one_line_error

pytestmark = pytest.mark.subprocess
OPEN = "9999-12-31"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("correct")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    # a table with source.updated_at whose name (and ts) is untracked: day 1 and day 2 rename ann in place
    source = {"mode": "upsert", "format": "parquet", "path": str(root / "val" / "ds={{ ds }}"), "updated_at": "ts"}
    make_spec(
        root,
        "val",
        source=source,
        base={"format": "parquet", "path": str(root / "val" / "base")},
        track_columns=["city"],
    )
    for folder, rows in VALIDITY_INPUTS.items():
        support.write_parquet(root / "val" / folder, rows, VALIDITY_SCHEMA)
    commands = [["init", "dim"], ["merge", "dim", "--ds", day(1)], ["init", "val"]]
    commands += [["merge", "val", "--ds", day(n)] for n in (1, 2)]
    assert zipper_in_one_jvm(root, *commands) == [0] * len(commands)
    return root


VALIDITY_SCHEMA = "id bigint, name string, city string, ts timestamp"
VALIDITY_INPUTS = {
    "base": [(1, "ann", "Oslo", dt.datetime(2023, 12, 31, 9)), (2, "bob", "Rome", dt.datetime(2023, 12, 31, 9))],
    f"ds={day(1)}": [(1, "anna", "Oslo", dt.datetime(2024, 1, 1, 9)), (2, "bob", "Paris", dt.datetime(2024, 1, 1, 9))],
    f"ds={day(2)}": [(1, "annie", "Oslo", dt.datetime(2024, 1, 2, 9))],
}


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


def test_a_table_with_updated_at_is_corrected_and_rerun_and_its_validity_columns_are_refused(workspace):
    """Through the CLI: setting a validity column refused in one line; a value fix; a rerun of a
    re-delivered date, whose restore takes the untracked name from the open rows of the day before."""
    result = zipper(workspace, "correct", "val", "--set", "valid_from=NULL", "--where", "id = 1", "--reason", "r")
    assert_one_line_error(result, "dw.val", "valid_from", "zipper's own validity column")

    seen = probe(
        workspace, "dw.val", "correct", "val", "--set", "city=Roma", "--where", "city = 'Rome'", "--reason", "r"
    )
    assert seen["exit"] == 0, seen["stderr"]
    fixed = seen["after"]["rows"]
    assert [
        "2",
        "bob",
        "Roma",
        "2023-12-31 09:00:00",
        "2023-12-31 09:00:00",
        "2024-01-01 09:00:00",
        day(0),
        day(1),
    ] in fixed

    support.write_parquet(workspace / "val" / f"ds={day(2)}", [], VALIDITY_SCHEMA)  # re-delivered without the rename
    seen = probe(workspace, "dw.val", "rerun", "val", "--from", day(2))
    assert seen["exit"] == 0, seen["stderr"]
    assert [r for r in seen["after"]["rows"] if r[0] == "1"] == [
        ["1", "anna", "Oslo", "2024-01-01 09:00:00", "2023-12-31 09:00:00", "9999-12-31 00:00:00", day(0), OPEN]
    ]
    assert [r for r in seen["after"]["rows"] if r[0] == "2"] == [r for r in fixed if r[0] == "2"]
