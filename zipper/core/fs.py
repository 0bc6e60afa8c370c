"""File operations through pyarrow's file systems, so local paths, HDFS and object stores behave
alike, and no call goes through a JVM (the data path must run on a Spark Connect client too).

Paths are spelled as Hadoop spells them, which is how Spark names files in its messages and how
zipper passes them back: a local path `file:/a b`, a remote one its URI (`hdfs://nn/a`). The
`spark` arguments are kept for the callers' sake; no file operation uses the session."""

from __future__ import annotations

import bz2
import gzip
import os
import posixpath
import re
import zlib
from dataclasses import dataclass
from functools import partial
from urllib.parse import unquote, urlsplit

from zipper.core import input_names
from zipper.core.input_names import is_hidden
from zipper.core.paths import local_path


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    modified_ms: int


def _where(path: str) -> tuple[object, str, str]:
    """(pyarrow file system, its path, the prefix that makes that path Hadoop's spelling again):
    a local path (plain, relative, or `file:`) is qualified against the working directory, as
    Hadoop's local file system qualifies it."""
    import pyarrow.fs as pafs  # core loads without pyarrow's file systems: imported on use

    local = local_path(path) if ":" in path.split("/", 1)[0] or path.startswith("/") else os.path.abspath(path)
    if local is not None:
        return pafs.LocalFileSystem(), posixpath.normpath(local) if local != "/" else local, "file:"
    parts = urlsplit(path)
    scheme = _PYARROW_SCHEMES.get(parts.scheme.lower(), parts.scheme.lower())
    filesystem, inner = pafs.FileSystem.from_uri(scheme + path[len(parts.scheme) :])
    if parts.netloc and inner.lstrip("/").startswith(parts.netloc):  # an object store: the bucket leads its paths
        return filesystem, inner, f"{parts.scheme}://"
    return filesystem, inner, f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


# Hadoop's names of object stores that pyarrow names otherwise.
_PYARROW_SCHEMES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def _spelled(prefix: str, inner: str) -> str:
    """A pyarrow path back in Hadoop's spelling (`file:/a b`, `hdfs://nn/a`, `s3a://bucket/a`)."""
    if prefix == "file:":
        return prefix + inner
    if prefix.endswith("://"):
        return prefix + inner.lstrip("/")
    return prefix + "/" + inner.lstrip("/")


def qualify(spark, path: str) -> str:
    """An absolute URI (file:/..., hdfs://...) for a path."""
    _, inner, prefix = _where(path)
    return _spelled(prefix, inner)


def location_uri(spark, path: str) -> str:
    """A path as the metastore takes a location: qualified, and a URI (`file:/a%20b`), escaped
    as Java's URI escapes a path: what a path may not hold (a space, `%`, `#`, `?`) as UTF-8
    escapes, other letters (`é`) as they are."""
    scheme, rest = qualify(spark, path).split(":", 1)
    return f"{scheme}:" + "".join(_uri_char(c) for c in rest)


_URI_PATH_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'();:@&=+$,/")


def _uri_char(c: str) -> str:
    if c in _URI_PATH_CHARS or (ord(c) > 127 and c.isprintable() and not c.isspace()):
        return c
    return "".join(f"%{b:02X}" for b in c.encode())


def _info(path: str):
    filesystem, inner, prefix = _where(path)
    return filesystem, inner, prefix, filesystem.get_file_info(inner)


def exists(spark, path: str) -> bool:
    import pyarrow.fs as pafs

    return _info(path)[3].type != pafs.FileType.NotFound


def mkdirs(spark, path: str) -> None:
    filesystem, inner, _ = _where(path)
    filesystem.create_dir(inner, recursive=True)


def delete(spark, path: str) -> bool:
    """Deletes a file or a folder with all it holds; False when there was nothing to delete."""
    import pyarrow.fs as pafs

    filesystem, inner, _, info = _info(path)
    if info.type == pafs.FileType.NotFound:
        return False
    if info.type == pafs.FileType.Directory:
        filesystem.delete_dir(inner)
    else:
        filesystem.delete_file(inner)
    return True


