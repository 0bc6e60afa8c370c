"""`col=value` flags naming one key: `zipper history --key` and `zipper correct --erase-key`."""

from __future__ import annotations

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
