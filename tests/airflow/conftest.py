"""Airflow tests run against a throw-away AIRFLOW_HOME, never the user's ~/airflow."""

from __future__ import annotations

import os
import tempfile

# Before anything imports airflow (it reads AIRFLOW_HOME once, at import).
os.environ["AIRFLOW_HOME"] = os.environ.get("ZIPPER_TEST_AIRFLOW_HOME") or tempfile.mkdtemp(prefix="zipper-airflow-home-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
