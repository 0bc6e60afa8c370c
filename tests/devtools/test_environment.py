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


def test_the_groups_of_the_test_command_cover_every_test_file():
    """scripts/test.sh runs the suite as three pytest processes: a file in none would never run."""
    script = (REPO / "scripts" / "test.sh").read_text()
    names = ("with_airflow", "with_subprocesses", "in_line")
    groups = {name: re.search(rf"^{name}=\((.*)\)$", script, flags=re.M).group(1).split() for name in names}
    paths = [REPO / p for name in names for p in groups[name]]
    assert all(p.exists() for p in paths), paths
    files = sorted(REPO.glob("tests/**/test_*.py"))
    covered = [f for f in files if any(f == p or p in f.parents for p in paths)]
    twice = [f for f in files if sum(f == p or p in f.parents for p in paths) > 1]
    assert covered == files and not twice, (sorted(set(files) - set(covered)), twice)
