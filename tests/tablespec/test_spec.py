"""Spec loading: the documented example works as written; every mistake names file and key."""

from __future__ import annotations

import datetime as dt
import textwrap

import pytest

from zipper.core.errors import SpecError
from zipper.tablespec.loader import find_spec, load_spec_file, load_specs, scan_specs
from zipper.tablespec.model import TableSpec

EXAMPLE = """\
name: dim_user                 # unique; the DAG will be zipper_dim_user
table: dw.dim_user             # target Hive table (database created if missing)
keys: [user_id]                # one or more business key columns
source:
  mode: upsert
  format: parquet
  path: /data/ods/user_inc/ds={{ ds }}   # Jinja, rendered with ds
base:
  format: parquet
  path: /data/ods/user_base
start_date: '2024-01-01'
end_date: '2024-12-31'         # optional
begin_column: begin_dt
end_column: end_dt
open_end: '9999-12-31'
end_style: exclusive
track_columns: all
"""


def write(tmp_path, text, name="dim_user.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_documented_example_loads_with_its_values(tmp_path):
    spec = load_spec_file(write(tmp_path, EXAMPLE))
    assert spec.name == "dim_user" and spec.table == "dw.dim_user" and spec.keys == ["user_id"]
    assert spec.start_date == dt.date(2024, 1, 1) and spec.end_date == dt.date(2024, 12, 31)
    assert spec.open_end == dt.date(9999, 12, 31) and spec.end_style == "exclusive"
    assert spec.retention_days == 7 and spec.track_columns == "all" and spec.on_past_date == "replay"
    assert spec.closed_end(dt.date(2024, 3, 5)) == dt.date(2024, 3, 5)


def test_inclusive_style_closes_the_day_before(tmp_path):
    spec = load_spec_file(write(tmp_path, EXAMPLE.replace("end_style: exclusive", "end_style: inclusive")))
    assert spec.closed_end(dt.date(2024, 3, 5)) == dt.date(2024, 3, 4)


@pytest.mark.parametrize(
    "change, expected",
    [
        (("keys: [user_id]", "keys: [user_id]\ncolour: red"), "key 'colour': unknown key"),
        (("table: dw.dim_user", ""), "key 'table': required key is missing"),
        (("table: dw.dim_user", "table: dim_user"), "key 'table': 'dim_user' must be database.table"),
        (("table: dw.dim_user", "table: dw.dim_user;drop"), "is not an identifier"),
        (("keys: [user_id]", "keys: []"), "key 'keys'"),
        (("keys: [user_id]", "keys: ['user id']"), "key 'keys.0': 'user id' is not an identifier"),
        (("end_style: exclusive", "end_style: sideways"), "key 'end_style'"),
        (
            ("format: parquet\n  path: /data/ods/user_inc", "format: avro\n  path: /data/ods/user_inc"),
            "key 'source.format'",
        ),
        (("start_date: '2024-01-01'", "start_date: 'soon'"), "key 'start_date'"),
        (
            ("end_date: '2024-12-31'", "end_date: '2023-12-31'"),
            "key 'end_date': end_date 2023-12-31 is before start_date",
        ),
        (("track_columns: all", "track_columns: [user_id]"), "key 'track_columns': track_columns may not list key"),
        (
            ("track_columns: all", "track_columns: name"),
            "key 'track_columns': 'name' is neither 'all' nor a list; for one column write [name]",
        ),
        (("keys: [user_id]", "keys: [user_id, User_Id]"), "key 'keys': a column is listed twice"),
        (
            ("track_columns: all", "columns: {user_id: bigint, age: integr}"),
            "key 'columns.age': 'integr' is not a Spark SQL type: unknown type 'integr'",
        ),
        (
            ("track_columns: all", "columns: {user_id: bigint, score: 'decimal(40,2)'}"),
            "key 'columns.score': 'decimal(40,2)'",
        ),
        (
            ("track_columns: all", "columns: {user_id: bigint, at: timestamp_ntz}"),
            "key 'columns.at': 'timestamp_ntz': Spark has the type timestamp_ntz but a Hive table cannot store it",
        ),
        (
            (
                "format: parquet\n  path: /data/ods/user_inc",
                "format: csv\n  schema: {tags: 'array<string>'}\n  path: /data/ods/user_inc",
            ),
            "key 'source.schema.tags': 'array<string>': a CSV column holds one value",
        ),
        (
            ("begin_column: begin_dt", "begin_column: end_dt"),
            "key 'end_column': begin_column and end_column must differ",
        ),
        (
            ("open_end: '9999-12-31'", "open_end: '2024-06-01'"),
            "key 'open_end': open_end 2024-06-01 must be after every run date",
        ),
        (
            ("open_end: '9999-12-31'\nend_style: exclusive", "open_end: '2024-12-30'\nend_style: inclusive"),
            "key 'open_end': open_end 2024-12-30 must be on or after every run date (inclusive) (the last is 2024-12-31)",
        ),
        (
            ("track_columns: all", "track_columns: all\non_past_date: ask"),
            "key 'on_past_date': Input should be 'replay' or 'error'",
        ),
        (
            ("track_columns: all", "track_columns: [zipper_op]"),
            "key 'track_columns': ['zipper_op']: names starting with 'zipper_' are reserved for zipper's own columns",
        ),
        (
            ("keys: [user_id]", "keys: [user_id, Zipper_Slot]"),
            "key 'keys': ['zipper_slot']: names starting with 'zipper_'",
        ),
        (
            ("begin_column: begin_dt", "begin_column: zipper_from"),
            "key 'begin_column': ['zipper_from']: names starting",
        ),
    ],
)
def test_bad_specs_name_file_and_key(tmp_path, change, expected):
    old, new = change
    assert old in EXAMPLE
    path = write(tmp_path, EXAMPLE.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert str(path) in message
    assert expected in message
    assert "\n" not in message


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "name: x\nkeys: [a\n")
    with pytest.raises(SpecError, match=r"line \d+.*not valid YAML"):
        load_spec_file(path)


def test_names_and_tables_are_unique_across_files(tmp_path):
    write(tmp_path, EXAMPLE, "a.yaml")
    write(tmp_path, EXAMPLE.replace("table: dw.dim_user", "table: dw.other"), "b.yaml")
    with pytest.raises(SpecError, match="'dim_user' is also used by .*a.yaml"):
        load_specs(tmp_path)


def test_find_spec_ignores_other_broken_files(tmp_path):
    write(tmp_path, EXAMPLE)
    write(tmp_path, "name: [broken", "zz.yaml")
    path, spec = find_spec("dim_user", tmp_path)
    assert spec.name == "dim_user" and path.name == "dim_user.yaml"
    with pytest.raises(SpecError, match="no spec named 'nope'"):
        find_spec("nope", tmp_path)


def test_find_spec_shows_the_error_of_a_broken_file_whose_name_is_not_its_file_name(tmp_path):
    """A typo in `orders_v2.yaml` (`name: orders`) said `no spec named 'orders'`, hiding the typo."""
    write(
        tmp_path, EXAMPLE.replace("name: dim_user", "name: Orders").replace("start_date", "start_dat"), "orders_v2.yaml"
    )
    with pytest.raises(SpecError) as err:
        find_spec("orders", tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'orders_v2.yaml'}: key 'start_date': required key is missing; key 'start_dat': unknown key"
    )
    # a file that is not even YAML cannot say its name: the message points at it
    write(tmp_path, "name: [broken", "zz.yaml")
    with pytest.raises(SpecError) as err:
        find_spec("nope", tmp_path)
    assert (
        str(err.value) == f"{tmp_path}: no spec named 'nope'; files that do not load, one of which may be it: zz.yaml"
    )


