"""Report a bad spec as an import error of its own file, while the other specs' DAGs still load.

Airflow records import errors per file it parses, and the only file it parses here is the DAG
module. Raising from it would drop every zipper DAG and mark them broken. So the module adds
one entry per bad spec to the import errors of the DagBag that is importing it (found on the
call stack: Airflow has no public API for this), keyed by the spec's path, relative to the dags
folder like Airflow's own keys. Outside a DagBag (a plain import) the error is only logged."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)


def current_dagbag():
    """The DagBag whose `process_file` is importing the calling module, if any."""
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        is_bag = any(cls.__name__ == "DagBag" for cls in type(candidate).__mro__)  # also BundleDagBag (3.x)
        if is_bag and isinstance(getattr(candidate, "import_errors", None), dict):
            return candidate
        frame = frame.f_back
    return None


def error_key(bag, spec_path: Path) -> str:
    """Airflow 3 keys import errors by path relative to the bundle (dags folder); 2.11 by full path."""
    bundle = getattr(bag, "bundle_path", None)
    if bundle:
        try:
            return str(Path(spec_path).resolve().relative_to(Path(bundle).resolve()))
        except ValueError:
            pass
    return str(Path(spec_path).resolve())


def report_spec_error(spec_path: Path, message: str) -> str | None:
    """Record `message` for `spec_path`; returns the key used, or None outside a DagBag."""
    # A warning: the import error is the report; every task process parses the DAG file too,
    # and an ERROR line in the logs of tasks of other, healthy tables would mislead.
    log.warning("zipper: skipping %s: %s", spec_path, message)
    bag = current_dagbag()
    if bag is None:
        return None
    key = error_key(bag, spec_path)
    bag.import_errors[key] = message
    return key
