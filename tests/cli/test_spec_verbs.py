"""`zipper schema` and `zipper validate`: the spec's JSON Schema, and every spec checked as loading
would check it, without Spark or a metastore. And the other verb about no table, `zipper metastore
status` without a server (with one running, test_metastore_service.py, which starts one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from zipper.cli.main import main
from zipper.tablespec.loader import DEFAULT_SPECS_DIR, SpecLoader

GOOD = """\
name: orders
table: dw.orders
keys: [order_id]
source:
  path: /data/orders/ds={{ ds }}
start_date: 2024-01-01
"""
# Two problems in one file: each gets its own line.
TWO_PROBLEMS = """\
name: payments
table: dw.payments
keys: [payment_id]
source:
  format: avro
  path: /data/payments/ds={{ ds }}
start_date: 2024-13-01
"""
NOT_YAML = "name: [unclosed\n"


def _specs(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder


def test_schema_is_json_schema_that_accepts_the_shipped_spec_and_flags_a_bad_value(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in DEFAULT_SPECS_DIR.glob("*.yaml"):
        spec = yaml.load(path.read_text(encoding="utf-8"), Loader=SpecLoader)
        assert list(validator.iter_errors(spec)) == [], path
    bad = yaml.load(TWO_PROBLEMS.replace("2024-13-01", "2024-01-01"), Loader=SpecLoader)
    errors = [(list(e.absolute_path), e.validator) for e in validator.iter_errors(bad)]
    assert errors == [(["source", "format"], "enum")]
    unknown = {**yaml.load(GOOD, Loader=SpecLoader), "sauce": {}}
    assert [e.validator for e in validator.iter_errors(unknown)] == ["additionalProperties"]


def test_the_schema_shipped_beside_the_specs_is_the_current_one(capsys):
    """dags/tables/spec.schema.json, which the demo's spec names for editors, is `zipper schema`'s output."""
    assert main(["schema"]) == 0
    shipped = (DEFAULT_SPECS_DIR / "spec.schema.json").read_text(encoding="utf-8")
    assert shipped == capsys.readouterr().out, "renew it: zipper schema > dags/tables/spec.schema.json"
    first = (DEFAULT_SPECS_DIR / "dim_user.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=./spec.schema.json"


def test_validate_reports_every_problem_on_its_own_line_and_exits_1(tmp_path, capsys):
    folder = _specs(tmp_path / "specs", orders=GOOD, payments=TWO_PROBLEMS, broken=NOT_YAML)
    assert main(["validate", "--specs", str(folder)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[-1] == "zipper validate: 3 problems in 3 specs"
    problems = lines[:-1]
    assert len(problems) == 3
    assert problems[0].startswith(f"{folder / 'broken.yaml'}: line 2 not valid YAML")
    assert (
        f"{folder / 'payments.yaml'}: key 'source.format': Input should be 'parquet', 'csv', 'orc' or 'table'"
        in (problems[1])
    )
    assert problems[1].endswith("(got 'avro')")
    assert problems[2].startswith(f"{folder / 'payments.yaml'}: key 'start_date': ")
    assert not any("orders.yaml" in line for line in problems)
    assert err == ""


def test_validate_named_specs_checks_only_those_and_names_an_unknown_one(tmp_path, capsys):
    folder = _specs(tmp_path / "specs", orders=GOOD, payments=TWO_PROBLEMS)
    assert main(["validate", "orders", "--specs", str(folder)]) == 0
    assert capsys.readouterr().out == f"zipper validate: 1 spec valid in {folder}\n"
    assert main(["validate", "ORDERS", "refunds", "--specs", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{folder}: no spec named 'refunds'", "zipper validate: 1 problem in 2 specs"]


def test_validate_of_an_empty_folder_or_a_missing_one_is_an_error_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["validate", "--specs", str(empty)]) == 1
    assert (
        capsys.readouterr().err
        == f"zipper: error: {empty}: no spec files (*.yaml, *.yml) to validate (set --specs or ZIPPER_SPECS)\n"
    )
    assert main(["validate", "--specs", str(tmp_path / "nowhere")]) == 1
    assert "specs folder does not exist" in capsys.readouterr().err


def test_validate_and_schema_start_no_spark(tmp_path):
    """Checked in a fresh interpreter: the verbs must answer without loading pyspark or py4j."""
    folder = _specs(tmp_path / "specs", orders=GOOD)
    code = (
        "import sys; from zipper.cli.main import main; "
        f"codes = [main(['validate', '--specs', {str(folder)!r}]), main(['schema'])]; "
        "print(codes, sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stderr.strip().splitlines()[-1] == "[0, 0] []"


@pytest.mark.parametrize("verb", ["schema", "validate"])
def test_the_verbs_are_in_the_cli_help(verb, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert verb in capsys.readouterr().out


def test_metastore_status_exits_3_when_no_server_runs(tmp_path):
    """As `pg_ctl status`: a script tests for a running server without reading the JSON."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZIPPER_")}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "zipper"), "metastore", "status", "--warehouse", str(warehouse)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    assert result.stderr == f"zipper: no metastore server is running for {warehouse}\n"
    shown = json.loads(result.stdout)
    assert shown["mode"] == "local" and not shown["running"] and shown["uri"] is None
    assert shown["warehouse"] == str(warehouse) and not shown["stale_record"]
    assert sorted(p.name for p in warehouse.iterdir()) == []  # a status creates nothing
