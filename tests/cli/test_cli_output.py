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


def test_a_descriptor_of_the_process_is_written_through_not_replaced(tmp_path):
    """`--out /dev/stdout >> log` replaced the log: /dev/stdout is a link to the file the shell
    opened, and the slice was renamed onto that file."""
    log = tmp_path / "log.csv"
    log.write_text("earlier\n")
    with open(log, "a") as appended:
        for out in (f"/dev/fd/{appended.fileno()}", f"/proc/self/fd/{appended.fileno()}"):
            with output._target(out, "dw.dim") as handle:
                handle.write("id\n1\n")
    assert log.read_text() == "earlier\nid\n1\nid\n1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]
    link = tmp_path / "out-link"
    link.symlink_to("/dev/stdout")
    assert output._own_descriptor(str(link)) == 1 and output._own_descriptor("/dev/stderr") == 2
    assert output._own_descriptor(str(log)) is None and output._own_descriptor("/proc/1/fd/1") is None


def test_a_fifo_is_written_as_a_stream(tmp_path):
    import os
    import threading

    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with output._target(str(fifo), "dw.dim") as handle:
        handle.write("id\n1\n")
    reader.join(timeout=60)
    assert received == ["id\n1\n"] and fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["rows.fifo"]


def test_null_is_apart_from_any_text_in_the_table():
    assert [output._cell(v) for v in (None, "NULL", "\\N", "")] == ["\\N", "NULL", "\\\\N", ""]
    assert output._cell("José 中", "ascii") == "Jos\\xe9 \\u4e2d"  # a stdout that cannot show them: escapes


def test_rows_stdout_cannot_encode_fail_before_anything_is_written(monkeypatch):
    """With PYTHONIOENCODING=ascii a slice failed at its first non-ASCII value, half-way through."""
    import io

    from zipper.core.errors import InputError

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", newline="")
    monkeypatch.setattr("sys.stdout", stdout)
    output.write_text_rows(["id", "name"], [(1, "ann")], "csv", None, "dw.dim")
    assert stdout.buffer.getvalue() == b"id,name\n1,ann\n"
    for fmt in ("csv", "json"):
        with pytest.raises(
            InputError,
            match=r"^dw.dim: stdout's encoding \(ascii\) cannot write '\\xe9' of column"
            r" name; nothing was written: set PYTHONIOENCODING=utf-8",
        ):
            output.write_text_rows(["id", "name"], [(1, "ann"), (2, "José")], fmt, None, "dw.dim")
    assert stdout.buffer.getvalue() == b"id,name\n1,ann\n"