def test_specs_given_as_a_file_says_so(tmp_path):
    """`--specs dags/tables/dim_user.yaml` said the folder did not exist."""
    path = write(tmp_path, EXAMPLE)
    with pytest.raises(SpecError) as err:
        find_spec("dim_user", path)
    assert str(err.value) == f"{path}: is a file, not a folder of specs (set --specs or ZIPPER_SPECS)"


def test_identifiers_are_lower_cased(tmp_path):
    spec = load_spec_file(write(tmp_path, EXAMPLE.replace("keys: [user_id]", "keys: [User_ID]")))
    assert spec.keys == ["user_id"]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("mode: upsert\n  op_column: op\n  path: /x", "key 'source.op_column': only for mode cdc, not 'upsert'"),
        (
            "mode: cdc\n  hard_deletes: ignore\n  path: /x",
            "key 'source.hard_deletes': 'ignore' is only for mode snapshot, not 'cdc'",
        ),
        (
            "mode: upsert\n  hard_deletes: new_record\n  path: /x",
            "key 'source.hard_deletes': only for mode cdc or landing_zone or snapshot, not 'upsert'",
        ),
        ("mode: snapshot\n  sequence_by: seq\n  path: /x", "key 'source.sequence_by': only for mode cdc or upsert"),
        ("mode: upsert\n  on_anomaly: error\n  path: /x", "key 'source.on_anomaly': only for mode landing_zone"),
        (
            "mode: landing_zone\n  on_missing_input: skip\n  path: /x",
            "key 'source.on_missing_input': only for mode cdc or snapshot or upsert, not 'landing_zone'",
        ),
        ("on_missing_input: wait\n  path: /x", "key 'source.on_missing_input': Input should be 'fail' or 'skip'"),
        (
            "mode: snapshot\n  ignore_null_updates: true\n  path: /x",
            "key 'source.ignore_null_updates': only for mode cdc or landing_zone or upsert, not 'snapshot':"
            " a snapshot row is the whole state of its key",
        ),
        ("ignore_null_updates: perhaps\n  path: /x", "key 'source.ignore_null_updates'"),
        ("mode: cdc\n  delete_match: some\n  path: /x", "key 'source.delete_match'"),
        (
            "mode: sometimes\n  path: /x",
            "key 'source.mode': Input should be 'upsert', 'cdc', 'landing_zone' or 'snapshot' (got 'sometimes')",
        ),
        ("mode: landing_zone\n  format: csv\n  path: /x", "format must be 'parquet'"),
        ("format: parquet\n  schema: {a: int}\n  path: /x", "key 'source.schema': only for format 'csv'"),
        (
            "mode: cdc\n  op_column: user_id\n  path: /x",
            "key 'source.op_column': source.op_column 'user_id' may not be a key",
        ),
        (
            "mode: cdc\n  sequence_by: begin_dt\n  path: /x",
            "source.sequence_by 'begin_dt' may not be a key or reserved",
        ),
    ],
)
def test_mode_options_are_checked_per_mode(tmp_path, source, expected):
    text = EXAMPLE.replace("mode: upsert\n  format: parquet\n  path: /data/ods/user_inc/ds={{ ds }}", source)
    assert text != EXAMPLE
    with pytest.raises(SpecError) as err:
        load_spec_file(write(tmp_path, text))
    assert expected in str(err.value)


