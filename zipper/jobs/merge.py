"""The daily data path: spec -> plan -> transforms -> write to fresh directories -> audit -> publish.

Nothing a reader can see changes until `catalog.repoint`, one metastore transaction that
moves the open partition and the day's closed partition to their new directories together
with the commit record. Before it, a failure leaves the table as it was; after it, the
commit is complete."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import secrets
import time
from dataclasses import dataclass, field

from zipper.core import faults, fs
from zipper.inputs import conform, csv_values, dayinput, file_types, landing, metrics, refusals, sources
from zipper.table import audit, catalog, state
from zipper.transforms import daily
from zipper.table.catalog import Partition
from zipper.inputs.metrics import observed_metrics  # noqa: F401 - part of this module's API
from zipper.inputs.modes import mode_of
from zipper.inputs.refusals import validate_keys  # noqa: F401 - part of this module's API
from zipper.core.dates import DAY
from zipper.jobs.plan import init_date, plan_merge
from zipper.core.errors import InputError, MissingInputError, SpecError, StateError
from zipper.tablespec.model import TableSpec

MAX_LISTED_KEYS = refusals.MAX_LISTED_KEYS


def broadcast_max_rows() -> int:
    return int(os.environ.get("ZIPPER_BROADCAST_MAX_ROWS", "2000000"))


# Share of the driver's heap the day's rows may take, as Spark lays them out, to be broadcast.
# Building a broadcast holds them several times over (collected rows, hash table, serialized
# blocks); with 1 GB, an increment of 1.8M seven-column rows (about 270 MB so estimated) failed
# with "Not enough memory to build and broadcast the table" while 600,000 rows (90 MB) passed.
BROADCAST_HEAP_SHARE = 8


def broadcast_max_bytes(spark) -> int:
    configured = os.environ.get("ZIPPER_BROADCAST_MAX_BYTES")
    if configured:
        return int(configured)
    return int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory()) // BROADCAST_HEAP_SHARE


def estimated_row_bytes(spark, columns: list[tuple[str, str]], begin_column: str,
                        variable_bytes_per_row: float | None = None) -> int:
    """Bytes a row of the open partition takes in Spark's row format, counted generously: an
    8-byte slot per column plus variable-length data. Strings and binaries count as observed
    (`variable_bytes_per_row`, plus up to 7 bytes of padding each) when the input pass measured
    them, else as Spark's own estimate (20 bytes, far too little for long texts)."""
    schema = conform.struct_type(columns, begin_column)
    observed = set()
    if variable_bytes_per_row is not None:
        observed = set(metrics.variable_columns(schema, [c for c, _ in columns]))
    estimated = type(schema)([f for f in schema.fields if f.name not in observed])
    jvm_schema = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(estimated.json())
    variable = math.ceil(variable_bytes_per_row) + 7 * len(observed) if observed else 0
    return 8 + 8 * len(schema.fields) + int(jvm_schema.defaultSize()) + variable


def broadcasts(spark, rows: int, columns: list[tuple[str, str]], begin_column: str,
               variable_bytes_per_row: float | None = None) -> bool:
    """Whether the day's rows are broadcast (a lookup per open row) rather than joined by a
    shuffle of the open partition: up to ZIPPER_BROADCAST_MAX_ROWS rows, and only while they
    fit the driver's heap (ZIPPER_BROADCAST_MAX_BYTES, default an eighth of it)."""
    if rows > broadcast_max_rows():
        return False
    row_bytes = estimated_row_bytes(spark, columns, begin_column, variable_bytes_per_row)
    return rows * row_bytes <= broadcast_max_bytes(spark)


