"""File operations through Hadoop's FileSystem, so local paths, HDFS and object stores behave alike."""

from __future__ import annotations

import json
import os
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


def location_uri(spark, path: str) -> str:
    """A path as the metastore takes a location: qualified, and a URI (`file:/a%20b`)."""
    fs, hpath = _fs(spark, path)
    return fs.makeQualified(hpath).toUri().toString()


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
    lister = _Lister(spark)
    for name, (fs, folder) in folders.items():
        found.update(input_names.unfinished_writes(name, partial(_names_in, lister, fs, folder)))
    return sorted(found)


def _names_in(lister: _Lister, fs, folder) -> list[str]:
    return [name_of(entry.info.path) for entry in lister.entries(fs, folder)[0]]


def glob(spark, pattern: str) -> list[str]:
    fs, hpath = _fs(spark, pattern)
    statuses = fs.globStatus(hpath)
    return [] if statuses is None else [s.getPath().toString() for s in statuses]


def jvm_failures() -> tuple[type[Exception], ...]:
    """What a call into the JVM raises when the Java side fails: Spark's errors as PySpark raises
    them, Java's others as py4j does. Anything else is a bug on the Python side."""
    from py4j.protocol import Py4JJavaError  # core loads without pyspark: imported on use
    from pyspark.errors.exceptions.captured import CapturedException

    return CapturedException, Py4JJavaError


@dataclass(frozen=True)
class _Entry:
    """One entry of a folder's listing."""

    info: FileInfo
    is_file: bool  # Hadoop's isFile(): neither a folder nor a link
    is_dir: bool
    position: int  # in the listing's Java array


class _Lister:
    """A folder's entries in two JVM calls however many it holds: the FileStatus[] of
    `listStatus` is written as JSON inside the JVM (Jackson, shipped with Spark), where asking
    each status for its path, size and time took a few py4j calls a file (seconds for a base of
    many thousand files). Jackson reads the statuses' fields, not their getters: a local file's
    getters of owner and permission run a command to find them."""

    def __init__(self, spark):
        self._mapper = _status_mapper(spark)

    def entries(self, fs, folder) -> tuple[list[_Entry], object]:
        """The entries of `folder` (a Hadoop Path), and the Java array they come from."""
        statuses = fs.listStatus(folder)
        try:
            fields = json.loads(self._mapper.writeValueAsString(statuses))
        except jvm_failures():  # a status class Jackson cannot write: asked one by one
            fields = [{} for _ in range(len(statuses))]
        return [_entry(status, statuses, i) for i, status in enumerate(fields)], statuses


def _status_mapper(spark):
    """Jackson set to write a Hadoop FileStatus from its fields, its paths as Hadoop spells them
    (`Path.toString()`: file:/a b, where the URI says file:/a%20b)."""
    jvm = spark._jvm
    jackson = jvm.com.fasterxml.jackson
    accessor, visibility = jackson.annotation.PropertyAccessor, jackson.annotation.JsonAutoDetect.Visibility
    mapper = jackson.databind.ObjectMapper()
    mapper.setVisibility(accessor.ALL, visibility.NONE)
    mapper.setVisibility(accessor.FIELD, visibility.ANY)
    mapper.disable(jackson.databind.SerializationFeature.FAIL_ON_EMPTY_BEANS)
    paths_as_text = jackson.databind.module.SimpleModule()
    paths_as_text.addSerializer(
        jvm.org.apache.hadoop.fs.Path._java_lang_class, jackson.databind.ser.std.ToStringSerializer.instance
    )
    return mapper.registerModule(paths_as_text)


def _entry(fields: dict, statuses, position: int) -> _Entry:
    """An entry from its status's fields; a status whose own fields do not hold its path, size,
    time and kind (one wrapping another status, as viewfs may; a Hadoop whose FileStatus names
    its fields otherwise) is asked through its getters."""
    if any(fields.get(name) is None for name in ("path", "length", "modification_time", "isdir")):
        status = statuses[position]
        return _Entry(
            FileInfo(status.getPath().toString(), status.getLen(), status.getModificationTime()),
            bool(status.isFile()),
            bool(status.isDirectory()),
            position,
        )
    is_dir = bool(fields["isdir"])
    return _Entry(
        FileInfo(fields["path"], fields["length"], fields["modification_time"]),
        not is_dir and fields.get("symlink") is None,
        is_dir,
        position,
    )


def list_data_files(spark, roots: list[str]) -> list[FileInfo]:
    """Every visible file under the roots, recursively; Spark's rule hides names starting with _
    or . (a partition folder `_a=1` is visible). A few JVM calls for each folder, none for each file."""
    lister = _Lister(spark)
    found: list[FileInfo] = []
    for root in roots:
        fs, hpath = _fs(spark, root)
        status = fs.getFileStatus(hpath)
        if status.isFile():
            found.append(FileInfo(status.getPath().toString(), status.getLen(), status.getModificationTime()))
        else:
            found += _visible_files_under(lister, fs, hpath)
    return sorted(found, key=lambda f: f.path)