def unfinished_writes(spark, matches: list[str]) -> list[str]:
    """What a write still under way keeps in the folders of `matches` (a matched folder, or a
    matched file's folder): a job's uncommitted output, a file being copied in
    (`input_names.unfinished_writes` decides, as for the sensor)."""
    import pyarrow.fs as pafs

    folders = set()
    for match in matches:
        is_dir = _info(match)[3].type == pafs.FileType.Directory
        folders.add(qualify(spark, match) if is_dir else qualify(spark, match).rstrip("/").rsplit("/", 1)[0])
    found = set()
    for folder in folders:
        found.update(input_names.unfinished_writes(folder, partial(_names_in, folder)))
    return sorted(found)


def _names_in(folder: str) -> list[str]:
    return [name_of(entry.path) for entry in _entries(folder)]


_GLOB_CHARS = re.compile(r"[*?\[{]")


def glob(spark, pattern: str) -> list[str]:
    """The files and folders a Hadoop glob matches (`*`, `?`, `[ab]`, `{a,b}` in any part of the
    path), sorted within each part as Hadoop's `globStatus` gives them; a path without glob
    characters matches itself if it exists."""
    filesystem, inner, prefix = _where(pattern)
    parts = inner.split("/")
    first = next((i for i, part in enumerate(parts) if _GLOB_CHARS.search(part)), None)
    if first is None:
        return [_spelled(prefix, inner)] if exists(spark, pattern) else []
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
    return [_spelled(prefix, path) for path in found]


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

    filesystem, inner, prefix = _where(folder)
    return [
        _Entry(
            _spelled(prefix, i.path),
            i.size or 0 if i.type == pafs.FileType.File else 0,
            (i.mtime_ns or 0) // 1_000_000,
            i.type == pafs.FileType.File,
            i.type == pafs.FileType.Directory,
        )
        for i in filesystem.get_file_info(pafs.FileSelector(inner))
        if i.type in (pafs.FileType.File, pafs.FileType.Directory) and not _is_checksum(filesystem, i.path)
    ]


def list_data_files(spark, roots: list[str]) -> list[FileInfo]:
    """Every visible file under the roots, recursively; Spark's rule hides names starting with _
    or . (a partition folder `_a=1` is visible)."""
    import pyarrow.fs as pafs

    found: list[FileInfo] = []
    for root in roots:
        _, inner, prefix, info = _info(root)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"File {root} does not exist")
        if info.type == pafs.FileType.File:
            found.append(FileInfo(_spelled(prefix, inner), info.size or 0, (info.mtime_ns or 0) // 1_000_000))
        else:
            found += _visible_files_under(_spelled(prefix, inner))
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


def list_dirs(spark, root: str) -> list[tuple[str, int]]:
    """Immediate subdirectories of root with their modification times."""
    if not exists(spark, root):
        return []
    return [(e.path, e.modified_ms) for e in _entries(root) if e.is_dir]


def du(spark, path: str) -> int:
    """Bytes of a file, or of every file under a folder (hidden ones too)."""
    import pyarrow.fs as pafs

    filesystem, inner, _, info = _info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"File {path} does not exist")
    if info.type == pafs.FileType.File:
        return info.size or 0
    listed = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True))
    return sum(i.size or 0 for i in listed if i.type == pafs.FileType.File and not _is_checksum(filesystem, i.path))


def list_files(spark, directory: str) -> list[FileInfo]:
    """The files directly inside a directory (not recursive), by name."""
    if not exists(spark, directory):
        return []
    return sorted((e.info for e in _entries(directory) if e.is_file), key=lambda f: f.path)


