#!/usr/bin/env bash
# Create or reuse .venv with the pinned dependencies. Checks Python 3.11 and Java 17 first.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "zipper setup: $*" >&2; exit 1; }

PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && \
       [[ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" == "3.11" ]]; then
      PYTHON="$candidate"; break
    fi
  done
fi
[[ -n "$PYTHON" ]] || fail "Python 3.11 is required (python3.11 not found). Install it, e.g. 'sudo apt-get install python3.11 python3.11-venv', or set PYTHON=/path/to/python3.11."

JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
command -v "$JAVA" >/dev/null 2>&1 || fail "Java 17 is required for Spark and was not found. Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu) or 'brew install openjdk@17' (macOS), or set JAVA_HOME."
JAVA_VERSION="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
[[ "$JAVA_VERSION" == "17" || "$JAVA_VERSION" == "21" ]] || fail "Java 17 is required for Spark 4; found Java ${JAVA_VERSION:-unknown} at $(command -v "$JAVA"). Install openjdk-17 and set JAVA_HOME."

STAMP=".venv/.zipper-installed"
WANT="$(cat constraints.txt setup.cfg | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  echo "zipper setup: installing pinned dependencies into .venv (about 5 minutes the first time)" >&2
  [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  .venv/bin/python -m pip install --quiet -c constraints.txt pip setuptools wheel
  .venv/bin/python -m pip install --quiet -c constraints.txt --no-build-isolation -e ".[airflow,lineage,test,lint,docs]"
  .venv/bin/python scripts/check_install.py
  echo "$WANT" > "$STAMP"
fi

# The class data sharing archive zipper's Spark drivers start with (zipper/devtools/jvm_archive.py):
# a minute or two, once per Java and set of jars; without it they only start slower.
# `--no-archive`: the caller makes it itself (scripts/test.sh, while .venv-airflow2 installs).
if [[ "${1:-}" != "--no-archive" ]]; then
  .venv/bin/python -m zipper.devtools.jvm_archive >/dev/null
fi
