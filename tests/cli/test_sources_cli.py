"""A landing-zone table through the `zipper` command: keys from _metadata.json, a bad change
file refused with one line, the table read back unchanged with a plain Hive session."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper, zipper_in_one_jvm

pytestmark = pytest.mark.subprocess
OPEN = "9999-12-31"
SCHEMA = pa.schema([("__rowMarker__", pa.int32()), ("EmployeeID", pa.string()), ("EmployeeLocation", pa.string())])


def write(folder, n, rows):
    pq.write_table(
        pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA), folder / f"{n:020d}.parquet"
    )


def test_landing_zone_merge_and_a_refused_change_file(tmp_path):
    folder = tmp_path / "landing" / "Employees"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["EmployeeID"]}))
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "emp.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "emp",
                "table": "dw.emp",
                "start_date": day(1),
                "source": {"mode": "landing_zone", "path": str(folder)},
            }
        )
    )
    write(folder, 1, [(0, "E0001", "Redmond"), (0, "E0002", "Redmond"), (1, "E0001", "Bellevue")])
    first = probe(tmp_path, "dw.emp", "merge", "emp", "--ds", day(1))
    assert first["exit"] == 0, first["stderr"]
    assert first["stdout"].startswith(
        "dw.emp 2024-01-01: table created without a base; then 2 new, 0 changed, 0 re-sent unchanged, 0 deleted, 0 closed;"
    )
    assert "1 landing-zone file, 3 changes" in first["stdout"]
    assert first["after"]["rows"] == [["E0001", "Bellevue", day(1), OPEN], ["E0002", "Redmond", day(1), OPEN]]
    history = zipper(tmp_path, "history", "emp", "--key", "EmployeeID=E0001", "--format", "csv")
    assert history.returncode == 0, history.stderr  # keys from _metadata.json, known once Spark read it
    assert history.stdout.splitlines()[1:] == [f"E0001,Bellevue,{day(1)},{OPEN}"]

    write(folder, 2, [(2, "E0002", None), (7, "E0001", "Seattle")])
    refused = probe(tmp_path, "dw.emp", "merge", "emp", "--ds", day(2))
    assert refused["exit"] == 1
    lines = refused["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zipper: error: dw.emp 2024-01-02: landing zone ")
    assert (
        "__rowMarker__ values other than 0 insert, 1 update, 2 delete, 4 upsert: 7 in 00000000000000000002.parquet row 2"
        in lines[0]
    )
    assert refused["after"] == refused["before"] == first["after"]


def test_the_change_volume_guard_refuses_a_half_loaded_snapshot_in_one_line_until_accepted(tmp_path):
    rows = [(k, f"user{k}", "Oslo") for k in range(1, 201)]
    write_parquet(tmp_path / "data" / "base", rows)
    moved = [(k, name, "Rome" if k % 40 == 0 else city) for k, name, city in rows]  # an ordinary day: 5 keys
    write_parquet(tmp_path / "data" / "incr" / f"ds={day(1)}", moved)
    write_parquet(tmp_path / "data" / "incr" / f"ds={day(2)}", moved[:80])  # the extract stopped at key 80
    source = {"mode": "snapshot", "format": "parquet", "path": str(tmp_path / "data" / "incr" / "ds={{ ds }}")}
    make_spec(tmp_path, "snap", source=source, guard={"min_days": 1})  # one committed day is its usual
    assert zipper_in_one_jvm(tmp_path, ["merge", "snap", "--ds", day(1)]) == [0]

    refused = probe(tmp_path, "dw.snap", "merge", "snap", "--ds", day(2))
    assert refused["exit"] == 1
    lines = refused["stderr"].strip().splitlines()
    assert lines == [
        "zipper: error: dw.snap 2024-01-02: change-volume guard: the day closes, deletes or updates 120 of 200 open"
        " rows (60%; limit 30%), 24.0x the median of its last 1 committed days (5; limit 10x); nothing was"
        " published. If the change is real, accept it: zipper merge snap --ds 2024-01-02 --accept-large-change (in"
        " Airflow, then clear the failed task: the date is committed)"
    ]
    assert refused["after"] == refused["before"]

    accepted = probe(tmp_path, "dw.snap", "merge", "snap", "--ds", day(2), "--accept-large-change")
    assert accepted["exit"] == 0, accepted["stderr"]
    assert "120 deleted" in accepted["stdout"]
    assert len([r for r in accepted["after"]["rows"] if r[-1] == OPEN]) == 80
