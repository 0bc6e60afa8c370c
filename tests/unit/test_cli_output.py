"""Where the CLI writes a CSV or JSON --out: the file written whole or not at all, with the
folders a new one needs made, and nothing of them left when the write fails."""

from __future__ import annotations

import pytest

from zipper.cli import output


def test_a_new_out_gets_its_folders_and_a_failed_write_leaves_none_of_them(tmp_path):
    out = tmp_path / "a" / "b" / "slice.csv"
    with pytest.raises(RuntimeError, match="a file of the table cannot be read"):
        with output._target(str(out), "dw.dim") as handle:
            handle.write("id\n")
            raise RuntimeError("a file of the table cannot be read")
    assert list(tmp_path.iterdir()) == []

    with output._target(f"file:{out}", "dw.dim") as handle:  # a file: URI is its local path
        handle.write("id\n1\n")
    assert out.read_text() == "id\n1\n" and sorted(p.name for p in out.parent.iterdir()) == ["slice.csv"]
