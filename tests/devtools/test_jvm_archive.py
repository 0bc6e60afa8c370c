"""The class data sharing archive set-up makes (zipper.devtools.jvm_archive) is the one the product's
own drivers map: run with `-Xshare:on`, a JVM that cannot map the archive it is given refuses
to start, so a command that succeeds proves the archive matched its JVM and jars."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cli.helpers import BIN, REPO, day, env_for, make_spec, wait_for_jvms, write_parquet, zipper
from zipper.devtools import jvm_archive
from zipper.runtime import jvm

pytestmark = pytest.mark.subprocess
STRICT = {"SPARK_SUBMIT_OPTS": "-Xshare:on"}  # only what the product itself puts on the command line
# A command's own driver: the warehouse's Spark server, which maps the same archive, would be
# started once and then found running by the next command
OWN_DRIVER = {"ZIPPER_SPARK_RUNNER": "driver"}


@pytest.fixture(scope="module")
def archive():
    made = jvm_archive.ensure_archive()
    assert made is not None and made.stat().st_size > 0
    return made


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, archive):
    root = tmp_path_factory.mktemp("jvm")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris")])
    return root


def test_the_cli_driver_maps_the_archive(workspace, archive):
    assert str(archive) in jvm.driver_options()
    result = zipper(workspace, "init", "dim", **STRICT, **OWN_DRIVER)
    assert result.returncode == 0, result.stderr
    assert "table created, base loaded: 2 open rows" in result.stdout
    # the warehouse's Spark server, started by the next command, starts strictly on it too
    served = zipper(workspace, "check", "dim", **STRICT)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["ok"] is True


def test_spark_submit_drivers_map_the_archive(workspace):
    """As the Airflow operator runs the job: the archive travels in the `--conf` pairs."""
    from zipper.runtime.settings import SessionSettings, spark_submit_conf

    conf = spark_submit_conf(SessionSettings(warehouse=str(workspace / "warehouse")))
    assert "-XX:SharedArchiveFile=" in conf["spark.driver.extraJavaOptions"]
    result = subprocess.run(
        [
            str(BIN / "spark-submit"),
            "--master",
            "local[2]",
            *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
            str(REPO / "spark_jobs" / "zipper_job.py"),
            "merge",
            "dim",
            "--ds",
            day(1),
        ],
        env=env_for(workspace, **STRICT),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workspace,
    )
    wait_for_jvms(workspace)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"dw.dim {day(1)}: 0 new, 1 changed" in result.stdout


def test_an_archive_java_cannot_map_fails_a_strict_start_and_is_skipped_otherwise(workspace, tmp_path):
    """The control for the two tests above: `-Xshare:on` does refuse an archive Java cannot use
    (here one whose header is not an archive's, as for another Java's), and without it, the
    default, the same archive costs nothing but the time it would have saved."""
    foreign = tmp_path / "foreign.jsa"
    foreign.write_bytes(bytes(65536))
    (tmp_path / "foreign.jsa.size").write_text("65536")  # whole, so it is offered
    # `check` starts a driver (`status` reads over thrift, without a JVM)
    strict = zipper(workspace, "check", "dim", ZIPPER_JVM_ARCHIVE=str(foreign), **STRICT, **OWN_DRIVER)
    assert strict.returncode != 0
    relaxed = zipper(workspace, "check", "dim", ZIPPER_JVM_ARCHIVE=str(foreign), SPARK_SUBMIT_OPTS="", **OWN_DRIVER)
    assert relaxed.returncode == 0, relaxed.stderr
    assert json.loads(relaxed.stdout)["ok"] is True


def test_a_truncated_archive_is_not_offered(archive, tmp_path, monkeypatch):
    """Java crashes on a truncated archive (SIGBUS) whatever -Xshare says: only whole ones are offered."""
    truncated = tmp_path / "truncated.jsa"
    with open(archive, "rb") as source:
        truncated.write_bytes(source.read(4096))
    (tmp_path / "truncated.jsa.size").write_text(str(archive.stat().st_size))
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(truncated))
    assert jvm.driver_options() == ""
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(archive))
    assert jvm.driver_options().startswith(f"-XX:SharedArchiveFile={archive} ")


def test_set_up_makes_no_archive_where_it_cannot_write(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(blocker / "jvm" / "spark.jsa"))
    assert jvm_archive.ensure_archive() is None
    assert jvm.driver_options() == ""
    assert "no class data sharing archive" in capsys.readouterr().err


def test_a_failed_archive_run_is_recorded_and_only_retried_when_forced(tmp_path, monkeypatch, capsys):
    """Each try costs a minute or more: set-up must not pay it again on every run."""
    target = tmp_path / "jvm" / "spark.jsa"
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(target))
    monkeypatch.setattr(jvm_archive, "MAKE_TIMEOUT_S", 0.5)  # the archiving run cannot finish in time
    assert jvm_archive.ensure_archive() is None
    record = tmp_path / "jvm" / "spark.jsa.failed"
    assert "took over 0.5 s" in record.read_text()
    assert "took over 0.5 s" in capsys.readouterr().err

    record.write_text("recorded earlier\n")
    assert jvm_archive.ensure_archive() is None
    assert "--force" in capsys.readouterr().err
    assert record.read_text() == "recorded earlier\n"  # not tried again

    assert jvm_archive.ensure_archive(force=True) is None
    assert "took over 0.5 s" in record.read_text()
    assert not target.exists() and not list(target.parent.glob("*.partial"))
