"""One SparkSession (Hive support, the metastore server of a temporary warehouse) for the whole
run, and the clean-up of every other metastore server a test starts (tests/metastores.py)."""

from __future__ import annotations

import itertools
import os

import pytest

from tests import metastores
from tests.jvm import spark_env

# `connect`: the `spark` fixture is a Spark Connect client of the warehouse's server; else a classic
# session whose driver runs in the test process
SESSION_ENV = "ZIPPER_TEST_SPARK"
_counter = itertools.count()
_shared_warehouses: set = set()  # the session's warehouse: its server lives as long as the session


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warehouse")
    _shared_warehouses.add(folder.resolve())
    return folder


@pytest.fixture(scope="session")
def spark(warehouse):
    from zipper.runtime.metastore import MetastoreService
    from zipper.runtime.session import build_session
    from zipper.runtime.settings import SessionSettings, SparkRunner

    os.environ.pop("ZIPPER_KILL_AT", None)
    connect = os.environ.get(SESSION_ENV) == "connect"
    runner = SparkRunner.SERVER if connect else SparkRunner.DRIVER
    settings = SessionSettings(warehouse=str(warehouse), app_name="zipper tests", runner=runner)
    extra = {
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "true",
    }
    with MetastoreService(warehouse).for_this_run():  # stopped, by its pid, after the session
        with pytest.MonkeyPatch.context() as mp:  # only this JVM: subprocesses get theirs from env_for
            for key, value in spark_env().items():
                mp.setenv(key, value)
            session = build_session(settings, extra=extra)
        try:
            yield session
        finally:
            session.stop()
            from zipper.runtime.spark_server import SparkServerService

            # its Spark server, whichever started it: this fixture's client, or a command of a test
            SparkServerService(settings).stop()


@pytest.fixture
def unique_name():
    """A table name no other test uses, so tests share one metastore without interfering."""
    return f"t{os.getpid()}_{next(_counter)}"


@pytest.fixture(autouse=True)
def _stop_the_tests_metastores(request):
    """After each test, the servers of the warehouses in its own tmp_path (by process id)."""
    yield
    own = request.node.funcargs.get("tmp_path")
    if own is not None:
        metastores.stop_servers(own)


@pytest.fixture(scope="module", autouse=True)
def _stop_the_modules_metastores(tmp_path_factory):
    """After each module, every server under the run's temporary folder but the session's."""
    yield
    metastores.stop_servers(tmp_path_factory.getbasetemp(), frozenset(_shared_warehouses))
