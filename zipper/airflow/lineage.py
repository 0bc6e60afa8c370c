"""OpenLineage datasets of a merge, rerun or correct task, for Airflow's OpenLineage provider.

The provider calls an operator's `get_openlineage_facets_on_complete` after the task ran. Everything
here comes from what the task already knows: the spec (where the day's input is) and the job's
reports (the dates it wrote, its counts, the table's columns). No Spark job, no metastore call.

The provider is optional: its imports happen only in `operator_lineage`, which the provider alone
calls, so a worker without it has no lineage and nothing else changes (nor at DAG parse).

Datasets, as OpenLineage names them:
- a file input: namespace `file` (local) or the path's scheme and authority (`hdfs://nn:8020`),
  name the day's rendered path (the folder or glob of the spec's `source.path`);
- a Hive table (the output, a `format: table` source, the table a correction rewrites): namespace
  `hive://host:port` of the metastore URI (`hive` when the task cannot tell it), name `db.table`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from zipper.core.errors import SpecError
from zipper.core.paths import local_path
from zipper.core.reports import RunAction

HIVE = "hive"


@dataclass(frozen=True)
class LineageDataset:
    """One dataset of a run: plain values, so the mapping is testable without the provider."""

    namespace: str
    name: str
    columns: list[tuple[str, str]] = field(default_factory=list)  # output only: the table's columns and types
    row_count: int | None = None  # output only: the rows the run wrote


def hive_namespace(metastore_uri: str | None) -> str:
    """`hive://host:port` of a `thrift://host:port` metastore URI (the first of a list); `hive` without one."""
    first = (metastore_uri or "").split(",")[0].strip()
    netloc = urlsplit(first).netloc if "://" in first else ""
    return f"{HIVE}://{netloc}" if netloc else HIVE


def file_dataset(path: str) -> tuple[str, str]:
    """(namespace, name) of a file or folder: `file` and its absolute path, or the URI's scheme://authority
    and its path."""
    local = local_path(path)
    if local is not None:
        return "file", local
    parts = urlsplit(path)
    return f"{parts.scheme}://{parts.netloc}", parts.path or "/"


def rows_written(reports: list[dict]) -> int | None:
    """The rows the run wrote, from its reports' counts: per merged date, its open partition (rewritten
    whole) and its history partition (the versions it closed); for a correction, the rows of the
    partitions it rewrote. None when the counts do not tell (a no-op, a dry run)."""
    final = reports[-1] if reports else {}
    counts = final.get("counts") or {}
    if final.get("action") == RunAction.CORRECT:
        return counts.get("rows_after")
    dated = [r for r in reports if "open_after" in (r.get("counts") or {})]
    if final.get("action") in (RunAction.RERUN, RunAction.REPLAY):
        dated = [r for r in reports[:-1] if "open_after" in (r.get("counts") or {})] or dated
    if not dated:
        return None
    return sum(r["counts"]["open_after"] + r["counts"].get("closed", 0) for r in dated)


def written_dates(reports: list[dict]) -> list[str]:
    """The dates whose input the run read: each replayed date, then its own when it merged one."""
    replayed = [r["ds"] for r in reports[:-1] if r.get("ds")]
    final = reports[-1] if reports else {}
    if final.get("action") in (RunAction.MERGE, RunAction.INIT) and final.get("ds"):
        replayed.append(final["ds"])
    return list(dict.fromkeys(replayed))


def input_datasets(spec, dates: list[str], namespace: str) -> list[LineageDataset]:
    """The day's input of each date: the rendered path of `source.path`, or the source table."""
    from zipper.tablespec.paths import render, resolve_path

    if spec.source.table:
        return [LineageDataset(namespace, spec.source.table)]
    found: dict[tuple[str, str], None] = {}
    for ds in dates:
        try:
            path = resolve_path(render(spec.source.path, dt.date.fromisoformat(ds), "source.path", spec), spec)
        except SpecError:  # a date the template cannot render: no input to name (the job said so)
            continue
        found[file_dataset(path)] = None
    return [LineageDataset(ns, name) for ns, name in found]


def run_datasets(
    verb: str, spec, table: str, reports: list[dict], namespace: str
) -> tuple[list[LineageDataset], list[LineageDataset]]:
    """(inputs, outputs) of a run that ended with `reports`. A no-op or a dry run wrote nothing: no output."""
    final = reports[-1] if reports else {}
    if not reports or final.get("action") == RunAction.NOOP or (final.get("counts") or {}).get("dry_run"):
        return [], []
    columns = [(str(name), str(kind)) for name, kind in final.get("columns") or []]
    output = LineageDataset(namespace, final.get("table") or table, columns, rows_written(reports))
    if verb == RunAction.CORRECT:  # it rewrites the table's own versions
        return [LineageDataset(namespace, output.name)], [output]
    return input_datasets(spec, written_dates(reports), namespace), [output]


def operator_lineage(inputs: list[LineageDataset], outputs: list[LineageDataset]):
    """The provider's OperatorLineage of these datasets (the provider must be installed)."""
    from airflow.providers.common.compat.openlineage.facet import (
        InputDataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
        SchemaDatasetFacet,
        SchemaDatasetFacetFields,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    def output(dataset: LineageDataset):
        facets = {}
        if dataset.columns:
            fields = [SchemaDatasetFacetFields(name=name, type=kind) for name, kind in dataset.columns]
            facets["schema"] = SchemaDatasetFacet(fields=fields)
        output_facets = {}
        if dataset.row_count is not None:
            output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(rowCount=dataset.row_count)
        return OutputDataset(namespace=dataset.namespace, name=dataset.name, facets=facets, outputFacets=output_facets)

    return OperatorLineage(
        inputs=[InputDataset(namespace=d.namespace, name=d.name) for d in inputs],
        outputs=[output(d) for d in outputs],
    )
