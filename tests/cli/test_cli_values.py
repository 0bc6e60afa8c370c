"""Values typed by hand on the command line or in a DAG's trigger form."""

from __future__ import annotations

import datetime as dt

import pytest

from zipper.core.dates import iso_date
from zipper.core.errors import InputError
from zipper.table.inspect import parse_key
from zipper.tablespec.model import TableSpec


@pytest.mark.parametrize("text", ["20240104", "2024-W01-4", "2024-1-4", " 2024-01-04", "2024-01-04T00:00"])
def test_a_run_date_is_yyyy_mm_dd_only(text):
    with pytest.raises(ValueError, match="is not YYYY-MM-DD"):
        iso_date(text)


def test_a_run_date_in_its_form_reads():
    assert iso_date("2024-02-29") == dt.date(2024, 2, 29)
    with pytest.raises(ValueError):
        iso_date("2023-02-29")


def test_a_key_column_given_twice_with_two_values_is_refused():
    spec = TableSpec.model_validate(
        dict(name="dim", table="dw.dim", keys=["id", "region"], source=dict(path="/in"), start_date="2024-01-01")
    )
    assert parse_key(spec, ["id=2", "Region=eu", "id=2"]) == {"id": "2", "region": "eu"}
    with pytest.raises(InputError, match=r"^dw.dim: --key 'id' given twice \('2' and '3'\)"):
        parse_key(spec, ["id=2", "region=eu", "id=3"])


def test_rebuild_takes_uncommit_later_as_rerun_does(monkeypatch):
    """A rebuild --to before the last committed date drops the later dates: the CLI passes the
    explicit --uncommit-later through (default: refused)."""
    import types

    from zipper.cli import data_verbs, main
    from zipper.cli.runner import Runner

    calls = []
    fake = types.ModuleType("zipper.jobs.rebuild")
    fake.rebuild = lambda spark, spec, last, progress, uncommit_later, undo_corrections: (
        calls.append((last, uncommit_later, undo_corrections))
        or types.SimpleNamespace(summary=lambda: "rebuilt", counts={})
    )
    from zipper.jobs import handle  # the CLI reaches the job through the table handle

    monkeypatch.setattr(handle, "rebuild", fake)
    for extra, expected in (
        ([], (False, False)),
        (["--uncommit-later"], (True, False)),
        (["--undo-corrections"], (False, True)),
    ):
        args = main.build_parser().parse_args(["rebuild", "dim", "--to", "2024-01-02", *extra])
        runner = Runner.__new__(Runner)
        runner.args, runner.spec, runner._spark = args, types.SimpleNamespace(table="dw.dim"), object()
        assert data_verbs.run_rebuild(runner) == 0
        assert calls[-1] == (dt.date(2024, 1, 2), *expected)


def test_help_says_the_exit_codes_and_what_each_option_does():
    """`zipper --help` is what on-call reads: exit codes, and no option without a word of help."""
    from zipper.cli import main

    parser = main.build_parser()
    assert "3 `check` found a violation" in " ".join(parser.format_help().split())
    verbs = parser._subparsers._group_actions[0].choices
    for verb, sub in verbs.items():
        for action in sub._actions:
            assert action.help, f"zipper {verb} {action.option_strings or action.dest} has no help"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["merge", "dim", "--ds", "2023-12-15"], "dw.dim 2023-12-15: date is before the spec's start_date 2024-01-01"),
        (["merge", "dim", "--ds", "2024-02-05"], "dw.dim 2024-02-05: date is after the spec's end_date 2024-01-31"),
        (
            ["rerun", "dim", "--from", "2023-12-01"],
            "dw.dim 2023-12-01: date is before the spec's start_date 2024-01-01",
        ),
    ],
)
def test_a_run_date_outside_the_specs_dates_fails_before_spark_starts(tmp_path, capsys, argv, expected):
    """It started Spark (and the Derby metastore, made anew at a mistyped --warehouse) to say so."""
    from zipper.cli import main

    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "dim.yaml").write_text(
        "name: dim\ntable: dw.dim\nkeys: [id]\nsource: {path: /nowhere}\n"
        "start_date: '2024-01-01'\nend_date: '2024-01-31'\n"
    )
    warehouse = tmp_path / "warehouse"
    assert main.main(["--specs", str(tmp_path / "specs"), "--warehouse", str(warehouse), *argv]) == 1
    assert capsys.readouterr().err == f"zipper: error: {expected}\n"
    assert not warehouse.exists()
