#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/bootstrap_airflow2.sh  # the Airflow 2.11 tests run the same DAGs in .venv-airflow2
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
