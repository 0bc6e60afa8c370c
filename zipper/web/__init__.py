"""The Airflow UI's "Zipper" view: pages and a JSON API over the tables' committed state (Airflow 3)."""
