"""What `zipper alter` is asked to do, as one type: a column renamed or dropped in every version
of a table. Pyspark-free, so the CLI checks its flags before the table's lock or Spark."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from zipper.core.errors import InputError
from zipper.core.names import IDENTIFIER


class AlterKind(StrEnum):
    """rename: a column gets a new name in every version. drop: a column leaves every version,
    and versions that differed only in it become one."""

    RENAME = "rename"
    DROP = "drop"


@dataclass(frozen=True)
class AlterRequest:
    kind: AlterKind
    column: str  # the column renamed or dropped (lower case, as the metastore keeps it)
    new_name: str = ""  # rename: its new name
    reason: str = ""
    by: str = ""

    @property
    def edits(self) -> dict[str, str | None]:
        """The table's column edit: old -> new, or old -> None for a drop."""
        return {self.column: self.new_name if self.kind == AlterKind.RENAME else None}

    def describe(self) -> str:
        if self.kind == AlterKind.RENAME:
            return f"rename of column {self.column!r} to {self.new_name!r}"
        return f"drop of column {self.column!r}"

    @classmethod
    def from_flags(cls, *, rename: str | None, drop: str | None, table: str, reason: str = "", by: str = ""):
        """The request of `--rename-column OLD=NEW` or `--drop-column C` (exactly one)."""
        if bool(rename) == bool(drop):
            raise InputError("give one of --rename-column OLD=NEW or --drop-column COLUMN", table=table)
        if drop:
            return cls(AlterKind.DROP, _identifier(drop, "--drop-column", table), reason=reason, by=by)
        old, sep, new = rename.partition("=")
        if not sep:
            raise InputError(f"--rename-column {rename!r} is not OLD=NEW", table=table)
        old, new = _identifier(old, "--rename-column", table), _identifier(new, "--rename-column", table)
        if old == new:
            raise InputError(f"--rename-column {rename!r}: the new name is the old one", table=table)
        return cls(AlterKind.RENAME, old, new, reason=reason, by=by)


def _identifier(text: str, flag: str, table: str) -> str:
    name = text.strip()
    if not IDENTIFIER.match(name):
        raise InputError(
            f"{flag}: {text!r} is not a column name (letters, digits, _; not starting with a digit)", table=table
        )
    return name.lower()
