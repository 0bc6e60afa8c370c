"""`zipper init`: create the table and publish its first state, the base's rows (or none).

The columns come from the spec's `columns:`, else the base, else the first increment. A table
whose create a killed init left with columns since corrected is made again (it holds no row)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, replace

from pyspark.sql import functions as F
from pyspark.sql.types import _parse_datatype_string

from zipper.core import fs, layout
from zipper.core.dates import DAY
from zipper.core.errors import InputError, MissingInputError, SpecError, StateError
from zipper.core.names import NO_BASE_FINGERPRINT
from zipper.core.reports import RunAction
from zipper.inputs import conform, dayinput, file_types, refusals, sources
from zipper.inputs.modes import mode_of
from zipper.jobs.keys import resolve_keys
from zipper.jobs.plan import init_date
from zipper.jobs.result import Opening, RunResult
from zipper.table import catalog, publish, state, store
from zipper.tablespec.model import VALIDITY_TYPES, TableSpec
from zipper.transforms import daily


def _where(spec: TableSpec, ds: dt.date) -> dict:
    return {"table": spec.table, "ds": ds.isoformat()}


def init_table(spark, spec: TableSpec, requested: dt.date | None = None) -> RunResult:
    """Create the table (unless a killed init left it) and publish its first state as of the
    base date: the base's rows, or none."""
    started = time.monotonic()
    spec = resolve_keys(spark, spec)
    ds = init_date(spec, requested)
    where = _where(spec, ds)
    st = state.read_state(spark, spec)
    state.check_owned(st, spec, ds)
    if st.initialized:
        if st.init_ds == ds:
            return RunResult(spec.table, ds.isoformat(), RunAction.NOOP, f"already initialized as of {ds}")
        raise StateError(
            f"already initialized (base date {st.init_ds}, at {st.last_committed}); a new base needs a rebuild", **where
        )

    base = _read_base(spark, spec, ds)
    columns = _columns(spark, spec, st, ds, base)
    if base.df is not None:
        base = _checked_base(spark, spec, ds, base, columns)
    st, created = created_table(spark, spec, st, columns)
    table_columns = catalog.data_columns(spark, spec)
    if sorted(table_columns) != sorted(columns):
        raise StateError(f"table exists with columns {table_columns}, expected {columns}", **where)

    run_id = state.new_run_id()
    open_dir = layout.slot_dir(state.run_dir(st, run_id), layout.Slot.OPEN)
    if base.df is not None:
        names = [c for c, _ in table_columns]
        # the columns the key check left unread are read here first
        with file_types.explained_column_types(spark, spec, ds.isoformat(), base.located):
            store.write_rows(daily.opening(base.df, names, spec.begin_column, ds.isoformat()), open_dir)
    else:
        fs.mkdirs(open_dir)
    rows = store.rows_in(open_dir)

    publish.publish_init(spark, spec, st, publish.InitCommit(ds, run_id, open_dir, rows, base.fingerprint))
    opened = Opening(created, base.df is not None, rows, ds.isoformat())
    seconds = time.monotonic() - started
    return RunResult(
        spec.table, ds.isoformat(), RunAction.INIT, "", {"open_after": rows}, seconds, run_id, opened=opened
    )


@dataclass(frozen=True)
class _Base:
    """The base as read (None without one), with its fingerprint and how messages name it."""

    df: object = None  # DataFrame
    fingerprint: str = NO_BASE_FINGERPRINT
    what: str = "base"
    located: object = None  # sources.Input


def _read_base(spark, spec: TableSpec, ds: dt.date) -> _Base:
    """The spec's base of `ds`, read with the spec's columns when it declares them; a base
    without files is refused, an absent one (no `base:`) is no rows."""
    if spec.base is None:
        return _Base()
    located = sources.locate(spark, spec, spec.base, ds, "base")
    what = f"base {located.description}"
    declared = _spec_columns(spec) if spec.columns else None
    df = conform.read_input(spark, spec, located, spec.base, declared, ds.isoformat(), what)
    if df is None:
        raise MissingInputError(f"base at {located.description} has no files", **_where(spec, ds))
    return _Base(df, located.fingerprint, what, located)


def _columns(spark, spec: TableSpec, st: state.TableState, ds: dt.date, base: _Base) -> list[tuple[str, str]]:
    """The table's columns: the spec's `columns:`, else the base's, else the first increment's."""
    if spec.columns:
        return conform.with_validity(spec, _spec_columns(spec))
    if base.df is not None:
        return conform.with_validity(spec, _schema_columns(base.df))
    return _columns_from_first_increment(spark, spec, st, ds + DAY)


