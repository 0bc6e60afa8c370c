"""Row output for the CLI: CSV, JSON lines, Parquet, or an aligned text table."""

from __future__ import annotations

import codecs
import contextlib
import datetime as dt
import decimal
import errno
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from enum import StrEnum
from pathlib import Path

from zipper.core import fs
from zipper.core.errors import InputError
from zipper.core.paths import local_path
from zipper.transforms.collected import as_collected, as_written

# Beside the UTF family, the encodings that hold every character (China's GB18030 maps all of Unicode)
EVERY_CHARACTER_ENCODINGS = frozenset({"gb18030"})


class RowFormat(StrEnum):
    """How the rows a command shows are written: an aligned text table (a terminal's), CSV with a
    header, JSON lines, or a Parquet folder."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"
    PARQUET = "parquet"


def format_choices(*formats: RowFormat) -> list[str]:
    """The formats as a `--format` offers them: their text, which argparse's refusal quotes (it
    would show a member's repr)."""
    return [row_format.value for row_format in formats]


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
    if not text or any(c in text for c in ',"\r\n'):
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
        if _holds_any_text(sys.stdout):
            yield sys.stdout
        else:
            with _spooled(sys.stdout) as handle:
                yield handle
        return
    out = _local_out(out, table)
    descriptor = _own_descriptor(out)
    if descriptor is not None:  # /dev/stdout, /dev/fd/N
        with _descriptor_stream(descriptor, out, table) as handle:
            yield handle
        return
    if os.path.exists(out) and not os.path.isfile(out) and not os.path.isdir(out):  # a FIFO, a device
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


def _holds_any_text(stream) -> bool:
    """Whether `stream`'s encoding can write every character (UTF-8 in a UTF-8 locale, Python's default)."""
    name = codecs.lookup(stream.encoding or "ascii").name
    return name.startswith("utf") or name in EVERY_CHARACTER_ENCODINGS


def escape_what_stdout_cannot_hold() -> None:
    """Messages (summaries, the paths vacuum removed) on a stdout whose encoding cannot hold every
    character show the others as Python's escapes (`\\xe4`), as stderr does: failing there would
    report as failed a command whose work is done. Rows keep failing before anything is printed."""
    if not _holds_any_text(sys.stdout) and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def _spooled(stream):
    """Rows for a stream whose encoding cannot hold every character (`PYTHONIOENCODING=ascii`, a
    Latin-1 locale) are encoded into a temporary file first and copied to it only once all are in:
    a value it cannot write fails the command before anything is printed, rather than half-way
    through the rows (or with the value silently replaced)."""
    with tempfile.TemporaryFile("w+", encoding=stream.encoding, errors="strict", newline="") as spool:
        yield spool
        spool.seek(0)
        shutil.copyfileobj(spool, stream)
        stream.flush()


