"""Airflow integration: one DAG per table spec, the merge operator, the increment sensor.

Nothing here is imported by the engine, and nothing here imports pyspark: DAG files must parse
fast and without Spark. Works on Airflow 3.3 and 2.11 (see `compat`)."""
