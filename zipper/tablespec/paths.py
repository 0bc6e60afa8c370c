"""Where a spec's paths point on a given date: its templates rendered, relative paths resolved.

Pure: the Airflow sensors use these at run time without importing the input readers (or pyspark).
"""

from __future__ import annotations

import datetime as dt

from zipper.core.errors import SpecError
from zipper.tablespec import templates
from zipper.tablespec.model import TableSpec
from zipper.tablespec.source import BaseSpec, SourceSpec
from zipper.tablespec.templates import render_template


def render(template: str, ds: dt.date, key: str, spec: TableSpec | None = None) -> str:
    """`template` for `ds`; `key` is the spec key it comes from (`source.path`), for the message.
    The loader already rendered it once, so this fails only on what depends on the date (and
    on an empty result, which would name the spec's own folder)."""
    where = {"table": spec.table, "ds": ds.isoformat()} if spec is not None else {}
    origin = f"{spec.origin}: " if spec is not None and spec.origin is not None else ""
    try:
        rendered = render_template(template, ds)
    except ValueError as exc:
        raise SpecError(f"{origin}key '{key}': {exc}", **where) from None
    if not rendered.strip():
        raise SpecError(f"{origin}key '{key}' renders empty for {ds}: {template!r}", **where)
    return rendered


def spec_key(source: SourceSpec | BaseSpec) -> str:
    """The spec key of `source` (`source` for the increment, `base` for the snapshot): messages
    name the key the user wrote, not the engine's word for the input."""
    return "base" if isinstance(source, BaseSpec) else "source"


def resolve_path(path: str, spec: TableSpec) -> str:
    """A relative local path is relative to the folder of the spec file that names it."""
    if "://" in path or path.startswith("/") or ":" in path.split("/")[0] or spec.origin is None:
        return path
    return str((spec.origin.parent / path).resolve())


def parse_partition(expression: str) -> dict[str, str]:
    try:
        return templates.parse_partition(expression)
    except ValueError as exc:
        raise SpecError(f"source.partition: {exc}") from None