_DESCRIPTOR_PATH = re.compile(r"/proc/(?:self|thread-self|(\d+))/fd/(\d+)|/dev/fd/(\d+)")
_STANDARD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _own_descriptor(path: str) -> int | None:
    """The open descriptor of this process that `path` names, through links (`/dev/stdout` is
    `/proc/self/fd/1`, a link to the file the shell opened). Opening that path again would start a
    new file there (`--out /dev/stdout >> log` replaced the log); writing to the descriptor keeps
    the shell's `>>` and offset."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's limit on links followed
        if current in _STANDARD_STREAMS:
            return _STANDARD_STREAMS[current]
        match = _DESCRIPTOR_PATH.fullmatch(current)
        if match:
            pid, fd = match[1], match[2] or match[3]
            return int(fd) if pid is None or int(pid) == os.getpid() else None
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return None


@contextlib.contextmanager
def _descriptor_stream(descriptor: int, out: str, table: str):
    """A stream on a copy of `descriptor`, in UTF-8 as any --out; the descriptor stays open."""
    sys.stdout.flush()
    try:
        handle = open(os.dup(descriptor), "w", newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write the file: {exc.strerror}", table=table) from None
    with handle:
        yield handle


def _local_out(out: str, table: str) -> str:
    """A CSV or JSON --out as the local path it names (`file:/x` is `/x`): written by Python, not
    through Hadoop, so a remote URI is refused rather than made as local folders `hdfs:/...`."""
    if "://" not in out and not out.startswith("file:"):
        return out
    local = local_path(out)
    if local is None:
        raise InputError(
            f"--out {out}: CSV and JSON are written to a local file; give a local path (Parquet is"
            " written by Spark, to any file system)",
            table=table,
        )
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
    if fmt == RowFormat.PARQUET:
        if not out:
            raise InputError("--format parquet needs --out DIR", table=table)
        # Spark's own refusal speaks of a save mode zipper has no flag for
        if Path(out).exists() or fs.exists(out):
            raise InputError(f"--out {out} already exists; give a new directory", table=table)
        try:
            df.write.mode("error").parquet(out)  # "error": the spelling a Spark Connect client knows too
        except BaseException:
            fs.delete(out)  # the folder a failed write leaves would refuse the next try
            raise
        return
    df = as_collected(df)
    write_text_rows(df.columns, df.toLocalIterator(), fmt, out, table)


def collected(df) -> tuple[list[str], list]:
    """The columns and rows of a small result (one key's versions), with values as written."""
    df = as_collected(df)
    return df.columns, df.collect()


def write_text_rows(columns: list[str], rows, fmt: str, out: str | None, table: str) -> None:
    """Rows as CSV (with a header) or JSON lines, to stdout or a local file."""

    def json_line(row) -> str:
        return json.dumps({c: _plain(v) for c, v in zip(columns, row)}, ensure_ascii=False, allow_nan=False) + "\n"

    line = _csv_line if fmt == RowFormat.CSV else json_line
    with _target(out, table) as handle:
        if fmt == RowFormat.CSV:
            _write_line(handle, _csv_line(columns), columns, columns, table)
        for row in rows:
            _write_line(handle, line(row), columns, row, table)


def _write_line(handle, line: str, columns: list[str], values, table: str) -> None:
    try:
        handle.write(line)
    except UnicodeEncodeError as exc:
        raise _unwritable(exc, columns, values, table) from None


def _unwritable(exc: UnicodeEncodeError, columns: list[str], values, table: str) -> InputError:
    """Stdout's encoding cannot write a value: name the column and the character."""

    def fits(value) -> bool:
        return value is None or _text(value).encode(exc.encoding, "ignore").decode(exc.encoding) == _text(value)

    bad = next((c for c, v in zip(columns, values) if not fits(v)), None)
    where = "" if bad is None else f" of column {bad}" if values is not columns else f" in column name {bad}"
    return InputError(
        f"stdout's encoding ({exc.encoding}) cannot write {ascii(exc.object[exc.start : exc.end])}{where};"
        " nothing was written: set PYTHONIOENCODING=utf-8 (or a UTF-8 locale), or give --out FILE"
        " (written in UTF-8)",
        table=table,
    )


_CELL_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
# SQL NULL in the table: Hive's text files write it so; the text `\N` is `\\N`, the text `NULL` is itself
NULL_CELL = "\\N"


def _cell(value, encoding: str = "utf-8") -> str:
    """One value of the aligned table on one line: a line break in a text value split its row
    and pushed the later columns under the first, so breaks and tabs are written `\\n`, `\\r`, `\\t`
    (and a backslash `\\\\`), which also keeps NULL (`\\N`) apart from any text. Characters the
    output's encoding cannot show are Python's escapes (`\\xe9`), not a failure half-way."""
    if value is None:
        return NULL_CELL
    return _shown(_text(value).translate(_CELL_ESCAPES), encoding)


def _shown(text: str, encoding: str) -> str:
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _columns_wide(text: str) -> int:
    """Terminal columns `text` takes: two for a wide (CJK) character, none for a combining mark;
    `len` misaligned every column after a Chinese name."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _padded(text: str, width: int) -> str:
    return text + " " * (width - _columns_wide(text))


def print_table(df, noun: tuple[str, str] = ("row", "rows")) -> None:
    print_table_rows(*collected(df), noun=noun)


def print_table_rows(columns: list[str], rows: list, noun: tuple[str, str] = ("row", "rows")) -> None:
    """Rows as an aligned text table for people, on stdout."""
    encoding = sys.stdout.encoding or "utf-8"
    cells = [[_cell(v, encoding) for v in row] for row in rows]
    header = [_shown(c, encoding) for c in columns]
    widths = [max([_columns_wide(h)] + [_columns_wide(r[i]) for r in cells]) for i, h in enumerate(header)]
    print("  ".join(_padded(h, w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(_padded(v, w) for v, w in zip(r, widths)))
    print(f"({len(rows)} {noun[len(rows) != 1]})")
