"""The "Zipper" view for an Airflow whose plugins folder holds a copy of this file: the class
`zipper.web.plugin.ZipperPlugin`, the one the package's `airflow.plugins` entry point names.

Airflow loads the plugins folder before the entry points and keeps the first plugin of each name,
reporting the other as an import error ("Plugin 'zipper' already registered, skipping"). So where
the installed package already provides the entry point (any `pip install`, this checkout's .venv,
whose airflow.cfg points at this folder), the class stays out of this module's namespace, the
only place Airflow looks for plugins here, and Airflow loads the view once, from the entry point,
as it did before this file existed. Where zipper is importable without its distribution metadata
(copied onto the path), this module registers it. `zipper_plugin.ZipperPlugin` is the same class
either way.

Cheap to import: no pyspark, and the FastAPI app only when Airflow's API server asks for it."""

from __future__ import annotations

from importlib import metadata

from zipper.web import plugin as _plugin

ENTRY_POINT = "zipper.web.plugin:ZipperPlugin"


def entry_point_installed() -> bool:
    """True if the installed zipper distribution registers the plugin through its entry point."""
    try:
        entry_points = metadata.distribution("zipper").entry_points
    except metadata.PackageNotFoundError:
        return False
    return any(ep.group == "airflow.plugins" and ep.value == ENTRY_POINT for ep in entry_points)


if entry_point_installed():

    def __getattr__(name: str):
        if name == "ZipperPlugin":
            return _plugin.ZipperPlugin
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

else:
    ZipperPlugin = _plugin.ZipperPlugin
