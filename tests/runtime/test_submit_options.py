"""What a spark-submit of the job is given, per metastore and deploy mode (zipper.runtime.session),
without starting a JVM. The launcher and log4j's side of it: tests/airflow/test_operators.py."""

from __future__ import annotations

import shlex

from zipper.runtime.session import LOG_CONFIG, SessionSettings, java_property, spark_submit_conf, spark_submit_env

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


def test_cluster_mode_and_the_embedded_default_get_no_submit_options():
    assert spark_submit_env(EXTERNAL, "cluster", environ={}) == {}  # the driver and its log are the cluster's
    embedded = SessionSettings(warehouse="/data/warehouse", metastore="embedded")
    assert spark_submit_env(embedded, environ={}) == {}
    driver_options = spark_submit_conf(embedded)["spark.driver.extraJavaOptions"]
    assert f"-Dlog4j2.configurationFile={LOG_CONFIG}" in shlex.split(driver_options)


def test_paths_with_spaces_stay_one_java_option():
    """Spark's launcher splits Java options at white space outside quotes, as a POSIX shell does."""
    options = shlex.split(
        spark_submit_conf(SessionSettings(warehouse="/data/my warehouse", metastore="embedded"))[
            "spark.driver.extraJavaOptions"
        ]
    )
    assert "-Dderby.system.home=/data/my warehouse" in options
    assert "-Dderby.stream.error.file=/data/my warehouse/derby.log" in options
    assert shlex.split(java_property("log4j.configurationFile", "/opt/my zipper/log4j2.properties")) == [
        "-Dlog4j.configurationFile=/opt/my zipper/log4j2.properties"
    ]


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