@dataclass
class RunResult:
    table: str
    ds: str
    action: str  # init | merge | noop | restore | rerun | replay | rebuild
    message: str = ""
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    run_id: str = ""
    join: str = ""  # how the day's rows met the open partition: broadcast | shuffle ("" when not joined)
    # a replay's summary: what came of it, without the reason its first progress line gave
    # (`message` holds both, for the report)
    outcome: str = ""

    def summary(self) -> str:
        if self.action == "noop":
            return f"{self.table} {self.ds}: no-op, {self.message}"
        if self.action in ("restore", "rerun", "rebuild"):
            return f"{self.table}: {self.message}; {self.seconds:.1f} s"
        if self.action == "replay":
            return f"{self.table} {self.ds}: {self.outcome or self.message}; {self.seconds:.1f} s"
        if self.action == "init":
            return f"{self.table} {self.ds}: initialized, {counted(self.counts.get('open_after', 0), 'open row')}; {self.seconds:.1f} s"
        c = self.counts
        return (
            f"{self.table} {self.ds}: {c['new']} new, {c['changed']} changed, {c['unchanged']} re-sent unchanged"
            + (f", {c['updated_in_place']} updated in place" if c.get("updated_in_place") else "")
            + (f", {c['deleted']} deleted" if "deleted" in c else "")
            + f", {c['closed']} closed; {counted(c['open_after'], 'open row')} after"
            + "".join(f"; {note}" for note in _notes(c))
            + f"; {self.seconds:.1f} s"
        )

    def report(self) -> dict:
        """Machine-readable form of the run, for schedulers (the DAGs' audit task)."""
        return {
            "table": self.table, "ds": self.ds, "action": self.action, "message": self.message,
            "counts": dict(self.counts), "run_id": self.run_id, "seconds": round(self.seconds, 3),
            "join": self.join, "summary": self.summary(),
        }


def counted(n: int, noun: str) -> str:
    """`1 open row`, `2 open rows`."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _notes(c: dict) -> list[str]:
    """What a run reports beyond the version counts: ignored deletes, anomalies, column changes."""
    notes = []
    if c.get("anomalies"):
        kinds = [refusals.anomaly_text(problem, c[name]) for problem in refusals.ANOMALY_TEXT
                 if c.get(name := refusals.ANOMALY_COUNTS[problem])]
        notes.append(f"{c['anomalies']} {'anomaly' if c['anomalies'] == 1 else 'anomalies'} ({', '.join(kinds)})")
    elif c.get("deletes_of_absent_keys"):
        n = c["deletes_of_absent_keys"]
        notes.append(f"{n} {'delete of a key that was' if n == 1 else 'deletes of keys that were'} not open (ignored)")
    if "files" in c:
        notes.append(f"{counted(c['files'], 'landing-zone file')}, {counted(c['source_rows'], 'change')}")
    for key, text in (("columns_added", "columns added"), ("columns_missing", "columns missing (NULL in new versions)"),
                      ("columns_widened", "columns widened")):
        if c.get(key):
            notes.append(f"{text}: {', '.join(c[key])}")
    return notes


# ---------------------------------------------------------------- helpers

def _where(spec: TableSpec, ds: dt.date) -> dict:
    return {"table": spec.table, "ds": ds.isoformat()}


def recover(spark, spec: TableSpec, st: state.TableState, ds: dt.date) -> state.TableState:
    """Finish what a killed run left: columns its publish recorded but did not add to the table
    yet, and empty partitions that were added but never published."""
    complete_columns(spark, spec, st)
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


def complete_columns(spark, spec: TableSpec, st: state.TableState) -> bool:
    """Add (or widen) the columns the last commit recorded and the table lacks: what a run
    killed between its publish and its ALTER left undone. True when it changed the table."""
    if not st.initialized:
        return False
    recorded = st.recorded_column_change
    if not (recorded["added"] or recorded["widened"]):
        return False
    current = catalog.data_columns(spark, spec)
    wanted = dict(recorded["widened"])
    columns = [(name, wanted.get(name, kind)) for name, kind in current]
    columns += [(name, kind) for name, kind in recorded["added"] if name not in dict(current)]
    if columns == current:
        return False
    catalog.alter_data_columns(spark, spec, columns)
    return True


def resolve_keys(spark, spec: TableSpec) -> TableSpec:
    """The spec with its key columns (a landing zone's spec may leave them to `_metadata.json`)."""
    if spec.keys:
        return spec
    recorded = catalog.table_properties(spark, spec).get(state.P_KEYS, "") if catalog.table_exists(spark, spec) else ""
    return landing.resolve_keys(spark, spec, recorded)


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
    spec = resolve_keys(spark, spec)
    ds = init_date(spec, requested)
    where = _where(spec, ds)
    st = state.read_state(spark, spec)
    state.check_owned(st, spec, ds)
    if st.initialized:
        if st.init_ds == ds:
            return RunResult(spec.table, ds.isoformat(), "noop", f"already initialized as of {ds}")
        raise StateError(
            f"already initialized (base date {st.init_ds}, at {st.last_committed}); a new base needs a rebuild", **where
        )

    base_df, fingerprint, base_what, located = None, "empty", "base", None
    if spec.base is not None:
        located = sources.locate(spark, spec, spec.base, ds, "base")
        fingerprint, base_what = located.fingerprint, f"base {located.description}"
        declared = _spec_columns(spec) if spec.columns else None
        base_df = conform.read_input(spark, spec, located, spec.base, declared, ds.isoformat(), base_what)
        if base_df is None:
            raise MissingInputError(f"base at {located.description} has no files", **where)

    if spec.columns:
        columns = _spec_columns(spec)
    elif base_df is not None:
        columns = _schema_columns(base_df)
    else:
        columns = _columns_from_first_increment(spark, spec, st, ds + DAY)
    if base_df is not None:
        base_df = conform.to_table_columns(base_df, columns, spec, ds.isoformat(), base_what)
        # a file typing a column otherwise
        with file_types.explained_column_types(spark, spec, ds.isoformat(), located):
            validate_keys(base_df, spec, ds, base_what)

    if (st.exists and not st.initialized and not st.commits and not st.closed
            and sorted(catalog.data_columns(spark, spec)) != sorted(columns)):
        # an init killed between creating the table and publishing its first state left the columns
        # of a base since corrected; it committed nothing and holds no row, so it is made again
        _drop_new_table(spark, spec, st.location)
        st = state.read_state(spark, spec)
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
    open_dir = state.run_dir(st, run_id) + "/" + daily.SLOT + "=" + daily.OPEN
    if base_df is not None:
        names = [c for c, _ in table_columns]
        # the columns the key check left unread are read here first
        with file_types.explained_column_types(spark, spec, ds.isoformat(), located):
            daily.opening(base_df, names, spec.begin_column, ds.isoformat()).write.parquet(open_dir)
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
        expected_run=st.open_run,
        ds=ds.isoformat(),
    )
    return RunResult(
        spec.table, ds.isoformat(), "init", "", {"open_after": rows}, time.monotonic() - started, run_id
    )


