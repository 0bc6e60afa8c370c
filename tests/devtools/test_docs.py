"""The documentation agrees with the product: the README stays short and its links resolve, and
every spec shown in the README or the docs loads as a real spec would. The test command's strict
site build checks the site's own links; here a copy of the site shows that it can fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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


def _strict_build_command() -> str:
    """The site build exactly as the test command runs it, so a flag that hides warnings shows here."""
    lines = [
        line.strip()
        for line in (REPO / "scripts" / "test.sh").read_text(encoding="utf-8").splitlines()
        if "mkdocs build" in line and not line.lstrip().startswith("#")
    ]
    assert len(lines) == 1, lines
    return lines[0]


def _build_site(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(["bash", "-c", _strict_build_command()], cwd=root, env=env, capture_output=True, text=True)


@pytest.fixture
def site_copy(tmp_path):
    """The site's sources in a folder of their own: docs/, mkdocs.yml and the root files the pages show."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    for path in [REPO / "mkdocs.yml", *REPO.glob("*.md")]:
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "zipper").symlink_to(REPO / "zipper")  # the build hook, by its path in mkdocs.yml
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    return tmp_path


def test_the_site_builds_strictly_with_the_changelogs_links_working(site_copy):
    result = _build_site(site_copy)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output
    # CHANGELOG.md links `docs/dry-runs.md#...`, right where GitHub shows it; inside the site that is the page beside.
    changelog = (site_copy / "build" / "site" / "changelog" / "index.html").read_text(encoding="utf-8")
    assert 'href="../dry-runs/#reruns-and-rebuilds"' in changelog
    assert 'href="docs/' not in changelog


def test_a_broken_link_fails_the_strict_build(site_copy):
    index = site_copy / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    changelog = site_copy / "CHANGELOG.md"
    changelog.write_text(
        changelog.read_text(encoding="utf-8") + "\n- [gone](docs/no-such-section.md)\n", encoding="utf-8"
    )
    result = _build_site(site_copy)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "'index.md' contains a link 'no-such-page.md'" in output
    assert "'changelog.md' contains a link 'no-such-section.md'" in output
