"""What a row-level correction (`zipper correct`) is asked to do, as one type: the CLI builds it
from its flags, the Airflow correct DAG from its trigger form, and the job takes it. Pyspark-free,
so the DAG parser may build it. Its checks run once, in the constructor, in the words of whoever
asked (`via`): the CLI's flags or the form's params."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from zipper.core.dates import iso_date
from zipper.core.errors import InputError

MAX_TEXT = 1000  # a reason or predicate longer than this would not fit the metastore's parameter value
FORM_PARAMS = (
    "kind",
    "erase_keys",
    "keys_file",
    "set_values",
    "where",
    "from_date",
    "to_date",
    "reason",
    "dry_run",
    "purge",
)


class CorrectionKind(StrEnum):
    """erase: remove every version of the given keys (recorded only as salted hashes). set: change
    columns of the versions a predicate matches. delete: remove the versions a predicate matches."""

    ERASE = "erase"
    SET = "set"
    DELETE = "delete"


class Via(StrEnum):
    """Who asked, and so the words of a refusal: the CLI's flags or the trigger form's params."""

    CLI = "cli"
    FORM = "form"


def is_dry_run(params: dict) -> bool:
    """Only an explicit false writes: a form left as it opened, or a `--conf` without dry_run, changes nothing."""
    return params.get("dry_run") not in (False, "false", "False")


def _is_true(value: Any) -> bool:
    return value in (True, "true", "True")


def _text(params: dict, key: str) -> str:
    value = params.get(key)
    return "" if value is None else str(value).strip()


def _form_pairs(params: dict, key: str) -> tuple[str, ...]:
    """`col=value; col2=value2` as the CLI's COL=VALUE arguments: spaces around `;` and `=` are dropped,
    empty parts too; a part that is not column=value is kept as written, for the check to name."""
    pairs = []
    for part in _text(params, key).split(";"):
        column, sep, value = part.partition("=")
        if part.strip():
            pairs.append(f"{column.strip()}={value.strip()}" if sep and column.strip() else part.strip())
    return tuple(pairs)


@dataclass(frozen=True)
class CorrectionRequest:
    """One correction. `first`/`last` may be given as text: the constructor reads them as dates."""

    kind: CorrectionKind  # a plain text is taken as its member
    reason: str
    by: str = ""
    where: str = ""  # set, delete
    assignments: tuple[str, ...] = ()  # set: "col=value"
    erase_keys: tuple[str, ...] = ()  # erase: "col=value", one per key column
    keys_file: str = ""  # erase: a CSV file whose header names the key columns
    first: dt.date | None = None  # set, delete: versions valid on or after
    last: dt.date | None = None  # set, delete: versions valid on or before
    dry_run: bool = False
    purge: bool = False  # erase: remove the superseded directories at once
    table: str | None = field(default=None, compare=False)  # names the table in a refusal
    via: Via = field(default=Via.CLI, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "kind", CorrectionKind(self.kind))
        object.__setattr__(self, "via", Via(self.via))
        for check in _CLI_CHECKS if self.via == Via.CLI else _FORM_CHECKS:
            check(self)
        object.__setattr__(self, "reason", self.reason.strip())

    @classmethod
    def from_flags(cls, *, erase_keys, keys_file, assignments, delete: bool, table: str, **given) -> CorrectionRequest:
        """The CLI's flags: the kind is the one kind of flag given."""
        erase = bool(erase_keys or keys_file)
        kinds = [kind for kind, on in (("erase", erase), ("set", assignments), ("delete", delete)) if on]
        if len(kinds) != 1:
            raise InputError(
                "give one of --erase-key (or --keys-file), --set with --where, or --delete with --where"
                + (f"; got {' and '.join(kinds)}" if kinds else ""),
                table=table,
            )
        return cls(
            kinds[0],
            erase_keys=tuple(erase_keys),
            keys_file=keys_file or "",
            assignments=tuple(assignments),
            table=table,
            **given,
        )

    @classmethod
    def from_form(cls, params: dict, *, table: str) -> CorrectionRequest:
        """The Airflow trigger form's params; a refusal's message is the part after `correct param `."""
        unknown = sorted(set(params) - set(FORM_PARAMS))
        if unknown:
            raise InputError(f"{unknown[0]!r} is not a param of this DAG: {', '.join(FORM_PARAMS)}", table=table)
        kind = params.get("kind")
        if kind in (None, ""):
            raise InputError("'kind' is required: erase, set or delete", table=table)
        if kind not in tuple(CorrectionKind):
            raise InputError(f"'kind': {kind!r} is not erase, set or delete", table=table)
        return cls(
            kind,
            reason=_text(params, "reason"),
            where=_text(params, "where"),
            assignments=_form_pairs(params, "set_values"),
            erase_keys=_form_pairs(params, "erase_keys"),
            keys_file=_text(params, "keys_file"),
            first=params.get("from_date") or None,
            last=params.get("to_date") or None,
            dry_run=is_dry_run(params),
            purge=_is_true(params.get("purge")),
            table=table,
            via=Via.FORM,
        )

    def argv(self, table_name: str) -> list[str]:
        """`correct NAME ...`: the CLI's arguments for this request, one value per element."""
        if self.kind == CorrectionKind.ERASE:
            selection = (
                [arg for pair in self.erase_keys for arg in ("--erase-key", pair)]
                if self.erase_keys
                else ["--keys-file", self.keys_file]
            )
        else:
            changes = (
                [arg for pair in self.assignments for arg in ("--set", pair)]
                if self.kind == CorrectionKind.SET
                else ["--delete"]
            )
            selection = [*changes, "--where", self.where]
        return (
            ["correct", table_name, *selection]
            + (["--from", self.first.isoformat()] if self.first else [])
            + (["--to", self.last.isoformat()] if self.last else [])
            + ["--reason", self.reason]
            + (["--dry-run"] if self.dry_run else [])
            + (["--purge"] if self.purge else [])
            + ["--json-report"]
        )

    def overlong(self) -> str | None:
        """The refusal of a reason or predicate the commit record could not keep (the job checks it
        once the table's state is read)."""
        for flag, value in (("--reason", self.reason), ("--where", self.where)):
            if len(value) > MAX_TEXT:
                return f"{flag} is {len(value)} characters; at most {MAX_TEXT} are kept"
        return None

    # -- the checks, each once; _CLI_CHECKS and _FORM_CHECKS give their order and words --------

    def _refuse(self, message: str) -> None:
        raise InputError(message, table=self.table)

    def _date(self, name: str, words: str) -> None:
        value = getattr(self, name)
        if value is None or isinstance(value, dt.date):
            return
        try:
            object.__setattr__(self, name, iso_date(str(value)))
        except ValueError:
            self._refuse(words.format(value=value))

    def _cli_erase_only_keys(self) -> None:
        if self.kind == CorrectionKind.ERASE and (self.where or self.first or self.last):
            self._refuse("an erasure removes every version of its keys: --where, --from and --to do not apply")

    def _cli_one_key_source(self) -> None:
        if self.erase_keys and self.keys_file:
            self._refuse("give --erase-key or --keys-file, not both")

    def _cli_where(self) -> None:
        if self.kind != CorrectionKind.ERASE and not (self.where or "").strip():
            self._refuse(f"--{'set' if self.kind == CorrectionKind.SET else 'delete'} needs --where PREDICATE")

    def _cli_purge(self) -> None:
        if self.purge and self.kind != CorrectionKind.ERASE:
            self._refuse("--purge follows an erasure (--erase-key or --keys-file)")

    def _cli_reason(self) -> None:
        if not self.reason.strip():
            self._refuse("--reason is empty; say why, for the commit log")

    def _cli_dates(self) -> None:
        self._date("first", "--from {value!r} is not a date (YYYY-MM-DD)")
        self._date("last", "--to {value!r} is not a date (YYYY-MM-DD)")

    def _form_reason(self) -> None:
        if not self.reason.strip():
            self._refuse("'reason' is required: say why, for the commit log")

    def _form_pairs(self) -> None:
        for key, pairs in (("erase_keys", self.erase_keys), ("set_values", self.assignments)):
            for pair in pairs:
                column, sep, _ = pair.partition("=")
                if not sep or not column.strip():
                    self._refuse(f"{key!r}: {pair!r} is not column=value")

    def _form_dates(self) -> None:
        self._date("first", "'from_date': {value!r} is not a date (YYYY-MM-DD)")
        self._date("last", "'to_date': {value!r} is not a date (YYYY-MM-DD)")

    def _form_kind_params(self) -> None:
        given = [key for key, value in (("erase_keys", self.erase_keys), ("keys_file", self.keys_file)) if value]
        if self.kind != CorrectionKind.ERASE and given:
            self._refuse(f"{given[0]!r} is for kind erase, not {self.kind}")
        if self.kind != CorrectionKind.SET and self.assignments:
            self._refuse(f"'set_values' is for kind set, not {self.kind}")
        if self.kind != CorrectionKind.ERASE and self.purge:
            self._refuse(f"'purge' follows an erasure, not kind {self.kind}")

    def _form_erase(self) -> None:
        if self.kind != CorrectionKind.ERASE:
            return
        if bool(self.erase_keys) == bool(self.keys_file):
            self._refuse(
                "'erase_keys' and 'keys_file' are both given: give one"
                if self.erase_keys
                else "'erase_keys' (column=value; ...) or 'keys_file' is required for kind erase"
            )
        if self.keys_file and not self.keys_file.startswith("/"):
            self._refuse(f"'keys_file': {self.keys_file!r} is not an absolute path on the worker")
        extra = [
            key for key, value in (("where", self.where), ("from_date", self.first), ("to_date", self.last)) if value
        ]
        if extra:
            self._refuse(f"{extra[0]!r} does not apply to kind erase: it removes every version of its keys")

    def _form_set_delete(self) -> None:
        if self.kind == CorrectionKind.ERASE:
            return
        if self.kind == CorrectionKind.SET and not self.assignments:
            self._refuse("'set_values' (column=value; ...) is required for kind set")
        if not self.where:
            self._refuse(f"'where' is required for kind {self.kind}: which versions")
        if self.first and self.last and self.last < self.first:
            self._refuse(f"'to_date': {self.last} is before from_date {self.first}")


_CLI_CHECKS = (
    CorrectionRequest._cli_erase_only_keys,
    CorrectionRequest._cli_one_key_source,
    CorrectionRequest._cli_where,
    CorrectionRequest._cli_purge,
    CorrectionRequest._cli_reason,
    CorrectionRequest._cli_dates,
)
_FORM_CHECKS = (
    CorrectionRequest._form_reason,
    CorrectionRequest._form_pairs,
    CorrectionRequest._form_dates,
    CorrectionRequest._form_kind_params,
    CorrectionRequest._form_erase,
    CorrectionRequest._form_set_delete,
)
