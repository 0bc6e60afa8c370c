"""Report a bad spec as an import error of its own file, while the other specs' DAGs still load.

Airflow records import errors per file it parses, and the only file it parses here is the DAG
module. Raising from it would drop every zipper DAG and mark them broken. So the module adds
one entry per bad spec to the import errors of the DagBag that is importing it (found on the
call stack: Airflow has no public API for this), keyed by the spec's path, relative to the dags
folder like Airflow's own keys. Outside a DagBag (a plain import) the error is only logged; in a
task's parse of a DAG that loaded, not at all."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from zipper.airflow.compat import get_parsing_context

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


def report_spec_errors(failures: list[tuple[Path, str]], built_dag_ids) -> None:
    """Report each bad spec (path, message), unless this parse is a task's of a DAG that was built.

    A task re-parses the DAG file when it starts: its log is no place for another table's bad spec,
    which the DAG processor's parse already reports as an import error (and the task runner's
    DagBag records none). A task whose own DAG was not built, its spec broken since the run was
    scheduled, is told about every bad spec: one of them is why it cannot start."""
    task_dag = get_parsing_context().dag_id
    if task_dag is not None and task_dag in built_dag_ids:
        return
    for spec_path, message in failures:
        report_spec_error(spec_path, message)


def report_spec_error(spec_path: Path, message: str) -> str | None:
    """Record `message` for `spec_path`; returns the key used, or None outside a DagBag."""
    # A warning, not an error: the import error is the report; this line is the parse's log.
    # a loader's message starts with the file already
    shown = message if message.startswith(str(spec_path)) else f"{spec_path}: {message}"
    log.warning("zipper: skipping %s", shown)
    bag = current_dagbag()
    if bag is None:
        return None
    key = error_key(bag, spec_path)
    bag.import_errors[key] = message
    return key