@pytest.mark.parametrize(
    "source, top, expected",
    [
        ("updated_at: ts\n  sequence_by: seq\n  path: /x", "", "key 'source.sequence_by': source.updated_at 'ts'"),
        (
            "updated_at: user_id\n  path: /x",
            "",
            "key 'source.updated_at': source.updated_at 'user_id' may not be a key",
        ),
        ("mode: cdc\n  updated_at: sys_op\n  path: /x", "", "may not be a key, operation or reserved column"),
        ("updated_at: valid_to\n  path: /x", "", "the validity columns must differ from begin_column, end_column and"),
        ("updated_at: ts\n  path: /x", "valid_to_column: valid_from", "key 'valid_to_column': valid_from_column and"),
        ("updated_at: ts\n  path: /x", "valid_from_column: begin_dt", "key 'valid_from_column': ['begin_dt']"),
        ("updated_at: ts\n  path: /x", "valid_from_column: zipper_from", "reserved for zipper's own columns"),
        ("updated_at: ts\n  path: /x", "track_columns: [valid_to]", "key 'track_columns': track_columns may not list"),
        ("updated_at: ts\n  path: /x", "columns: {user_id: int, ts: string}", "'ts' has type string; it must be"),
        ("updated_at: ts\n  path: /x", "columns: {user_id: int, t: date}", "'ts' is not among the declared columns"),
        ("updated_at: ts\n  path: /x", "columns: {user_id: int, ts: date, valid_from: date}", "key 'columns'"),
        ("path: /x", "valid_to_column: until", "key 'valid_to_column': only with source.updated_at"),
    ],
)
def test_updated_at_and_its_validity_columns_are_checked(tmp_path, source, top, expected):
    text = EXAMPLE.replace("mode: upsert\n  format: parquet\n  path: /data/ods/user_inc/ds={{ ds }}", source)
    text = text.replace("base:\n  format: parquet\n  path: /data/ods/user_base\n", "") + top + "\n"
    with pytest.raises(SpecError) as err:
        load_spec_file(write(tmp_path, text))
    assert expected in str(err.value)


