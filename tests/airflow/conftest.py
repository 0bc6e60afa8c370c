"""Airflow tests run against a throw-away AIRFLOW_HOME, never the user's ~/airflow."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Before anything imports airflow (it reads AIRFLOW_HOME once, at import).
if os.environ.get("ZIPPER_TEST_AIRFLOW_HOME"):
    os.environ["AIRFLOW_HOME"] = os.environ["ZIPPER_TEST_AIRFLOW_HOME"]
else:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="zipper-airflow-home-")
    atexit.register(shutil.rmtree, os.environ["AIRFLOW_HOME"], True)  # this process's own, gone with it
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
