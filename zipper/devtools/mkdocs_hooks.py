"""MkDocs hooks (mkdocs.yml `hooks:`): the generated parts of the documentation site.

A page holds a marker where a generated reference goes; the build replaces it, so the spec and
CLI references are made from the pydantic model and the argument parser on every build. The
spec's JSON Schema is written next to the site's pages too, for editors to point at.

A page that shows a file of the repository's root (`--8<-- "CHANGELOG.md"`) gets that file's text
here, its links into the documentation rewritten: written `docs/x.md` so they work where the file
is read on its own (GitHub), they become relative to the page inside the site. Any other link is
left as written, so one that breaks in the site still fails the strict build."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from zipper.devtools import reference

MARKERS = {
    "<!-- zipper:spec-reference -->": reference.spec_reference,
    "<!-- zipper:cli-reference -->": reference.cli_reference,
}
# A page made of a root file: the snippet line docs/changelog.md and docs/contributing.md hold.
ROOT_FILE_INCLUDE = re.compile(r'^--8<-- "([^"/]+\.md)"[ \t]*$', re.MULTILINE)
# An inline link into the documentation, as a root file writes it: `](docs/modes/cdc.md#anchor)`.
LINK_INTO_DOCS = re.compile(r"\]\(docs/([^)\s]+)\)")


def on_page_markdown(markdown: str, page, config, files) -> str:
    if ROOT_FILE_INCLUDE.search(markdown):
        root = Path(config["config_file_path"]).parent
        page_folder = posixpath.dirname(page.file.src_uri)
        markdown = ROOT_FILE_INCLUDE.sub(lambda include: _root_file(root / include[1], page_folder), markdown)
    for marker, render in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown


def _root_file(path: Path, page_folder: str) -> str:
    """The root file's text with its `docs/...` links made relative to the page that shows it."""

    def relative(link: re.Match) -> str:
        return f"]({posixpath.relpath(link[1], page_folder or '.')})"

    return LINK_INTO_DOCS.sub(relative, path.read_text(encoding="utf-8"))


def on_post_build(config) -> None:
    target = Path(config["site_dir"]) / "spec.schema.json"
    target.write_text(json.dumps(reference.spec_schema(), indent=2) + "\n", encoding="utf-8")
