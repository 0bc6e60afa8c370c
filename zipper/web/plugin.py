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
_warmed_up = False


def _views() -> list[dict]:
    """The navigation entry and the DAG tab (Airflow 3); plain data, cheap to build."""
    if not AIRFLOW_3:
        return []
    return [
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


class ZipperPlugin(AirflowPlugin):
    name = "zipper"
    external_views = _views()

    @property
    def fastapi_apps(self) -> list[dict]:
        """The app, imported when first asked for. Every Airflow process loads the plugins (the
        scheduler, the DAG processor, each task run), but only the API server (and `airflow
        plugins`) asks for the apps: importing FastAPI and the table readers up front cost every
        task run 3-6 seconds."""
        if not AIRFLOW_3:
            return []
        global _warmed_up
        from zipper.web import app

        if not _warmed_up:  # the API server asks once, as it starts: the tables are read behind it
            _warmed_up = True
            app.warm_up()
        return [{"app": app.app, "url_prefix": URL_PREFIX, "name": "Zipper tables"}]
