"""A warehouse (and its data) in a folder whose name has a space: the driver's Java options carry
the warehouse path, and Spark's launcher splits them at white space outside quotes."""

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
    assert f"dw.dim {day(1)}: 1 new, 1 changed," in result.stdout
    warehouse = root / "warehouse"
    assert (warehouse / "metastore_db").is_dir() and (warehouse / "derby.log").is_file()
    assert list((warehouse / "dw.db" / "dim").rglob("*.parquet"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zipper data"]  # no `zipper%20data` beside it

    sliced = zipper(root, "slice", "dim", "--as-of", day(1))
    assert sliced.returncode == 0, sliced.stderr
    assert sorted(sliced.stdout.splitlines()[1:]) == [f"{i},{name},Rome,{day(1)},9999-12-31"
                                                      for i, name in ((1, "ann"), (2, "bob"))]
    checked = zipper(root, "check", "dim")
    assert checked.returncode == 0, checked.stdout + checked.stderr
