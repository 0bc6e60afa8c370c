"""On Airflow 2.11 the package's plugin loads (it is an entry point, so every Airflow process
imports it) and registers no view: Airflow 2 has no FastAPI apps. The CLI answers there."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.airflow.support import AIRFLOW2_VENV

pytestmark = [pytest.mark.airflow, pytest.mark.subprocess]


def test_the_plugin_loads_on_airflow_2_and_registers_no_view(tmp_path):
    airflow = AIRFLOW2_VENV / "bin" / "airflow"
    assert airflow.is_file(), "scripts/bootstrap_airflow2.sh sets up .venv-airflow2 (make test does)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["AIRFLOW_HOME"] = str(tmp_path)
    done = subprocess.run(
        [str(airflow), "plugins", "--output", "json"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plugins = json.loads(done.stdout[done.stdout.index("[") :])
    [zipper] = [p for p in plugins if p["name"] == "zipper"]
    assert "zipper.web.plugin:ZipperPlugin" in zipper["source"]
    assert not zipper.get("fastapi_apps") and not zipper.get("external_views") and not zipper.get("appbuilder_views")
