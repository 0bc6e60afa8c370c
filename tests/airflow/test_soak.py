"""The short soak (bench/soak.py; `make soak` is the long one): two tables of different modes
(snapshot, cdc) through Airflow's scheduler over five dates each, retries on, while a merge task,
the Spark Connect server and the metastore server are each killed once, by pid, while a merge holds
its table's lock. At the end both tables equal the reference model's history for their inputs,
`zipper check` passes, no lock is held, and no run's directory is left that no commit names."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.soak import run_soak

pytestmark = [pytest.mark.slow, pytest.mark.airflow]


def test_a_short_soak_with_a_kill_of_each_kind_ends_with_every_table_equal_to_the_model(tmp_path):
    logged: list[str] = []
    result = run_soak(tmp_path, tables=2, dates=5, kills=3, seed=1, log=logged.append)
    assert result.kills == Counter(task=1, spark=1, metastore=1), logged
    assert result.retries >= 1, "a killed task is retried"  # a server's kill may land past its use
    assert result.dates_committed == 2 * 5, result.lines()
    for name, found in result.tables.items():
        assert found["ok"], (name, found["notes"], logged)
        assert found["leftover_dirs"] == [], (name, found["leftover_dirs"])
