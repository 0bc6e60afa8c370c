"""The increment checks behind the sensor: files, table partitions, landing-zone folders; and the
deferrable trigger firing when the increment appears. Real files, no Spark."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
import yaml

from zipper.airflow.increments import (
    CHECKS,
    ExternalMetastore,
    check_files,
    check_increment,
    check_landing_zone,
)
from zipper.core.errors import StateError
from zipper.tablespec.loader import load_spec_file

DS = dt.date(2024, 1, 2)


def spec_at(folder: Path, source: dict, name: str = "dim"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": name, "table": f"dw.{name}", "keys": ["id"], "source": source, "start_date": "2024-01-01"}
        )
    )
    return load_spec_file(path), path


def test_files_are_ready_when_the_rendered_path_exists_even_empty(tmp_path):
    spec, _ = spec_at(tmp_path / "specs", {"path": "../in/ds={{ ds }}"})  # relative to the spec's folder
    assert not check_files(spec, DS, tmp_path).ready
    (tmp_path / "in" / "ds=2024-01-02").mkdir(parents=True)  # an empty folder: an empty increment
    readiness = check_increment(spec, DS, tmp_path)
    assert readiness.ready and readiness.checked == str(tmp_path / "in" / "ds=2024-01-02")
    assert not check_files(spec, DS + dt.timedelta(days=1), tmp_path).ready


def test_globs_match_like_the_merge(tmp_path):
    spec, _ = spec_at(tmp_path, {"format": "csv", "path": str(tmp_path / "in" / "{{ ds_nodash }}_*.csv")})
    assert not check_increment(spec, DS, tmp_path).ready
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "20240102_part1.csv").write_text("id\n1\n")
    assert check_increment(spec, DS, tmp_path).ready


@pytest.mark.parametrize("scheme", ["file:", "file://"])
def test_a_file_uri_is_looked_for_on_the_local_disk_in_either_spelling(tmp_path, scheme):
    """Hadoop takes `file:/in` as well as `file:///in`; the sensor looked for `file:/in` as a
    relative folder of that name and waited for ever."""
    spec, _ = spec_at(tmp_path, {"path": scheme + str(tmp_path / "in" / "ds={{ ds }}")})
    assert not check_increment(spec, DS, tmp_path).ready
    (tmp_path / "in" / "ds=2024-01-02").mkdir(parents=True)
    assert check_increment(spec, DS, tmp_path).ready


def test_a_table_partition_on_the_retired_embedded_metastore_is_refused_not_guessed(tmp_path, monkeypatch):
    """The sensor no longer guesses the partition's directory: the retired mode is refused in one
    line, before any server is started (the local server's check: test_table_increments.py)."""
    monkeypatch.setenv("ZIPPER_METASTORE", "embedded")
    spec, _ = spec_at(tmp_path, {"format": "table", "table": "ods.user_inc", "partition": "ds = '{{ ds }}'"})
    warehouse = tmp_path / "warehouse"
    with pytest.raises(StateError, match="ZIPPER_METASTORE=embedded is retired"):
        check_increment(spec, DS, warehouse)
    assert not warehouse.exists()


def test_with_an_external_metastore_the_partition_is_asked_of_the_metastore(tmp_path, monkeypatch):
    monkeypatch.setenv("ZIPPER_METASTORE", "external")
    spec, _ = spec_at(tmp_path, {"format": "table", "table": "ods.user_inc", "partition": "ds = '{{ ds }}'"})
    with pytest.raises(ExternalMetastore) as raised:
        check_increment(spec, DS, tmp_path)
    assert raised.value.table == "ods.user_inc" and raised.value.partition == {"ds": "2024-01-02"}


def test_landing_zone_needs_a_data_file(tmp_path):
    spec, _ = spec_at(tmp_path, {"path": str(tmp_path / "lz" / "users")})
    folder = tmp_path / "lz" / "users"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    assert not check_landing_zone(spec, DS, tmp_path).ready
    (folder / "00000000000000000001.parquet").write_bytes(b"x")
    assert check_landing_zone(spec, DS, tmp_path).ready
    assert set(CHECKS) == {"files", "table", "landing_zone"}


def test_remote_paths_without_a_filesystem_fail_with_advice(tmp_path):
    spec, _ = spec_at(tmp_path, {"path": "nosuchfs://bucket/in/ds={{ ds }}"})
    with pytest.raises(RuntimeError, match="nosuchfs://.*sensor: {enabled: false}"):
        check_increment(spec, DS, tmp_path)


def test_trigger_fires_once_the_increment_appears(tmp_path):
    from zipper.airflow.triggers import IncrementTrigger

    _, path = spec_at(tmp_path, {"path": str(tmp_path / "in" / "ds={{ ds }}")})
    trigger = IncrementTrigger(spec_path=str(path), ds=DS.isoformat(), poke_interval=0.05)
    classpath, kwargs = trigger.serialize()
    assert classpath == "zipper.airflow.triggers.IncrementTrigger" and kwargs["ds"] == "2024-01-02"

    async def scenario():
        events = trigger.run()
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.2)
        assert not first.done()  # still waiting: nothing there yet
        (tmp_path / "in" / "ds=2024-01-02").mkdir(parents=True)
        return await asyncio.wait_for(first, 5)

    event = asyncio.run(scenario())
    assert event.payload == {"status": "ready", "checked": str(tmp_path / "in" / "ds=2024-01-02")}


