"""A dry run's copy of a table: a second metastore entry whose partitions point at the table's own
directories, on which a rerun or a rebuild runs as it would on the table.

Making it copies no data: the table's definition and every partition (location, columns,
parameters) are sent to the metastore as they are, under another name (`<table>__zipper_dry_<id>`,
in the same database) and with a location of its own, the dry run's directory under the table's
versions. A job run on the copy writes only there and re-points only the copy's partitions; the
table and its files are not changed (the copy is an external table: dropping it or its partitions
deletes no file). At the end the copy's entry is dropped and its directory deleted.

A killed dry run leaves what a merge's dry run leaves, its run directory, known by its name (a dry
run's id ends with `-dry`), and a rerun's or rebuild's also leaves its copy's entry. Both kinds are
cleared the same way (`sweep`): by the next dry run of the table, of either kind, and by `zipper
vacuum`, once an hour old (younger, it may be another dry run's, running), whatever the retention."""

from __future__ import annotations

import contextlib
import datetime as dt

from zipper.core import fs
from zipper.core.dates import utc_now_iso
from zipper.core.errors import ZipperError
from zipper.table import catalog, state
from zipper.tablespec.model import TableSpec

SUFFIX = "__zipper_dry_"  # between the table's name and the dry run's id, in the copy's name
DRY_RUN_OF = "zipper.dry_run_of"  # the copy's property: the table it copies
STARTED = "zipper.dry_run_started"  # the copy's property: when it was made (UTC, ISO)
LEFTOVER_AGE = dt.timedelta(hours=1)
MAX_NAME = 128  # the metastore's limit on a table's name
TAG = 20  # characters of the run's id in the copy's name


def _prefix(spec: TableSpec) -> str:
    return spec.table_name[: MAX_NAME - len(SUFFIX) - TAG] + SUFFIX


def copy_name(spec: TableSpec, run_id: str) -> str:
    """The copy's table name (without its database): the table's, the suffix and the run's id."""
    return _prefix(spec) + "".join(c for c in run_id.lower() if c.isalnum())[-TAG:]


def make(spark, spec: TableSpec, st: state.TableState, run_id: str) -> TableSpec:
    """Copy the table's metastore entry and every partition under a new name; returns the spec of
    the copy (the same spec, naming the copy's table)."""
    sweep(spark, spec, st)
    name = copy_name(spec, run_id)
    location = f"{state.run_dir(st, run_id)}/zipper_dry"
    fs.mkdirs(location)
    catalog.copy_table(spark, spec, name, location, {DRY_RUN_OF: spec.table, STARTED: utc_now_iso()})
    return spec.model_copy(update={"table": f"{spec.database}.{name}"})


@contextlib.contextmanager
def working_copy(spark, spec: TableSpec, st: state.TableState):
    """A copy of the table's entry at the table's own location, for a job whose result the caller
    publishes to the table or reads (a rebuild or a restore of a mode they replay): the runs on it
    write the table's own run directories, which the table's partitions can then point at
    (`publish.publish_copy`). Named and marked as a dry run's copy, so that a killed job's entry is
    cleared as theirs is; its runs' directories are not a dry run's, and go as a killed run's do
    (`vacuum.clear_killed_run`) or to vacuum. Yields the copy's spec; a failure inside is said of
    the table (which is as it was), and the copy's entry is dropped at the end."""
    sweep(spark, spec, st)
    name = copy_name(spec, state.new_run_id())
    catalog.copy_table(spark, spec, name, st.location, {DRY_RUN_OF: spec.table, STARTED: utc_now_iso()})
    copied = spec.model_copy(update={"table": f"{spec.database}.{name}"})
    try:
        yield copied
    except ZipperError as exc:
        raise exc.reworded(exc.detail.replace(copied.table, spec.table), table=spec.table, ds=exc.ds) from None
    finally:
        catalog.drop_entry(spark, spec.database, name)


def drop(spark, copied: TableSpec, st: state.TableState, run_id: str) -> None:
    """Drop the copy's metastore entry (its partitions' files stay: they are the table's, or the
    dry run's own) and delete the dry run's directory."""
    catalog.drop_entry(spark, copied.database, copied.table_name)
    fs.delete(state.run_dir(st, run_id))


def leftover_copies(spark, spec: TableSpec, now: dt.datetime | None = None) -> list[str]:
    """The copies of this table that killed dry runs left, once LEFTOVER_AGE old."""
    now = now or dt.datetime.now(dt.UTC)
    found = []
    for name, properties in catalog.tables_named(spark, spec.database, _prefix(spec) + "*").items():
        if properties.get(DRY_RUN_OF) != spec.table:
            continue  # not a copy of this table: another's whose name starts alike
        started = dt.datetime.fromisoformat(properties.get(STARTED) or "1970-01-01T00:00:00+00:00")
        if now - started >= LEFTOVER_AGE:
            found.append(name)
    return found


def drop_leftovers(spark, spec: TableSpec, now: dt.datetime | None = None) -> list[str]:
    """Drop the copies of this table that killed dry runs left, once LEFTOVER_AGE old. Returns their names."""
    dropped = leftover_copies(spark, spec, now)
    for name in dropped:
        catalog.drop_entry(spark, spec.database, name)
    return dropped


def is_leftover_run(run_id: str, now: dt.datetime) -> bool:
    """Whether a run directory is a killed dry run's, LEFTOVER_AGE old (younger, it may be running)."""
    started = state.run_time(run_id)
    return state.is_dry_run_id(run_id) and started is not None and now - started >= LEFTOVER_AGE


def drop_leftover_directories(st: state.TableState, now: dt.datetime | None = None) -> list[str]:
    """Delete the run directories that killed dry runs of this table left (of a merge's dry run, or
    of a rerun's or rebuild's, with its copy's runs inside), once LEFTOVER_AGE old. One listing of
    the table's run directories. Returns the directories deleted."""
    now = now or dt.datetime.now(dt.UTC)
    deleted = []
    for directory, _ in fs.list_dirs(state.versions_root(st)):
        if is_leftover_run(directory.rstrip("/").rsplit("/", 1)[-1], now):
            fs.delete(directory)
            deleted.append(directory)
    return deleted


def sweep(spark, spec: TableSpec, st: state.TableState, now: dt.datetime | None = None) -> list[str]:
    """Clear what killed dry runs of this table left, once LEFTOVER_AGE old: their copies' entries,
    then their directories. Returns the copies' names and the directories."""
    return drop_leftovers(spark, spec, now) + drop_leftover_directories(st, now)


def is_copy(st: state.TableState) -> bool:
    """Whether a table's state is that of a dry run's copy: its days publish whatever the guard says
    (the guard's verdict is reported instead), and a failure leaves no replay to resume."""
    return DRY_RUN_OF in st.properties
