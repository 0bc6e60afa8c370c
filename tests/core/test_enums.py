"""Every closed set of decisions is a `StrEnum`; code outside the enum's own module compares with
its members, never with their texts. A new `== "erase"` (or `!= "local"`, `case "noop":`,
`in ("replay", ...)`) in zipper/ fails here, unless its file is listed below with the reason."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import pytest

from zipper.core.alter import AlterKind
from zipper.core.corrections import CorrectionKind
from zipper.core.layout import Slot
from zipper.core.predicate import ValueKind
from zipper.core.reports import RunAction
from zipper.jobs.plan import PlanAction
from zipper.runtime.metastore import MetastoreMode
from zipper.table.state import CommitAction
from zipper.tablespec.modes import (
    DeleteMatch,
    EndStyle,
    HardDeletes,
    OnAnomaly,
    OnPastDate,
    SensorMode,
    SourceFormat,
    SourceMode,
)

ZIPPER = Path(__file__).resolve().parents[2] / "zipper"

# Files of zipper/ (relative to it) that may still compare with an enum's texts, and why.
NOT_THIS_SET = "the same word in another vocabulary, not this enum's value"
EXEMPT: dict[type[StrEnum], dict[str, str]] = {
    SourceFormat: {
        "cli/table_verbs.py": NOT_THIS_SET + " (`zipper history --format table`: how the CLI prints)",
        "cli/output.py": NOT_THIS_SET + " (the CLI's output formats csv, json, parquet)",
    },
    ValueKind: {
        "tablespec/sparktypes.py": NOT_THIS_SET + " (Spark SQL type names and the type parser's tokens)",
        "devtools/reference.py": NOT_THIS_SET + " (JSON Schema types)",
        "inputs/modes/cdc.py": NOT_THIS_SET + " (Spark SQL type names)",
    },
}
ENUMS = [
    CorrectionKind,
    AlterKind,
    RunAction,
    PlanAction,
    CommitAction,
    MetastoreMode,
    SourceMode,
    SourceFormat,
    EndStyle,
    OnPastDate,
    DeleteMatch,
    HardDeletes,
    OnAnomaly,
    SensorMode,
    ValueKind,
    Slot,
]


def _patterns(values: list[str]) -> tuple[re.Pattern, re.Pattern]:
    word = "|".join(map(re.escape, values))
    text = rf"""["'](?:{word})["']"""
    compared = re.compile(
        rf"(?:==|!=)\s*{text}"  # x == "erase"
        rf"|{text}\s*(?:==|!=)"  # "erase" == x
        rf"|\bcase\s+{text}"  # case "erase":
    )
    member_of = re.compile(rf"\bin\s*[(\[{{][^)\]}}]*{text}")  # x in ("erase", ...), not a for loop's
    return compared, member_of


def _looped(line: str, at: int) -> bool:
    """Whether the `in` at `at` is a for loop's (`for kind in ("csv", "json")`), not a test."""
    return re.search(r"\bfor\s+[\w\s,()]*$", line[:at]) is not None


def comparisons(text: str, kind: type[StrEnum]) -> list[str]:
    """The lines of `text` that compare something with one of `kind`'s values as a string."""
    compared, member_of = _patterns([member.value for member in kind])
    return [
        line.strip()
        for line in text.splitlines()
        if compared.search(line) or any(not _looped(line, m.start()) for m in member_of.finditer(line))
    ]


def _own_module(kind: type[StrEnum]) -> Path:
    return ZIPPER.parent / (kind.__module__.replace(".", "/") + ".py")


@pytest.mark.parametrize("kind", ENUMS, ids=lambda kind: kind.__name__)
def test_no_string_comparison_outside_the_enum_module(kind):
    exempt = EXEMPT.get(kind, {})
    found = []
    for path in sorted(ZIPPER.rglob("*.py")):
        relative = path.relative_to(ZIPPER).as_posix()
        if path == _own_module(kind) or relative in exempt:
            continue
        found += [f"zipper/{relative}: {line}" for line in comparisons(path.read_text(encoding="utf-8"), kind)]
    assert not found, f"compare with {kind.__name__}'s members, not their texts:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'if request.kind == "erase":',
        "if kind != 'set' and purge:",
        'if "delete" == kind:',
        '        case "erase":',
        'if kind not in ("erase", "set"):',
    ],
)
def test_the_check_sees_a_string_comparison(line):
    assert comparisons(line, CorrectionKind) == [line.strip()]


@pytest.mark.parametrize(
    "line",
    [
        "if request.kind == CorrectionKind.ERASE:",
        'what = "erase keys"',
        'if kind == "erased":',
        'x = {"set": 1}',
        'for kind in ("erase", "set"):',
    ],
)
def test_the_check_passes_member_comparisons(line):
    assert comparisons(line, CorrectionKind) == []


def test_each_enum_equals_its_text():
    """Members equal their texts and print as them: JSON, metastore properties and messages keep
    the plain value."""
    for kind in ENUMS:
        for member in kind:
            assert member == member.value and str(member) == member.value and f"{member}" == member.value
            assert type(str(member)) is str


def test_exempt_files_exist():
    for kind, files in EXEMPT.items():
        for relative, reason in files.items():
            assert reason and (ZIPPER / relative).is_file(), (kind.__name__, relative)