def _columns_from_first_increment(spark, spec: TableSpec, st: state.TableState, first: dt.date) -> list[tuple[str, str]]:
    where = _where(spec, first)
    try:
        located = mode_of(spec).locate(spark, spec, st, first)
    except InputError:
        raise StateError(
            "the spec has no base and no columns, and the first increment is not there to take the columns from;"
            " add `columns:` to the spec or wait for the increment",
            **where,
        ) from None
    columns = dayinput.first_columns(spark, spec, st, located, first)
    if not columns:
        raise StateError(
            f"the spec has no base and no columns, and the first increment ({located.description}) is empty;"
            " add `columns:` to the spec",
            **where,
        )
    return columns


# ---------------------------------------------------------------- merge

def merge_date(spark, spec: TableSpec, ds: dt.date, progress=None) -> RunResult:
    """Merge one date. A past date whose input (or a later date's) changed is replayed, per
    `on_past_date`; `progress` receives one line per replayed date."""
    started = time.monotonic()
    spec = resolve_keys(spark, spec)
    st = state.read_state(spark, spec)
    state.check_owned(st, spec, ds)
    st = recover(spark, spec, st, ds)
    if _typed_by_first_input(spec, st) and ds == st.init_ds + DAY:
        st = _retype_from_input(spark, spec, st, ds, progress)

    fingerprints: dict[dt.date, str] = {}
    committed = {d: c.fingerprint for d, c in st.commits.items()}

    def current_fingerprint(day: dt.date) -> str:
        if day not in fingerprints:
            try:
                located = mode_of(spec).locate(spark, spec, st, day)
            except InputError as exc:
                if day == ds:
                    raise
                # a later date's input, gone (say, past the source's retention): say why this merge needs it
                raise exc.reworded(f"{exc.detail}; the input of {day}, committed after {ds}, is needed to tell"
                                   f" whether {ds}..{st.last_committed} are still as committed (and to replay them"
                                   " if not); nothing was changed", table=spec.table, ds=ds.isoformat()) from None
            fingerprints[day] = located.fingerprint_against(committed.get(day.isoformat()))
        return fingerprints[day]

    plan = plan_merge(
        spec,
        ds,
        initialized=st.initialized,
        last_committed=st.last_committed,
        init_ds=st.init_ds,
        committed_fingerprints=committed,
        current_fingerprint=current_fingerprint,
        pending_replay=(st.replay.first, st.replay.last) if st.replay else None,
    )
    if plan.action == "noop":
        return RunResult(spec.table, ds.isoformat(), "noop", plan.reason, seconds=time.monotonic() - started)
    if plan.action == "resume" and ds > plan.replay_to and not mode_of(spec).located_when_due:
        _require_input(spark, spec, st, ds, plan)  # before the replay, which may take long
    if plan.action in ("replay", "resume"):
        from zipper.jobs import replay

        say = progress or (lambda line: None)
        say(f"{spec.table} {ds}: {plan.reason}")
        done = replay.rerun(spark, spec, plan.replay_from, plan.replay_to, progress=say,
                            resume_said=plan.action == "resume")
        if plan.action == "resume":  # the table is where the interrupted replay was going: plan again
            after = merge_date(spark, spec, ds, progress)
            if after.action != "noop":
                return after
        # the report carries the commit of the run's own date, as a merge's does
        counts = {**_commit_counts(spark, spec, ds), "dates_replayed": done.counts.get("dates", 0)}
        return RunResult(spec.table, ds.isoformat(), "replay", f"{plan.reason}; replayed {done.ds}",
                         counts, time.monotonic() - started, done.run_id, outcome=done.message)
    located = mode_of(spec).locate(spark, spec, st, ds)  # fails before anything is created
    if plan.action != "init_and_apply":
        return apply_date(spark, spec, st, ds, located, started)
    created = not st.exists
    init_table(spark, spec, None)
    st = state.read_state(spark, spec)
    try:
        return apply_date(spark, spec, st, ds, located, started)
    except Exception:
        # the first date failed before its publish: no table, as before, so the fixed input starts afresh
        if created and not state.read_state(spark, spec).commits:
            _drop_new_table(spark, spec, st.location)
        raise


