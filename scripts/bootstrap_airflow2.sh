#!/usr/bin/env bash
# Create or reuse .venv-airflow2: the same zipper package with Airflow 2.11 instead of 3.3, pinned by
# constraints-airflow2.txt (same pyspark, pyspark-client and Spark provider as constraints.txt).
# About 8 minutes the first time. Used by the Airflow 2.11 tests and by teams still on 2.11.
set -euo pipefail
cd "$(dirname "$0")/.."
# `--no-archive`: no class data sharing archives (the caller makes .venv's; see scripts/bootstrap.sh)
scripts/bootstrap.sh "$@"  # checks Python 3.11 and Java 17 and builds .venv, which the test run needs anyway

VENV=.venv-airflow2
PYTHON="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
STAMP="$VENV/.zipper-installed"
WANT="$(cat constraints-airflow2.txt setup.cfg | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  echo "zipper setup: installing Airflow 2.11 into $VENV (about 8 minutes the first time)" >&2
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  "$VENV/bin/python" -m pip install --quiet -c constraints-airflow2.txt pip setuptools wheel
  "$VENV/bin/python" -m pip install --quiet -c constraints-airflow2.txt --no-build-isolation -e ".[test]" \
    apache-airflow apache-airflow-providers-apache-spark apache-airflow-providers-openlineage
  "$VENV/bin/python" scripts/check_install.py 2.11
  echo "$WANT" > "$STAMP"
fi
if [[ "${1:-}" != "--no-archive" ]]; then  # this virtualenv's own archive: its pyspark's jars
  "$VENV/bin/python" -m zipper.devtools.jvm_archive >/dev/null
fi
