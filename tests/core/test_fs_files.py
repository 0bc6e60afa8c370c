"""The file operations of `core.fs` on the local disk, through pyarrow: no Spark session."""

from __future__ import annotations

import bz2
import gzip
import zlib

import pytest

from zipper.core import fs


def test_paths_are_spelled_as_hadoop_and_the_metastore_spell_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fs.qualify("a b/c") == f"file:{tmp_path}/a b/c"
    assert fs.qualify("file:///x//y/") == "file:/x/y"
    assert fs.location_uri("/a b/50%/é#") == "file:/a%20b/50%25/é%23"


def test_file_heads_are_decompressed_as_their_names_say(tmp_path):
    text = b"id,name\n1,ann\n" * 1000
    for name, data in [
        ("a.csv", text),
        ("a.csv.gz", gzip.compress(text)),
        ("a.csv.bz2", bz2.compress(text)),
        ("a.csv.deflate", zlib.compress(text)),
    ]:
        (tmp_path / name).write_bytes(data)
        assert fs.FileHeads().read(str(tmp_path / name), 20) == text[:20], name
        assert fs.FileHeads().read(f"file:{tmp_path}/{name}", 1 << 20) == text, name
    (tmp_path / "a.csv.snappy").write_bytes(b"\0\0")
    with pytest.raises(OSError, match="snappy"):
        fs.FileHeads().read(str(tmp_path / "a.csv.snappy"), 10)


def test_checksum_files_are_neither_listed_nor_counted(tmp_path):
    (tmp_path / "part-0").write_bytes(b"x" * 5)
    (tmp_path / ".part-0.crc").write_bytes(b"c" * 3)
    assert [fs.name_of(f.path) for f in fs.list_files(str(tmp_path))] == ["part-0"]
    assert fs.glob(f"{tmp_path}/*") == [f"file:{tmp_path}/part-0"]
    assert fs.du(str(tmp_path)) == 5


def test_a_copy_makes_its_folder_and_never_overwrites(tmp_path):
    (tmp_path / "a").write_text("one")
    fs.copy(str(tmp_path / "a"), str(tmp_path / "kept" / "a"))
    assert (tmp_path / "kept" / "a").read_text() == "one"
    with pytest.raises(OSError, match="already exists"):
        fs.copy(str(tmp_path / "a"), str(tmp_path / "kept" / "a"))
    assert fs.delete(str(tmp_path / "kept")) and not fs.delete(str(tmp_path / "kept"))