def _checked_base(spark, spec: TableSpec, ds: dt.date, base: _Base, columns: list[tuple[str, str]]) -> _Base:
    """The base as the table's columns, its NULL and repeated keys refused (with `updated_at`, its
    rows' validity from it, and a NULL in it refused)."""
    df = _with_validity(spec, ds, base) if spec.validity_columns else base.df
    if spec.tombstone_column:  # the base's keys are live
        df = df.withColumn(spec.tombstone_column, F.lit(False))
    df = conform.to_table_columns(df, columns, spec, ds.isoformat(), base.what)
    with file_types.explained_column_types(spark, spec, ds.isoformat(), base.located):
        refusals.validate_keys(df, spec, ds, base.what, roots=base.located.paths)
    return replace(base, df=df)


def _with_validity(spec: TableSpec, ds: dt.date, base: _Base):
    """The base's rows, each valid from its `updated_at` value until the open end."""
    updated_at, where = spec.source.updated_at, _where(spec, ds)
    if updated_at not in base.df.columns:
        raise InputError(f"{base.what} lacks the updated_at column {updated_at!r}", **where)
    kind = base.df.schema[updated_at].dataType.simpleString()
    if kind not in VALIDITY_TYPES:
        raise InputError(
            f"{base.what} updated_at column {updated_at!r} has type {kind}; it must be a date or timestamp", **where
        )
    nulls = base.df.where(F.col(updated_at).isNull()).select(*spec.keys).limit(5).collect()
    if nulls:
        shown = ", ".join(str(tuple(row)) if len(spec.keys) > 1 else str(row[0]) for row in nulls)
        raise InputError(
            f"{base.what} has NULL in updated_at column {updated_at!r} (a version's valid_from); keys {spec.keys}:"
            f" {shown}",
            **where,
        )
    return daily.with_validity(
        base.df,
        updated_at=updated_at,
        validity=spec.validity_columns,
        open_end=spec.open_end.isoformat(),
    )


def created_table(
    spark, spec: TableSpec, st: state.TableState, columns: list[tuple[str, str]]
) -> tuple[state.TableState, bool]:
    """The table, created unless it exists; returns its state and whether it was created."""
    if (
        st.exists
        and not st.initialized
        and not st.commits
        and not st.closed
        and sorted(catalog.data_columns(spark, spec)) != sorted(columns)
    ):
        # an init killed between creating the table and publishing its first state left the columns
        # of a base since corrected; it committed nothing and holds no row, so it is made again
        drop_new_table(spark, spec, st.location)
        st = state.read_state(spark, spec)
    created = not st.exists
    if created:
        catalog.ensure_database(spark, spec.database)
        catalog.create_table(
            spark,
            spec,
            columns,
            catalog.default_table_location(spark, spec),
            {
                state.P_SPEC_NAME: spec.name,
                state.P_KEYS: ",".join(spec.keys),
                state.P_END_STYLE: str(spec.end_style),
                state.P_OPEN_END: spec.open_end.isoformat(),
                state.P_FORMAT: state.FORMAT_VERSION,
                state.P_OWN_COLUMNS: ",".join(spec.own_columns),
            },
        )
    return state.read_state(spark, spec), created


def _columns_from_first_increment(
    spark, spec: TableSpec, st: state.TableState, first: dt.date
) -> list[tuple[str, str]]:
    where = _where(spec, first)
    try:
        located = mode_of(spec).locate(spark, spec, st, first)
    except InputError:
        raise StateError(
            "the spec has no base and no columns, and the first increment is not there to take the columns from;"
            " add `columns:` to the spec or wait for the increment",
            **where,
        ) from None
    columns = dayinput.first_columns(spark, spec, located, first)
    if not columns:
        raise StateError(
            f"the spec has no base and no columns, and the first increment ({located.description}) is empty;"
            " add `columns:` to the spec",
            **where,
        )
    return columns


def drop_new_table(spark, spec: TableSpec, location: str) -> None:
    """Undo the table a failed first merge created: its columns (and a landing zone's keys) came
    from the input that failed, and would refuse the corrected one."""
    catalog.drop_table(spark, spec)
    fs.delete(location)


def _spec_columns(spec: TableSpec) -> list[tuple[str, str]]:
    columns = []
    for name, kind in (spec.columns or {}).items():
        try:
            columns.append((name, _parse_datatype_string(kind).simpleString()))
        except Exception:
            raise SpecError(f"key 'columns.{name}': {kind!r} is not a Spark SQL type", table=spec.table) from None
    return columns


def _schema_columns(df) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
