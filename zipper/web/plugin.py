"""The Airflow plugin that adds the "Zipper" view: installed with the package (entry point
`airflow.plugins`), so no file is copied into Airflow's plugins folder.

Airflow 3 mounts the app (app.py) in its API server at /zipper and shows its pages in the UI: a
"Zipper tables" entry in the navigation and a "Zipper" tab on every DAG (a page that says so on a
DAG that is not zipper's). Airflow 2 has neither FastAPI apps nor these views: there the plugin
registers nothing, and the CLI (`zipper status`, `history`) answers the same questions."""

from __future__ import annotations

from airflow import __version__ as airflow_version
from airflow.plugins_manager import AirflowPlugin

AIRFLOW_3 = int(airflow_version.split(".")[0]) >= 3
URL_PREFIX = "/zipper"


def _views() -> tuple[list[dict], list[dict]]:
    if not AIRFLOW_3:
        return [], []
    from zipper.web.app import app  # on use: FastAPI and the table readers load only in Airflow 3

    apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Zipper tables"}]
    views = [
        {
            "name": "Zipper tables",
            "href": f"{URL_PREFIX}/tables",
            "destination": "nav",
            "url_route": "zipper-tables",
            "icon": f"{URL_PREFIX}/static/zipper.svg",
        },
        {
            "name": "Zipper",
            "href": URL_PREFIX + "/dags/{DAG_ID}",
            "destination": "dag",
            "url_route": "zipper-dag",
            "icon": f"{URL_PREFIX}/static/zipper.svg",
        },
    ]
    return apps, views


class ZipperPlugin(AirflowPlugin):
    name = "zipper"
    fastapi_apps, external_views = _views()
