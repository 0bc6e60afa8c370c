# The two commands: `make demo` and `make test`. Both create or reuse .venv.
.PHONY: setup setup-airflow2 airflow-setup airflow demo demo-direct test test-fast docs bench bench-floor bench-parse bench-replay bench-rebuild bench-startup bench-metastore bench-backfill bench-view bench-correct bench-dry-run bench-small soak clean

AIRFLOW_HOME ?= $(CURDIR)/airflow_home
ZIPPER_SPECS ?= $(CURDIR)/dags/tables
ZIPPER_WAREHOUSE ?= $(CURDIR)/warehouse
AIRFLOW_ENV = AIRFLOW_HOME="$(AIRFLOW_HOME)" ZIPPER_SPECS="$(ZIPPER_SPECS)" ZIPPER_WAREHOUSE="$(ZIPPER_WAREHOUSE)"

setup:
	@scripts/bootstrap.sh

# .venv-airflow2: the same package on Airflow 2.11 (a few minutes the first time).
setup-airflow2:
	@scripts/bootstrap_airflow2.sh

# Render airflow.cfg.template into $(AIRFLOW_HOME), migrate the SQLite database, create the pool.
airflow-setup: setup
	$(AIRFLOW_ENV) .venv/bin/python -m zipper.devtools.airflow_home

# The Airflow UI with this package's DAGs (api-server, scheduler, dag-processor, triggerer), and the
# warehouse's metastore server while it runs (stopped at the end if this started it).
airflow: airflow-setup
	$(AIRFLOW_ENV) PATH="$(CURDIR)/.venv/bin:$$PATH" .venv/bin/python -m zipper.devtools.standalone

# The sample week through Airflow: a backfill, then the table.
demo: setup
	$(AIRFLOW_ENV) .venv/bin/python -m zipper.devtools.airflow_demo

# The same week merged directly in one Spark session, without Airflow.
demo-direct: setup
	.venv/bin/python -m zipper.devtools.demo

test:
	scripts/test.sh

# The loop while working: the code checks and the engine's rule tests (no Airflow, no browser), at
# most 5 minutes with a set-up .venv; `make test` before a change lands (CONTRIBUTING.md).
test-fast:
	scripts/test.sh --fast

# The documentation site on http://127.0.0.1:8000, rebuilt as pages change (`make test` builds it strictly).
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve

bench: setup
	.venv/bin/python bench/bench_merge.py

bench-floor: setup
	.venv/bin/python bench/bench_floor.py

bench-parse: setup
	.venv/bin/python bench/bench_parse.py

bench-replay: setup
	.venv/bin/python bench/bench_replay.py

# Four tables through Airflow's scheduler over 45 dates each while merge tasks, the Spark server and the
# metastore server are killed up to 120 times; every table must equal the reference model (docs/reliability.md).
soak: setup
	.venv/bin/python -m bench.soak

# 365 daily snapshots of a 100,000-key table: one rebuild in one pass beside a rerun over the same dates.
bench-rebuild: setup
	.venv/bin/python bench/bench_rebuild.py

bench-startup: setup
	.venv/bin/python bench/bench_startup.py

# Also makes bench/.venv-dbt (dbt-duckdb, bench/requirements-dbt.txt) for the dbt snapshot beside zipper.
bench-metastore: setup
	.venv/bin/python bench/bench_metastore.py

# An Airflow backfill of 10 dates, 5 already committed: every merge through spark-submit against the no-Spark pre-check.
bench-backfill: setup
	.venv/bin/python bench/bench_backfill.py

# The Zipper view over 50 tables: its JSON API through Airflow's API server, the tables page in Chromium.
bench-view: setup
	.venv/bin/python bench/bench_view.py

bench-correct: setup
	.venv/bin/python bench/bench_correct.py

bench-dry-run: setup
	.venv/bin/python bench/bench_dry_run.py

# A 20-row day of a 1,000-row table: merges in a warm session, and a whole merge process beside a dbt snapshot.
bench-small: setup
	.venv/bin/python bench/bench_small.py

# The warehouse's Spark Connect and metastore servers are stopped (by their pids) before its folder goes.
clean:
	@if [ -x .venv/bin/zipper ] && [ -d "$(ZIPPER_WAREHOUSE)" ]; then .venv/bin/zipper spark stop --warehouse "$(ZIPPER_WAREHOUSE)"; fi
	@if [ -x .venv/bin/zipper ] && [ -d "$(ZIPPER_WAREHOUSE)" ]; then .venv/bin/zipper metastore stop --warehouse "$(ZIPPER_WAREHOUSE)"; fi
	rm -rf warehouse demo_data airflow_home airflow_home2