def test_the_trigger_checks_first_one_interval_after_the_deferral(tmp_path):
    """The sensor checked just before deferring; an immediate second check could only meet
    Airflow's resume-after-defer race."""
    from zipper.airflow.triggers import IncrementTrigger

    _, path = spec_at(tmp_path, {"path": str(tmp_path / "in" / "ds={{ ds }}")})
    (tmp_path / "in" / "ds=2024-01-02").mkdir(parents=True)  # already there
    trigger = IncrementTrigger(spec_path=str(path), ds=DS.isoformat(), poke_interval=0.5)

    async def scenario():
        first = asyncio.ensure_future(trigger.run().__anext__())
        await asyncio.sleep(0.1)  # a timer due earlier than the trigger's: runs first
        waiting = not first.done()
        return waiting, await asyncio.wait_for(first, 5)

    waiting, event = asyncio.run(scenario())
    assert waiting and event.payload["status"] == "ready"


def test_a_folder_a_spark_job_is_still_writing_into_is_not_ready(tmp_path):
    """Spark makes the day's folder, and `_temporary` in it, before its first file is committed:
    found, the merge would commit the day as empty."""
    spec, _ = spec_at(tmp_path, {"path": str(tmp_path / "in" / "ds={{ ds }}")})
    folder = tmp_path / "in" / "ds=2024-01-02"
    attempt = folder / "_temporary" / "0" / "_temporary" / "attempt_202401020000_0001_m_000000_0"
    attempt.mkdir(parents=True)
    (attempt / "part-00000.parquet").write_bytes(b"PAR1")
    readiness = check_increment(spec, DS, tmp_path)
    assert not readiness.ready and readiness.checked == f"{folder} (still being written: it holds _temporary)"
    (folder / "part-00000.parquet").write_bytes(b"PAR1")  # the job's commit: the file moves, _temporary goes
    for child in sorted(folder.joinpath("_temporary").rglob("*"), reverse=True):
        child.rmdir() if child.is_dir() else child.unlink()
    folder.joinpath("_temporary").rmdir()
    assert check_increment(spec, DS, tmp_path).ready


def test_a_glob_of_files_is_not_ready_while_a_job_writes_beside_them(tmp_path):
    spec, _ = spec_at(tmp_path, {"format": "csv", "path": str(tmp_path / "in" / "{{ ds_nodash }}_*.csv")})
    (tmp_path / "in" / ".spark-staging-3f2a").mkdir(parents=True)  # dynamic partition overwrite under way
    (tmp_path / "in" / "20240102_part1.csv").write_text("id\n1\n")
    readiness = check_increment(spec, DS, tmp_path)
    assert not readiness.ready and "still being written: it holds .spark-staging-3f2a" in readiness.checked
    (tmp_path / "in" / ".spark-staging-3f2a").rmdir()
    assert check_increment(spec, DS, tmp_path).ready


def sensor_context(dag_id: str = "zipper_dim") -> dict:
    from types import SimpleNamespace

    return {"dag": SimpleNamespace(dag_id=dag_id), "dag_run": SimpleNamespace(run_type="scheduled"), "ds": "2024-01-02"}


def waiting_sensor(tmp_path, **options):
    from zipper.airflow.sensors import ZipperIncrementSensor

    _, path = spec_at(tmp_path, {"path": str(tmp_path / "in" / "ds={{ ds }}")})
    return ZipperIncrementSensor(
        task_id="wait_for_increment", spec_path=str(path), ds="2024-01-02", poke_interval=0, timeout=0, **options
    )


