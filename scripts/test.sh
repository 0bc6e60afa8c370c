#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite; with arguments, run pytest with them instead;
# `--fast` (make test-fast): the code checks and the engine's rule tests, for the loop while working.
# Every run writes where its time went to build/test-times (tests/durations_plugin.py): each test's
# set-up, call and teardown in <group>.json, and, for the whole suite, each group's wall and CPU
# time in groups.txt (scripts/durations_ledger.py makes tests/durations.txt from it).
set -euo pipefail
cd "$(dirname "$0")/.."
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
times=build/test-times
mkdir -p "$times"
if [ $# -gt 0 ] && [ "$*" != --fast ]; then
  scripts/bootstrap.sh
  scripts/bootstrap_airflow2.sh --no-archive  # the Airflow 2.11 tests run the same DAGs in .venv-airflow2
  export PATH="$PWD/.venv/bin:$PATH"
  exec .venv/bin/python -m pytest -p no:cacheprovider -p tests.durations_plugin "$@"
fi
scripts/bootstrap.sh --no-archive
# The class data sharing archive every Spark driver starts with (zipper/devtools/jvm_archive.py; a
# minute or two, once per .venv and Java): made while the code checks run and .venv-airflow2
# installs; a test's first driver waits for it (its lock).
.venv/bin/python -m zipper.devtools.jvm_archive >/dev/null &
export PATH="$PWD/.venv/bin:$PATH"

# The code checks first (seconds): lint and format (ruff), and the layers' import contracts
# (lint-imports; pyproject.toml and docs/architecture.md say what each layer may import).
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# The documentation site, strictly: a broken link or anchor, a page outside the nav, or a generated
# reference that fails to render stops the run here (mkdocs.yml; a second or two).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir build/site

# The whole suite as three pytest processes at once. The engine's tests run Spark in-process and
# use a core; the Airflow and CLI tests spend much of their time waiting on subprocesses (JVM
# starts, scheduler loops, the metastore's retries, a browser), so two groups of those overlap
# their waits with the engine's work. Each test has its own warehouse, metastore and ports.
# Together the groups are every file under tests/ (test_environment checks that). The groups are
# balanced by the measured durations (tests/durations.txt); CHANGELOG.md has the figures of
# clean-clone runs.
with_airflow=(tests/airflow/test_e2e_airflow3.py tests/airflow/test_soak.py tests/cli/test_connect_faults.py tests/airflow/test_increments.py tests/airflow/test_operators.py tests/devtools/test_docs_commands.py tests/devtools/test_standalone.py tests/cli/test_faults.py tests/cli/test_rerun_cli.py tests/airflow/test_dag_integrity.py tests/airflow/test_e2e_airflow2.py tests/web/test_plugin_airflow2.py)
with_subprocesses=(tests/cli/test_cli.py tests/cli/test_sources_cli.py tests/cli/test_failure_reports.py tests/devtools/test_jvm_archive.py tests/cli/test_paths_with_spaces.py tests/cli/test_metastore_service.py tests/runtime/test_spark_server.py tests/runtime/test_metastore_postgresql.py tests/runtime/test_submit_options.py tests/web/test_view.py tests/cli/test_external_metastore.py tests/jobs/test_model.py tests/jobs/test_correct_model_options.py tests/cli/test_merge_without_spark.py tests/cli/test_correct_cli.py tests/cli/test_alter_cli.py tests/cli/test_connect_standalone.py tests/cli/test_dry_run_cli.py tests/airflow/test_embedded_config.py)
in_line=(tests/core tests/tablespec tests/inputs tests/transforms tests/table tests/jobs/test_adopt.py tests/jobs/test_alter.py tests/jobs/test_commit_actions.py tests/jobs/test_concurrent_runs.py tests/jobs/test_correct.py tests/jobs/test_correct_model.py tests/jobs/test_correct_options.py tests/jobs/test_dry_run.py tests/jobs/test_handle.py tests/jobs/test_merge.py tests/jobs/test_merge_cost.py tests/jobs/test_plan.py tests/jobs/test_rerun.py tests/jobs/test_rerun_checks.py tests/jobs/test_rerun_model.py tests/jobs/test_rerun_sources.py tests/runtime/test_jvm_options.py tests/runtime/test_locks.py tests/runtime/test_connect_session.py tests/devtools/test_environment.py tests/devtools/test_durations.py tests/devtools/test_reference.py tests/devtools/test_docs.py tests/cli/test_spec_verbs.py tests/cli/test_cli_output.py tests/cli/test_cli_values.py tests/cli/test_output.py tests/airflow/test_table_increments.py tests/airflow/test_merge_noop_operator.py tests/airflow/test_job_process.py tests/web/test_model.py tests/web/test_reading.py tests/web/test_plugins_folder.py)
# The files that run Airflow 2.11 (in .venv-airflow2, set up in the background while the groups
# start; their tests wait for it: tests/airflow2_setup.py). Each comes last in its group.
needs_airflow2=(tests/airflow/test_dag_integrity.py tests/airflow/test_e2e_airflow2.py tests/web/test_plugin_airflow2.py tests/airflow/test_embedded_config.py)
# The engine's rule tests for the loop while working (`--fast`, make test-fast): no Airflow, no
# browser, no JVM but the session's Spark and metastore servers; at most 5 minutes with a set-up
# .venv (CONTRIBUTING.md). `make test` runs them too, in the in-line group.
fast=(tests/core tests/tablespec tests/transforms tests/table tests/runtime/test_jvm_options.py tests/jobs/test_plan.py)

pytest=(.venv/bin/python -m pytest -p no:cacheprovider -p tests.durations_plugin -p tests.airflow2_setup)
# One pytest process; its output ends with its slowest tests and its wall time and the CPU time of
# its processes (the drivers, servers and Airflow processes it started and reaped included), a
# line also kept in $times/NAME.time for groups.txt.
group() {
  local -x ZIPPER_TEST_GROUP="$1"
  local TIMEFORMAT="group $1: %R s wall, %U s user CPU, %S s system CPU" status=0
  shift
  { time "${pytest[@]}" --durations=30 "$@" 2>&3; } 3>&2 2>"$times/$ZIPPER_TEST_GROUP.time" || status=$?
  cat "$times/$ZIPPER_TEST_GROUP.time"
  return "$status"
}

if [ "$*" = --fast ]; then
  # the engine's tests as a Spark Connect client of their warehouse's server, as in the in-line group
  ZIPPER_TEST_SPARK=connect group fast "${fast[@]}"
  exit
fi

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- 2>/dev/null || commit="$commit with uncommitted changes"
rm -f "$times"/*.json "$times"/*.time "$times"/groups.txt "$times"/airflow2-setup.*
# .venv-airflow2 (Airflow 2.11; several minutes on a fresh machine) is set up while the groups run;
# its exit status goes to a file in one rename, which the tests of needs_airflow2 wait for.
airflow2_status="$PWD/$times/airflow2-setup.exit"
(
  setup_exit=0
  scripts/bootstrap_airflow2.sh --no-archive >"$times/airflow2-setup.log" 2>&1 || setup_exit=$?
  echo "$setup_exit" >"$airflow2_status.partial" && mv "$airflow2_status.partial" "$airflow2_status"
) &
airflow2_setup=$!
export ZIPPER_TEST_AIRFLOW2_SETUP="$airflow2_status" ZIPPER_TEST_AIRFLOW2_FILES="${needs_airflow2[*]}"

airflow_log=$(mktemp -t zipper-tests-airflow-XXXXXX.log)
subprocess_log=$(mktemp -t zipper-tests-subprocesses-XXXXXX.log)
group with_airflow "${with_airflow[@]}" >"$airflow_log" 2>&1 &
airflow_group=$!
group with_subprocesses "${with_subprocesses[@]}" >"$subprocess_log" 2>&1 &
subprocess_group=$!
trap 'kill "$airflow_group" "$subprocess_group" 2>/dev/null || true' INT TERM
in_process=0
# The engine's tests as a Spark Connect client of their warehouse's server (tests/conftest.py),
# the way commands run; the CLI and Airflow groups keep the classic drivers of spark-submit. (Only
# this group: a Connect session puts SPARK_CONNECT_MODE_ENABLED in its process's environment, and
# the Airflow probes a process starts after it would inherit it.)
ZIPPER_TEST_SPARK=connect group in_line "${in_line[@]}" || in_process=$?
airflow_exit=0
wait "$airflow_group" || airflow_exit=$?
subprocess_exit=0
wait "$subprocess_group" || subprocess_exit=$?
setup_exit=0
wait "$airflow2_setup" && setup_exit="$(cat "$airflow2_status")" || setup_exit=$?
echo
echo "=================== ${with_airflow[*]} (run alongside) ==================="
cat "$airflow_log"
echo
echo "=================== ${with_subprocesses[*]} (run alongside) ==================="
cat "$subprocess_log"
rm -f "$airflow_log" "$subprocess_log"
if [ "$setup_exit" -ne 0 ]; then
  echo
  echo "=================== the set-up of .venv-airflow2 failed (scripts/bootstrap_airflow2.sh) ==================="
  cat "$times/airflow2-setup.log"
fi
{
  echo "commit $commit"
  echo "started $started"
  cat "$times/in_line.time" "$times/with_airflow.time" "$times/with_subprocesses.time" 2>/dev/null || true
  echo "total: $SECONDS s wall (set-up, code checks and the three groups)"
} >"$times/groups.txt"
echo
cat "$times/groups.txt"
echo "(each test's set-up, call and teardown: $times/<group>.json; the ledger: scripts/durations_ledger.py $times)"
echo "in_line: exit $in_process; with_airflow: exit $airflow_exit; with_subprocesses: exit $subprocess_exit; .venv-airflow2 set-up: exit $setup_exit"
[ "$in_process" -eq 0 ] && [ "$airflow_exit" -eq 0 ] && [ "$subprocess_exit" -eq 0 ] && [ "$setup_exit" -eq 0 ]
