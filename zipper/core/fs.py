"""File operations through pyarrow's file systems, so local paths, HDFS and object stores behave
alike, and no call goes through a JVM (the data path must run on a Spark Connect client too).

Paths are spelled as Hadoop spells them, which is how Spark names files in its messages and how
zipper passes them back: a local path `file:/a b`, a remote one its URI (`hdfs://nn/a`). No
function takes a Spark session: none needs one.

This module names, lists and globs files. Where a path lives is `filesystems`; what a file holds
(its text, a compressed head, a copy) is `filecontents`. Their public names are importable here too."""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from functools import partial
from urllib.parse import unquote

from zipper.core import input_names
from zipper.core.filecontents import FileHeads as FileHeads
from zipper.core.filecontents import copy as copy
from zipper.core.filecontents import read_text as read_text
from zipper.core.filesystems import exists as exists
from zipper.core.filesystems import locate, located_info, spelled
from zipper.core.filesystems import name_of as name_of
from zipper.core.input_names import is_hidden
from zipper.core.paths import local_path


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    modified_ms: int


def qualify(path: str) -> str:
    """An absolute URI (file:/..., hdfs://...) for a path."""
    _, inner, prefix = locate(path)
    return spelled(prefix, inner)


def location_uri(path: str) -> str:
    """A path as the metastore takes a location: qualified, and a URI (`file:/a%20b`), escaped
    as Java's URI escapes a path: what a path may not hold (a space, `%`, `#`, `?`) as UTF-8
    escapes, other letters (`é`) as they are."""
    scheme, rest = qualify(path).split(":", 1)
    return f"{scheme}:" + "".join(_uri_char(c) for c in rest)


_URI_PATH_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'();:@&=+$,/")


def _uri_char(c: str) -> str:
    if c in _URI_PATH_CHARS or (ord(c) > 127 and c.isprintable() and not c.isspace()):
        return c
    return "".join(f"%{b:02X}" for b in c.encode())


def mkdirs(path: str) -> None:
    filesystem, inner, _ = locate(path)
    filesystem.create_dir(inner, recursive=True)


def delete(path: str) -> bool:
    """Deletes a file or a folder with all it holds; False when there was nothing to delete."""
    import pyarrow.fs as pafs

    filesystem, inner, _, info = located_info(path)
    if info.type == pafs.FileType.NotFound:
        return False
    if info.type == pafs.FileType.Directory:
        filesystem.delete_dir(inner)
    else:
        filesystem.delete_file(inner)
    return True


def unfinished_writes(matches: list[str]) -> list[str]:
    """What a write still under way keeps in the folders of `matches` (a matched folder, or a
    matched file's folder): a job's uncommitted output, a file being copied in
    (`input_names.unfinished_writes` decides, as for the sensor)."""
    import pyarrow.fs as pafs

    folders = set()
    for match in matches:
        is_dir = located_info(match)[3].type == pafs.FileType.Directory
        folders.add(qualify(match) if is_dir else qualify(match).rstrip("/").rsplit("/", 1)[0])
    found = set()
    for folder in folders:
        found.update(input_names.unfinished_writes(folder, partial(_names_in, folder)))
    return sorted(found)


def _names_in(folder: str) -> list[str]:
    return [name_of(entry.path) for entry in _entries(folder)]


_GLOB_CHARS = re.compile(r"[*?\[{]")


def glob(pattern: str) -> list[str]:
    """The files and folders a Hadoop glob matches (`*`, `?`, `[ab]`, `{a,b}` in any part of the
    path), sorted within each part as Hadoop's `globStatus` gives them; a path without glob
    characters matches itself if it exists."""
    filesystem, inner, prefix = locate(pattern)
    parts = inner.split("/")
    first = next((i for i, part in enumerate(parts) if _GLOB_CHARS.search(part)), None)
    if first is None:
        return [spelled(prefix, inner)] if exists(pattern) else []
    found = ["/".join(parts[:first]) or "/"]
    for part in parts[first:]:
        if not part:
            continue
        matcher = _glob_regex(part)
        found = [
            child
            for folder in found
            for child in _children(filesystem, folder)
            if matcher.fullmatch(child.rstrip("/").rsplit("/", 1)[-1])
        ]
    return [spelled(prefix, path) for path in found]


