"""Row output for the CLI: CSV, JSON lines, Parquet, or an aligned text table."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import errno
import json
import os
import shutil
import sys
import unicodedata
from pathlib import Path

from zipper.engine.inspect import as_collected, as_written
from zipper.errors import InputError
from zipper.paths import local_path


def _plain(value):
    """A value as JSON holds it: structs as objects, maps with text keys, arrays as lists,
    binary as base64, dates and decimals as text, NaN and infinities as Spark writes them."""
    value = as_written(value)  # binary, NaN and infinities
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "asDict"):  # a struct (pyspark Row)
        return {k: _plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, dict):
        return {_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def _text(value) -> str:
    """One value as text (CSV field, table cell): nested values as their JSON."""
    plain = _plain(value)
    if isinstance(plain, bool):
        return "true" if plain else "false"
    if isinstance(plain, (dict, list)):
        return json.dumps(plain, ensure_ascii=False, allow_nan=False)
    return str(plain)


def _csv_field(value) -> str:
    """NULL is an empty field and an empty string a quoted one (`""`), as Spark's CSV writer
    does, so the two stay apart when the file is read back."""
    if value is None:
        return ""
    text = _text(value)
    if text == "" or any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_line(values) -> str:
    return ",".join(_csv_field(v) for v in values) + "\n"


@contextlib.contextmanager
def _target(out: str | None, table: str):
    """stdout, or a file written beside --out and renamed onto it once every row is in: a slice
    that fails half-way (an unreadable file of the table) leaves no truncated file, an existing
    --out as it was, and none of the folders it made for a new one."""
    if out is None:
        yield sys.stdout
        return
    out = _local_out(out, table)
    if os.path.exists(out) and not os.path.isfile(out) and not os.path.isdir(out):  # /dev/stdout, a FIFO
        with open(out, "w", newline="", encoding="utf-8") as handle:
            yield handle
        return
    target = Path(os.path.realpath(out))  # through a link to its file, as writing to it would
    partial = target.parent / f".{target.name}.{os.getpid()}.partial"
    made: list[Path] = []
    try:
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        made = _make_folders(target.parent)
        handle = open(partial, "w", newline="", encoding="utf-8")
        if target.exists():
            shutil.copymode(target, partial)  # the file replaced keeps its permissions
    except OSError as exc:  # Python's `[Errno 21] Is a directory: 'x'` did not say which option
        _remove_folders(made)
        raise InputError(f"--out {out}: cannot write the file: {exc.strerror}", table=table) from None
    try:
        with handle:
            yield handle
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        _remove_folders(made)
        raise


def _local_out(out: str, table: str) -> str:
    """A CSV or JSON --out as the local path it names (`file:/x` is `/x`): written by Python, not
    through Hadoop, so a remote URI is refused rather than made as local folders `hdfs:/...`."""
    if "://" not in out and not out.startswith("file:"):
        return out
    local = local_path(out)
    if local is None:
        raise InputError(f"--out {out}: CSV and JSON are written to a local file; give a local path (Parquet is"
                         " written by Spark, to any file system)", table=table)
    return local


def _make_folders(folder: Path) -> list[Path]:
    """Make `folder` and the folders above it that are missing, as Spark does for a Parquet
    --out; returns those made, outermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    made = []
    try:
        for path in reversed(missing):
            path.mkdir()
            made.append(path)
    except OSError:
        _remove_folders(made)
        raise
    return made


def _remove_folders(made: list[Path]) -> None:
    for path in reversed(made):
        with contextlib.suppress(OSError):
            path.rmdir()


def _blocked_parent(out: str) -> Path | None:
    """The nearest existing folder above a new local --out that is a file, not a folder (Spark
    would fail with its own exception's name, Python with `Not a directory`)."""
    for parent in Path(out).absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def write_rows(df, fmt: str, out: str | None, table: str) -> None:
    """The rows to stdout or to `out`, a file (a folder for Parquet) whose missing parent
    folders are made, whatever the format."""
    blocked = _blocked_parent(out) if out else None
    if blocked:
        raise InputError(f"--out {out}: {blocked} is a file, not a directory", table=table)
    if fmt == "parquet":
        if not out:
            raise InputError("--format parquet needs --out DIR", table=table)
        from zipper.engine import fs

        # Spark's own refusal speaks of a save mode zipper has no flag for
        if Path(out).exists() or fs.exists(df.sparkSession, out):
            raise InputError(f"--out {out} already exists; give a new directory", table=table)
        try:
            df.write.mode("errorifexists").parquet(out)
        except BaseException:
            fs.delete(df.sparkSession, out)  # the folder a failed write leaves would refuse the next try
            raise
        return
    df = as_collected(df)
    columns = df.columns
    with _target(out, table) as handle:
        if fmt == "csv":
            handle.write(_csv_line(columns))
            for row in df.toLocalIterator():
                handle.write(_csv_line(row))
        else:
            for row in df.toLocalIterator():
                handle.write(json.dumps({c: _plain(v) for c, v in zip(columns, row)}, ensure_ascii=False,
                                        allow_nan=False) + "\n")


_CELL_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _cell(value) -> str:
    """One value of the aligned table on one line: a line break in a text value split its row
    and pushed the later columns under the first, so breaks and tabs are written `\\n`, `\\r`, `\\t`
    (and a backslash `\\\\`)."""
    return "NULL" if value is None else _text(value).translate(_CELL_ESCAPES)


def _columns_wide(text: str) -> int:
    """Terminal columns `text` takes: two for a wide (CJK) character, none for a combining mark;
    `len` misaligned every column after a Chinese name."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _padded(text: str, width: int) -> str:
    return text + " " * (width - _columns_wide(text))


def print_table(df, noun: tuple[str, str] = ("row", "rows")) -> None:
    df = as_collected(df)
    rows = [[_cell(v) for v in row] for row in df.collect()]
    header = df.columns
    widths = [max([_columns_wide(h)] + [_columns_wide(r[i]) for r in rows]) for i, h in enumerate(header)]
    print("  ".join(_padded(h, w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(_padded(v, w) for v, w in zip(r, widths)))
    print(f"({len(rows)} {noun[len(rows) != 1]})")
