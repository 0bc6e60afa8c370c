"""SIGKILL a merge at each named step: the table is the old state or the new one, never a mix,
and the next run converges."""

from __future__ import annotations

import signal

import pytest

from tests.cli.helpers import day, make_spec, probe, write_parquet, zipper
from zipper.core.faults import CORRECT_STEPS, STEPS

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


def test_a_correction_killed_at_each_step_leaves_old_or_new_state_and_the_same_command_converges(faulty):
    """SIGKILL `zipper correct` at each of its steps: readers see the table before or after it,
    never between, and the same command run again converges (after the publish it finds nothing
    left to change)."""
    state = probe(faulty, "dw.dim", "merge", "dim", "--ds", day(1))  # the table has a date (a no-op if it had)
    assert state["exit"] == 0, state
    committed = state["after"]
    for k, step in enumerate(CORRECT_STEPS, start=1):
        command = ["correct", "dim", "--set", f"name=fixed{k}", "--where", f"id = {k}", "--reason", "typo"]
        killed = zipper(faulty, *command, ZIPPER_KILL_AT=step)
        assert killed.returncode == -signal.SIGKILL, (step, killed.stderr[-2000:])
        converge = probe(faulty, "dw.dim", *command)
        seen, after = converge["before"], converge["after"]
        fixed = [r for r in after["rows"] if r[0] == str(k)]
        assert fixed and all(r[1] == f"fixed{k}" for r in fixed), (step, after["rows"])
        if step == "after_correct_publish":
            assert seen["rows"] == after["rows"], "published before the kill: the new state"
            assert converge["exit"] != 0 and "already hold those values; nothing was changed" in converge["stderr"]
        else:
            assert seen["rows"] == committed["rows"], f"killed {step}: the old state"
            assert converge["exit"] == 0, (step, converge["stderr"][-2000:])
        assert after["partitions"] == committed["partitions"], step  # none added, none left pending
        committed = after