def _visible_files_under(lister: _Lister, fs, folder) -> list[FileInfo]:
    """The files in `folder` and its visible subfolders, as Hadoop's recursive `listFiles` finds
    them (a link is followed as a folder), without listing the hidden folders."""
    found, folders = [], [folder]
    while folders:
        entries, statuses = lister.entries(fs, folders.pop())
        for entry in entries:
            name = name_of(entry.info.path)
            if is_hidden(name) and "=" not in name:
                continue
            if entry.is_file:
                found.append(entry.info)
            else:
                folders.append(statuses[entry.position].getPath())
    return found


def broken_links(roots: list[str]) -> list[str]:
    """Visible names under local roots that are links to nothing. Hadoop's listing skips them
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
    fs, hpath = _fs(spark, root)
    if not fs.exists(hpath):
        return []
    return [(e.info.path, e.info.modified_ms) for e in _Lister(spark).entries(fs, hpath)[0] if e.is_dir]


def du(spark, path: str) -> int:
    fs, hpath = _fs(spark, path)
    return int(fs.getContentSummary(hpath).getLength())


def list_files(spark, directory: str) -> list[FileInfo]:
    """The files directly inside a directory (not recursive), by name."""
    fs, hpath = _fs(spark, directory)
    if not fs.exists(hpath):
        return []
    return sorted((e.info for e in _Lister(spark).entries(fs, hpath)[0] if e.is_file), key=lambda f: f.path)


def read_text(spark, path: str) -> str:
    fs, hpath = _fs(spark, path)
    stream = fs.open(hpath)
    try:
        return spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def java_class(spark, name: str):
    """A Java class by its full name, in no JVM call: `spark._jvm.org.apache...` takes one for each
    of its packages."""
    from py4j.java_gateway import JavaClass  # core loads without pyspark: imported on use

    return JavaClass(name, spark._jvm._gateway_client)


class FileHeads:
    """The first bytes of files, decompressed as their names say (`.gz`, ...) as Spark's readers
    do: a CSV header without reading the file. Four JVM calls a file (its path, open, read,
    close), where a reader of lines took about 35 (with a call for each package of each Java
    class name it named); the file system of each scheme and authority,
    and the codec of each file-name extension (which starts with a dot, as Hadoop's codecs'
    do), are looked up once."""

    def __init__(self, spark):
        self._path_class = java_class(spark, "org.apache.hadoop.fs.Path")
        self._conf = spark._jsc.hadoopConfiguration()
        self._codecs = java_class(spark, "org.apache.hadoop.io.compress.CompressionCodecFactory")(self._conf)
        self._file_systems: dict[tuple[str, str], object] = {}
        self._codec_by_extension: dict[str, object] = {}

    def read(self, path: str, size: int) -> bytes:
        """At most `size` bytes from the start of the file's content, fewer only at its end."""
        hpath = self._path_class(path)
        stream = self._file_system(path, hpath).open(hpath)
        try:
            codec = self._codec(path, hpath)
            if codec is not None:
                stream = codec.createInputStream(stream)
            return bytes(stream.readNBytes(size))
        finally:
            stream.close()

    def _file_system(self, path: str, hpath):
        parts = urlsplit(path)
        where = (parts.scheme.lower(), parts.netloc)
        if where not in self._file_systems:
            self._file_systems[where] = hpath.getFileSystem(self._conf)
        return self._file_systems[where]

    def _codec(self, path: str, hpath):
        name = name_of(path)
        extension = name[name.index(".") :] if "." in name else ""  # every extension a codec may match
        if extension not in self._codec_by_extension:
            self._codec_by_extension[extension] = self._codecs.getCodec(hpath)
        return self._codec_by_extension[extension]


def copy(spark, source: str, target: str) -> None:
    """Copy one file (across file systems if need be); the target must not exist."""
    jvm = spark._jvm
    src_fs, src = _fs(spark, source)
    dst_fs, dst = _fs(spark, target)
    if not jvm.org.apache.hadoop.fs.FileUtil.copy(
        src_fs, src, dst_fs, dst, False, False, spark._jsc.hadoopConfiguration()
    ):
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


def written_rows(spark, directory: str) -> int:
    """Rows in the Parquet files of a directory, from the footers."""
    files = list_data_files(spark, [directory]) if exists(spark, directory) else []
    local = [local_path(f.path) for f in files]
    if all(local):
        import pyarrow.parquet as pq  # core loads without pyspark: imported on use

        return sum(pq.ParquetFile(path).metadata.num_rows for path in local)
    return spark.read.parquet(directory).count()