@pytest.mark.parametrize(
    "source, top, expected",
    [
        ("mode: cdc\n  path: /x", "deleted_column: gone", "key 'deleted_column': only with source.hard_deletes"),
        (_NEW := "mode: cdc\n  hard_deletes: new_record\n  path: /x", "keys: [is_deleted]", "key 'keys': keys may"),
        (_NEW, "track_columns: [is_deleted]", "key 'track_columns': track_columns may not list"),
        (_NEW, "columns: {user_id: int, is_deleted: boolean}", "key 'columns': columns may not include the reserved"),
        (_NEW, "deleted_column: begin_dt", "key 'deleted_column': 'begin_dt': the deleted column must differ"),
        (_NEW, "deleted_column: zipper_gone", "reserved for zipper's own columns"),
        ("mode: cdc\n  hard_deletes: new_record\n  op_column: is_deleted\n  path: /x", "", "key 'deleted_column'"),
        ("mode: cdc\n  hard_deletes: new_record\n  updated_at: ts\n  path: /x", "deleted_column: ts", "must differ"),
        ("mode: cdc\n  hard_deletes: new_record\n  updated_at: ts\n  path: /x", "deleted_column: valid_to", "differ"),
    ],
)
def test_new_record_and_its_deleted_column_are_checked(tmp_path, source, top, expected):
    text = EXAMPLE.replace("mode: upsert\n  format: parquet\n  path: /data/ods/user_inc/ds={{ ds }}", source)
    name = top.split(":")[0]
    text = "".join(line for line in text.splitlines(keepends=True) if not name or not line.startswith(name + ":"))
    with pytest.raises(SpecError) as err:
        load_spec_file(write(tmp_path, text + top + "\n"))
    assert expected in str(err.value)


def test_new_record_names_the_deleted_column_in_every_deleting_mode(tmp_path):
    for mode in ("cdc", "snapshot", "landing_zone"):
        text = EXAMPLE.replace("mode: upsert", f"mode: {mode}\n  hard_deletes: new_record")
        spec = load_spec_file(write(tmp_path, text + "deleted_column: Gone\n"))
        assert (spec.tombstone_column, spec.own_columns, spec.source.invalidate_missing) == ("gone", ("gone",), True)
    plain = load_spec_file(write(tmp_path, EXAMPLE.replace("mode: upsert", "mode: snapshot\n  hard_deletes: ignore")))
    assert (plain.tombstone_column, plain.own_columns, plain.source.invalidate_missing) == (None, (), False)


def test_updated_at_orders_the_day_and_names_the_validity_columns(tmp_path):
    text = EXAMPLE.replace("mode: upsert", "mode: cdc\n  updated_at: Changed_At\n  sequence_by: changed_at")
    spec = load_spec_file(
        write(tmp_path, text + "valid_to_column: Until\ncolumns: {user_id: int, changed_at: timestamp}\n")
    )
    assert (spec.source.order_column, spec.validity_columns) == ("changed_at", ("valid_from", "until"))
    plain = load_spec_file(write(tmp_path, EXAMPLE.replace("mode: upsert", "mode: upsert\n  sequence_by: seq")))
    assert (plain.source.order_column, plain.source.order_key, plain.validity_columns) == ("seq", "sequence_by", ())


def test_mode_options_and_keys_from_a_landing_zone(tmp_path):
    cdc = load_spec_file(write(tmp_path, EXAMPLE.replace("mode: upsert", "mode: cdc\n  sequence_by: Seq")))
    assert (cdc.source.operation_column, cdc.source.deletes_need_all_columns, cdc.source.sequence_by) == (
        "sys_op",
        True,
        "seq",
    )
    csv = load_spec_file(
        write(
            tmp_path,
            EXAMPLE.replace(
                "mode: upsert\n  format: parquet", "mode: upsert\n  format: csv\n  schema: {Score: 'decimal(5,2)'}"
            ),
        )
    )
    assert csv.source.csv_schema == {"score": "decimal(5,2)"}
    landing = EXAMPLE.replace("keys: [user_id]", "").replace(
        "mode: upsert\n  format: parquet\n  path: /data/ods/user_inc/ds={{ ds }}",
        "mode: landing_zone\n  path: /landing/Employees",
    )
    assert load_spec_file(write(tmp_path, landing)).keys == []
    with pytest.raises(SpecError, match="key 'keys': at least one key column is required"):
        load_spec_file(write(tmp_path, EXAMPLE.replace("keys: [user_id]", "")))


