"""A table's lock file and the records its holders leave: emptied by a holder that finishes, kept by
one that fails (as by one that is killed), passed on by one that never cleared an earlier holder's
writes, so that the holder that does clear them knows since when to look."""

from __future__ import annotations

import pytest

from zipper.runtime import locks
from zipper.runtime.settings import SessionSettings


def lock_text(settings: SessionSettings, table: str) -> str:
    return (settings.warehouse_path / "metastore" / "locks" / f"{table}.lock").read_text()


def test_a_failed_holders_record_stays_until_a_later_holder_has_cleared_what_it_wrote(tmp_path):
    settings = SessionSettings(warehouse=str(tmp_path / "warehouse"))
    with locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-01") as first:
        assert first.left_by is None and first.unfinished_since is None
    assert lock_text(settings, "dw.t") == "", "a holder that finishes empties the file"

    with pytest.raises(RuntimeError), locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-02") as failed:
        raise RuntimeError("the Spark server died")
    # a later holder that fails itself: the earliest unfinished holder's time is kept
    with pytest.raises(RuntimeError), locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-02") as second:
        assert second.left_by["run"] == "zipper merge t --ds 2024-01-02"
        assert second.unfinished_since == failed.record["since"]
        raise RuntimeError("bad input")
    # one that finishes without clearing (it never opened Spark) passes the record on
    with locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-02 --no-spark") as precheck:
        assert precheck.left_by["pid"] == second.record["pid"]
    assert lock_text(settings, "dw.t") != ""
    with locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-02") as clearing:
        assert clearing.unfinished_since == failed.record["since"]
        clearing.cleared()
    assert lock_text(settings, "dw.t") == ""
    with locks.table_lock(settings, "dw.t", "zipper merge t --ds 2024-01-03") as next_one:
        assert next_one.left_by is None and next_one.unfinished_since is None
