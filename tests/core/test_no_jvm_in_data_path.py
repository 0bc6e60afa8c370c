"""The data path talks to Spark through the DataFrame and SQL API only, so it can run on a Spark
Connect client, which has no JVM: no code in it may reach for py4j or the JVM behind a session."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["inputs", "transforms", "table", "jobs", "core", "tablespec"]
JVM_NAMES = re.compile(r"^(_jvm|_jsparkSession|_jsc|_jdf|sparkContext|py4j)$")


def jvm_names(source: str) -> list[tuple[int, str]]:
    """(line, name) for each name in the code (not its comments or strings) that reaches the JVM."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.NAME and JVM_NAMES.match(t.string)]


def jvm_uses(path: Path) -> list[str]:
    """`file:line: name` for each name in the file's code that reaches the JVM."""
    relative = path.relative_to(ROOT).as_posix()
    return [f"{relative}:{line}: {name}" for line, name in jvm_names(path.read_text())]


def test_the_data_path_reaches_no_jvm():
    found = [
        use
        for package in PACKAGES
        for path in sorted((ROOT / "zipper" / package).rglob("*.py"))
        for use in jvm_uses(path)
    ]
    assert found == [], "\n".join(found)


def test_the_check_finds_a_jvm_use_in_code_only():
    source = (
        "catalog = spark._jsparkSession.sessionState().catalog()\n"
        "# spark._jvm in a comment\n"
        "note = 'spark.sparkContext in a string'\n"
        "jvm = spark.sparkContext._jvm\n"
    )
    assert jvm_names(source) == [(1, "_jsparkSession"), (4, "sparkContext"), (4, "_jvm")]
