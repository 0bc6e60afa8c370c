"""The daily data path: spec -> plan -> transforms -> write to fresh directories -> audit -> publish.

Nothing a reader can see changes until `catalog.repoint`, one metastore transaction that
moves the open partition and the day's closed partition to their new directories together
with the commit record. Before it, a failure leaves the table as it was; after it, the
commit is complete."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import time
from dataclasses import dataclass, field

from zipper.engine import audit, catalog, conform, faults, fs, sources, state, transforms
from zipper.engine.catalog import Partition
from zipper.engine.plan import DAY, init_date, plan_merge
from zipper.errors import InputError, SpecError, StateError
from zipper.spec.model import TableSpec

MAX_LISTED_KEYS = 20


def broadcast_max_rows() -> int:
    return int(os.environ.get("ZIPPER_BROADCAST_MAX_ROWS", "2000000"))


@dataclass
class RunResult:
    table: str
    ds: str
    action: str  # init | merge | noop | restore | rerun | replay | rebuild
    message: str = ""
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    run_id: str = ""

    def summary(self) -> str:
        if self.action == "noop":
            return f"{self.table} {self.ds}: no-op, {self.message}"
        if self.action in ("restore", "rerun", "rebuild"):
            return f"{self.table}: {self.message}; {self.seconds:.1f} s"
        if self.action == "replay":
            return f"{self.table} {self.ds}: {self.message}; {self.seconds:.1f} s"
        if self.action == "init":
            return f"{self.table} {self.ds}: initialized, {self.counts.get('open_after', 0)} open rows; {self.seconds:.1f} s"
        c = self.counts
        return (
            f"{self.table} {self.ds}: {c['new']} new, {c['changed']} changed, {c['unchanged']} re-sent unchanged"
            + (f", {c['updated_in_place']} updated in place" if c.get("updated_in_place") else "")
            + f", {c['closed']} closed; {c['open_after']} open rows after; {self.seconds:.1f} s"
        )

    def report(self) -> dict:
        """Machine-readable form of the run, for schedulers (the DAGs' audit task)."""
        return {
            "table": self.table, "ds": self.ds, "action": self.action, "message": self.message,
            "counts": dict(self.counts), "run_id": self.run_id, "seconds": round(self.seconds, 3),
            "summary": self.summary(),
        }


# ---------------------------------------------------------------- helpers

def _where(spec: TableSpec, ds: dt.date) -> dict:
    return {"table": spec.table, "ds": ds.isoformat()}


def _key_text(rows, keys: list[str]) -> str:
    def one(row):
        values = ["NULL" if row[k] is None else str(row[k]) for k in keys]
        return values[0] if len(values) == 1 else "(" + ", ".join(values) + ")"

    return ", ".join(one(r) for r in rows)


def _struct_type(columns: list[tuple[str, str]], begin_column: str | None = None):
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    fields = [StructField(name, _parse_datatype_string(kind), True) for name, kind in columns]
    if begin_column:
        fields.append(StructField(begin_column, StringType(), True))
    return StructType(fields)


def validate_keys(df, spec: TableSpec, ds: dt.date, what: str) -> int:
    """Row count of the input; fails naming keys if any is NULL or repeated. One pass over the input."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    rows = Observation(f"zipper_rows_{secrets.token_hex(6)}")
    offenders = (
        transforms.key_offenders(df.observe(rows, F.count(F.lit(1)).alias("rows")), spec.keys)
        .limit(MAX_LISTED_KEYS * 2 + 1)
        .collect()
    )
    nulls = [r for r in offenders if any(r[k] is None for k in spec.keys)][:MAX_LISTED_KEYS]
    if nulls:
        raise InputError(
            f"{what} has NULL in key columns {spec.keys}: {_key_text(nulls, spec.keys)}", **_where(spec, ds)
        )
    if offenders:
        more = " (first 20)" if len(offenders) > MAX_LISTED_KEYS else ""
        raise InputError(
            f"{what} has keys {spec.keys} more than once{more}: {_key_text(offenders[:MAX_LISTED_KEYS], spec.keys)}",
            **_where(spec, ds),
        )
    observed = observed_metrics(rows)
    return int(observed["rows"]) if "rows" in observed else df.count()


def observed_metrics(observation) -> dict:
    """Metrics of an Observation; empty when Spark collected none (an input with no partitions)."""
    try:
        return dict(observation.get)
    except Exception:
        return {}


def _check_owned(st: state.TableState, spec: TableSpec, ds: dt.date) -> None:
    if not st.exists:
        return
    props = st.properties
    if state.P_SPEC_NAME not in props:
        raise StateError("table exists and was not created by zipper; refusing to change it", **_where(spec, ds))
    recorded_keys = props.get(state.P_KEYS, "")
    if recorded_keys and recorded_keys.split(",") != spec.keys:
        raise StateError(
            f"spec keys {spec.keys} differ from the table's keys {recorded_keys.split(',')}; "
            "keys cannot change on an existing table",
            **_where(spec, ds),
        )
    if props.get(state.P_END_STYLE, spec.end_style) != spec.end_style:
        raise StateError(
            f"spec end_style {spec.end_style} differs from the table's {props[state.P_END_STYLE]}", **_where(spec, ds)
        )


def recover(spark, spec: TableSpec, st: state.TableState, ds: dt.date) -> state.TableState:
    """Finish what a killed run left: empty partitions that were added but never published."""
    if not st.pending:
        return st
    stray = [p for p in st.pending if audit.written_rows(spark, p.location) > 0]
    if stray:
        raise StateError(
            f"partitions {[p.end for p in stray]} hold data but no zipper commit record; see `zipper check {spec.name}`",
            **_where(spec, ds),
        )
    catalog.drop_partitions(spark, spec, [p.end for p in st.pending])
    return state.read_state(spark, spec)


def _spec_columns(spec: TableSpec) -> list[tuple[str, str]]:
    from pyspark.sql.types import _parse_datatype_string

    columns = []
    for name, kind in (spec.columns or {}).items():
        try:
            columns.append((name, _parse_datatype_string(kind).simpleString()))
        except Exception:
            raise SpecError(f"key 'columns.{name}': {kind!r} is not a Spark SQL type", table=spec.table) from None
    return columns


def _schema_columns(df) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


# ---------------------------------------------------------------- init

def init_table(spark, spec: TableSpec, requested: dt.date | None = None) -> RunResult:
    started = time.monotonic()
    ds = init_date(spec, requested)
    where = _where(spec, ds)
    st = state.read_state(spark, spec)
    _check_owned(st, spec, ds)
    if st.initialized:
        if st.init_ds == ds:
            return RunResult(spec.table, ds.isoformat(), "noop", f"already initialized as of {ds}")
        raise StateError(
            f"already initialized (base date {st.init_ds}, at {st.last_committed}); a new base needs a rebuild", **where
        )

    base_df, fingerprint = None, "empty"
    if spec.base is not None:
        located = sources.locate(spark, spec, spec.base, ds, "base")
        fingerprint = located.fingerprint
        schema = _struct_type(_spec_columns(spec)) if spec.columns else None
        try:
            base_df = sources.read(spark, located, spec.base, schema)
        except InputError as exc:
            raise InputError(exc.detail, **where) from None
        if base_df is None:
            raise InputError(f"base at {located.description} has no files", **where)
        base_df = conform.lower_case_columns(base_df, spec, ds.isoformat(), "base")
        conform.check_shape(base_df, spec, ds.isoformat(), "base")

    if spec.columns:
        columns = _spec_columns(spec)
    elif base_df is not None:
        columns = _schema_columns(base_df)
    else:
        columns = _columns_from_first_increment(spark, spec, ds + DAY)
    if base_df is not None:
        base_df = conform.to_table_columns(base_df, columns, spec, ds.isoformat(), "base")
        validate_keys(base_df, spec, ds, "base")

    if not st.exists:
        catalog.ensure_database(spark, spec.database)
        catalog.create_table(
            spark,
            spec,
            columns,
            catalog.default_table_location(spark, spec),
            {
                state.P_SPEC_NAME: spec.name,
                state.P_KEYS: ",".join(spec.keys),
                state.P_END_STYLE: spec.end_style,
                state.P_OPEN_END: spec.open_end.isoformat(),
                state.P_FORMAT: state.FORMAT_VERSION,
            },
        )
    st = state.read_state(spark, spec)
    table_columns = catalog.data_columns(spark, spec)
    if sorted(table_columns) != sorted(columns):
        raise StateError(f"table exists with columns {table_columns}, expected {columns}", **where)

    run_id = state.new_run_id()
    open_dir = state.run_dir(st, run_id) + "/" + transforms.SLOT + "=" + transforms.OPEN
    if base_df is not None:
        names = [c for c, _ in table_columns]
        transforms.opening(base_df, names, spec.begin_column, ds.isoformat()).write.parquet(open_dir)
    else:
        fs.mkdirs(spark, open_dir)
    rows = audit.written_rows(spark, open_dir)

    open_end = spec.open_end.isoformat()
    catalog.add_partitions(spark, spec, {open_end: state.empty_dir(st.location)})
    fs.mkdirs(spark, state.empty_dir(st.location))
    catalog.repoint(
        spark,
        spec,
        [
            Partition(
                open_end,
                open_dir,
                {
                    state.LAST_COMMITTED: ds.isoformat(),
                    state.RUN_ID: run_id,
                    state.ROWS: str(rows),
                    state.COMMITTED_AT: state.utc_now_iso(),
                    state.INIT_DS: ds.isoformat(),
                    state.INIT_FINGERPRINT: fingerprint,
                },
            )
        ],
    )
    return RunResult(
        spec.table, ds.isoformat(), "init", "", {"open_after": rows}, time.monotonic() - started, run_id
    )


def _columns_from_first_increment(spark, spec: TableSpec, first: dt.date) -> list[tuple[str, str]]:
    where = _where(spec, first)
    try:
        located = sources.locate(spark, spec, spec.source, first, "increment")
    except InputError:
        raise StateError(
            "the spec has no base and no columns, and the first increment is not there to take the columns from;"
            " add `columns:` to the spec or wait for the increment",
            **where,
        ) from None
    df = sources.read(spark, located, spec.source)
    if df is None:
        raise StateError(
            f"the spec has no base and no columns, and the first increment ({located.description}) is empty;"
            " add `columns:` to the spec",
            **where,
        )
    df = conform.lower_case_columns(df, spec, first.isoformat(), "increment")
    conform.check_shape(df, spec, first.isoformat(), "increment")
    return _schema_columns(df)


# ---------------------------------------------------------------- merge

def merge_date(spark, spec: TableSpec, ds: dt.date, progress=None) -> RunResult:
    """Merge one date. A past date whose input (or a later date's) changed is replayed, per
    `on_past_date`; `progress` receives one line per replayed date."""
    started = time.monotonic()
    where = _where(spec, ds)
    st = state.read_state(spark, spec)
    _check_owned(st, spec, ds)
    st = recover(spark, spec, st, ds)

    fingerprints: dict[dt.date, str] = {}

    def current_fingerprint(day: dt.date) -> str:
        if day not in fingerprints:
            fingerprints[day] = sources.locate(spark, spec, spec.source, day, "increment").fingerprint
        return fingerprints[day]

    plan = plan_merge(
        spec,
        ds,
        initialized=st.initialized,
        last_committed=st.last_committed,
        init_ds=st.init_ds,
        committed_fingerprints={d: c.fingerprint for d, c in st.commits.items()},
        current_fingerprint=current_fingerprint,
        pending_replay=(st.replay.first, st.replay.last) if st.replay else None,
    )
    if plan.action == "noop":
        return RunResult(spec.table, ds.isoformat(), "noop", plan.reason, seconds=time.monotonic() - started)
    if plan.action in ("replay", "resume"):
        from zipper.engine import replay

        say = progress or (lambda line: None)
        say(f"{spec.table} {ds}: {plan.reason}")
        done = replay.rerun(spark, spec, plan.replay_from, plan.replay_to, progress=say)
        if plan.action == "resume":  # the table is where the interrupted replay was going: plan again
            return merge_date(spark, spec, ds, progress)
        return RunResult(spec.table, ds.isoformat(), "replay", f"{plan.reason}; replayed {done.ds}",
                         done.counts, time.monotonic() - started, done.run_id)
    located = sources.locate(spark, spec, spec.source, ds, "increment")  # fails before anything is created
    if plan.action == "init_and_apply":
        init_table(spark, spec, None)
        st = state.read_state(spark, spec)
    return apply_date(spark, spec, st, ds, located, started)


@dataclass(frozen=True)
class Written:
    """What the two merge jobs wrote, counted for the audit."""

    kinds: dict[str, int]  # increment keys found open, by what the day does to them
    untouched: int  # open rows the big pass kept as they were (footers)
    touched: int  # open rows the big pass set aside for the small job (footers)


def _write_merge(spark, spec: TableSpec, st: state.TableState, increment, table_columns, tracked: list[str],
                 ds_text: str, run_root: str, broadcast: bool) -> Written:
    """Write the new open and closed slots under `run_root` in two jobs.

    The big pass copies the open partition into the new open slot, setting aside the rows whose
    keys the increment names (`zipper_slot=touched`, a scratch directory no partition points
    to). The small job reads those back, decides each one against the increment, counts the
    outcome as it writes, and appends successors and new keys to the open slot and old
    versions to the closed slot."""
    from pyspark.sql import Observation

    names = [c for c, _ in table_columns]
    open_schema = _struct_type(table_columns, spec.begin_column)
    open_rows = spark.read.schema(open_schema).parquet(st.open_partition.location)
    transforms.route_open(open_rows, increment, keys=spec.keys, broadcast_increment=broadcast) \
        .write.partitionBy(transforms.SLOT).parquet(run_root)
    open_dir, touched_dir = (f"{run_root}/{transforms.SLOT}={slot}" for slot in (transforms.OPEN, transforms.TOUCHED))
    for directory in (open_dir, touched_dir):
        fs.mkdirs(spark, directory)
    untouched, touched = audit.written_rows(spark, open_dir), audit.written_rows(spark, touched_dir)

    observation = Observation(f"zipper_kinds_{secrets.token_hex(6)}")
    (
        transforms.day_rows(
            spark.read.schema(open_schema).parquet(touched_dir), increment, keys=spec.keys, columns=names,
            tracked=tracked, begin_column=spec.begin_column, ds=ds_text, broadcast_increment=broadcast,
        )
        .observe(observation, *transforms.kind_counts(("changed", "updated", "unchanged")))
        .drop(transforms.KIND)
        .write.mode("append").partitionBy(transforms.SLOT).parquet(run_root)
    )
    kinds = observed_metrics(observation)
    fs.delete(spark, touched_dir)
    return Written({kind: int(kinds.get(kind, 0)) for kind in ("changed", "updated", "unchanged")}, untouched, touched)


def apply_date(spark, spec: TableSpec, st: state.TableState, ds: dt.date, located: sources.Input,
               started: float | None = None, carry_params: dict[str, str] | None = None) -> RunResult:
    """Merge the increment of `ds` into a table that is at ds - 1, and publish.

    `carry_params`: extra open-partition parameters to publish with the commit (a replay keeps
    its marker this way until its last date)."""
    started = started if started is not None else time.monotonic()
    where = _where(spec, ds)
    ds_text = ds.isoformat()
    table_columns = catalog.data_columns(spark, spec)
    names = [c for c, _ in table_columns]
    tracked = conform.tracked_columns(spec, names)

    schema = _struct_type(table_columns)
    try:
        increment = sources.read(spark, located, spec.source, schema)
    except InputError as exc:
        raise InputError(exc.detail, **where) from None
    increment = conform.lower_case_columns(increment, spec, ds_text, f"increment {located.description}")
    conform.check_shape(increment, spec, ds_text, f"increment {located.description}")
    increment = conform.to_table_columns(increment, table_columns, spec, ds_text, f"increment {located.description}")
    input_rows = validate_keys(increment, spec, ds, f"increment {located.description}")

    run_id = state.new_run_id()
    run_root = state.run_dir(st, run_id)
    open_dir = f"{run_root}/{transforms.SLOT}={transforms.OPEN}"
    closed_dir = f"{run_root}/{transforms.SLOT}={transforms.CLOSED}"
    open_before = st.open_rows

    if input_rows == 0:
        open_dir = st.open_partition.location
        written = Written({"changed": 0, "updated": 0, "unchanged": 0}, open_before, 0)
        fs.mkdirs(spark, closed_dir)
    else:
        written = _write_merge(spark, spec, st, increment, table_columns, tracked, ds_text, run_root,
                                        broadcast=input_rows <= broadcast_max_rows())
        for directory in (open_dir, closed_dir):
            fs.mkdirs(spark, directory)
    faults.checkpoint("after_write")

    summary = audit.reconcile(
        open_recorded=open_before,
        open_read=audit.written_rows(spark, st.open_partition.location),
        input_rows=input_rows,
        kinds=written.kinds,
        untouched=written.untouched,
        touched=written.touched,
        open_written=audit.written_rows(spark, open_dir),
        closed_written=audit.written_rows(spark, closed_dir),
        max_closed_begin=audit.max_value(spark, closed_dir, spec.begin_column),
        ds=ds_text,
        table=spec.table,
    )
    faults.checkpoint("after_audit")

    closed_end = spec.closed_end(ds).isoformat()
    if closed_end in {p.end for p in st.closed}:
        raise StateError(f"partition {spec.end_column}={closed_end} already holds a commit", **where)
    if closed_end not in {p.end for p in st.pending}:
        fs.mkdirs(spark, state.empty_dir(st.location))
        catalog.add_partitions(spark, spec, {closed_end: state.empty_dir(st.location)})
    faults.checkpoint("before_publish")

    now = state.utc_now_iso()
    open_params = {k: v for k, v in st.open_partition.params.items() if k.startswith("zipper.init_")}
    open_params.update(
        {
            state.LAST_COMMITTED: ds_text,
            state.RUN_ID: run_id,
            state.ROWS: str(summary["open_after"]),
            state.COMMITTED_AT: now,
        }
    )
    open_params.update(carry_params or {})
    commit = state.Commit(ds_text, run_id, now, located.fingerprint, summary, summary["closed"], closed_end)
    catalog.repoint(
        spark,
        spec,
        [
            Partition(spec.open_end.isoformat(), open_dir, open_params),
            Partition(closed_end, closed_dir, commit.params()),
        ],
    )
    faults.checkpoint("after_publish")
    return RunResult(spec.table, ds_text, "merge", "", summary, time.monotonic() - started, run_id)