def test_a_skip_tables_sensor_stops_waiting_for_an_input_that_is_not_there_skip_after_the_date_ends(tmp_path):
    """on_missing_input: skip. A weekend's file that never comes: the sensor succeeds `skip_after` seconds
    after the date ends, and the merge commits the date as skipped; a fail table waits until its timeout."""
    from zipper.airflow.compat import AirflowException

    now = dt.datetime.now(dt.UTC)
    sensor = waiting_sensor(tmp_path, mode="poke", skip_after=3600)

    def ended(ago: dt.timedelta) -> dict:
        return {**sensor_context(), "data_interval_end": now - ago}

    assert not sensor.poke(ended(dt.timedelta(minutes=30)))  # within the wait
    assert sensor.poke(ended(dt.timedelta(hours=2)))  # past it: the merge commits the date as skipped
    assert not sensor.poke(sensor_context())  # a run without a data interval keeps waiting
    assert not waiting_sensor(tmp_path, mode="poke").poke(ended(dt.timedelta(days=30)))  # fail: waits
    writing = tmp_path / "in" / "ds=2024-01-02" / "_temporary"
    writing.mkdir(parents=True)  # there, and still being written: not missing, waited for
    assert not sensor.poke(ended(dt.timedelta(hours=2)))
    writing.rmdir()
    writing.parent.rmdir()  # gone again: an empty folder would be an empty increment, found

    # deferred: the trigger fires `skipped` past that time, and the sensor then succeeds
    sensor = waiting_sensor(tmp_path, mode="poke", deferrable=True, skip_after=3600)
    skip_at = sensor.skip_at(ended(dt.timedelta(hours=2)))
    assert skip_at == now + dt.timedelta(hours=-1)
    from zipper.airflow.triggers import IncrementTrigger

    trigger = IncrementTrigger(sensor.spec_path, "2024-01-02", poke_interval=0.05, skip_at=skip_at.timestamp())
    assert trigger.serialize()[1]["skip_at"] == skip_at.timestamp()
    event = asyncio.run(asyncio.wait_for(trigger.run().__anext__(), 5))
    assert event.payload == {"status": "skipped", "checked": str(tmp_path / "in" / "ds=2024-01-02")}
    sensor.execute_complete(sensor_context(), event.payload)  # succeeds
    with pytest.raises(AirflowException):
        sensor.execute_complete(sensor_context(), {"status": "error", "message": "no"})


EXPECTED_TIMEOUT = (
    "dw.dim: the increment of 2024-01-02 did not land within the sensor's timeout of 0 s:"
    " {path} ({why}). Once it is there, clear this run and every later one:"
    " airflow tasks clear zipper_dim -s 2024-01-02"
    " -y (UI: clear this run's merge task with Upstream and Future)"
)


def test_a_sensor_timeout_names_table_date_path_and_the_clear_that_resumes(tmp_path):
    from zipper.airflow.compat import AirflowSensorTimeout

    sensor = waiting_sensor(tmp_path, mode="poke")
    with pytest.raises(AirflowSensorTimeout) as raised:
        sensor.execute(sensor_context())
    why = str(raised.value).split(" (", 1)[1].split("). Once", 1)[0]
    assert why.startswith("Sensor has timed out")
    assert str(raised.value) == EXPECTED_TIMEOUT.format(path=tmp_path / "in" / "ds=2024-01-02", why=why)


def test_a_deferred_sensor_that_times_out_says_the_same(tmp_path):
    """The triggerer's timeout resumed the task with Airflow's bare `Trigger timeout`: no table, date or path."""
    from zipper.airflow.compat import AIRFLOW_3, AirflowSensorTimeout

    sensor = waiting_sensor(tmp_path, mode="poke", deferrable=True)
    error = "Trigger timeout" if AIRFLOW_3 else "Trigger/execution timeout"  # what each scheduler sends
    with pytest.raises(AirflowSensorTimeout) as raised:
        sensor.resume_execution("__fail__", {"error": error}, sensor_context())
    assert str(raised.value) == EXPECTED_TIMEOUT.format(path=tmp_path / "in" / "ds=2024-01-02", why=error)


def test_a_deferred_check_that_failed_names_the_table_date_spec_and_the_reason(tmp_path):
    """The trigger's error event was shown as a dict: `increment check failed: {'status': 'error', ...}`; then it
    named the spec file but not the table, and a reason over several lines made a message over several lines."""
    from zipper.airflow.compat import AirflowException

    sensor = waiting_sensor(tmp_path, mode="poke", deferrable=True)
    event = {"status": "error", "message": "RuntimeError: cannot check nosuchfs://in/ds=2024-01-02:\n  no fsspec"}
    with pytest.raises(AirflowException) as raised:
        sensor.execute_complete(sensor_context(), event)
    assert str(raised.value) == (
        f"dw.dim (spec {sensor.spec_path}): cannot check the increment of 2024-01-02:"
        " RuntimeError: cannot check nosuchfs://in/ds=2024-01-02: no fsspec"
    )


def test_a_deferred_check_of_a_spec_that_no_longer_loads_names_the_spec_file(tmp_path):
    from zipper.airflow.compat import AirflowException

    sensor = waiting_sensor(tmp_path, mode="poke", deferrable=True)
    Path(sensor.spec_path).write_text("name: [broken\n")
    event = {"status": "error", "message": "SpecError: the spec does not parse"}
    with pytest.raises(AirflowException) as raised:
        sensor.execute_complete(sensor_context(), event)
    assert str(raised.value) == (
        f"{sensor.spec_path}: cannot check the increment of 2024-01-02: SpecError: the spec does not parse"
    )