def test_airflow_keys_have_defaults_and_are_validated(tmp_path):
    spec = load_spec_file(write(tmp_path, EXAMPLE))
    assert spec.airflow.schedule == "@daily" and spec.airflow.spark_conn_id == "zipper_spark"
    assert spec.airflow.pool == "zipper_merges" and spec.airflow.sensor.mode == "reschedule"
    custom = (
        EXAMPLE
        + "airflow:\n  schedule: '15 4 * * *'\n  tags: [sales]\n  sensor: {mode: deferrable, poke_interval: 60}\n"
    )
    spec = load_spec_file(write(tmp_path, custom))
    assert spec.airflow.schedule == "15 4 * * *" and spec.airflow.tags == ["sales"]
    assert spec.airflow.sensor.mode == "deferrable" and spec.airflow.sensor.poke_interval == 60
    assert not spec.source.skips_missing_input and spec.airflow.sensor.skip_after_seconds == 6 * 3600
    skipping = EXAMPLE.replace("mode: upsert", "mode: snapshot\n  on_missing_input: skip")
    spec = load_spec_file(write(tmp_path, skipping + "airflow:\n  sensor: {skip_after: 600}\n"))
    assert spec.source.skips_missing_input and spec.airflow.sensor.skip_after_seconds == 600


@pytest.mark.parametrize(
    "block, expected",
    [
        ("airflow:\n  schedule: '@hourly'\n", "key 'airflow.schedule': '@hourly' is not a daily schedule"),
        ("airflow:\n  schedule: '0 */2 * * *'\n", "key 'airflow.schedule'"),
        ("airflow:\n  retries: -1\n", "key 'airflow.retries'"),
        ("airflow:\n  sensor: {mode: sometimes}\n", "key 'airflow.sensor.mode'"),
        ("airflow:\n  owners: [me]\n", "key 'airflow.owners': unknown key"),
        (  # a table that fails on a missing input never skips it
            "airflow:\n  sensor: {skip_after: 600}\n",
            "key 'airflow.sensor.skip_after': only for source.on_missing_input: skip",
        ),
    ],
)
def test_bad_airflow_keys_name_file_and_key(tmp_path, block, expected):
    path = write(tmp_path, EXAMPLE + block)
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    assert str(path) in str(err.value) and expected in str(err.value)


@pytest.mark.parametrize(
    "old, new, key",
    [
        ("start_date: '2024-01-01'", "start_date: 2024-13-01", "start_date"),
        ("end_date: '2024-12-31'", "end_date: 2024-02-30", "end_date"),
        ("open_end: '9999-12-31'", "open_end: 9999-12-32", "open_end"),
    ],
)
def test_an_impossible_unquoted_date_names_file_and_key(tmp_path, old, new, key):
    path = write(tmp_path, EXAMPLE.replace(old, new), "zz.yaml")
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: key '{key}': ") and "\n" not in message, message


def test_unquoted_dates_load_as_quoted_ones_and_text_keys_take_them(tmp_path):
    quoted = load_spec_file(write(tmp_path, EXAMPLE, "quoted.yaml"))
    unquoted = load_spec_file(write(tmp_path, EXAMPLE.replace("'", ""), "unquoted.yaml"))
    assert unquoted.model_dump() == quoted.model_dump()
    with_time = EXAMPLE.replace("start_date: '2024-01-01'", "start_date: 2024-01-01 00:00:00")
    assert load_spec_file(write(tmp_path, with_time, "time.yaml")).start_date == dt.date(2024, 1, 1)
    text = EXAMPLE + "description: 2024-05-01\nairflow:\n  tags: [2024-05-01]\n"
    text = text.replace(
        "format: parquet\n  path: /data/ods/user_inc",
        "format: parquet\n  options: {since: 2024-05-01}\n  path: /data/ods/user_inc",
    )
    spec = load_spec_file(write(tmp_path, text, "text.yaml"))
    assert (spec.description, spec.airflow.tags, spec.source.options) == (
        "2024-05-01",
        ["2024-05-01"],
        {"since": "2024-05-01"},
    )


def test_scan_specs_reports_a_bad_date_against_its_file_and_loads_the_others(tmp_path):
    write(tmp_path, EXAMPLE)
    write(
        tmp_path,
        EXAMPLE.replace("start_date: '2024-01-01'", "start_date: 2024-13-01").replace("dim_user", "zz"),
        "zz.yaml",
    )
    found = {path.name: spec for path, spec in scan_specs(tmp_path)}
    assert found["dim_user.yaml"].name == "dim_user"
    assert isinstance(found["zz.yaml"], SpecError) and "zz.yaml: key 'start_date'" in str(found["zz.yaml"])


