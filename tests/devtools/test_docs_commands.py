"""The commands the README, "Getting started" and "On call" tell users to run, run as written
(as chispa runs its README's examples), so the pages cannot drift from the product.

Every ```sh block of docs/getting-started.md, then of docs/on-call.md, runs in one bash script,
top to bottom, in a copy of the repository that shares .venv: the copy's own warehouse, demo
data and Airflow home, exactly where a new user's would be. The README's commands are among
them (a test checks it), except `make test`, which is this run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from zipper.runtime.jvm import ARCHIVE_ENV, archive_path

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.subprocess]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [REPO / "docs" / "getting-started.md", REPO / "docs" / "on-call.md"]
SH_BLOCK = re.compile(r"^```(?:sh|bash)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN_HERE = {"make test"}  # the README's other command: this suite is its run
# What a copy of the repository leaves out, at its top: what the commands make, and what it shares.
LEFT_OUT = {".git", ".venv", ".venv-airflow2", "warehouse", "airflow_home", "airflow_home2", "demo_data", "build"}
LEFT_OUT |= {"zipper.egg-info", "metastore_db", "spark-warehouse", "derby.log", ".pytest_cache", ".hypothesis"}
LEFT_OUT |= {"tests", "bench"}
MARK = "zipper-docs-block"
# After `make demo`: how many processes of the copy's warehouse's servers are left running: its
# metastore server (`-Dzipper.warehouse=<warehouse>`) and its Spark server's supervisor and JVM
# (`spark.zipper.warehouse=<warehouse>`), this command itself left out.
SERVERS_LEFT = (
    "python3 -c 'import os, pathlib, sys\n"
    'def args(p):\n    try:\n        return (p / "cmdline").read_bytes().split(b"\\0")\n    except OSError:\n        return []\n'
    'marks = [(m + "zipper.warehouse=" + sys.argv[1]).encode() for m in ("-D", "spark.")]\n'
    'print("SERVERS-LEFT", sum(1 for p in pathlib.Path("/proc").iterdir() if p.name.isdigit()'
    ' and p.name != str(os.getpid()) and any(m in args(p) for m in marks)))\' "$PWD/warehouse"'
)


def sh_blocks(path: Path) -> list[str]:
    return SH_BLOCK.findall(path.read_text(encoding="utf-8"))


def commands(block: str) -> list[str]:
    """The command lines of a block, without comments."""
    lines = (line.split(" #")[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_readme_commands_are_run_here():
    readme = {c for block in sh_blocks(README) for c in commands(block)}
    run = {c for page in PAGES for block in sh_blocks(page) for c in commands(block)}
    assert readme, "the README shows its commands in ```sh blocks"
    assert readme - NOT_RUN_HERE <= run, "a README command no page runs"


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """The pages' commands run in a fresh copy of the repository; each block's output, by page."""
    installed = (REPO / ".venv" / ".zipper-installed").read_text().strip()
    pins = hashlib.sha256((REPO / "constraints.txt").read_bytes() + (REPO / "setup.cfg").read_bytes()).hexdigest()
    # Else `make demo` in the copy would reinstall the shared .venv, pointing it at the copy.
    assert installed == pins, "the pins changed since .venv was set up: run scripts/bootstrap.sh (make test does)"
    checkout = tmp_path_factory.mktemp("docs") / "zipper"
    top = str(REPO)
    shutil.copytree(
        REPO, checkout, symlinks=True, ignore=lambda folder, names: LEFT_OUT & set(names) if folder == top else ()
    )
    for cache in checkout.rglob("__pycache__"):
        shutil.rmtree(cache)
    (checkout / ".venv").symlink_to(REPO / ".venv")
    script = ["set -euo pipefail"]
    order = []
    for page in PAGES:
        for number, block in enumerate(sh_blocks(page), 1):
            order.append((page.stem, number))
            script += [f"echo '{MARK} {page.stem} {number}'", block]
            if "make demo" in commands(block):
                script.append(SERVERS_LEFT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZIPPER_", "AIRFLOW", "VIRTUAL_ENV", "SPARK_"))}
    # A new shell: the virtualenv is not on PATH until the page says to put it there.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(REPO)))
    # `zipper` reads "this repository's dags/tables" by default: the copy's, here, not the one the
    # shared .venv was installed from.
    env["ZIPPER_SPECS"] = str(checkout / "dags" / "tables")
    # The shared .venv's class data sharing archive, named by its path: the copy uses it and never
    # makes (or tidies away) one of its own while the other test group's drivers map it.
    env[ARCHIVE_ENV] = str(archive_path() or "off")
    result = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=checkout, env=env, capture_output=True, text=True, timeout=1500
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-6000:]}\n{result.stderr[-4000:]}"
    outputs: dict[tuple[str, int], str] = {}
    for chunk in result.stdout.split(MARK + " ")[1:]:
        head, _, text = chunk.partition("\n")
        page, number = head.split()
        outputs[(page, int(number))] = text
    assert sorted(outputs) == sorted(order)
    return {"checkout": checkout, "outputs": outputs, "env": env, "stderr": result.stderr}


def _output_of(walked, page: str, command: str) -> str:
    """The output of the block of `page` whose commands include `command` (by its start)."""
    for block_number, block in enumerate(sh_blocks(REPO / "docs" / f"{page}.md"), 1):
        if any(c.startswith(command) for c in commands(block)):
            return walked["outputs"][(page, block_number)]
    raise AssertionError(f"docs/{page}.md runs no `{command}`")


def _json_object(text: str) -> dict:
    return json.JSONDecoder().raw_decode(text[text.index("{") :])[0]


def _without_timing(line: str) -> str:
    return re.sub(r"; [0-9.]+ s$", "", line.strip())


def test_getting_started_builds_the_demo_table_and_shows_it(walked):
    demo = _output_of(walked, "getting-started", "make demo")
    assert "7 runs" in demo
    assert "SERVERS-LEFT 0" in demo  # the demo stopped the metastore server it started
    # its session was released before its server stopped: not retried at exit (for ten minutes)
    assert "RETRIES_EXCEEDED" not in walked["stderr"], walked["stderr"][-3000:]
    assert len(re.findall(r"^  2024-01-0[1-7]  success ", demo, re.MULTILINE)) == 7, demo[-3000:]
    shown = _output_of(walked, "getting-started", "zipper status")
    status = _json_object(shown)
    assert (status["table"], status["last_committed"]) == ("dw.dim_user", "2024-01-07")
    assert status["open_rows"] > 1000 and status["replay_interrupted"] is None
    assert "(3 versions)" in shown and "Lhasa" in shown
    header = next(line for line in shown.splitlines() if line.startswith("user_id,"))
    assert header.split(",")[:2] == ["user_id", "name"]
    assert len([line for line in shown.splitlines() if re.match(r"^\d+,user_", line)]) >= 1000
    assert "zipper validate: 1 spec valid in" in _output_of(walked, "getting-started", "zipper validate")


def test_the_on_call_steps_rerun_a_date_as_the_page_shows_and_the_table_checks(walked):
    page = (REPO / "docs" / "on-call.md").read_text(encoding="utf-8")
    replayed = _output_of(walked, "on-call", "zipper rerun")
    days = [_without_timing(line) for line in replayed.splitlines() if line.startswith("dw.dim_user 2024-01-0")]
    assert [line.split(":")[0] for line in days] == [f"dw.dim_user 2024-01-0{d}" for d in range(3, 8)]
    for line in days:  # the page shows the counts the demo's replay really has
        assert line in page, line
    assert _json_object(_output_of(walked, "on-call", "zipper check"))["ok"] is True
    # The replay of unchanged inputs left the key's versions as they were.
    before = _output_of(walked, "getting-started", "zipper history")
    again = subprocess.run(
        [str(REPO / ".venv" / "bin" / "zipper"), "history", "dim_user", "--key", "user_id=7"],
        cwd=walked["checkout"],
        env=walked["env"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    versions = again.strip().splitlines()
    assert versions[-1] == "(3 versions)" and "\n".join(versions) in before
