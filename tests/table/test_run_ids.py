"""Run ids name the run directories; vacuum and status rely on them sorting by start time."""

import datetime as dt

from zipper.table import state


def test_run_ids_made_in_one_second_sort_by_start_and_round_trip():
    start = dt.datetime(2024, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    times = [start + dt.timedelta(microseconds=m) for m in (0, 1, 999, 1000, 999_999)]
    ids = [state.new_run_id(t) for t in times]
    assert sorted(ids) == ids
    assert [state.run_time(i) for i in ids] == times


def test_run_time_of_a_foreign_directory_name_is_none():
    assert state.run_time("empty") is None
    assert state.run_time("20240101T120000Z-abc123") is None
