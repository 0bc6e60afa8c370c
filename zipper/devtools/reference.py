"""The spec and CLI references of the documentation, generated from the code that defines them.

The spec reference is rendered from the spec's JSON Schema, which pydantic builds from the model
(`zipper.tablespec.model`): every key, its type, default and description live there once. The CLI
reference is rendered from the `zipper` argument parser."""

from __future__ import annotations

import argparse
import json

from zipper.cli.main import build_parser
from zipper.tablespec.schema import spec_schema

__all__ = ["cli_reference", "spec_reference", "spec_schema", "spec_keys"]


def _resolve(schema: dict, node: dict) -> dict:
    ref = node.get("$ref")
    if ref:
        return schema["$defs"][ref.rsplit("/", 1)[-1]]
    return node


def _type_text(schema: dict, node: dict) -> str:
    """A short human spelling of a JSON Schema type: `'a' | 'b'`, `list of identifier`, `date`."""
    node = _resolve(schema, node)
    if "x-zipper" in node:  # the model's own name for a checked string: identifier, Jinja template
        return node["x-zipper"]
    if "anyOf" in node:
        parts = [_type_text(schema, option) for option in node["anyOf"] if option.get("type") != "null"]
        return " or ".join(dict.fromkeys(parts))
    if "enum" in node:
        return " | ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    kind = node.get("type")
    if kind == "array":
        return f"list of {_type_text(schema, node.get('items', {}))}"
    if kind == "object":
        if "properties" in node:
            return "mapping (see its keys)"
        values = node.get("additionalProperties") or next(iter(node.get("patternProperties", {}).values()), None)
        return f"mapping of name to {_type_text(schema, values)}" if isinstance(values, dict) else "mapping"
    if kind == "string" and node.get("format") == "date":
        return "date (YYYY-MM-DD)"
    if kind == "integer":
        bounds = [f">= {node['minimum']}"] if "minimum" in node else []
        return " ".join(["integer", *bounds])
    if kind == "number":
        return "number" + (f" >= {node['minimum']}" if "minimum" in node else "")
    return str(kind or "any")


def _default_text(node: dict, required: bool) -> str:
    if required:
        return "required"
    if "default" not in node or node["default"] is None:
        return "none"
    value = node["default"]
    if value == "":
        return '`""`'
    if value == {} or value == []:
        return f"`{json.dumps(value)}`"
    if isinstance(value, dict):
        return "see its keys"
    return f"`{json.dumps(value)}`" if not isinstance(value, str) else f"`{value}`"


def _rows(schema: dict, node: dict, prefix: str = ""):
    """(key, node, required, nested) for every key of a model, depth first: a nested model's keys follow it."""
    node = _resolve(schema, node)
    required = set(node.get("required", []))
    for name, field in node.get("properties", {}).items():
        key = f"{prefix}{name}"
        target = _resolve(schema, _first_model(schema, field) or field)
        nested = "properties" in target
        yield key, field, name in required, nested
        if nested:
            yield from _rows(schema, target, key + ".")


def _first_model(schema: dict, field: dict) -> dict | None:
    """The model a field holds (directly, or as one option of `X | None`), if any."""
    for option in [field, *field.get("anyOf", [])]:
        resolved = _resolve(schema, option)
        if "properties" in resolved:
            return option
    return None


def spec_keys() -> list[str]:
    """Every key a spec may hold, dotted (`source.mode`), in the reference's order."""
    schema = spec_schema()
    return [key for key, _, _, _ in _rows(schema, schema)]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def spec_reference() -> str:
    schema = spec_schema()
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, field, required, nested in _rows(schema, schema):
        model = _resolve(schema, _first_model(schema, field) or field)
        description = field.get("description") or (model.get("description") if nested else "") or ""
        kind = "mapping (keys below)" if nested else _type_text(schema, field)
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(_default_text(field, required))} | {_cell(description)} |")
    return "\n".join(lines) + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    """A table of the parser's arguments; the verbs of the top-level parser have their own table."""
    rows = ["| argument | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            takes_value = action.nargs != 0
            spelled = ", ".join(
                f"`{flag} {action.metavar or action.dest.upper()}`" if takes_value else f"`{flag}`"
                for flag in action.option_strings
            )
        else:
            spelled = f"`{action.metavar or action.dest.upper()}`"
            if action.nargs in ("*", "?"):
                spelled += " (optional)"
            elif action.nargs == "+":
                spelled += " (one or more)"
        help_text = action.help or ""
        if action.choices:
            help_text += f" (one of: {', '.join(map(str, action.choices))})"
        if action.required:
            help_text += " (required)"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
        rows.append(f"| {spelled} | {_cell(help_text)} | {shown} |")
    return rows


def cli_reference() -> str:
    parser = build_parser()
    verbs = _subparsers(parser)
    helps = {choice.dest: choice.help for choice in verbs._choices_actions}
    lines = [
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        "Options accepted before or after the verb:",
        "",
        *_option_rows(parser),
        "",
        "| verb | what it does |",
        "|---|---|",
        *[f"| [`{verb}`](#zipper-{verb}) | {_cell(helps.get(verb) or '')} |" for verb in verbs.choices],
        "",
    ]
    for verb, sub in verbs.choices.items():
        lines += [
            f"### zipper {verb}",
            "",
            _cell(helps.get(verb) or ""),
            "",
            "```text",
            " ".join(sub.format_usage().split()).removeprefix("usage: "),
            "```",
            "",
            *_option_rows(sub),
            "",
        ]
    lines += [parser.epilog or "", ""]
    return "\n".join(lines)