def _children(filesystem, folder: str) -> list[str]:
    """A folder's entries (links followed), sorted by name; none when it is not a folder."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        infos = filesystem.get_file_info(pafs.FileSelector(folder))
    except (OSError, pa.ArrowException):  # not a folder, or gone meanwhile: no match in it
        return []
    return sorted(i.path for i in infos if i.type != pafs.FileType.NotFound and not _is_checksum(filesystem, i.path))


def _is_checksum(filesystem, path: str) -> bool:
    """Hadoop's local file system keeps a checksum file `.<name>.crc` beside a file it wrote, and
    never lists it: nor does this listing, on the local disk."""
    import pyarrow.fs as pafs

    name = name_of(path)
    return name.startswith(".") and name.endswith(".crc") and isinstance(filesystem, pafs.LocalFileSystem)


def _glob_regex(part: str) -> re.Pattern:
    """One part of a Hadoop glob as a regular expression: `{a,b}` alternatives, `[...]` classes
    (`[^...]` or `[!...]` negated), `*` and `?` within the part, `\\` escaping the next character."""
    out, i, depth = [], 0, 0
    while i < len(part):
        c = part[i]
        if c == "\\" and i + 1 < len(part):
            out.append(re.escape(part[i + 1]))
            i += 1
        elif c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "[":
            end = part.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = part[i + 1 : end]
                negated = body[:1] in ("^", "!")
                body = body[1:] if negated else body
                out.append("[" + ("^" if negated else "") + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def spark_failures() -> tuple[type[Exception], ...]:
    """What a Spark call raises when Spark fails: the errors PySpark raises for a failure on the
    Spark side (a classic session's captured ones, a Spark Connect client's), not PySpark's own
    Python-side errors (`PySparkAssertionError`, ...), which are bugs. Under a classic session
    PySpark re-raises a Java failure it has no class for (a SparkException among them) as its
    Java bridge's error: found among the loaded exception classes by its name, so nothing here
    imports the bridge. Anything else is a bug on the Python side."""
    import sys

    from pyspark import errors  # core loads without pyspark: imported on use
    from pyspark.errors.exceptions.captured import CapturedException

    server_side = [getattr(errors, name) for name in _SPARK_SIDE_ERRORS]
    connect = sys.modules.get("pyspark.errors.exceptions.connect")  # loaded by a Spark Connect client only
    if connect is not None:
        server_side.append(connect.SparkConnectException)
    return (*server_side, CapturedException, *_java_bridge_errors())


# PySpark's classes of failures on the Spark side, as both a classic session and a Spark Connect
# client raise them.
_SPARK_SIDE_ERRORS = (
    "AnalysisException",
    "IllegalArgumentException",
    "ArithmeticException",
    "UnsupportedOperationException",
    "ArrayIndexOutOfBoundsException",
    "DateTimeException",
    "StreamingQueryException",
    "QueryExecutionException",
    "PythonException",
    "SparkRuntimeException",
    "SparkUpgradeException",
    "SparkNoSuchElementException",
    "UnknownException",
)


def _java_bridge_errors() -> list[type[Exception]]:
    found, pending = [], list(Exception.__subclasses__())
    while pending:
        kind = pending.pop()
        if kind.__name__ == "Py4JJavaError":
            found.append(kind)
        elif kind.__name__.startswith("Py4J"):
            pending += kind.__subclasses__()
    return found


def file_failures() -> tuple[type[Exception], ...]:
    """What a file operation raises when the file system fails: gone, not allowed, not readable."""
    import pyarrow as pa

    return OSError, pa.ArrowException, EOFError, zlib.error


@dataclass(frozen=True)
class _Entry:
    """One entry of a folder's listing, in Hadoop's spelling; links followed."""

    path: str
    size: int
    modified_ms: int
    is_file: bool
    is_dir: bool

    @property
    def info(self) -> FileInfo:
        return FileInfo(self.path, self.size, self.modified_ms)


def _entries(folder: str) -> list[_Entry]:
    """The entries of `folder`: a link is taken as what it links to (a folder's entries listed
    as a folder's), a link to nothing left out (`broken_links` names those)."""
    import pyarrow.fs as pafs

    filesystem, inner, prefix = locate(folder)
    return [
        _Entry(
            spelled(prefix, i.path),
            i.size or 0 if i.type == pafs.FileType.File else 0,
            (i.mtime_ns or 0) // 1_000_000,
            i.type == pafs.FileType.File,
            i.type == pafs.FileType.Directory,
        )
        for i in filesystem.get_file_info(pafs.FileSelector(inner))
        if i.type in (pafs.FileType.File, pafs.FileType.Directory) and not _is_checksum(filesystem, i.path)
    ]


def list_data_files(roots: list[str]) -> list[FileInfo]:
    """Every visible file under the roots, recursively; Spark's rule hides names starting with _
    or . (a partition folder `_a=1` is visible)."""
    import pyarrow.fs as pafs

    found: list[FileInfo] = []
    for root in roots:
        _, inner, prefix, info = located_info(root)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"File {root} does not exist")
        if info.type == pafs.FileType.File:
            found.append(FileInfo(spelled(prefix, inner), info.size or 0, (info.mtime_ns or 0) // 1_000_000))
        else:
            found += _visible_files_under(spelled(prefix, inner))
    return sorted(found, key=lambda f: f.path)


def _visible_files_under(folder: str) -> list[FileInfo]:
    """The files in `folder` and its visible subfolders, as Hadoop's recursive `listFiles` finds
    them (a link is followed as a folder), without listing the hidden folders."""
    found, folders = [], [folder]
    while folders:
        for entry in _entries(folders.pop()):
            name = name_of(entry.path)
            if is_hidden(name) and "=" not in name:
                continue
            if entry.is_file:
                found.append(entry.info)
            else:
                folders.append(entry.path)
    return found


def broken_links(roots: list[str]) -> list[str]:
    """Visible names under local roots that are links to nothing. The listing skips them
    without a word, so a day would commit without the file; remote storage has no such links."""
    broken = []
    for root in roots:
        local = local_path(root)
        if local is None or not os.path.isdir(local):
            continue
        for folder, dirs, names in os.walk(local):
            dirs[:] = [d for d in dirs if not is_hidden(d) or "=" in d]
            broken += [
                os.path.join(folder, n)
                for n in names + dirs
                if not is_hidden(n)
                and os.path.islink(os.path.join(folder, n))
                and not os.path.exists(os.path.join(folder, n))
            ]
    return sorted(broken)


def list_dirs(root: str) -> list[tuple[str, int]]:
    """Immediate subdirectories of root with their modification times."""
    if not exists(root):
        return []
    return [(e.path, e.modified_ms) for e in _entries(root) if e.is_dir]


def du(path: str) -> int:
    """Bytes of a file, or of every file under a folder (hidden ones too)."""
    import pyarrow.fs as pafs

    filesystem, inner, _, info = located_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"File {path} does not exist")
    if info.type == pafs.FileType.File:
        return info.size or 0
    listed = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True))
    return sum(i.size or 0 for i in listed if i.type == pafs.FileType.File and not _is_checksum(filesystem, i.path))


def list_files(directory: str) -> list[FileInfo]:
    """The files directly inside a directory (not recursive), by name."""
    if not exists(directory):
        return []
    return sorted((e.info for e in _entries(directory) if e.is_file), key=lambda f: f.path)


def spelled_alike(path: str) -> str:
    """One spelling of a path for Hadoop's listings and messages (file:/a b) and Spark's
    (file:///a%20b): URL escapes decoded, then local paths plain by `paths.local_path`'s rule."""
    decoded = unquote(path.strip())
    return local_path(decoded) or decoded


def is_under(path: str, folder: str) -> bool:
    """Whether `path` is inside `folder`, however each spells it."""
    return spelled_alike(path).startswith(spelled_alike(folder).rstrip("/") + "/")