def read_text(spark, path: str) -> str:
    filesystem, inner, _ = _where(path)
    with filesystem.open_input_stream(inner) as stream:
        return stream.read().decode("utf-8", errors="replace")


# Hadoop's codecs by the file-name extension they claim, as Python decompresses them: `.deflate`
# is a zlib stream; `.zst` zstd frames. Hadoop's `.lz4` and `.snappy` are its own block formats,
# which no Python library here reads: such a file's head is refused (an OSError), not misread.
_DECOMPRESSORS = {
    ".gz": lambda stream: gzip.GzipFile(fileobj=stream, mode="rb"),
    ".bz2": lambda stream: bz2.BZ2File(stream, mode="rb"),
    ".deflate": lambda stream: _ZlibReader(stream),
}
_PYARROW_CODECS = {".zst": "zstd"}
_UNREADABLE_CODECS = (".lz4", ".snappy")


class _ZlibReader:
    """A zlib stream decompressed as it is read."""

    def __init__(self, stream):
        self._stream, self._inflate = stream, zlib.decompressobj()

    def read(self, size: int) -> bytes:
        out = b""
        while len(out) < size and not self._inflate.eof:
            chunk = self._stream.read(64 << 10)
            if not chunk:
                break
            out += self._inflate.decompress(chunk, size - len(out))
            while self._inflate.unconsumed_tail and len(out) < size:
                out += self._inflate.decompress(self._inflate.unconsumed_tail, size - len(out))
        return out

    def close(self) -> None:
        self._stream.close()


class FileHeads:
    """The first bytes of files, decompressed as their names say (`.gz`, `.bz2`, `.deflate`,
    `.zst`) as Spark's readers do: a CSV header without reading the file."""

    def __init__(self, spark=None):
        pass

    def read(self, path: str, size: int) -> bytes:
        """At most `size` bytes from the start of the file's content, fewer only at its end."""
        filesystem, inner, _ = _where(path)
        extension = _extension(path)
        if extension in _UNREADABLE_CODECS:
            raise OSError(f"cannot decompress {name_of(path)}: Hadoop's {extension} codec has no reader here")
        stream = filesystem.open_input_stream(inner, compression=_PYARROW_CODECS.get(extension))
        if extension in _DECOMPRESSORS:
            stream = _DECOMPRESSORS[extension](stream)
        try:
            return _read_up_to(stream, size)
        finally:
            stream.close()


def _extension(path: str) -> str:
    """The codec extension a file's name ends with (Hadoop matches the name's end), or ''."""
    name = name_of(path)
    return next((e for e in (*_DECOMPRESSORS, *_PYARROW_CODECS, *_UNREADABLE_CODECS) if name.endswith(e)), "")


def _read_up_to(stream, size: int) -> bytes:
    """`size` bytes, fewer only at the end: a decompressing stream may give fewer a read."""
    chunks, got = [], 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        chunks.append(bytes(chunk))
        got += len(chunk)
    return b"".join(chunks)


def copy(spark, source: str, target: str) -> None:
    """Copy one file (across file systems if need be); the target must not exist."""
    if exists(spark, target):
        raise OSError(f"could not copy {source} to {target}: {target} already exists")
    src_fs, src, _ = _where(source)
    dst_fs, dst, _ = _where(target)
    dst_fs.create_dir(posixpath.dirname(dst), recursive=True)
    with src_fs.open_input_stream(src) as reader, dst_fs.open_output_stream(dst) as writer:
        while chunk := reader.read(8 << 20):
            writer.write(chunk)


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


def written_rows(spark, directory: str) -> int:
    """Rows in the Parquet files of a directory, from the footers."""
    files = list_data_files(spark, [directory]) if exists(spark, directory) else []
    local = [local_path(f.path) for f in files]
    if all(local):
        import pyarrow.parquet as pq  # core loads without pyspark: imported on use

        return sum(pq.ParquetFile(path).metadata.num_rows for path in local)
    return spark.read.parquet(directory).count()
