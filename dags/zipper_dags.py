"""Airflow DAGs for every zipper table spec in ZIPPER_SPECS (default: dags/tables/).

One DAG `zipper_<name>` per spec, plus `zipper_<name>_rerun` and `zipper_<name>_correct`; built by zipper.airflow.dag_builder."""

from zipper.airflow.dag_builder import build_dags

build_dags(globals())
