"""MkDocs hooks (mkdocs.yml `hooks:`): the generated parts of the documentation site.

A page holds a marker where a generated reference goes; the build replaces it, so the spec and
CLI references are made from the pydantic model and the argument parser on every build. The
spec's JSON Schema is written next to the site's pages too, for editors to point at."""

from __future__ import annotations

import json
from pathlib import Path

from zipper.devtools import reference

MARKERS = {
    "<!-- zipper:spec-reference -->": reference.spec_reference,
    "<!-- zipper:cli-reference -->": reference.cli_reference,
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, render in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown


def on_post_build(config) -> None:
    target = Path(config["site_dir"]) / "spec.schema.json"
    target.write_text(json.dumps(reference.spec_schema(), indent=2) + "\n", encoding="utf-8")