def _typed_by_first_input(spec: TableSpec, st: state.TableState) -> bool:
    """A table whose columns were taken from its first increment (no base, no `columns:`) and
    that has committed nothing since: it holds no row, and its columns are only what that
    input had."""
    return (st.initialized and not st.commits and st.open_rows == 0 and spec.base is None and not spec.columns
            and st.open_partition.params.get(state.INIT_FINGERPRINT) == "empty")


def _retype_from_input(spark, spec: TableSpec, st: state.TableState, ds: dt.date, progress) -> state.TableState:
    """Such a table is made again from the first increment as it is now when its columns differ:
    a first merge killed after creating the table (a failed one drops it) left the columns of
    an input that has since been corrected, and the corrected one would be refused."""
    try:
        located = mode_of(spec).locate(spark, spec, st, ds)
    except InputError:
        return st  # the merge says so
    columns = dayinput.first_columns(spark, spec, st, located, ds)
    table_columns = catalog.data_columns(spark, spec)
    if not columns or sorted(columns) == sorted(table_columns):
        return st
    _drop_new_table(spark, spec, st.location)
    (progress or (lambda line: None))(
        f"{spec.table} {ds}: the table held no rows and had the columns of an earlier copy of this input"
        f" ({', '.join(f'{n} {k}' for n, k in table_columns)}); made again with the input's columns")
    return state.read_state(spark, spec)


def _drop_new_table(spark, spec: TableSpec, location: str) -> None:
    """Undo the table a failed first merge created: its columns (and a landing zone's keys) came
    from the input that failed, and would refuse the corrected one."""
    catalog.drop_table(spark, spec)
    fs.delete(spark, location)


def _commit_counts(spark, spec: TableSpec, ds: dt.date) -> dict:
    commit = state.read_state(spark, spec).commits.get(ds.isoformat())
    return dict(commit.counts) if commit is not None else {}


def _require_input(spark, spec: TableSpec, st: state.TableState, ds: dt.date, plan) -> None:
    """A merge that would first resume an interrupted replay fails at once if its own date's
    input is missing, and says the replay is still pending."""
    try:
        mode_of(spec).locate(spark, spec, st, ds)
    except InputError as exc:
        raise exc.reworded(f"{exc.detail}; the interrupted replay of {plan.replay_from}..{plan.replay_to} was not"
                           f" resumed (the next merge or `zipper rerun {spec.name} --from {plan.replay_from}` resumes"
                           " it)", **_where(spec, ds)) from None


