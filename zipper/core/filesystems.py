"""Which of pyarrow's file systems holds a path, and that path spelled back as Hadoop spells it.

Every file operation starts here: reading, writing and listing all need the file system and its
own path. It lives apart so the modules that read files and the one that lists them share it
without importing each other. A local path is spelled `file:/a b`, a remote one as its URI
(`hdfs://nn/a`, `s3a://bucket/a`)."""

from __future__ import annotations

import os
import posixpath
from urllib.parse import urlsplit

from zipper.core.paths import local_path


def locate(path: str) -> tuple[object, str, str]:
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


def spelled(prefix: str, inner: str) -> str:
    """A pyarrow path back in Hadoop's spelling (`file:/a b`, `hdfs://nn/a`, `s3a://bucket/a`)."""
    if prefix == "file:":
        return prefix + inner
    if prefix.endswith("://"):
        return prefix + inner.lstrip("/")
    return prefix + "/" + inner.lstrip("/")


def located_info(path: str):
    """`locate`'s three, and what the file system says of the path (pyarrow's FileInfo)."""
    filesystem, inner, prefix = locate(path)
    return filesystem, inner, prefix, filesystem.get_file_info(inner)


def exists(path: str) -> bool:
    import pyarrow.fs as pafs

    return located_info(path)[3].type != pafs.FileType.NotFound


def name_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
