"""The documentation's generated references cover every spec key and every CLI verb and option,
each with its meaning, so a key or flag added to the code appears in the docs on the next build."""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from zipper.cli.main import build_parser
from zipper.devtools import mkdocs_hooks, reference
from zipper.tablespec.model import TableSpec


def _model_of(annotation) -> type[BaseModel] | None:
    candidates = [annotation, *getattr(annotation, "__args__", ())]
    return next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)


def _fields(model: type[BaseModel], prefix: str = ""):
    """Every key of the model as a spec spells it, found from pydantic's fields, not the schema."""
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        yield key, field
        nested = _model_of(field.annotation)
        if nested:
            yield from _fields(nested, key + ".")


def test_every_spec_key_has_a_row_with_its_meaning():
    rows = {line.split("|")[1].strip(" `"): line for line in reference.spec_reference().splitlines()[2:]}
    keys = [key for key, _ in _fields(TableSpec)]
    assert "source.schema" in keys and "airflow.sensor.timeout" in keys
    assert sorted(rows) == sorted(keys) == sorted(reference.spec_keys())
    for key, field in _fields(TableSpec):
        assert field.description, f"spec key {key!r} has no description in the model"
        meaning = rows[key].split("|")[-2].strip()
        assert meaning, key


def test_spec_rows_show_type_and_default_from_the_model():
    rows = {line.split("|")[1].strip(" `"): line for line in reference.spec_reference().splitlines()[2:]}
    assert "| required |" in rows["name"] and "| identifier |" in rows["name"]
    assert '`"upsert"` \\| `"cdc"` \\| `"landing_zone"` \\| `"snapshot"`' in rows["source.mode"]
    assert "| `9999-12-31` |" in rows["open_end"]
    assert "| integer >= 1 | `172800` |" in rows["airflow.sensor.timeout"]


def _subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, action.choices


def test_every_cli_verb_and_option_is_in_the_cli_reference():
    text = reference.cli_reference()
    parser, verbs = _subcommands()
    assert {"schema", "validate", "merge", "rerun"} <= set(verbs)
    for verb, sub in verbs.items():
        assert f"### zipper {verb}\n" in text, verb
        section = text.split(f"### zipper {verb}\n", 1)[1].split("### zipper ", 1)[0]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            shown = action.option_strings[0] if action.option_strings else (action.metavar or action.dest.upper())
            assert f"`{shown}" in section, (verb, shown)
            assert action.help and action.help in section.replace("\\|", "|"), (verb, shown)
    assert parser.epilog in text


def test_the_build_hook_replaces_each_marker_with_its_reference():
    page = "# Spec\n\n<!-- zipper:spec-reference -->\n\ntext\n"
    built = mkdocs_hooks.on_page_markdown(page, page=None, config=None, files=None)
    assert "<!-- zipper:" not in built
    assert "| `source.mode` |" in built and built.endswith("\ntext\n")
    cli = mkdocs_hooks.on_page_markdown("<!-- zipper:cli-reference -->", page=None, config=None, files=None)
    assert "### zipper validate" in cli