@dataclass(frozen=True)
class Written:
    """What the two merge jobs wrote, counted for the audit."""

    kinds: dict[str, int]  # increment keys found open, by what the day does to them
    untouched: int  # open rows the big pass kept as they were (footers)
    touched: int  # open rows the big pass set aside for the small job (footers)


def _write_merge(spark, spec: TableSpec, st: state.TableState, day: dayinput.Day, tracked: list[str], ds: dt.date,
                 run_root: str, broadcast: bool) -> tuple[Written, dict]:
    """Write the new open and closed slots under `run_root` in two jobs; return what was written
    and the day's counts (with what the open rows showed about its changes).

    The big pass copies the open partition into the new open slot, setting aside the rows whose
    keys the change set names (`zipper_slot=touched`, a scratch directory no partition points
    to). Between the jobs, the change set's first actions are checked against those rows (cdc
    and landing zone). The small job reads them back, decides each one against the change set,
    counts the outcome as it writes, and appends successors and new keys to the open slot and
    old versions to the closed slot."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    open_schema = conform.struct_type(day.columns, spec.begin_column)
    open_rows = spark.read.schema(open_schema).parquet(st.open_partition.location)
    # append: the run directory may already hold the day's change set or landing-zone files
    daily.route_open(open_rows, day.changes, keys=spec.keys, broadcast_increment=broadcast) \
        .write.mode("append").partitionBy(daily.SLOT).parquet(run_root)
    open_dir, touched_dir = (f"{run_root}/{daily.SLOT}={slot}" for slot in (daily.OPEN, daily.TOUCHED))
    for directory in (open_dir, touched_dir):
        fs.mkdirs(spark, directory)
    untouched, touched = audit.written_rows(spark, open_dir), audit.written_rows(spark, touched_dir)
    touched_rows = spark.read.schema(open_schema).parquet(touched_dir)
    counts = dayinput.check_open(spec, ds, day, touched_rows) if day.check_open else dict(day.counts)

    deletes = daily.OP in day.changes.columns
    kinds = ("changed", "updated", "unchanged") + (("deleted", "vanished") if deletes else ())
    observation = Observation(f"zipper_kinds_{secrets.token_hex(6)}")
    rows = (
        daily.day_rows(
            touched_rows, day.changes, keys=spec.keys, columns=day.names, tracked=tracked,
            begin_column=spec.begin_column, ds=ds.isoformat(), broadcast_increment=broadcast,
            float_precision=day.float_precision,
        )
        .observe(observation, *daily.kind_counts(kinds))
    )
    if deletes:  # deletes of keys that were not open: counted above, not written
        rows = rows.where(F.col(daily.SLOT) != daily.NONE)
    rows.drop(daily.KIND).write.mode("append").partitionBy(daily.SLOT).parquet(run_root)
    observed = observed_metrics(observation)
    fs.delete(spark, touched_dir)
    return Written({kind: int(observed.get(kind, 0)) for kind in kinds}, untouched, touched), counts


def apply_date(spark, spec: TableSpec, st: state.TableState, ds: dt.date, located: sources.Input,
               started: float | None = None, carry_params: dict[str, str] | None = None,
               checked: dayinput.CheckedInput | None = None) -> RunResult:
    """Merge the input of `ds` into a table that is at ds - 1, and publish.

    `carry_params`: extra open-partition parameters to publish with the commit (a replay keeps
    its marker this way until its last date). `checked`: the input as the replay's own checks
    already read it.

    Column changes: a widening is applied to the table just before the publish (older files
    read the same values through the wider type, while the new files need it); added columns
    just after it (so that a column never shows before the data that fills it), and the publish
    records them, so that a run killed in between is completed by the next one (`recover`)."""
    started = started if started is not None else time.monotonic()
    where = _where(spec, ds)
    ds_text = ds.isoformat()
    table_columns = catalog.data_columns(spark, spec)
    run_id = state.new_run_id()
    run_root = state.run_dir(st, run_id)
    open_dir = f"{run_root}/{daily.SLOT}={daily.OPEN}"
    closed_dir = f"{run_root}/{daily.SLOT}={daily.CLOSED}"
    open_before = st.open_rows

    try:
        with (csv_values.explained(spark, spec.table, spec.keys, ds_text),  # a CSV value that does not parse
              file_types.explained_column_types(spark, spec, ds_text, located)):  # a file typing a column otherwise
            day = dayinput.prepare(spark, spec, st, ds, located, table_columns, run_root, checked)
            tracked = conform.tracked_columns(spec, day.names, ds_text)
            join = ""
            if day.rows == 0:
                open_dir = st.open_partition.location
                kinds = {"changed": 0, "updated": 0, "unchanged": 0}
                if mode_of(spec).closes_keys:
                    kinds.update(deleted=0, vanished=0)
                written, counts = Written(kinds, open_before, 0), dict(day.counts)
                fs.mkdirs(spark, closed_dir)
            else:
                broadcast = broadcasts(spark, day.rows, day.columns, spec.begin_column, day.variable_bytes_per_row)
                join = "broadcast" if broadcast else "shuffle"
                written, counts = _write_merge(spark, spec, st, day, tracked, ds, run_root, broadcast=broadcast)
                for directory in (open_dir, closed_dir):
                    fs.mkdirs(spark, directory)
    except (InputError, SpecError):
        fs.delete(spark, run_root)  # bad input or spec: nothing of this run is worth keeping
        raise
    for directory in day.scratch:
        fs.delete(spark, directory)
    faults.checkpoint("after_write")

    summary = audit.reconcile(
        open_recorded=open_before,
        open_read=audit.written_rows(spark, st.open_partition.location),
        input_rows=day.rows,
        kinds=written.kinds,
        untouched=written.untouched,
        touched=written.touched,
        open_written=audit.written_rows(spark, open_dir),
        closed_written=audit.written_rows(spark, closed_dir),
        max_closed_begin=audit.max_value(spark, closed_dir, spec.begin_column),
        ds=ds_text,
        table=spec.table,
    )
    summary.update(counts)
    if mode_of(spec).complete_source:  # keys of the snapshot equal to their open version: not in the change set
        summary["unchanged"] = summary["source_rows"] - summary["new"] - summary["changed"] - summary["updated_in_place"]
    summary.update(day.column_changes.report())
    faults.checkpoint("after_audit")

    closed_end = spec.closed_end(ds).isoformat()
    if closed_end in {p.end for p in st.closed}:
        raise StateError(f"partition {spec.end_column}={closed_end} already holds a commit", **where)
    if closed_end not in {p.end for p in st.pending}:
        fs.mkdirs(spark, state.empty_dir(st.location))
        catalog.add_partitions(spark, spec, {closed_end: state.empty_dir(st.location)})
    faults.checkpoint("before_publish")

    changed_columns = day.column_changes
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
    open_params.update(st.float_columns_params(conform.widened_from_float(changed_columns)))
    open_params.update(carry_params or {})
    if changed_columns.alters_table:
        open_params[state.COLUMNS] = json.dumps(changed_columns.record(), sort_keys=True)
    consumed = day.located.landing
    commit = state.Commit(ds_text, run_id, now, day.located.fingerprint, summary, summary["closed"], closed_end,
                          consumed.record(day.located.fingerprint) if consumed is not None else None)
    try:
        if changed_columns.widened:
            catalog.require_unchanged(spark, spec, st.open_run, ds_text)  # not widened for a run that cannot publish
            wider = dict((name, new) for name, _, new in changed_columns.widened)
            catalog.alter_data_columns(spark, spec, [(name, wider.get(name, kind)) for name, kind in table_columns])
        catalog.repoint(
            spark,
            spec,
            [
                Partition(spec.open_end.isoformat(), open_dir, open_params),
                Partition(closed_end, closed_dir, commit.params()),
            ],
            expected_run=st.open_run,
            ds=ds_text,
        )
    except catalog.ConcurrentChange:
        fs.delete(spark, run_root)  # written for a table state that is gone
        raise
    if changed_columns.added:
        faults.checkpoint("before_add_columns")
        catalog.alter_data_columns(spark, spec, day.columns)
    faults.checkpoint("after_publish")
    return RunResult(spec.table, ds_text, "merge", "", summary, time.monotonic() - started, run_id, join)
