#!/usr/bin/env python3
"""The test suite's ledger (tests/durations.txt): the commit and date of a run of the whole suite,
its total wall time, each group's wall and CPU seconds and test count, and its 50 slowest tests
(set-up and teardown included), one a line. Committed with each clean-clone figure in CHANGELOG.md,
so a test that became slower shows in a diff.

    scripts/durations_ledger.py build/test-times > tests/durations.txt

reads what `make test` wrote there (groups.txt from scripts/test.sh, a <group>.json per group from
tests/durations_plugin.py). A saved output of scripts/test.sh whose groups ran with
`--durations=0` (a CI log, say) does too, with the facts a log lacks given:

    scripts/durations_ledger.py --log run.log --commit 95c10a5 --date 2026-12-01 --total 2376
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SLOWEST = 50
GROUP_LINE = re.compile(
    r"^group (?P<name>\S+): (?P<wall>[\d.]+) s wall, (?P<user>[\d.]+) s user CPU, (?P<system>[\d.]+) s system CPU"
)
DURATION_LINE = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s (?P<phase>setup|call|teardown)\s+(?P<test>\S.*?)\s*$")
# pytest's last line: "==== 812 passed, 2 skipped, 3 warnings in 2249.12s (0:37:29) ===="
DURATIONS_HEADER = re.compile(r"^=+ slowest (?P<count>\d+) durations =+$")
SUMMARY_LINE = re.compile(r"^=+ (?P<counts>.*\d+ (?:passed|failed|skipped|errors?)\b.*) in [\d.]+s\b")
TESTS_COUNTED = ("passed", "failed", "skipped", "xfailed", "xpassed", "error", "errors")


@dataclass
class Group:
    name: str
    wall_s: float
    cpu_s: float
    tests: int = 0
    failed: int = 0  # failed or errors, as pytest counts them
    seconds_by_test: dict[str, float] = field(default_factory=dict)


@dataclass
class Run:
    commit: str = "unknown"
    date: str = "unknown"
    total_s: float | None = None
    groups: list[Group] = field(default_factory=list)
    phases_shown: int | None = None  # a log of `--durations=N`: only each group's N slowest phases


def group_of(line: str) -> Group | None:
    match = GROUP_LINE.match(line.strip())
    if match is None:
        return None
    cpu = float(match["user"]) + float(match["system"])
    return Group(match["name"], float(match["wall"]), cpu)


def read_folder(folder: Path) -> Run:
    """groups.txt (scripts/test.sh) and each group's <name>.json (tests/durations_plugin.py)."""
    run = Run()
    for line in (folder / "groups.txt").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "commit":
            run.commit = value.strip()
        elif key == "started":
            run.date = value.strip()[:10]
        elif key == "total:":
            run.total_s = float(value.split()[0])
        elif (group := group_of(line)) is not None:
            times = folder / f"{group.name}.json"
            if times.exists():
                tests = json.loads(times.read_text())["tests"]
                group.tests = len(tests)
                group.failed = sum(test.get("outcome") in ("failed", "error") for test in tests)
                group.seconds_by_test = {test["id"]: test["total"] for test in tests}
            run.groups.append(group)
    return run


def read_log(lines: list[str]) -> Run:
    """An output of scripts/test.sh: each group's pytest output (its `--durations=0` lines and its
    last line) ends with the group's own `group NAME: ...` line."""
    run = Run()
    seconds: dict[str, float] = {}
    tests = failed = 0
    for line in lines:
        if (match := DURATIONS_HEADER.match(line.strip())) is not None:
            run.phases_shown = int(match["count"])
        elif (match := DURATION_LINE.match(line.strip())) is not None:
            seconds[match["test"]] = seconds.get(match["test"], 0.0) + float(match["seconds"])
        elif (match := SUMMARY_LINE.match(line.strip())) is not None:
            counts = [(int(count), outcome) for count, outcome in re.findall(r"(\d+) (\w+)", match["counts"])]
            tests = sum(count for count, outcome in counts if outcome in TESTS_COUNTED)
            failed = sum(count for count, outcome in counts if outcome in ("failed", "error", "errors"))
        elif (group := group_of(line)) is not None:
            group.tests, group.failed, group.seconds_by_test = tests, failed, seconds
            run.groups.append(group)
            seconds, tests, failed = {}, 0, 0
        elif line.startswith("total: "):
            run.total_s = float(line.split()[1])
    return run


def ledger(run: Run, slowest: int = SLOWEST) -> str:
    width = max((len(group.name) for group in run.groups), default=0)
    lines = [
        "# Where the test suite's time goes: a run of `make test` on a clean clone, refreshed with each",
        "# clean-clone figure in CHANGELOG.md (scripts/durations_ledger.py build/test-times > tests/durations.txt).",
        "# Seconds. A test's time is its set-up, call and teardown, with the fixtures it was the first to set up.",
        f"commit {run.commit}",
        f"date {run.date}",
        f"total {run.total_s:.0f} s wall" if run.total_s is not None else "total unknown",
    ]
    for group in run.groups:
        failed = f", {group.failed} failed" if group.failed else ""
        lines.append(
            f"group {group.name:<{width}}  {group.wall_s:>6.0f} s wall  {group.cpu_s:>6.0f} CPU-s  {group.tests:>5} tests"
            + failed
        )
    ranked = sorted(
        ((seconds, group.name, test) for group in run.groups for test, seconds in group.seconds_by_test.items()),
        key=lambda entry: (-entry[0], entry[2]),
    )
    lines += ["", f"{slowest} slowest tests (s, group, test)"]
    if run.phases_shown is not None:
        lines.append(
            f"(from each group's {run.phases_shown} slowest set-ups, calls and teardowns: a test's other phases are"
            " missing, and so is a test none of whose phases was among them)"
        )
    lines += [f"{seconds:7.1f}  {name:<{width}}  {test}" for seconds, name, test in ranked[:slowest]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, help="what `make test` wrote (build/test-times)")
    parser.add_argument("--log", type=Path, help="an output of scripts/test.sh with --durations=0, instead")
    parser.add_argument("--commit", help="the commit the run measured (a log does not say)")
    parser.add_argument("--date", help="the run's date, YYYY-MM-DD")
    parser.add_argument("--total", type=float, help="the run's wall time in seconds, set-up included")
    parser.add_argument("--slowest", type=int, default=SLOWEST, help=f"how many tests to list ({SLOWEST})")
    args = parser.parse_args(argv)
    if (args.folder is None) == (args.log is None):
        parser.error("give the folder `make test` wrote (build/test-times), or --log FILE")
    if args.log is not None:
        run = read_log(args.log.read_text(errors="replace").splitlines())
    else:
        run = read_folder(args.folder)
    run.commit = args.commit or run.commit
    run.date = args.date or run.date
    run.total_s = args.total if args.total is not None else run.total_s
    if not run.groups:
        parser.error("no `group NAME: ... s wall, ...` line found: not a run of the whole suite")
    sys.stdout.write(ledger(run, args.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
