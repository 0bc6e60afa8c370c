"""`zipper alter` end to end: its flags refused before Spark, a key refused in one line, a rename
killed between its publish and the table's column change and completed by the next run, and a
drop that merges the versions only the dropped column made; read back with a plain session."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper, zipper_in_one_jvm
from tests.cli.test_cli import assert_one_line_error

pytestmark = pytest.mark.subprocess
OPEN = "9999-12-31"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("alter")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", "Nice")])
    assert zipper_in_one_jvm(root, ["init", "dim"], ["merge", "dim", "--ds", day(1)]) == [0, 0]
    return root


def test_flags_that_do_not_make_one_alter_are_refused_before_spark(workspace):
    for args, fragment in [
        ([], "give one of --rename-column OLD=NEW or --drop-column COLUMN"),
        (["--rename-column", "city=town", "--drop-column", "name"], "give one of"),
        (["--rename-column", "city"], "--rename-column 'city' is not OLD=NEW"),
        (["--rename-column", "city=2town"], "'2town' is not a column name"),
    ]:
        assert_one_line_error(zipper(workspace, "alter", "dim", *args), "dw.dim", fragment)


def test_a_killed_rename_is_completed_by_the_next_run_and_a_drop_merges_versions(workspace):
    result = zipper(workspace, "alter", "dim", "--drop-column", "id")
    assert_one_line_error(result, "dw.dim", day(1), "'id' is a key column", "nothing was changed")

    killed = zipper(
        workspace,
        "alter",
        "dim",
        "--rename-column",
        "city=town",
        "--reason",
        "crm",
        ZIPPER_KILL_AT="before_alter_columns",
    )
    assert killed.returncode != 0
    # the next run of the table (a no-op merge, no longer told without Spark) finishes the rename first
    seen = probe(workspace, "dw.dim", "merge", "dim", "--ds", day(1))
    assert seen["exit"] == 0, seen["stderr"]
    base, d1 = day(0), day(1)
    assert seen["after"]["rows"] == [
        ["1", "ann", "Oslo", base, OPEN],
        ["2", "bob", "Paris", d1, OPEN],
        ["2", "bob", "Rome", base, d1],
        ["3", "cid", "Nice", d1, OPEN],
    ]

    seen = probe(workspace, "dw.dim", "alter", "dim", "--drop-column", "town", "--json-report")
    assert seen["exit"] == 0, seen["stderr"]
    assert (
        "dropped column town, 1 version merged into the next in 2 partitions (4 rows before, 3 after)"
        in (seen["stdout"])
    )
    assert seen["after"]["rows"] == [["1", "ann", base, OPEN], ["2", "bob", base, OPEN], ["3", "cid", d1, OPEN]]
    assert seen["after"]["partitions_with_rows"] == {OPEN: 3}

    status = zipper(workspace, "status", "dim")
    assert status.returncode == 0, status.stderr
    alters = json.loads(status.stdout)["alters"]
    assert [(a["kind"], a["column"], a["new_name"], a["reason"]) for a in alters] == [
        ("drop", "town", "", ""),
        ("rename", "city", "town", "crm"),
    ]
