"""`zipper rerun` end to end in subprocesses: a SIGKILL between two replayed dates leaves a
consistent table at the last replayed date, and the same command resumes and converges."""

from __future__ import annotations

import datetime as dt
import re
import signal

import pytest

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper, zipper_in_one_jvm
from tests.cli.test_cli import assert_one_line_error
from tests.jobs.test_model import ZipperModel

pytestmark = pytest.mark.subprocess
BASE = [(1, "n0", None), (2, "n0", None)]


def increment(k: int, renamed: int = 1) -> list[tuple]:
    """Day k renames one id and adds id 10 + k."""
    return [(renamed, f"n{k}", None), (10 + k, "new", None)]


def expected(days: dict[int, list[tuple]]) -> list[list[str]]:
    model = ZipperModel("exclusive", BASE, 1)
    for k in sorted(days):
        model.merge(dt.date.fromisoformat(day(k)), days[k])
    return sorted(["" if v is None else str(v) for v in row] for row in model.rows())


def test_rerun_killed_mid_replay_resumes_with_the_same_command(tmp_path):
    make_spec(tmp_path)
    write_parquet(tmp_path / "data" / "base", BASE)
    days = {k: increment(k) for k in range(1, 5)}
    for k, rows in days.items():
        write_parquet(tmp_path / "data" / "incr" / f"ds={day(k)}", rows)

    result = zipper(tmp_path, "rerun", "dim", "--from", "2024-13-01")
    assert_one_line_error(result, "dw.dim", "--from '2024-13-01' is not a date")

    created = zipper(tmp_path, "merge", "dim", "--ds", day(1))  # creates the table and merges day 1
    assert created.returncode == 0, created.stderr

    days[1] = increment(1, renamed=2)  # day 1 re-delivered with other content
    write_parquet(tmp_path / "data" / "incr" / f"ds={day(1)}", days[1])
    killed = zipper(tmp_path, "rerun", "dim", "--from", day(1), "--to", day(4), ZIPPER_KILL_AT="after_replayed_date")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    lines = killed.stdout.splitlines()
    assert lines[0].startswith("dw.dim: restored to 2023-12-31: 2 open rows, 1 history partitions")
    assert lines[1].startswith("dw.dim 2024-01-01: 1 new, 1 changed") and len(lines) == 2

    resumed = probe(tmp_path, "dw.dim", "rerun", "dim", "--from", day(1), "--to", day(4))
    assert resumed["before"]["rows"] == expected({1: days[1]}), "killed after day 1: the table as of day 1"
    assert resumed["exit"] == 0
    out = resumed["stdout"].splitlines()
    assert out[0] == "dw.dim: resuming the interrupted replay of 2024-01-01..2024-01-04 (table at 2024-01-01)"
    assert [line.split(":")[0] for line in out[1:4]] == [f"dw.dim {day(k)}" for k in (2, 3, 4)]
    assert re.fullmatch(
        r"dw\.dim: replayed 2024-01-02\.\.2024-01-04 \(3 dates\); table at 2024-01-04; [\d.]+ s", out[4]
    )
    assert resumed["after"]["rows"] == expected(days)
    assert resumed["after"]["partitions"] == sorted([day(k) for k in range(1, 5)] + ["9999-12-31"])


def test_a_rerun_refuses_a_csv_value_that_does_not_parse_naming_its_column_and_row(tmp_path):
    make_spec(
        tmp_path, source={"mode": "upsert", "format": "csv", "path": str(tmp_path / "data" / "incr" / "ds={{ ds }}")}
    )
    write_parquet(tmp_path / "data" / "base", BASE)
    for k in (1, 2):
        folder = tmp_path / "data" / "incr" / f"ds={day(k)}"
        folder.mkdir(parents=True)
        (folder / "part-0.csv").write_text(f"id,name,city\n1,n{k},\n")
    # the first merge creates the table; both in one driver
    assert zipper_in_one_jvm(tmp_path, *(["merge", "dim", "--ds", day(k)] for k in (1, 2))) == [0, 0]

    # day 2 re-delivered with a bad key; the rerun from day 1 reads both days before it changes anything
    (tmp_path / "data" / "incr" / f"ds={day(2)}" / "part-0.csv").write_text("id,name,city\n1,n9,\nseven,n7,Oslo\n")
    refused = probe(tmp_path, "dw.dim", "rerun", "dim", "--from", day(1))
    assert refused["exit"] == 1
    lines = refused["stderr"].strip().splitlines()
    assert lines == [
        f"zipper: error: dw.dim {day(2)}: increment {tmp_path}/data/incr/ds={day(2)}: file part-0.csv:"
        " column 'id' (bigint) cannot hold 'seven' (row with id=seven); nothing was changed"
    ], refused["stderr"][-3000:]
    assert refused["after"] == refused["before"]

    # a record with a field too many: Spark's own error, named by file and by the file's date
    (tmp_path / "data" / "incr" / f"ds={day(2)}" / "part-0.csv").write_text("id,name,city\n1,n9,\n7,n7,Oslo,extra\n")
    refused = probe(tmp_path, "dw.dim", "rerun", "dim", "--from", day(1))
    lines = refused["stderr"].strip().splitlines()
    assert refused["exit"] == 1 and len(lines) == 1, refused["stderr"][-3000:]
    assert lines[0].startswith(f"zipper: error: dw.dim {day(2)}: cannot read file "), lines
    assert f"ds={day(2)}/part-0.csv" in lines[0] and "Malformed CSV record" in lines[0] and "SQLSTATE" not in lines[0]
    assert lines[0].endswith("nothing was changed") and refused["after"] == refused["before"]


def test_a_csv_header_that_repeats_a_column_is_one_line_naming_the_file_and_the_column(tmp_path):
    """Spark renames repeated header names: a merge failed on a header that "does not conform to
    the schema", a rerun on `columns not in the table ['name1', 'name2']`, naming neither."""
    incr = tmp_path / "data" / "incr"
    make_spec(tmp_path, source={"mode": "upsert", "format": "csv", "path": str(incr / "ds={{ ds }}")})
    write_parquet(tmp_path / "data" / "base", BASE)
    for k in (1, 2, 3):
        (incr / f"ds={day(k)}").mkdir(parents=True)
        (incr / f"ds={day(k)}" / "part-0.csv").write_text(f"id,name,city\n1,n{k},\n")
    assert zipper_in_one_jvm(tmp_path, *(["merge", "dim", "--ds", day(k)] for k in (1, 2))) == [0, 0]

    (incr / f"ds={day(3)}" / "part-1.csv").write_text("id,name,name\n2,n3,x\n")
    refused = zipper(tmp_path, "merge", "dim", "--ds", day(3))
    assert_one_line_error(refused)
    assert refused.stderr.strip() == (
        f"zipper: error: dw.dim {day(3)}: increment {incr}/ds={day(3)}: file part-1.csv"
        " has column 'name' more than once in its header"
    )

    (incr / f"ds={day(2)}" / "part-0.csv").write_text("id,Name,name\n1,n9,x\n")  # a replayed date
    refused = probe(tmp_path, "dw.dim", "rerun", "dim", "--from", day(1))
    assert refused["exit"] == 1 and refused["after"] == refused["before"]
    assert refused["stderr"].strip().splitlines() == [
        f"zipper: error: dw.dim {day(2)}: increment {incr}/ds={day(2)}: file part-0.csv has column 'Name' more than"
        " once in its header ('Name', 'name': column names are matched in any case); nothing was changed"
    ], refused["stderr"][-3000:]
