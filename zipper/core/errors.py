"""One exception type for every problem a user can fix; the CLI prints it as one line.

`final` says whether another try of the same run would fail the same way (a bad spec, input
that breaks the rules): a scheduler then fails the task at once instead of retrying it. Input
that is not there yet, or that could not be read, may be there or readable on the next try."""

from __future__ import annotations

import itertools
import re
import urllib.parse
from dataclasses import dataclass

from zipper.core.paths import user_path


class ZipperError(Exception):
    """A user-facing failure: bad spec, bad input, wrong table state."""

    final = False  # another try may succeed: the table's state or the files may change meanwhile

    def __init__(self, message: str, *, table: str | None = None, ds: str | None = None):
        self.table = table
        self.ds = ds
        self.detail = message
        super().__init__(self.render())

    def render(self) -> str:
        where = " ".join(part for part in (self.table, self.ds) if part)
        return f"{where}: {self.detail}" if where else self.detail

    def reworded(self, detail: str, *, table: str | None = None, ds: str | None = None) -> ZipperError:
        """The same kind of error (and so the same `final`) with another message: for a caller
        that adds the table, the date or what it was doing."""
        return type(self)(detail, table=table, ds=ds)


class SpecError(ZipperError):
    """A spec file that does not validate. `problems` holds one line per problem (file, key, what
    was expected), for `zipper validate`; the message joins them on one line."""

    final = True

    def __init__(self, message: str, *, table: str | None = None, ds: str | None = None, problems=None):
        super().__init__(message, table=table, ds=ds)
        self.problems: list[str] = list(problems) if problems else [self.render()]


class InputError(ZipperError):
    """An increment or base that violates the rules (null or duplicate keys, bad columns): the
    same files fail the same way on every try."""

    final = True


class MissingInputError(InputError):
    """The input is not there, or not whole, yet: not found, still being written, a numbered
    file missing. A later try may find it (the sensor may be disabled)."""

    final = False


class InputNotFoundError(MissingInputError):
    """Nothing is there at all: the path matches nothing, or the table's partition is absent. Unlike
    an input still being written, a table with `on_missing_input: skip` commits its date as skipped.
    `missing`: what was looked for (the rendered path, the table's partition)."""

    def __init__(self, message: str, *, table: str | None = None, ds: str | None = None, missing: str = ""):
        super().__init__(message, table=table, ds=ds)
        self.missing = missing


class UnreadableInputError(InputError):
    """Spark or the file system failed reading the input: the cause may pass (an I/O failure)."""

    final = False


class StateError(ZipperError):
    """The table is not in a state that allows the requested operation. Not final: a state can
    change between tries (another run publishing, a missing date merged meanwhile)."""


class RefusedBySpecError(StateError):
    """The spec's own rule refuses the operation (`on_past_date: error`): another try fails the
    same way until someone runs what the message names, so a scheduler does not retry it."""

    final = True


class LargeChangeError(ZipperError):
    """A day whose change volume is far above the table's usual (the change-volume guard): the same
    inputs are refused the same way until someone accepts the change, so a scheduler does not retry."""

    final = True


class AuditError(ZipperError):
    """Written data does not reconcile; nothing was published."""


def java_messages(exc: BaseException) -> list[str]:
    """Messages along the cause chain of a Java exception that reached Python, outermost first,
    each `class: message`: read from the Java stack trace the exception carries as text (PySpark's
    errors keep it, a Spark Connect client's too when the server sends it; a classic session's
    bridge error says it), so nothing is asked of a JVM."""
    text = _stack_trace(exc)
    if not text:
        return []
    messages: list[str] = []
    for block in re.split(r"\n(?=Caused by: )", text.strip()):
        lines = block.removeprefix("Caused by: ").split("\n")
        head = "\n".join(itertools.takewhile(lambda line: not line.startswith("\t"), lines))
        messages.append(head)
        if len(messages) == 20:
            break
    if messages and ": " not in messages[0].split("\n")[0]:  # Spark Connect's trace names the class alone
        messages[0] = f"{messages[0]}: {_own_message(exc)}"
    return messages


def _stack_trace(exc: BaseException) -> str:
    """The Java stack trace text of `exc`, or empty when it has none."""
    for name in ("_stackTrace", "_stacktrace"):
        text = getattr(exc, name, None)
        if isinstance(text, str) and text.strip():
            return text
    if type(exc).__name__ == "Py4JJavaError":  # a classic session's Java failure PySpark has no class for
        text = str(exc)
        return text.split("\n: ", 1)[1] if "\n: " in text else ""
    return ""


def _own_message(exc: BaseException) -> str:
    getter = getattr(exc, "getMessage", None)
    return str(getter() if callable(getter) else exc)


