"""Which archive a driver is offered (zipper.runtime.jvm), without starting a JVM."""

from __future__ import annotations

import builtins
import os

from zipper.runtime import jvm


def test_no_options_when_turned_off_or_when_there_is_no_archive(tmp_path, monkeypatch):
    monkeypatch.setenv(jvm.ARCHIVE_ENV, "off")
    assert jvm.archive_path() is None and jvm.driver_options() == ""
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(tmp_path / "missing.jsa"))
    assert jvm.driver_options() == ""


def test_a_whole_archive_is_offered_quietly_and_a_cut_one_is_not(tmp_path, monkeypatch):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x" * 10)
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(archive))
    assert jvm.driver_options() == ""  # no size recorded: not known to be whole
    (tmp_path / "spark.jsa.size").write_text("10")
    assert jvm.driver_options().split() == [
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]
    archive.write_bytes(b"x" * 9)
    assert jvm.driver_options() == ""


def test_the_users_java_options_follow_the_archives(tmp_path, monkeypatch):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x" * 10)
    (tmp_path / "spark.jsa.size").write_text("10")
    monkeypatch.setenv(jvm.ARCHIVE_ENV, str(archive))
    monkeypatch.setenv(jvm.JAVA_OPTIONS_ENV, " -XX:TieredStopAtLevel=1 -XX:+HeapDumpOnOutOfMemoryError ")
    assert jvm.driver_options().split() == [
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
        "-XX:TieredStopAtLevel=1",
        "-XX:+HeapDumpOnOutOfMemoryError",
    ]
    monkeypatch.setenv(jvm.ARCHIVE_ENV, "off")
    assert jvm.driver_options() == "-XX:TieredStopAtLevel=1 -XX:+HeapDumpOnOutOfMemoryError"


def test_the_archive_key_follows_java_and_every_jar(tmp_path):
    java, home = tmp_path / "java", tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    java.write_text("java")
    for name in ("a.jar", "b.jar"):
        (home / "jars" / name).write_text(name)
    first = jvm.archive_key(java, home)
    assert jvm.archive_key(java, home) == first
    (home / "jars" / "b.jar").write_text("b.jar, rebuilt")
    second = jvm.archive_key(java, home)
    assert second != first
    os.utime(java, ns=(1, 1))
    assert jvm.archive_key(java, home) != second
    (home / "jars" / "c.jar").write_text("c")
    assert jvm.archive_key(java, home) not in (first, second)
    # The same files reached through a linked folder (a .venv shared by a link) are the same key.
    (tmp_path / "linked").symlink_to(home)
    assert jvm.archive_key(java, tmp_path / "linked") == jvm.archive_key(java, home)


def test_the_default_archive_lives_in_this_environment_keyed_to_its_java_and_pyspark(monkeypatch):
    monkeypatch.delenv(jvm.ARCHIVE_ENV, raising=False)
    path = jvm.archive_path()
    assert path.parent == jvm.archive_folder()
    assert path.name == f"spark-{jvm.archive_key(jvm.java_binary(), jvm.spark_home())}.jsa"


def test_no_archive_where_pyspark_cannot_be_imported(monkeypatch):
    """A worker that only submits to a Spark installed elsewhere has no jars here to key it to."""

    def no_pyspark():
        raise ImportError("No module named 'pyspark'")

    monkeypatch.delenv(jvm.ARCHIVE_ENV, raising=False)
    monkeypatch.setattr(jvm, "spark_home", no_pyspark)
    assert jvm.archive_path() is None and jvm.driver_options() == ""


def test_the_spark_home_is_found_without_importing_pyspark(monkeypatch):
    """The Spark server's early start asks for it in a thread while the command's main thread
    imports pyspark; two threads importing pyspark at once left the main one a half-made module
    ("cannot import name 'SQLContext' from partially initialized module 'pyspark.sql'")."""
    imported = builtins.__import__

    def no_pyspark(name, *args, **kwargs):
        if name.split(".")[0] == "pyspark":
            raise AssertionError(f"spark_home imported {name}")
        return imported(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    home = jvm.spark_home()
    monkeypatch.undo()
    assert home.name == "pyspark" and (home / "jars").is_dir()