def test_an_unexpected_failure_is_a_spec_error_of_its_file(tmp_path, monkeypatch):
    write(tmp_path, EXAMPLE)
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    found = {path.name: spec for path, spec in scan_specs(tmp_path)}
    assert found["dim_user.yaml"].name == "dim_user"
    message = str(found["latin1.yaml"])
    assert (
        message.startswith(f"{tmp_path / 'latin1.yaml'}: cannot load spec: UnicodeDecodeError: ")
        and "\n" not in message
    )

    def broken(raw):
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(TableSpec, "model_validate", broken)
    with pytest.raises(SpecError, match=r"dim_user.yaml: cannot load spec: RuntimeError: a bug$"):
        load_spec_file(tmp_path / "dim_user.yaml")

    def interrupted(raw):
        raise KeyboardInterrupt

    monkeypatch.setattr(TableSpec, "model_validate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        list(scan_specs(tmp_path))


def test_find_spec_takes_the_file_the_dags_keep_when_two_use_one_name(tmp_path):
    """A later copy of a spec must not stop the table's merges: the CLI keeps the first file in
    file order, as the DAGs do, and the copy is the DAGs' import error."""
    write(tmp_path, EXAMPLE)
    write(tmp_path, EXAMPLE.replace("table: dw.dim_user", "table: dw.copy"), "zz_copy.yaml")
    scanned = dict(scan_specs(tmp_path))
    path, spec = find_spec("dim_user", tmp_path)
    assert (path, spec.table) == (tmp_path / "dim_user.yaml", "dw.dim_user") and scanned[path] == spec
    assert str(scanned[tmp_path / "zz_copy.yaml"]) == (
        f"{tmp_path / 'zz_copy.yaml'}: key 'name': 'dim_user' is also used by {tmp_path / 'dim_user.yaml'}, which is kept"
    )


@pytest.mark.parametrize("change", [("table: dw.dim_user", "table: dw.copy"), ("name: dim_user", "name: dim_user_v2")])
def test_the_file_named_after_its_spec_is_kept_over_a_copy_that_sorts_first(tmp_path, change):
    """Editing dim_user.yaml must change the table even when a backup copy sorts before it."""
    write(tmp_path, EXAMPLE)
    write(tmp_path, EXAMPLE.replace(*change), "a_backup.yaml")
    scanned = dict(scan_specs(tmp_path))
    assert isinstance(scanned[tmp_path / "dim_user.yaml"], TableSpec)
    assert find_spec("dim_user", tmp_path)[0] == tmp_path / "dim_user.yaml"
    key = "name" if "table" in change[0] else "table"
    assert str(scanned[tmp_path / "a_backup.yaml"]).startswith(f"{tmp_path / 'a_backup.yaml'}: key '{key}': ")
    assert str(scanned[tmp_path / "a_backup.yaml"]).endswith(
        f"is also used by {tmp_path / 'dim_user.yaml'}, which is kept"
    )


def test_find_spec_refuses_the_file_whose_table_an_earlier_file_uses(tmp_path):
    write(tmp_path, EXAMPLE)
    write(tmp_path, EXAMPLE.replace("name: dim_user", "name: other"), "other.yaml")
    assert find_spec("dim_user", tmp_path)[0] == tmp_path / "dim_user.yaml"
    with pytest.raises(SpecError) as err:
        find_spec("other", tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'other.yaml'}: key 'table': 'dw.dim_user' is also used by {tmp_path / 'dim_user.yaml'}, which is kept"
    )


def test_find_spec_fails_on_the_broken_file_named_after_it(tmp_path):
    write(tmp_path, EXAMPLE, "a.yaml")
    write(tmp_path, "name: [broken", "dim_user.yaml")
    with pytest.raises(SpecError, match="dim_user.yaml: line"):
        find_spec("dim_user", tmp_path)


INCREMENT = "format: parquet\n  path: /data/ods/user_inc/ds={{ ds }}"