_CLASS_PREFIX = re.compile(r"^(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*): ")  # "org.apache.spark.SparkException: "
_ERROR_CLASS = re.compile(r"^\[[A-Z0-9_.]+\] *")  # "[FAILED_READ_FILE.NO_HINT] "
_SQLSTATE = re.compile(r"\.? *SQLSTATE: \w+\.?$")
# "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file F.  SQLSTATE: KD001", or with
# more text after F ("... file F. Could not read footer. Please ensure ...").
_READ_FILE = re.compile(r"FAILED_READ_FILE[A-Z_.]*\] Encountered error while reading file (\S+?)\.(?:\s|$)")
# Spark's wrappers of a task's failure ("Job aborted due to stage failure: Task 0 in stage 3.0 failed 1
# times, most recent failure: Lost task ...", "Exception thrown in awaitResult"): the task's own
# failure follows them in the chain, and says what failed.
_WRAPPER = re.compile(r"^(?:[\w.$]+: )?(?:Job aborted due to stage failure|Exception thrown in awaitResult)")


# Spark's Parquet reader on a file whose column has another type than the one it reads the input as
# (one file of a day with `amount` as string, the others double; a source table's older partition):
# "...SchemaColumnConvertNotSupportedException: column: [amount], physicalType: BINARY, logicalType: double".
_COLUMN_TYPE = re.compile(
    r"SchemaColumnConvertNotSupportedException: column: \[(.*)\], physicalType: (\w+),"
    r" logicalType: (.+)$"
)


@dataclass(frozen=True)
class ColumnTypeMismatch:
    """A column a file holds in another type than the one Spark read it as."""

    file: str | None  # as Spark names it (a URI), when it does
    column: str  # a nested field as `outer.inner`
    parquet_type: str  # the file's physical type (BINARY, INT64, ...): a string is BINARY
    expected: str  # the Spark type it was read as

    def reason(self, file_type: str | None = None) -> str:
        """`file_type`: the column's type as Spark reads the file alone, if known; else Parquet's."""
        held = file_type or f"Parquet {self.parquet_type}"
        return f"column {self.column!r} is {held} in the file, but read as {self.expected}"


def column_type_mismatch(exc: BaseException) -> ColumnTypeMismatch | None:
    """The column, file and types of a failure reading a Parquet column as another type."""
    for message in java_messages(exc):
        found = _COLUMN_TYPE.search((message.strip().splitlines() or [""])[0])
        if found:
            column, parquet_type, expected = found.groups()
            return ColumnTypeMismatch(failed_file(exc), ".".join(column.split(", ")), parquet_type, expected.strip())
    return None


def _plain(message: str) -> str:
    """A Java message's first line without its package, Spark error class or SQLSTATE: Spark's
    own error classes speak for themselves; others keep their short class name."""
    line = (message.strip().splitlines() or [""])[0]
    match = _CLASS_PREFIX.match(line)
    rest = line[match.end() :] if match else line
    if _ERROR_CLASS.match(rest):
        return _SQLSTATE.sub("", _ERROR_CLASS.sub("", rest)).strip()
    return f"{match.group(1)}: {rest}" if match else rest


def summarize_failure(exc: BaseException, limit: int = 600) -> str:
    """One line for a Spark, Java or I/O failure: the outer message and its root cause, the file
    when Spark failed reading one (`cannot read file F: <root cause>`)."""
    path, reason = read_failure(exc, limit)
    return clip(f"cannot read file {path}: {reason}", limit) if path else reason


def read_failure(exc: BaseException, limit: int = 600) -> tuple[str | None, str]:
    """(the file Spark failed reading, as a local path when local; or None) and the reason in one
    line: for a file, its root cause with the path it repeats said as "it". Spark's job-abort
    wrappers are left out: the task's failure under them is the message."""
    chain = java_messages(exc)
    if not chain:
        return None, clip((str(exc).strip().splitlines() or [""])[0] or type(exc).__name__, limit)
    mismatch = column_type_mismatch(exc)
    if mismatch is not None:  # Spark's wording is its reader's class name and Parquet's physical type
        return (user_path(mismatch.file) if mismatch.file else None), clip(mismatch.reason(), limit)
    chain = [m for m in chain if not _WRAPPER.match(m.strip())] or chain
    first = _plain(chain[0])
    root = _plain(chain[-1]) if len(chain) > 1 else ""
    read_file = _READ_FILE.search(chain[0])
    if read_file:
        path = user_path(_unquoted(read_file))
        return path, clip(_as_it(root, path) if root else first, limit)
    return None, clip(first + (f"; caused by {root}" if root and root != first else ""), limit)


def failed_file(exc: BaseException) -> str | None:
    """The file Spark failed reading, if that is what `exc` is."""
    for message in java_messages(exc) or [str(exc)]:
        match = _READ_FILE.search(message)
        if match:
            return _unquoted(match)
    return None


def clip(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word boundary and marked when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 4]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " ..."


def _as_it(reason: str, path: str) -> str:
    """ "RuntimeException: file:/d/f.parquet is not a Parquet file" -> "it is not a Parquet file";
    the path further on as the file's name ("Checksum error: f.orc at 0"): the line names it already."""
    spelled = r"(?:file:)?/*" + re.escape(path.lstrip("/"))
    reason = re.sub(r"^(?:[A-Z][\w$]*: )?" + spelled + r"(?=\s)", "it", reason, count=1)
    return re.sub(spelled + r"(?=[\s:,.;)]|$)", path.rstrip("/").rsplit("/", 1)[-1], reason)


def _unquoted(read_file: re.Match) -> str:
    """The path as the file system names it: Spark's message URL-encodes it (a space is %20)."""
    return urllib.parse.unquote(read_file.group(1))
