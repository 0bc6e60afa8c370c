"""File operations through Hadoop's FileSystem, so local paths, HDFS and object stores behave alike."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from urllib.parse import unquote

from zipper import input_names
from zipper.input_names import COPYING, is_hidden  # noqa: F401 - the names' rule, as the engine uses it
from zipper.paths import local_path  # noqa: F401 - the paths' rule, as the engine uses it


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    modified_ms: int


def _hadoop_path(spark, path: str):
    jvm = spark._jvm
    return jvm.org.apache.hadoop.fs.Path(path)


def _fs(spark, path: str):
    hpath = _hadoop_path(spark, path)
    return hpath.getFileSystem(spark._jsc.hadoopConfiguration()), hpath


def qualify(spark, path: str) -> str:
    """An absolute URI (file:/..., hdfs://...) for a path."""
    fs, hpath = _fs(spark, path)
    return fs.makeQualified(hpath).toString()


def exists(spark, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath))


def mkdirs(spark, path: str) -> None:
    fs, hpath = _fs(spark, path)
    fs.mkdirs(hpath)


def delete(spark, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.delete(hpath, True))


def unfinished_writes(spark, matches: list[str]) -> list[str]:
    """What a write still under way keeps in the folders of `matches` (a matched folder, or a
    matched file's folder): a job's uncommitted output, a file being copied in
    (`input_names.unfinished_writes` decides, as for the sensor)."""
    folders = {}
    for match in matches:
        fs, hpath = _fs(spark, match)
        folder = hpath if fs.getFileStatus(hpath).isDirectory() else hpath.getParent()
        folders[folder.toString()] = (fs, folder)
    found = set()
    for name, (fs, folder) in folders.items():
        found.update(input_names.unfinished_writes(name, partial(_names_in, fs, folder)))
    return sorted(found)


def _names_in(fs, folder) -> list[str]:
    return [s.getPath().getName() for s in fs.listStatus(folder)]


def glob(spark, pattern: str) -> list[str]:
    fs, hpath = _fs(spark, pattern)
    statuses = fs.globStatus(hpath)
    return [] if statuses is None else [s.getPath().toString() for s in statuses]


def list_data_files(spark, roots: list[str]) -> list[FileInfo]:
    """Every visible file under the roots, recursively; Spark's rule hides names starting with _ or ."""
    found: list[FileInfo] = []
    for root in roots:
        fs, hpath = _fs(spark, root)
        status = fs.getFileStatus(hpath)
        if status.isFile():
            found.append(FileInfo(status.getPath().toString(), status.getLen(), status.getModificationTime()))
            continue
        iterator = fs.listFiles(hpath, True)
        base = status.getPath().toString().rstrip("/") + "/"
        while iterator.hasNext():
            entry = iterator.next()
            full = entry.getPath().toString()
            relative = full[len(base):] if full.startswith(base) else entry.getPath().getName()
            if any(is_hidden(part) and "=" not in part for part in relative.split("/")):
                continue
            found.append(FileInfo(full, entry.getLen(), entry.getModificationTime()))
    return sorted(found, key=lambda f: f.path)


def broken_links(roots: list[str]) -> list[str]:
    """Visible names under local roots that are links to nothing. Hadoop's listing skips them
    without a word, so a day would commit without the file; remote storage has no such links."""
    import os

    broken = []
    for root in roots:
        local = local_path(root)
        if local is None or not os.path.isdir(local):
            continue
        for folder, dirs, names in os.walk(local):
            dirs[:] = [d for d in dirs if not is_hidden(d) or "=" in d]
            broken += [os.path.join(folder, n) for n in names + dirs
                       if not is_hidden(n) and os.path.islink(os.path.join(folder, n))
                       and not os.path.exists(os.path.join(folder, n))]
    return sorted(broken)


def list_dirs(spark, root: str) -> list[tuple[str, int]]:
    """Immediate subdirectories of root with their modification times."""
    fs, hpath = _fs(spark, root)
    if not fs.exists(hpath):
        return []
    return [
        (s.getPath().toString(), s.getModificationTime())
        for s in fs.listStatus(hpath)
        if s.isDirectory()
    ]


def du(spark, path: str) -> int:
    fs, hpath = _fs(spark, path)
    return int(fs.getContentSummary(hpath).getLength())


def list_files(spark, directory: str) -> list[FileInfo]:
    """The files directly inside a directory (not recursive), by name."""
    fs, hpath = _fs(spark, directory)
    if not fs.exists(hpath):
        return []
    return sorted(
        (FileInfo(s.getPath().toString(), s.getLen(), s.getModificationTime()) for s in fs.listStatus(hpath) if s.isFile()),
        key=lambda f: f.path,
    )


def read_text(spark, path: str) -> str:
    fs, hpath = _fs(spark, path)
    stream = fs.open(hpath)
    try:
        return spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


@contextlib.contextmanager
def text_lines(spark, path: str, charset: str = "UTF-8", max_bytes: int = 1 << 20) -> Iterator[Iterator[str]]:
    """The lines of a text file, each read when asked for, decompressed as its name says (`.gz`,
    ...) as Spark's readers do, from at most `max_bytes` of it: a CSV header without reading the
    file."""
    jvm = spark._jvm
    fs, hpath = _fs(spark, path)
    closing = fs.open(hpath)
    try:
        codec = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(
            spark._jsc.hadoopConfiguration()).getCodec(hpath)
        if codec is not None:
            closing = codec.createInputStream(closing)
        bounded = jvm.org.apache.commons.io.input.BoundedInputStream(closing, max_bytes)
        closing = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(bounded, charset))
        yield iter(closing.readLine, None)
    finally:
        closing.close()


def copy(spark, source: str, target: str) -> None:
    """Copy one file (across file systems if need be); the target must not exist."""
    jvm = spark._jvm
    src_fs, src = _fs(spark, source)
    dst_fs, dst = _fs(spark, target)
    if not jvm.org.apache.hadoop.fs.FileUtil.copy(src_fs, src, dst_fs, dst, False, False, spark._jsc.hadoopConfiguration()):
        raise OSError(f"could not copy {source} to {target}")


def name_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def spelled_alike(path: str) -> str:
    """One spelling of a path for Hadoop's listings and messages (file:/a b) and Spark's
    (file:///a%20b): URL escapes decoded, then local paths plain by `paths.local_path`'s rule."""
    decoded = unquote(path.strip())
    return local_path(decoded) or decoded


def is_under(path: str, folder: str) -> bool:
    """Whether `path` is inside `folder`, however each spells it."""
    return spelled_alike(path).startswith(spelled_alike(folder).rstrip("/") + "/")
