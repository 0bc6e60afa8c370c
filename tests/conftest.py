"""One SparkSession (Hive support, Derby metastore in a temporary warehouse) for the whole run."""

from __future__ import annotations

import itertools
import os

import pytest

from tests.jvm import spark_env

_counter = itertools.count()


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse):
    from zipper.runtime.session import SessionSettings, build_session

    os.environ.pop("ZIPPER_KILL_AT", None)
    with pytest.MonkeyPatch.context() as mp:  # only this JVM: subprocesses get theirs from env_for
        for key, value in spark_env().items():
            mp.setenv(key, value)
        session = build_session(
            SessionSettings(warehouse=str(warehouse), app_name="zipper tests"),
            extra={
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.sql.adaptive.enabled": "true",
            },
        )
    yield session
    session.stop()


@pytest.fixture
def unique_name():
    """A table name no other test uses, so tests share one metastore without interfering."""
    return f"t{os.getpid()}_{next(_counter)}"
