"""Generated bad specs: hypothesis breaks a valid spec file one way (a required key left out, a
value of another type or out of range, an unknown key, reserved or malformed names, options that
refuse each other, text that is not YAML or not a mapping) and loads it. Every case must fail in
one line that names the file and the key at fault, never a Python or pydantic trace."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from zipper.core.errors import SpecError
from zipper.tablespec.loader import load_spec_file

VALID = {
    "name": "customers",
    "table": "dw.customers",
    "keys": ["id"],
    "source": {"mode": "snapshot", "format": "parquet", "path": "/data/customers/ds={{ ds }}"},
    "start_date": "2024-01-01",
    "guard": {"max_fraction": 0.3, "min_days": 5},
}

# (the key's path, the values it must refuse); the refusal names the path's last part
WRONG_VALUES = {
    ("name",): [5, "", "has space", "a/b"],
    ("table",): ["no_database", "dw.a.b", "dw.", 7],
    ("keys",): [[], "id", [5], ["begin_dt"], ["end_dt"], ["zipper_op"], ["id", "id"]],
    ("start_date",): ["yesterday", "2024-13-01", 20240101, "2024-02-30"],
    ("source", "mode"): ["merge", "", 1],
    ("source", "format"): ["xlsx", 3],
    ("source", "path"): [3, ""],
    ("guard", "max_fraction"): ["many", -0.1, 1.5],
    ("guard", "min_days"): ["five", -1],
}
REQUIRED = [("name",), ("table",), ("keys",), ("source",), ("start_date",), ("source", "path")]
ODD_TEXT = ["keys: [id\n", "- a list\n- of things\n", "name: x\n\tkeys: [id]\n", "just text\n", "{]\n"]


@st.composite
def broken_specs(draw) -> tuple[str, str, str]:
    """(the kind of fault, the spec file's text, a word its refusal must hold)."""
    kind = draw(st.sampled_from(["wrong value", "missing", "unknown key", "clashing options", "not a spec"]))
    raw = copy.deepcopy(VALID)
    if kind == "not a spec":
        return kind, draw(st.sampled_from(ODD_TEXT)), "customers.yaml"
    if kind == "wrong value":
        path = draw(st.sampled_from(sorted(WRONG_VALUES)))
        _set(raw, path, draw(st.sampled_from(WRONG_VALUES[path])))
        return kind, yaml.safe_dump(raw), path[-1]
    if kind == "missing":
        path = draw(st.sampled_from(REQUIRED))
        _parent(raw, path).pop(path[-1])
        return kind, yaml.safe_dump(raw), path[-1]
    if kind == "unknown key":
        where = draw(st.sampled_from([(), ("source",), ("guard",)]))
        name = draw(st.sampled_from(["sequence", "key", "Name", "ignore_nulls", "名前", "end date"]))
        (_parent(raw, (*where, name)))[name] = "x"
        return kind, yaml.safe_dump(raw, allow_unicode=True), name
    option, value = draw(
        st.sampled_from([("ignore_null_updates", True), ("operation_column", "op"), ("delete_match", "key")])
    )
    raw["source"][option] = value  # options a snapshot refuses
    return kind, yaml.safe_dump(raw), option


def _parent(raw: dict, path: tuple) -> dict:
    for part in path[:-1]:
        raw = raw[part]
    return raw


def _set(raw: dict, path: tuple, value) -> None:
    _parent(raw, path)[path[-1]] = value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(broken=broken_specs())
def test_every_generated_broken_spec_fails_in_one_line_naming_the_file_and_the_key(tmp_path, broken):
    kind, text, word = broken
    path = tmp_path / "customers.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        load_spec_file(path)
    said = str(raised.value)
    assert "\n" not in said and "Traceback" not in said and "pydantic" not in said, (kind, said)
    assert said.startswith(f"{path}:"), (kind, said)
    assert word in said, (kind, word, said)
    event(kind)


def test_the_valid_spec_the_faults_start_from_loads(tmp_path):
    path = tmp_path / "customers.yaml"
    path.write_text(yaml.safe_dump(VALID))
    assert load_spec_file(path).table == "dw.customers"
