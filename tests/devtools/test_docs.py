"""The documentation agrees with the product: the README stays short and its links resolve, and
every spec shown in the README or the docs loads as a real spec would (`mkdocs build --strict` in
the test command checks the site's own links)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from zipper.core.errors import SpecError
from zipper.tablespec.loader import SpecLoader
from zipper.tablespec.model import TableSpec

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").rglob("*.md"))
README_MAX_LINES = 250
FENCE = re.compile(r"^```yaml[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# What a snippet that shows only part of a spec (a `source:` block, the `airflow:` keys) is
# completed with, so that it is validated as a whole spec.
MINIMAL = {"name": "snippet", "table": "dw.snippet", "keys": ["id"], "source": {"path": "/in/ds={{ ds }}"}}
MINIMAL["start_date"] = "2024-01-01"


def _spec_snippets():
    for path in [README, *PAGES]:
        for number, block in enumerate(FENCE.findall(path.read_text(encoding="utf-8")), 1):
            raw = yaml.load(block, Loader=SpecLoader)
            if isinstance(raw, dict) and set(raw) <= set(TableSpec.model_fields) | {"source"}:
                yield pytest.param(raw, id=f"{path.relative_to(REPO)}#{number}")


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; new behaviour gets a page in docs/"


def test_the_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    targets = [
        t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t and not t.startswith("#")
    ]
    assert targets, "the README links into docs/"
    missing = [t for t in targets if t and not (REPO / t).exists()]
    assert missing == []


@pytest.mark.parametrize("raw", list(_spec_snippets()))
def test_every_spec_shown_in_the_docs_loads(raw):
    spec = {**MINIMAL, **raw}
    if "source" in raw and "path" not in raw["source"] and raw["source"].get("format") != "table":
        spec["source"] = {**MINIMAL["source"], **raw["source"]}
    if spec["source"].get("mode") == "landing_zone" and "keys" not in raw:
        spec["keys"] = []
    try:
        TableSpec.model_validate(spec)
    except Exception as exc:  # the loader's words would name the key; pydantic's are enough here
        raise SpecError(f"a spec in the docs does not load: {exc}") from None