@pytest.mark.parametrize(
    "old, template, key, reason",
    [
        (INCREMENT, "/in/ds={{ dss }}", "source.path", "'dss' is undefined"),
        (INCREMENT, "/in/{{ ds_nodash }}/ds={{ dss }}", "source.path", "'dss' is undefined"),
        (INCREMENT, "/in/ds={{ ds", "source.path", "unexpected end of template"),
        (INCREMENT, "/in/ds={{ ds | nope }}", "source.path", "No filter named 'nope'"),
        (INCREMENT, "/in/ds={{ ds + 1 }}", "source.path", "TypeError: can only concatenate"),
        ("path: /data/ods/user_base", "/base/{{ ds_nodsh }}", "base.path", "'ds_nodsh' is undefined"),
        (INCREMENT, "ds = '{{ day }}'", "source.partition", "'day' is undefined"),
    ],
)
def test_a_bad_template_names_file_and_key_at_load(tmp_path, old, template, key, reason):
    if key == "source.partition":
        new = f'format: table\n  table: ods.user\n  partition: "{template}"'
    else:
        new = old.replace(old.split("path: ")[1], template)
    path = write(tmp_path, EXAMPLE.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: key '{key}': cannot render {template!r}: {reason}"), message
    assert "\n" not in message and "(got" not in message


def test_templates_with_every_variable_load(tmp_path):
    text = EXAMPLE.replace("ds={{ ds }}", "{{ ds_nodash }}/{{ prev_ds }}..{{ next_ds }}/ds={{ ds }}")
    spec = load_spec_file(write(tmp_path, text))
    assert spec.source.path == "/data/ods/user_inc/{{ ds_nodash }}/{{ prev_ds }}..{{ next_ds }}/ds={{ ds }}"


def test_a_run_time_render_error_names_the_spec_key(tmp_path):
    from zipper.inputs import sources

    path = write(tmp_path, EXAMPLE)
    spec = load_spec_file(path)
    bad_source = spec.source.model_copy(update={"path": "/in/{{ dss }}"})  # past the load check
    with pytest.raises(SpecError) as err:
        sources.locate(None, spec, bad_source, dt.date(2024, 3, 1), "increment")
    assert (
        str(err.value)
        == f"dw.dim_user 2024-03-01: {path}: key 'source.path': cannot render '/in/{{{{ dss }}}}': 'dss' is undefined"
    )
    bad_base = spec.base.model_copy(update={"path": "/in/{{ dss }}"})
    with pytest.raises(SpecError, match=f"^dw.dim_user 2024-03-01: {path}: key 'base.path': cannot render"):
        sources.locate(None, spec, bad_base, dt.date(2024, 3, 1), "base")


COLUMNS = "columns: {user_id: bigint, Name: string, city: string}\n"


@pytest.mark.parametrize("tracked, unknown", [("[citty]", "['citty']"), ("[name, Citty, zip]", "['citty', 'zip']")])
def test_track_columns_must_be_declared_columns(tmp_path, tracked, unknown):
    path = write(tmp_path, EXAMPLE.replace("track_columns: all", f"track_columns: {tracked}\n{COLUMNS}"))
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    assert str(err.value) == f"{path}: key 'track_columns': not among the declared columns: {unknown}"


def test_track_columns_match_declared_columns_in_any_case(tmp_path):
    spec = load_spec_file(
        write(tmp_path, EXAMPLE.replace("track_columns: all", f"track_columns: [NAME, City]\n{COLUMNS}"))
    )
    assert spec.track_columns == ["name", "city"]
    unchecked = load_spec_file(
        write(tmp_path, EXAMPLE.replace("track_columns: all", "track_columns: [citty]"), "b.yaml")
    )
    assert unchecked.track_columns == ["citty"]  # no columns declared: the merge checks against the table


@pytest.mark.parametrize(
    "keys, expected",
    [
        (
            "track_columns: [name]\ntrack_columns_except: [city]",
            "key 'track_columns_except': give track_columns (the columns that open a version) or"
            " track_columns_except (those that do not), not both",
        ),
        ("track_columns_except: []", "key 'track_columns_except': give a non-empty list"),
        ("track_columns_except: [User_Id]", "key 'track_columns_except': track_columns_except may not list key"),
        ("track_columns_except: [end_dt]", "may not list key or reserved columns: ['end_dt']"),
        ("track_columns_except: [zipper_x]", "key 'track_columns_except': ['zipper_x']: names starting with 'zipper_'"),
        (
            f"track_columns_except: [citty]\n{COLUMNS}",
            "key 'track_columns_except': not among the declared columns: ['citty']",
        ),
        (
            f"track_columns_except: [name, city]\n{COLUMNS}",
            "key 'track_columns_except': leaves no column to track: every change would update in place",
        ),
    ],
)
def test_track_columns_except_is_checked_at_load(tmp_path, keys, expected):
    path = write(tmp_path, EXAMPLE.replace("track_columns: all", keys))
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    assert expected in str(err.value)
    assert str(err.value).startswith(f"{path}: key 'track_columns_except': ") and "\n" not in str(err.value)


def test_track_columns_except_and_ignore_null_updates_load(tmp_path):
    spec = load_spec_file(
        write(tmp_path, EXAMPLE.replace("track_columns: all", f"track_columns_except: [City]\n{COLUMNS}"))
    )
    assert spec.track_columns == "all" and spec.track_columns_except == ["city"]
    unchecked = load_spec_file(
        write(tmp_path, EXAMPLE.replace("track_columns: all", "track_columns_except: [citty]"), "b.yaml")
    )
    assert unchecked.track_columns_except == ["citty"]  # no columns declared: the merge checks against the table
    for mode in ("upsert", "cdc"):
        text = EXAMPLE.replace("mode: upsert", f"mode: {mode}\n  ignore_null_updates: true")
        assert load_spec_file(write(tmp_path, text, f"{mode}.yaml")).source.fills_null_updates
    assert not load_spec_file(write(tmp_path, EXAMPLE, "c.yaml")).source.fills_null_updates


@pytest.mark.parametrize(
    "partition",
    [
        "ds = {{ ds }}",
        "ds = '{{ ds }}' OR 1 = 1",
        "ds",
        "ds = 'x' AND",
        "ds = 'x' region = 'eu'",
        "ds = 'x' ANDregion = 'eu'",
    ],
)
def test_a_partition_that_is_not_equalities_names_file_and_key_at_load(tmp_path, partition):
    new = f'format: table\n  table: ods.user\n  partition: "{partition}"'
    path = write(tmp_path, EXAMPLE.replace(INCREMENT, new))
    with pytest.raises(SpecError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: key 'source.partition': "), message
    assert message.endswith("expected col = 'value' [AND ...]"), message


def test_a_partition_reads_term_by_term():
    from zipper.tablespec.templates import parse_partition

    assert parse_partition("ds = '2024-01-01' and Region='eu, north and south' , kind = ''") == {
        "ds": "2024-01-01",
        "region": "eu, north and south",
        "kind": "",
    }
    with pytest.raises(ValueError, match="names ds twice"):
        parse_partition("ds = 'a' AND DS = 'b'")


def test_a_partition_of_equalities_loads(tmp_path):
    new = "format: table\n  table: ods.user\n  partition: \"ds = '{{ ds }}' AND region = 'eu'\""
    spec = load_spec_file(write(tmp_path, EXAMPLE.replace(INCREMENT, new)))
    assert spec.source.partition == "ds = '{{ ds }}' AND region = 'eu'"


def test_reader_options_take_yaml_booleans_and_numbers_as_spark_text(tmp_path):
    path = write(
        tmp_path,
        EXAMPLE.replace(
            "  format: parquet\n",
            "  format: csv\n  options: {header: true, samplingRatio: 0.5, maxColumns: 40, sep: ';'}\n",
            1,
        ),
    )
    spec = load_spec_file(path)
    assert spec.source.options == {"header": "true", "samplingRatio": "0.5", "maxColumns": "40", "sep": ";"}
    bad = write(
        tmp_path, EXAMPLE.replace("  format: parquet\n", "  format: csv\n  options: {sep: [';']}\n", 1), "bad.yaml"
    )
    with pytest.raises(SpecError, match=r"bad.yaml: key 'source.options.sep': Input should be a valid string"):
        load_spec_file(bad)


def test_a_reader_option_given_in_two_spellings_is_refused(tmp_path):
    """Spark takes option names in any case, and of two spellings the one it is given last."""
    path = write(
        tmp_path,
        EXAMPLE.replace(
            "  format: parquet\n", "  format: parquet\n  options: {mergeSchema: true, mergeschema: false}\n", 1
        ),
    )
    with pytest.raises(SpecError) as raised:
        load_spec_file(path)
    assert str(raised.value).startswith(f"{path}: key 'source.options': ")
    assert "'mergeSchema' and 'mergeschema' are one Spark option (names ignore case); keep one" in str(raised.value)


def test_find_spec_matches_a_name_written_in_any_case(tmp_path):
    write(tmp_path, EXAMPLE.replace("name: dim_user", "name: Dim_User"))
    path, spec = find_spec("Dim_User", tmp_path)
    assert spec.name == "dim_user" and find_spec("dim_user", tmp_path)[0] == path


def test_an_inclusive_table_may_run_on_open_end_itself(tmp_path):
    """Its versions closed that day end the day before: the load agrees with the run's own check."""
    text = EXAMPLE.replace("open_end: '9999-12-31'", "open_end: '2024-12-31'").replace(
        "end_style: exclusive", "end_style: inclusive"
    )
    spec = load_spec_file(write(tmp_path, text))
    assert spec.end_date == spec.open_end == dt.date(2024, 12, 31)
    assert spec.closed_end(spec.end_date) < spec.open_end
