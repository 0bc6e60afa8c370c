"""plugins/zipper_plugin.py, the module a deployment copies into its Airflow plugins folder, and the
package's `airflow.plugins` entry point load the same class, and Airflow registers it once."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import zipper.web.plugin

PLUGIN_FILE = Path(__file__).resolve().parents[2] / "plugins" / "zipper_plugin.py"


def load_plugins_folder_module(name: str = "zipper_plugin_under_test"):
    spec = importlib.util.spec_from_file_location(name, PLUGIN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plugins_folder_module_exposes_the_package_plugin():
    assert load_plugins_folder_module().ZipperPlugin is zipper.web.plugin.ZipperPlugin


def test_the_entry_point_resolves_to_the_same_class():
    [entry_point] = [ep for ep in metadata.entry_points(group="airflow.plugins") if ep.name == "zipper"]
    assert entry_point.load() is zipper.web.plugin.ZipperPlugin
    assert entry_point.load() is load_plugins_folder_module().ZipperPlugin


def test_airflow_registers_the_plugin_once_where_the_entry_point_is_installed():
    """Airflow takes plugins from a folder module's namespace, before the entry points; a second
    plugin named `zipper` would be skipped and reported as an import error."""
    module = load_plugins_folder_module()
    assert module.entry_point_installed()
    assert not [
        v for v in vars(module).values() if isinstance(v, type) and issubclass(v, zipper.web.plugin.ZipperPlugin)
    ]


def test_without_the_entry_point_the_plugins_folder_registers_it(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", not_installed)
    module = load_plugins_folder_module()
    assert vars(module)["ZipperPlugin"] is zipper.web.plugin.ZipperPlugin


def test_importing_the_plugins_folder_module_loads_no_pyspark_and_no_fastapi_app():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('zipper_plugin', {str(PLUGIN_FILE)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "heavy = [m for m in ('pyspark', 'py4j', 'fastapi', 'zipper.web.app') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
