"""The installed stack is the pinned one: pyspark's Python files and Spark's jars agree."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parents[2]


def test_pyspark_python_side_matches_the_spark_jars():
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core_*.jar"))
    assert jars, "Spark jars missing from the pyspark package"
    jar_version = re.search(r"spark-core_[\d.]+-(.+)\.jar$", jars[0]).group(1)
    assert pyspark.__version__ == jar_version


def test_constraints_pin_pyspark_and_pyspark_client_together():
    pins = dict(
        line.strip().split("==", 1)
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert pins["pyspark"] == pins["pyspark-client"] == pyspark.__version__


def test_dag_parse_path_does_not_import_spark():
    import subprocess
    import sys

    code = "import zipper.tablespec.loader, zipper.jobs.plan, sys; print('pyspark' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_the_command_starts_without_spark():
    """`zipper --help` and a refused argument answer without loading pyspark: each verb loads the
    data path when it runs (docs/architecture.md)."""
    import subprocess
    import sys

    code = (
        "import zipper.cli.main, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def script_lists(*names: str) -> dict[str, list[Path]]:
    """The lists of test files and folders in scripts/test.sh, by name."""
    script = (REPO / "scripts" / "test.sh").read_text()
    return {
        name: [REPO / p for p in re.search(rf"^{name}=\((.*)\)$", script, flags=re.M).group(1).split()]
        for name in names
    }


def under(file: Path, paths: list[Path]) -> list[Path]:
    return [p for p in paths if file == p or p in file.parents]


GROUPS = ("with_airflow", "with_subprocesses", "in_line")
TEST_FILES = sorted(REPO.glob("tests/**/test_*.py"))


def test_the_groups_of_the_test_command_cover_every_test_file():
    """scripts/test.sh runs the suite as three pytest processes: a file in none would never run."""
    groups = script_lists(*GROUPS)
    paths = [p for name in GROUPS for p in groups[name]]
    assert all(p.exists() for p in paths), paths
    covered = [f for f in TEST_FILES if under(f, paths)]
    twice = [f for f in TEST_FILES if len(under(f, paths)) > 1]
    assert covered == TEST_FILES and not twice, (sorted(set(TEST_FILES) - set(covered)), twice)


def test_the_files_that_use_airflow2_wait_for_its_set_up_at_the_end_of_their_groups():
    """.venv-airflow2 is set up while the groups run, and only the files of needs_airflow2 wait for
    it: a file that uses it unlisted would start before it is ready; one early in its group would
    hold the group's other tests back on a fresh machine."""
    lists = script_lists("needs_airflow2", *GROUPS)
    users = [f for f in TEST_FILES if "AIRFLOW2_VENV" in f.read_text() and f != Path(__file__).resolve()]
    assert sorted(lists["needs_airflow2"]) == users
    for name in GROUPS:
        group = lists[name]
        waiting = [i for i, p in enumerate(group) if p in lists["needs_airflow2"]]
        assert waiting == list(range(len(group) - len(waiting), len(group))), (name, waiting)


def test_the_fast_tests_are_in_line_tests_that_start_no_server_of_their_own():
    """`make test-fast` runs engine tests of the in-line group in one process: no Airflow, no
    browser, no subprocess JVM but the session's servers."""
    lists = script_lists("fast", "in_line")
    assert all(p.exists() for p in lists["fast"]), lists["fast"]
    fast_files = [f for f in TEST_FILES if under(f, lists["fast"])]
    assert fast_files and [f for f in fast_files if not under(f, lists["in_line"])] == []
    starting = re.compile(
        r"\bsubprocess\b|MetastoreService|SparkServerService|spark_submit_conf|postgres|playwright|^(from|import) airflow",
        flags=re.M,
    )
    assert [f for f in fast_files if starting.search(f.read_text())] == []
