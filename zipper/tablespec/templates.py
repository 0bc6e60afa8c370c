"""Jinja templates of `ds` in spec paths. Spark-free, so the model can render each one once at
load (with a sample date) and a typo fails there, naming the file and the key, not at run time."""

from __future__ import annotations

import datetime as dt
import re

import jinja2

SAMPLE_DATE = dt.date(2024, 1, 31)  # a month end: next_ds crosses into the next month
# One environment: building one per call costs more than rendering a short path.
_ENVIRONMENT = jinja2.Environment(undefined=jinja2.StrictUndefined)


def template_context(ds: dt.date) -> dict[str, str]:
    return {
        "ds": ds.isoformat(),
        "ds_nodash": ds.strftime("%Y%m%d"),
        "prev_ds": (ds - dt.timedelta(days=1)).isoformat(),
        "next_ds": (ds + dt.timedelta(days=1)).isoformat(),
    }


def render_template(template: str, ds: dt.date) -> str:
    """`template` rendered for `ds`; ValueError saying why not (an unknown name, bad syntax, or a
    failing expression such as `{{ ds + 1 }}`), for the caller to attach its key to."""
    try:
        return _ENVIRONMENT.from_string(template).render(template_context(ds))
    except Exception as exc:  # also a failing expression of the template: still the spec's mistake
        raise ValueError(f"cannot render {template!r}: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    """One line: a syntax error's text goes on with its location and source on further lines."""
    text = (str(exc).strip().splitlines() or [""])[0]
    return text if isinstance(exc, jinja2.TemplateError) else f"{type(exc).__name__}: {text}"


# `{{ ds }}` and the like, the usual whole template: it cannot fail to render.
_PLAIN_VARIABLE = re.compile(r"\{\{ *(?:" + "|".join(template_context(SAMPLE_DATE)) + r") *\}\}")


def check_template(template: str | None) -> str | None:
    """A pydantic validator: the template renders with a sample date. A template of plain
    variables only is accepted without Jinja compiling it, which would triple a spec's load time
    (hundreds of specs load at each DAG parse)."""
    if template is not None and "{" in _PLAIN_VARIABLE.sub("", template):
        render_template(template, SAMPLE_DATE)
    return template


PARTITION_TERM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*'([^'\\]*)'\s*")
PARTITION_JOIN = re.compile(r"(?i)(?:and\b|,)")  # AND, or a comma as in Hive's PARTITION (a='x', b='y')


def parse_partition(expression: str) -> dict[str, str]:
    """`a = 'x' AND b = 'y'` -> {a: x, b: y}. Only equalities, so a spec cannot inject SQL; read
    term by term, so a quoted value may hold ' and ' or a comma. ValueError when the expression
    is anything else, or names a column twice."""
    parsed: dict[str, str] = {}
    at = 0
    while True:
        term = PARTITION_TERM.match(expression, at)
        if not term:
            raise ValueError(f"{expression!r}: expected col = 'value' [AND ...]")
        column = term.group(1).lower()
        if column in parsed:
            raise ValueError(f"{expression!r}: names {column} twice")
        parsed[column] = term.group(2)
        at = term.end()
        if at == len(expression):
            return parsed
        joined = PARTITION_JOIN.match(expression, at)
        if not joined:
            raise ValueError(f"{expression!r}: expected col = 'value' [AND ...]")
        at = joined.end()


def check_partition(template: str | None) -> str | None:
    """A pydantic validator: the partition template renders and reads as equalities, checked
    at load like the paths, not first when the day's run looks for its input."""
    if template is None:
        return None
    rendered = render_template(template, SAMPLE_DATE) if "{" in template else template
    try:
        parse_partition(rendered)
    except ValueError as exc:
        shown = f"{template!r}" + (f" (rendered {rendered!r})" if rendered != template else "")
        raise ValueError(f"{shown}: {str(exc).rsplit(': ', 1)[-1]}") from None
    return template
