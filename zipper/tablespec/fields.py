"""The value types of a spec's keys: identifiers, tables, templates, reader options, Spark types.

Each type checks its value once, at load, with a message that names the key. They live apart
from the sections that use them (`source`, `model`), so a section reads as its keys alone."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from zipper.core.names import IDENTIFIER
from zipper.tablespec.modes import Tracked
from zipper.tablespec.sparktypes import check_atomic_type, check_type
from zipper.tablespec.templates import check_partition, check_template


def _identifier(value: str) -> str:
    if not IDENTIFIER.match(value):
        raise ValueError(f"{value!r} is not an identifier (letters, digits, _; not starting with a digit)")
    return value.lower()


def _qualified_table(value: str) -> str:
    parts = value.split(".")
    if len(parts) != 2:
        raise ValueError(f"{value!r} must be database.table")
    return ".".join(_identifier(p) for p in parts)


# `json_schema_extra` only describes a value to editors and the reference (`zipper schema`); the
# validators decide, with messages that name the key.
Identifier = Annotated[
    str, AfterValidator(_identifier), Field(json_schema_extra={"pattern": IDENTIFIER.pattern, "x-zipper": "identifier"})
]
QualifiedTable = Annotated[
    str,
    AfterValidator(_qualified_table),
    Field(json_schema_extra={"pattern": r"^[A-Za-z_]\w*\.[A-Za-z_]\w*$", "x-zipper": "database.table"}),
]
# A Jinja template of `ds`, rendered once here with a sample date so a typo fails at load.
Template = Annotated[str, AfterValidator(check_template), Field(json_schema_extra={"x-zipper": "Jinja template"})]


def _option_text(value: object) -> object:
    """Spark reader options are text; YAML's `header: true` or `samplingRatio: 0.5` mean 'true'
    and '0.5' (a mapping or list stays as it is, for the string check to refuse)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _one_spelling_each(options: dict[str, str]) -> dict[str, str]:
    """Spark reads option names in any case, and of two spellings of one it keeps whichever it is
    given last: which one a user meant cannot be told."""
    seen: dict[str, str] = {}
    for name in options:
        if name.lower() in seen:
            raise ValueError(f"{seen[name.lower()]!r} and {name!r} are one Spark option (names ignore case); keep one")
        seen[name.lower()] = name
    return options


ReaderOptions = Annotated[dict[str, Annotated[str, BeforeValidator(_option_text)]], AfterValidator(_one_spelling_each)]
PartitionTemplate = Annotated[
    str, AfterValidator(check_partition), Field(json_schema_extra={"x-zipper": "partition filter template"})
]
# A Spark SQL type a Hive table can store (`columns:`); a CSV input's types are atomic (`source.schema`).
ColumnType = Annotated[str, AfterValidator(check_type), Field(json_schema_extra={"x-zipper": "Spark SQL type"})]
CsvColumnType = Annotated[
    str, AfterValidator(check_atomic_type), Field(json_schema_extra={"x-zipper": "atomic Spark SQL type"})
]


def _all_or_list(value: object) -> object:
    if isinstance(value, str) and value != Tracked.ALL:
        raise ValueError(f"{value!r} is neither 'all' nor a list; for one column write [{value}]")
    return value


def _tracked_member(value: str | list[str]) -> Tracked | list[str]:
    return Tracked(value) if isinstance(value, str) else value


# `track_columns`: checked and described (JSON Schema, error messages) as the text a spec writes,
# then held as `Tracked.ALL`, so code compares a member rather than a text.
TrackedColumns = Annotated[
    Literal["all"] | list[Identifier], BeforeValidator(_all_or_list), AfterValidator(_tracked_member)
]


def choice(kind: type[StrEnum]):
    """A spec key that takes one of an enum's values: checked and described (JSON Schema, error
    messages) as a `Literal` of its values, then held as the enum's member."""
    return Annotated[Literal[tuple(m.value for m in kind)], AfterValidator(kind)]


class StrictModel(BaseModel):
    """A spec section: an unknown key is refused, and a loaded spec never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
