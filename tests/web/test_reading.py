"""The view's reading policy (zipper.web.reading): the tables page answers from its last read and
refreshes behind the answer; spec files are parsed again only when one changed."""

from __future__ import annotations

import threading

from tests.cli.helpers import make_spec
from zipper.table.state import TableState
from zipper.web import reading


class Clock:
    """The time as the test sets it: no sleeping, no timing."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingReader(reading.StateReader):
    """Answers every table as existing-but-empty, and counts the tables each read asked for.

    Stands in for the metastore (tests/web/test_view.py reads a real one); a refresh in the
    background waits for `release` so the test sees the answer given meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[list[str]] = []
        self.release = threading.Event()
        self.release.set()

    def states(self, uri, specs):
        self.release.wait(timeout=60)
        self.asked.append([spec.name for spec in specs])
        return {spec.name: TableState(exists=False) for spec in specs}


def specs_in(folder, *names):
    for name in names:
        make_spec(folder, name)
    return [entry.spec for entry in reading.load_specs(folder / "specs")]


def test_the_tables_page_answers_from_its_last_read_and_refreshes_behind_it(tmp_path):
    specs = specs_in(tmp_path, "dim_a", "dim_b")
    reader, clock = CountingReader(), Clock()
    recent = reading.RecentStates(reader, fresh_s=10, max_age_s=900, clock=clock)

    first = recent.states("thrift://h:1", specs)  # nothing read yet: read while the request waits
    assert reader.asked == [["dim_a", "dim_b"]] and first.read_at == clock.now and not first.refreshing
    assert set(first.states) == {"dim_a", "dim_b"}

    clock.now += 5  # fresh: answered as it is
    assert recent.states("thrift://h:1", specs).read_at == first.read_at and len(reader.asked) == 1

    clock.now += 60  # older than fresh_s: answered at once from the old read, a refresh starts behind it
    reader.release.clear()
    stale = recent.states("thrift://h:1", specs)
    assert stale.refreshing and stale.read_at == first.read_at
    assert recent.states("thrift://h:1", specs).refreshing  # asked again meanwhile: one refresh only
    reader.release.set()
    recent.settle(timeout=60)
    assert reader.asked == [["dim_a", "dim_b"]] * 2
    refreshed = recent.states("thrift://h:1", specs)
    assert refreshed.read_at == clock.now and not refreshed.refreshing

    clock.now += 901  # too old to show: read while the request waits
    again = recent.states("thrift://h:1", specs)
    assert again.read_at == clock.now and not again.refreshing and len(reader.asked) == 3


def test_a_spec_added_since_the_last_read_is_read_alone(tmp_path):
    reader, clock = CountingReader(), Clock()
    recent = reading.RecentStates(reader, clock=clock)
    recent.states("thrift://h:1", specs_in(tmp_path, "dim_a"))
    both = specs_in(tmp_path, "dim_b")
    found = recent.states("thrift://h:1", both)
    assert reader.asked == [["dim_a"], ["dim_b"]] and set(found.states) == {"dim_a", "dim_b"}


def test_spec_files_are_parsed_again_only_when_one_changed(tmp_path):
    folder = tmp_path / "specs"
    first = specs_in(tmp_path, "dim_a", "dim_b")
    assert [e.spec for e in reading.load_specs(folder)] == first
    assert all(e.spec is s for e, s in zip(reading.load_specs(folder), first, strict=True))  # not parsed again
    make_spec(tmp_path, "dim_a", end_date="2024-01-09")  # a longer file: its size changes, whatever the clock
    changed = reading.load_specs(folder)
    assert str(changed[0].spec.end_date) == "2024-01-09" and changed[1].spec == first[1]
    (folder / "dim_b.yaml").unlink()
    assert [e.spec.name for e in reading.load_specs(folder)] == ["dim_a"]
    (folder / "dim_c.yaml").write_text("name: [\n")
    entries = reading.load_specs(folder)
    assert [e.spec.name if e.spec else e.path.name for e in entries] == ["dim_a", "dim_c.yaml"]
    assert entries[1].error


def test_a_request_during_the_starts_read_waits_for_it_instead_of_reading_again(tmp_path):
    specs = specs_in(tmp_path, "dim_a", "dim_b")
    reader, clock = CountingReader(), Clock()
    recent = reading.RecentStates(reader, clock=clock)
    reader.release.clear()
    recent.prime("thrift://h:1", specs)  # as the API server starts: a read behind it
    answers = []
    request = threading.Thread(target=lambda: answers.append(recent.states("thrift://h:1", specs)))
    request.start()
    reader.release.set()
    request.join(timeout=60)
    assert reader.asked == [["dim_a", "dim_b"]]  # one read: the request used the start's
    assert answers[0].read_at == clock.now and not answers[0].refreshing
