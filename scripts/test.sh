#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite; with arguments, run pytest with them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  scripts/bootstrap.sh --no-archive
  # The class data sharing archive every Spark driver starts with (zipper/devtools/jvm_archive.py; a
  # minute or two, once per .venv and Java): made while .venv-airflow2 installs, not while tests wait.
  .venv/bin/python -m zipper.devtools.jvm_archive >/dev/null &
else
  scripts/bootstrap.sh
fi
scripts/bootstrap_airflow2.sh --no-archive  # the Airflow 2.11 tests run the same DAGs in .venv-airflow2
export PATH="$PWD/.venv/bin:$PATH"
pytest=(.venv/bin/python -m pytest -p no:cacheprovider)
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi

# The code checks first (seconds): lint and format (ruff), and the layers' import contracts
# (lint-imports; pyproject.toml and docs/architecture.md say what each layer may import).
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# The documentation site, strictly: a broken link or anchor, a page outside the nav, or a generated
# reference that fails to render stops the run here (mkdocs.yml; a second or two).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir build/site

# The whole suite as two pytest processes at once, of about equal length: the Airflow and CLI
# tests spend much of their time waiting for subprocesses (JVM starts, scheduler loops, the
# metastore's retries), time the in-process Spark tests of the engine use. Each test has its own
# warehouse, metastore and ports. Together the two groups are every file under tests/
# (test_environment checks that). Side by side on 2 idle cores they took 12 to 19 minutes each
# on clean clones (CHANGELOG.md has the figures).
alongside=(tests/airflow/test_dag_integrity.py tests/airflow/test_e2e_airflow2.py tests/airflow/test_e2e_airflow3.py tests/airflow/test_increments.py tests/airflow/test_operators.py tests/cli/test_cli.py tests/cli/test_sources_cli.py tests/cli/test_failure_reports.py tests/devtools/test_jvm_archive.py tests/cli/test_paths_with_spaces.py tests/devtools/test_docs_commands.py tests/cli/test_metastore_service.py tests/devtools/test_standalone.py tests/web/test_view.py tests/web/test_plugin_airflow2.py)
in_line=(tests/core tests/tablespec tests/inputs tests/transforms tests/table tests/jobs tests/runtime tests/devtools/test_environment.py tests/devtools/test_reference.py tests/devtools/test_docs.py tests/cli/test_spec_verbs.py tests/cli/test_cli_output.py tests/cli/test_cli_values.py tests/cli/test_output.py tests/cli/test_rerun_cli.py tests/cli/test_faults.py tests/cli/test_external_metastore.py tests/airflow/test_embedded_config.py tests/airflow/test_table_increments.py tests/airflow/test_merge_noop_operator.py tests/cli/test_merge_without_spark.py tests/web/test_model.py)
log=$(mktemp -t zipper-tests-XXXXXX.log)
"${pytest[@]}" --durations=15 "${alongside[@]}" >"$log" 2>&1 &
subprocess_group=$!
trap 'kill "$subprocess_group" 2>/dev/null || true' INT TERM
in_process=0
"${pytest[@]}" --durations=15 "${in_line[@]}" || in_process=$?
with_subprocesses=0
wait "$subprocess_group" || with_subprocesses=$?
echo
echo "=================== ${alongside[*]} (run alongside) ==================="
cat "$log"
rm -f "$log"
echo
echo "${in_line[*]}: exit $in_process; ${alongside[*]}: exit $with_subprocesses"
[ "$in_process" -eq 0 ] && [ "$with_subprocesses" -eq 0 ]
