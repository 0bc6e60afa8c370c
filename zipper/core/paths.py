"""Where a file is on the local disk, however Spark, Hadoop or a user spelled it: one rule for
the engine, the sensor and the error lines (no Spark, no Airflow here)."""

from __future__ import annotations

from urllib.parse import unquote


def local_path(uri: str) -> str | None:
    """The local file system path of a `file:` URI (`file:/a`, `file:///a`) or of an absolute
    path; None for remote storage (`hdfs://...`) and for relative paths."""
    if uri.startswith("file:"):
        rest = uri[len("file:") :]
        while rest.startswith("//"):
            rest = rest[1:]
        return rest
    if uri.startswith("/"):
        return uri
    return None


def user_path(uri: str) -> str:
    """A location as a user types it: local ones as plain paths, remote ones as their URIs."""
    return local_path(uri) or uri


def hadoop_path(location_uri: str) -> str:
    """A location the metastore gives (a URI: `file:/a%20b`) as Hadoop spells the path
    (`file:/a b`), which is what zipper passes to Spark and Hadoop: given the URI spelling, they
    would read `%20` as three characters, and a warehouse whose path had a space put its tables
    in a folder named `a%20b` beside it."""
    return unquote(location_uri)
