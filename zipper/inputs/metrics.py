"""What one pass over an input saw, counted while Spark reads it: its rows, and the bytes of its
string and binary columns (they size the broadcast of the day's rows)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from pyspark.sql import Observation
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StringType

from zipper.core import fs


def observed_metrics(observation) -> dict:
    """Metrics of an Observation; empty when the JVM fails to hand them over (the caller then
    counts otherwise). An Observation never observed is a bug, and raised as one."""
    try:
        return dict(observation.get)
    except fs.spark_failures():
        return {}


@dataclass(frozen=True)
class Seen:
    """What one pass over an input saw: its rows, and the bytes of its string and binary
    columns (None when Spark reported no metrics)."""

    rows: int
    variable_bytes: int | None = None
    # counted from the files' footers: the keys are not checked yet, the merge's write checks them
    # as it reads them (`refusals.checked_as_read`)
    keys_unchecked: bool = False
    # ordered events: their earliest order value, seen in the same pass (`first_order_seen` says
    # whether it was; None then means every order value was NULL)
    first_order: object = None
    first_order_seen: bool = False

    @property
    def variable_bytes_per_row(self) -> float | None:
        if self.variable_bytes is None:
            return None
        return self.variable_bytes / self.rows if self.rows else 0.0


def variable_columns(schema, columns) -> list[str]:
    """The top-level string and binary columns of a StructType, among `columns`: those whose
    size Spark can only guess (jobs.broadcast.estimated_row_bytes counts them as measured)."""
    return [f.name for f in schema.fields if isinstance(f.dataType, (StringType, BinaryType)) and f.name in columns]


def metrics_of(variable: list[str]) -> list:
    """The rows, and the bytes of the `variable` (string and binary) columns."""
    metrics = [F.count(F.lit(1)).alias("rows")]
    if variable:
        row_bytes = sum((F.coalesce(F.octet_length(F.col(c)), F.lit(0)) for c in variable), F.lit(0))
        metrics.append(F.sum(row_bytes.cast("long")).alias("variable_bytes"))
    return metrics


def observe(df, name: str, variable: list[str]):
    return observe_with(df, name, *metrics_of(variable))


def observe_with(df, name: str, *metrics):
    """`df` observing `metrics` as a job reads it, and the Observation that holds them after."""
    observation = Observation(f"zipper_{name}_{secrets.token_hex(6)}")
    return df.observe(observation, *metrics), observation


FIRST_ORDER = "first_order"  # the metric of an ordered pass: its smallest order value


def seen_by(observation, df) -> Seen:
    observed = observed_metrics(observation)
    if "rows" not in observed:
        return Seen(df.count())
    variable = observed.get("variable_bytes", 0)
    seen = Seen(int(observed["rows"]), int(variable or 0))
    if FIRST_ORDER in observed:
        return Seen(seen.rows, seen.variable_bytes, first_order=observed[FIRST_ORDER], first_order_seen=True)
    return seen


def measure(df, columns: list[str]) -> Seen:
    """Rows (and the string bytes of `columns`) of an input whose keys a rerun checked already,
    with the other dates' in one job (`dated.check_keys`, `SourceStrategy.check_read_inputs`): one pass, no grouping
    by key."""
    measured = df.agg(*metrics_of(variable_columns(df.schema, columns))).first().asDict()
    return Seen(int(measured["rows"]), int(measured.get("variable_bytes") or 0))
