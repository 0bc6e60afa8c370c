"""A warehouse (and its data) in a folder whose name has a space: the driver's Java options carry
the warehouse path, and Spark's launcher splits them at white space outside quotes. One whose name
is not ASCII, reported on a stdout that cannot write it."""

from __future__ import annotations

import pytest

from tests.cli.helpers import day, make_spec, write_parquet, zipper

pytestmark = pytest.mark.subprocess


def test_a_warehouse_path_with_a_space_merges(tmp_path):
    root = tmp_path / "zipper data"
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(1, "ann", "Rome"), (2, "bob", "Rome")])

    result = zipper(root, "merge", "dim", "--ds", day(1))

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"dw.dim {day(1)}: table created, base loaded as of 2023-12-31: 1 open row; then")
    assert "1 new, 1 changed," in result.stdout
    warehouse = root / "warehouse"
    assert (warehouse / "metastore_db").is_dir() and (warehouse / "derby.log").is_file()
    assert list((warehouse / "dw.db" / "dim").rglob("*.parquet"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zipper data"]  # no `zipper%20data` beside it

    sliced = zipper(root, "slice", "dim", "--as-of", day(1))
    assert sliced.returncode == 0, sliced.stderr
    assert sorted(sliced.stdout.splitlines()[1:]) == [
        f"{i},{name},Rome,{day(1)},9999-12-31" for i, name in ((1, "ann"), (2, "bob"))
    ]
    checked = zipper(root, "check", "dim")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_vacuum_of_a_warehouse_named_in_non_ascii_reports_to_an_ascii_stdout(tmp_path):
    """Its report names the directories removed: on a stdout that cannot write them, printing
    them failed the command after the directories had gone."""
    root = tmp_path / "lager\u00e4"
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo")])
    assert zipper(root, "init", "dim", "--ds", day(0)).returncode == 0
    versions = root / "warehouse" / "dw.db" / "dim" / "versions"
    leftover = versions / "20200101T000000.000000Z-dead00"  # a killed merge's, years ago
    (leftover / "zipper_slot=open").mkdir(parents=True)
    (leftover / "zipper_slot=open" / "part-0.parquet").write_bytes(b"PAR1")

    result = zipper(root, "vacuum", "dim", PYTHONIOENCODING="ascii")

    assert result.returncode == 0, result.stderr
    assert not leftover.exists()
    shown = str(leftover).replace("\u00e4", "\\xe4")
    assert f"dw.dim: removed {shown} (4 bytes)" in result.stdout.splitlines()
