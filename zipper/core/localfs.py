"""Hadoop's listing of a LOCAL input, in pure Python: the same matches and files (`fs.FileInfo`:
path spelled as Hadoop spells it, `file:/a b/c`, size, modification time in ms) as `core.fs`
gives through Hadoop's FileSystem, without a JVM. Only for what it can tell exactly: a glob
Hadoop would read otherwise (a `\\` escape, nested braces, a brace holding a `/`), a symbolic link,
a name Hadoop cannot hold (`:`) or a special file raise `Unknown`, and the caller goes the Spark
way. As Hadoop's local file system does, checksum files (`.<name>.crc`) are never listed. tests/inputs/test_local_listing.py compares both listings on the same folders."""

from __future__ import annotations

import os
import re
import stat
from functools import partial

from zipper.core import input_names
from zipper.core.fs import FileInfo
from zipper.core.input_names import is_hidden
from zipper.core.paths import local_path

GLOB_CHARS = set("*?[{")


class Unknown(Exception):
    """This listing cannot say exactly what Hadoop's would: ask Hadoop."""


def spelled(path: str) -> str:
    """A local path as Hadoop's `Path.toString()` spells it: `file:/a b/c`."""
    return "file:" + path


def plain(uri: str) -> str:
    """The normalized local path of a `file:` URI or absolute path, as Hadoop's Path reads it."""
    if uri.startswith("file://") and not uri.startswith("file:///"):
        raise Unknown(f"{uri}: a file URI with an authority")
    path = local_path(uri)
    if path is None:
        raise Unknown(f"{uri}: not a local path")
    path = re.sub("/+", "/", path)
    if len(path) > 1:
        path = path.rstrip("/")
    if any(part in (".", "..") for part in path.split("/")) or ":" in path:
        raise Unknown(f"{uri}: a path Hadoop would normalize or refuse")
    return path


def glob(pattern: str) -> list[str]:
    """The matches of a (glob) path, as `fs.glob` gives them (`file:/...`), sorted."""
    path = plain(pattern)
    if "\\" in path:
        raise Unknown(f"{pattern}: an escaped glob")
    found = ["/"]
    for part in [p for p in path.split("/") if p]:
        if _is_checksum(part):
            raise Unknown(f"{pattern}: names a checksum file")
        if not GLOB_CHARS & set(part):
            found = [os.path.join(f, part) for f in found if os.path.lexists(os.path.join(f, part))]
            continue
        matcher = _component_regex(part)
        found = [
            os.path.join(f, name) for f in found if os.path.isdir(f) for name in _names(f) if matcher.fullmatch(name)
        ]
    for match in found:
        _check_plain_entry(match)
    return sorted(spelled(f) for f in found)


def _names(folder: str) -> list[str]:
    """A folder's entries as Hadoop's local file system lists them: without its checksum files."""
    try:
        return [name for name in os.listdir(folder) if not _is_checksum(name)]
    except OSError as exc:
        raise Unknown(f"{folder}: {exc}") from None


def _is_checksum(name: str) -> bool:
    """Hadoop's LocalFileSystem (a ChecksumFileSystem) keeps `.<name>.crc` beside a file and never lists it."""
    return name.startswith(".") and name.endswith(".crc")


def _component_regex(part: str) -> re.Pattern:
    """One path component's glob as a regex, by Hadoop's GlobPattern rules: `*` `?` `[...]`
    (`[^...]` or `[!...]` negated) and `{a,b}`; anything subtler is `Unknown`."""
    out, i, in_brace = [], 0, False
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = part.find("]", i + 2)
            if end < 0:
                raise Unknown(f"{part}: an unclosed [")
            body = part[i + 1 : end]
            negated = body[:1] in ("^", "!")
            body = body[1:] if negated else body
            if not body or any(ch in body for ch in "[\\^!"):
                raise Unknown(f"{part}: a character class this listing does not read")
            out.append("[" + ("^" if negated else "") + body.replace("]", "\\]") + "]")
            i = end
        elif c == "{":
            if in_brace:
                raise Unknown(f"{part}: nested braces")
            in_brace = True
            out.append("(?:")
        elif c == "}" and in_brace:
            in_brace = False
            out.append(")")
        elif c == "," and in_brace:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if in_brace:
        raise Unknown(f"{part}: an unclosed {{")
    return re.compile("".join(out), re.DOTALL)


def _check_plain_entry(path: str) -> os.stat_result:
    """The entry's status; `Unknown` for what Hadoop's listing treats apart: links, special files,
    names it cannot hold or that do not decode."""
    name = os.path.basename(path)
    if ":" in name or any(ord(c) < 0x20 or 0xDC80 <= ord(c) <= 0xDCFF for c in name):
        raise Unknown(f"{path}: a name Hadoop's listing spells otherwise")
    try:
        status = os.lstat(path)
    except OSError as exc:
        raise Unknown(f"{path}: {exc}") from None
    if not (stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode)):
        raise Unknown(f"{path}: a link or special file")
    return status


def _info(path: str, status: os.stat_result) -> FileInfo:
    # Java's File.lastModified: milliseconds, truncated
    return FileInfo(spelled(path), status.st_size, status.st_mtime_ns // 1_000_000)


def unfinished_writes(matches: list[str]) -> list[str]:
    """As `fs.unfinished_writes`: what a write still under way keeps in the matches' folders."""
    found = set()
    for match in matches:
        path = plain(match)
        folder = path if stat.S_ISDIR(_check_plain_entry(path).st_mode) else os.path.dirname(path)
        found.update(input_names.unfinished_writes(spelled(folder), partial(_names, folder)))
    return sorted(found)


def list_data_files(roots: list[str]) -> list[FileInfo]:
    """As `fs.list_data_files`: every visible file under the roots (a root file itself however it
    is named), sorted by path; hidden names (`_`, `.`) skipped, but `_a=1` folders."""
    found: list[FileInfo] = []
    for root in roots:
        path = plain(root)
        status = _check_plain_entry(path)
        if stat.S_ISREG(status.st_mode):
            found.append(_info(path, status))
            continue
        folders = [path]
        while folders:
            folder = folders.pop()
            for name in _names(folder):
                if is_hidden(name) and "=" not in name:
                    continue
                entry = os.path.join(folder, name)
                entry_status = _check_plain_entry(entry)
                if stat.S_ISREG(entry_status.st_mode):
                    found.append(_info(entry, entry_status))
                else:
                    folders.append(entry)
    return sorted(found, key=lambda f: f.path)
