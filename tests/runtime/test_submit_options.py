"""What a spark-submit of the job is given, per metastore and deploy mode (zipper.runtime.settings),
without starting a JVM. The launcher and log4j's side of it: tests/airflow/test_operators.py."""

from __future__ import annotations

import shlex

import pytest

from zipper.core.errors import StateError
from zipper.runtime.settings import LOG_CONFIG, SessionSettings, java_property, spark_submit_conf, spark_submit_env

EXTERNAL = SessionSettings(warehouse="/data/warehouse", metastore="external")
ZIPPER_LOG = java_property("log4j.configurationFile", LOG_CONFIG)


def test_client_mode_with_an_external_metastore_gets_zippers_log_configuration_before_the_workers_options():
    # the driver's JVM options stay Spark's own (spark-defaults.conf): a --conf would replace them whole
    assert not [key for key in spark_submit_conf(EXTERNAL) if key.startswith("spark.driver.")]
    for deploy_mode in (None, "client"):
        assert spark_submit_env(EXTERNAL, deploy_mode, environ={}) == {"SPARK_SUBMIT_OPTS": ZIPPER_LOG}
    # the worker's own options come after zipper's: a log configuration among them wins
    worker = "-Xmx2g -Dlog4j2.configurationFile=file:/etc/spark/log4j2.properties"
    assert spark_submit_env(EXTERNAL, environ={"SPARK_SUBMIT_OPTS": f" {worker} "}) == {
        "SPARK_SUBMIT_OPTS": f"{ZIPPER_LOG} {worker}"
    }
    # a second submit from the same process adds nothing
    assert spark_submit_env(EXTERNAL, environ={"SPARK_SUBMIT_OPTS": f"{ZIPPER_LOG} {worker}"}) == {}


def _no_server(monkeypatch):
    """The warehouse's server named without starting one (the URI is all the conf needs)."""
    from zipper.runtime import metastore

    monkeypatch.setattr(metastore, "local_uri", lambda warehouse: "thrift://127.0.0.1:9")


def test_cluster_mode_and_the_warehouses_own_metastore_get_no_submit_options(monkeypatch):
    _no_server(monkeypatch)
    assert spark_submit_env(EXTERNAL, "cluster", environ={}) == {}  # the driver and its log are the cluster's
    local = SessionSettings(warehouse="/data/warehouse")
    assert spark_submit_env(local, environ={}) == {}
    driver_options = spark_submit_conf(local)["spark.driver.extraJavaOptions"]
    assert f"-Dlog4j2.configurationFile={LOG_CONFIG}" in shlex.split(driver_options)


def test_paths_with_spaces_stay_one_java_option(monkeypatch):
    """Spark's launcher splits Java options at white space outside quotes, as a POSIX shell does."""
    _no_server(monkeypatch)
    conf = spark_submit_conf(SessionSettings(warehouse="/data/my warehouse"))
    assert conf["spark.sql.warehouse.dir"] == "/data/my warehouse"
    assert shlex.split(java_property("log4j.configurationFile", "/opt/my zipper/log4j2.properties")) == [
        "-Dlog4j.configurationFile=/opt/my zipper/log4j2.properties"
    ]


def test_the_retired_embedded_metastore_is_refused_in_one_line():
    """Derby inside the driver has no thrift API, which zipper reads and publishes through."""
    from zipper.runtime import metastore

    retired = "ZIPPER_METASTORE=embedded is retired: zipper reads and publishes tables over the metastore's thrift"
    with pytest.raises(StateError, match=retired) as refused:
        metastore.mode({"ZIPPER_METASTORE": " Embedded "})
    assert "\n" not in str(refused.value) and "`zipper metastore start`" in str(refused.value)
    with pytest.raises(StateError, match=retired):
        SessionSettings(warehouse="/data/warehouse", metastore="embedded")
    assert metastore.mode({}) == metastore.MetastoreMode.LOCAL
    assert metastore.mode({"ZIPPER_METASTORE": "external"}) == metastore.MetastoreMode.EXTERNAL


def test_the_default_points_the_driver_at_the_warehouses_server(tmp_path):
    """`local`: the server is started for the warehouse (here a path with a space) and named by its
    URI; the driver gets no Derby options, so it never opens the database the server holds."""
    from zipper.runtime.metastore import MetastoreService

    warehouse = tmp_path / "my warehouse"
    conf = spark_submit_conf(SessionSettings(warehouse=str(warehouse)))
    server = MetastoreService(warehouse).running()
    assert server is not None and conf["spark.hadoop.hive.metastore.uris"] == server.uri
    assert conf["spark.sql.warehouse.dir"] == str(warehouse)
    options = shlex.split(conf["spark.driver.extraJavaOptions"])
    assert f"-Dlog4j2.configurationFile={LOG_CONFIG}" in options
    assert not [o for o in options if "derby" in o] and "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf
