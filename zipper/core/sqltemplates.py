"""Render the SQL templates in `sql/` (`sql_dir`): identifiers are validated and quoted, literals escaped."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path

import jinja2

from zipper.core.names import IDENTIFIER


def sql_dir() -> Path:
    """The SQL templates: the checkout's top-level `sql/` folder, which a wheel installs as `zipper/sql/`
    (setup.cfg maps the package data `zipper.sql` to `sql/`). One copy, looked for in two places: next
    to the package first (an installed wheel), then beside the package's folder (a checkout, or an
    editable install, which imports `zipper/` from the checkout, where it holds no `sql/`). The folder is
    data, not a module, so an editable install made before the move finds it too."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "sql"
    return installed if installed.is_dir() else package.parent / "sql"


def quote_identifier(name: str) -> str:
    parts = str(name).split(".")
    for part in parts:
        if not IDENTIFIER.match(part):
            raise ValueError(f"not an identifier: {name!r}")
    return ".".join(f"`{p}`" for p in parts)


def quote_column(name: str) -> str:
    """A data column's name, quoted: any name Hive takes (`-`, a leading digit, non-ASCII letters),
    as the columns a later day adds through the catalog are. Dots and backticks never get here
    (`column_checks.refuse_unstorable_names`)."""
    if "`" in str(name) or "." in str(name):
        raise ValueError(f"not a column name a Hive table can take: {name!r}")
    return f"`{name}`"


def quote_literal(value) -> str:
    if isinstance(value, dt.date):
        value = value.isoformat()
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(sql_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["ident"] = quote_identifier
    env.filters["column"] = quote_column
    env.filters["lit"] = quote_literal
    return env


def render(template: str, **context) -> str:
    return _environment().get_template(template).render(**context).strip()


def template_names(folder: str) -> list[str]:
    return sorted(f"{folder}/{p.name}" for p in (sql_dir() / folder).glob("*.sql"))
