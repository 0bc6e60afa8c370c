"""SIGKILL a merge at each named step: the table is the old state or the new one, never a mix,
and the next run converges."""

from __future__ import annotations

import signal

import pytest

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper
from zipper.core.faults import STEPS

pytestmark = pytest.mark.subprocess
OPEN = "9999-12-31"


def expected_rows(days: int) -> list[list[str]]:
    """Day k renames id k (from 'n0' to f'n{k}') and adds id 10 + k."""
    rows = []
    for i in range(1, 5):
        if i <= days:
            rows.append([str(i), "n0", "2023-12-31", day(i)])
            rows.append([str(i), f"n{i}", day(i), OPEN])
        else:
            rows.append([str(i), "n0", "2023-12-31", OPEN])
    rows += [[str(10 + k), "new", day(k), OPEN] for k in range(1, days + 1)]
    return sorted(rows)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    make_spec(root)
    write_parquet(root / "data" / "base", [(i, "n0", None) for i in range(1, 5)])
    for k in range(1, len(STEPS) + 1):
        write_parquet(root / "data" / "incr" / f"ds={day(k)}", [(k, f"n{k}", None), (10 + k, "new", None)])
    return root


def strip_city(rows):
    return sorted([r[0], r[1], r[3], r[4]] for r in rows)


def test_kill_at_each_step_leaves_old_or_new_state_and_next_run_converges(faulty):
    state = probe(faulty, "dw.dim", "init", "dim")
    assert state["exit"] == 0
    committed = state["after"]
    for k, step in enumerate(STEPS, start=1):
        killed = zipper(faulty, "merge", "dim", "--ds", day(k), ZIPPER_KILL_AT=step)
        assert killed.returncode == -signal.SIGKILL, (step, killed.stderr[-2000:])

        converge = probe(faulty, "dw.dim", "merge", "dim", "--ds", day(k))
        seen, after = converge["before"], converge["after"]
        assert converge["exit"] == 0, (step, converge)
        assert strip_city(after["rows"]) == expected_rows(k), step
        if step == "after_publish":
            assert seen["rows"] == after["rows"], "published before the kill: the new state"
            assert "no-op" in converge["stdout"]
        else:
            assert seen["rows"] == committed["rows"], f"killed {step}: the old state"
            assert seen["partitions_with_rows"] == committed["partitions_with_rows"]
            assert "1 new, 1 changed" in converge["stdout"]
        # nothing left over: no pending partition, every partition committed
        assert after["partitions"] == sorted([day(i) for i in range(1, k + 1)] + [OPEN]), step
        committed = after
