"""`col=value` flags: one key (`zipper history --key`, `zipper correct --erase-key`), a keys file
(`--keys-file`), the columns to set (`--set`)."""

from __future__ import annotations

import csv
from pathlib import Path

from zipper.core.errors import InputError


def parse_key_values(
    pairs: list[str] | tuple[str, ...],
    keys: list[str],
    *,
    flag: str,
    twice: str,
    missing_hint: str = "",
    same_twice: bool = False,
    table: str | None = None,
    ds: str | None = None,
) -> dict[str, str]:
    """One value per key column, from `col=value` texts (columns case-blind), refused as one line
    naming `flag`. `same_twice`: a column given twice with the same value is taken (and two
    values are shown when they differ); `twice` and `missing_hint` end those refusals."""
    values: dict[str, str] = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        column = column.strip().lower()
        if not sep or not column:
            raise InputError(f"{flag} {pair!r}: expected column=value", table=table, ds=ds)
        if column not in keys:
            raise InputError(f"{flag} {column!r} is not a key column; keys are {keys}", table=table, ds=ds)
        if column in values and not (same_twice and values[column] == value):
            shown = f" ({values[column]!r} and {value!r})" if same_twice else ""
            raise InputError(f"{flag} {column!r} given twice{shown}; {twice}", table=table, ds=ds)
        values[column] = value
    missing = [k for k in keys if k not in values]
    if missing:
        hint = f" ({missing_hint})" if missing_hint else ""
        raise InputError(f"{flag} missing for key columns {missing}{hint}", table=table, ds=ds)
    return values


def erase_key_values(pairs: tuple[str, ...], keys: list[str], **where) -> tuple[str, ...]:
    """`--erase-key col=value`, one per key column: the key's values in the key columns' order."""
    values = parse_key_values(
        pairs,
        keys,
        flag="--erase-key",
        twice="give --keys-file for several keys",
        missing_hint="one --erase-key per key column",
        **where,
    )
    return tuple(values[k] for k in keys)


def read_keys_file(path: Path, keys: list[str], **where) -> list[tuple[str, ...]]:
    """A CSV file whose header names the key columns (other columns are ignored)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = [h.strip().lower() for h in next(reader, [])]
            missing = [k for k in keys if k not in header]
            if missing:
                raise InputError(f"--keys-file {path}: header {header} lacks the key columns {missing}", **where)
            positions = [header.index(k) for k in keys]
            rows = []
            for number, row in enumerate(reader, start=2):
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise InputError(
                        f"--keys-file {path}: line {number} has {len(row)} fields, the header {len(header)}", **where
                    )
                rows.append(tuple(row[p] for p in positions))
    except OSError as exc:
        raise InputError(f"--keys-file {path}: {exc.strerror or exc}", **where) from None
    if not rows:
        raise InputError(f"--keys-file {path} lists no key", **where)
    return rows


def assignment_texts(
    pairs: tuple[str, ...],
    types: dict[str, str],
    protected: list[str],
    *,
    refused: dict[str, str] | None = None,
    **where,
) -> dict[str, str]:
    """--set col=value: a data column that is not `protected` (keys, begin/end), named once; its value as text.
    `refused`: the columns the table derives (zipper's own, the updated_at column), each with why it
    cannot be set."""
    refused = refused or {}
    by_lower = {name.lower(): name for name in types}
    texts: dict[str, str] = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        name = by_lower.get(column.strip().lower())
        if not sep or not column.strip():
            raise InputError(f"--set {pair!r}: expected column=value", **where)
        if name is None:
            raise InputError(
                f"--set {column.strip()!r} is not a column of the table; columns are {list(types)}", **where
            )
        if name in protected:
            raise InputError(
                f"--set {name!r}: a key column or the begin/end dates cannot be set; erase or delete the versions instead",
                **where,
            )
        if name in refused:
            raise InputError(f"--set {name!r}: {refused[name]}", **where)
        if types[name].startswith(("array", "map", "struct")):
            raise InputError(f"--set {name!r}: a column of type {types[name]} cannot be set here", **where)
        if name in texts:
            raise InputError(f"--set {name!r} given twice", **where)
        texts[name] = value
    return texts
