"""The pure-Python listing of local inputs (core.localfs, inputs.local_input) gives exactly what
Hadoop's FileSystem gives through Spark (core.fs, inputs.sources): the same matches, the same
unfinished writes and the same FileInfo list (path as Hadoop spells it, size, time in ms), so the
same fingerprint. Real files, the suite's real SparkSession."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import TableFixture, day
from zipper.core import fs, localfs
from zipper.inputs import local_input, sources


def write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def layout(tmp_path) -> Path:
    """Nested folders, hidden files and folders, a job's marker and a partition-like folder,
    names with spaces and other characters a URI would escape."""
    root = tmp_path / "in put"
    day1 = root / "ds=2024-01-01"
    write(day1 / "part-0000.parquet", "a" * 10)
    write(day1 / "_SUCCESS", "")
    write(day1 / ".part-0000.parquet.crc", "crc")
    write(day1 / "sub dir" / "part 1 %20 #.parquet", "b" * 7)
    write(day1 / "sub dir" / "deeper" / "ünïcode ñame.parquet", "c")
    write(day1 / "_hidden" / "not-read.parquet", "d")
    write(day1 / ".hidden" / "not-read.parquet", "e")
    write(day1 / "_a=1" / "read.parquet", "f" * 3)
    (day1 / "empty folder").mkdir()
    write(root / "ds=2024-01-02" / "_temporary" / "0" / "task.parquet", "g")  # a job still writing
    write(root / "ds=2024-01-02" / "done.parquet", "h")
    write(root / "20240103_a.csv", "id\n1\n")
    write(root / "20240103_b.csv", "id\n2\n")
    write(root / "20240104_a.csv", "id\n3\n")
    write(root / ".20240103_hidden.csv", "id\n4\n")
    write(root / "other" / "x.orc", "i")
    (root / "ds=2024-01-05").mkdir()  # an empty increment
    os.utime(day1 / "part-0000.parquet", ns=(1_700_000_000_123_456_789, 1_700_000_000_987_654_321))
    return root


def patterns(root: Path) -> list[str]:
    r = str(root)
    return [
        r,
        f"{r}/",
        f"file:{r}",
        f"file://{r}",
        f"{r}/ds=2024-01-01",
        f"{r}/ds=2024-01-01/sub dir/part 1 %20 #.parquet",
        f"{r}/ds=2024-01-02",
        f"{r}/ds=2024-01-05",
        f"{r}/ds=*",
        f"{r}/ds=2024-01-0[1-2]",
        f"{r}/ds=2024-01-0[!1]",
        f"{r}/*",
        f"{r}/2024010?_*.csv",
        f"{r}/20240103_*.csv",
        f"{r}/{{other,ds=2024-01-01}}",
        f"file:{r}/*/*.parquet",
        f"{r}/ds=2024-01-01/*",
        f"{r}/nothing-*",
        f"{r}/nothing",
    ]


def test_the_listing_is_hadoops_on_every_layout(spark, layout):
    for pattern in patterns(layout):
        matches = fs.glob(pattern)
        assert localfs.glob(pattern) == sorted(matches), pattern
        if not matches:
            continue
        assert localfs.unfinished_writes(matches) == fs.unfinished_writes(matches), pattern
        assert localfs.list_data_files(matches) == fs.list_data_files(matches), pattern
    some = fs.list_data_files(fs.glob(str(layout)))
    assert any(" " in f.path and f.path.startswith("file:/") for f in some)  # spelled as Hadoop spells it
    assert "file:" + str(layout / "ds=2024-01-01" / "part-0000.parquet") in {f.path for f in some}
    assert [f.modified_ms for f in some if f.path.endswith("part-0000.parquet")] == [1_700_000_000_987]


def test_a_days_fingerprint_is_the_one_spark_gives(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    write(t.increment_dir(day(1)) / "part-0.parquet", "a")
    write(t.increment_dir(day(1)) / "nested" / "part-1.parquet", "bb")
    write(t.increment_dir(day(1)) / "_SUCCESS", "")
    located = sources.locate(spark, t.spec, t.spec.source, day(1), "increment")
    assert local_input.increment_fingerprint(t.spec, day(1)) == located.fingerprint


def test_what_it_cannot_tell_as_hadoop_would_is_unknown(spark, tmp_path, unique_name):
    root = tmp_path / "in"
    write(root / "target" / "a.parquet")
    (root / "link").symlink_to(root / "target")
    with pytest.raises(localfs.Unknown):
        localfs.list_data_files([str(root)])  # a link inside
    with pytest.raises(localfs.Unknown):
        localfs.glob(str(root / "link"))
    with pytest.raises(localfs.Unknown):
        localfs.glob("hdfs://nn/data/ds=2024-01-01")
    with pytest.raises(localfs.Unknown):
        localfs.glob(str(root / "a\\*b"))
    # sources the listing does not read: a landing zone, a file filter, a Hive table
    filtered = TableFixture(tmp_path / "f", unique_name, source={"options": {"pathGlobFilter": "*.parquet"}})
    landing = TableFixture(tmp_path / "l", unique_name, base=False, source={"mode": "landing_zone"}, keys=())
    for t in (filtered, landing):
        assert not local_input.supported(t.spec)
        with pytest.raises(localfs.Unknown):
            local_input.increment_fingerprint(t.spec, day(1))
    # an input the merge would refuse: not there, or still being written
    t = TableFixture(tmp_path / "t", unique_name)
    with pytest.raises(localfs.Unknown):
        local_input.increment_fingerprint(t.spec, day(1))
    write(t.increment_dir(day(1)) / "_temporary" / "0" / "a.parquet")
    with pytest.raises(localfs.Unknown):
        local_input.increment_fingerprint(t.spec, day(1))
