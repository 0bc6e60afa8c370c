"""PostgreSQL as the database of the warehouse's metastore server (`ZIPPER_METASTORE_DB`), through
the real CLI against a private PostgreSQL server (tests/postgres.py, Debian's packages): a table
made and merged, its metadata in PostgreSQL and not in Derby, read back by a restarted server,
the table locks of its publishes kept in PostgreSQL too, the database named without its password,
and a wrong setting refused with one line."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from pymetastore.hive_metastore.ttypes import InvalidOperationException

from tests import postgres, support
from tests.cli.helpers import day, make_spec, write_parquet, zipper
from tests.cli.test_cli import assert_one_line_error
from zipper.core.hms import LockNotGranted, MetastoreClient
from zipper.runtime.metastore import DATABASE_ENV, JDBC_JAR_ENV, METASTORE_ENV, MetastoreService

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]


@pytest.fixture(scope="module")
def pg():
    with postgres.running() as server:  # stopped by its process id at the end of the module
        yield server


def settings(pg: postgres.Postgres, **more: str) -> dict:
    """The environment of a command whose warehouse's server keeps its metadata in `pg`."""
    return {METASTORE_ENV: "local", DATABASE_ENV: pg.url(), **more}


@pytest.fixture(scope="module")
def merged(pg, tmp_path_factory):
    """A warehouse whose metastore is `pg`: `dim` made and merged for 2024-01-01 by the CLI."""
    root = tmp_path_factory.mktemp("pg")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", None)])
    runs = [zipper(root, "init", "dim", **settings(pg)), zipper(root, "merge", "dim", "--ds", day(1), **settings(pg))]
    yield root, runs
    MetastoreService(root / "warehouse").stop()  # before the PostgreSQL server it is a client of


def status(root: Path, pg: postgres.Postgres) -> dict:
    result = zipper(root, "status", "dim", wait=False, **settings(pg))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_init_and_merge_commit_to_a_postgresql_metastore(pg, merged):
    root, runs = merged
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    # zipper status reads the commit record over thrift, from the server on PostgreSQL
    assert status(root, pg)["last_committed"] == day(1)


def test_the_metadata_is_in_postgresql_not_in_derby(pg, merged):
    root, _ = merged
    tables = pg.psql('SELECT d."NAME", t."TBL_NAME" FROM "TBLS" t JOIN "DBS" d ON t."DB_ID" = d."DB_ID"')
    assert ["dw", "dim"] in tables
    partitions = pg.psql('SELECT count(*) FROM "PARTITIONS" p JOIN "TBLS" t ON p."TBL_ID" = t."TBL_ID"')
    assert int(partitions[0][0]) > 0
    assert not (root / "warehouse" / "metastore_db").exists()
    # A new server (the schema already there) serves the same commit from PostgreSQL
    assert MetastoreService(root / "warehouse").stop() is not None
    assert status(root, pg)["last_committed"] == day(1)
    assert not (root / "warehouse" / "metastore_db").exists()


def test_table_locks_are_kept_in_postgresql(pg, merged):
    """The server created Hive's transaction tables in PostgreSQL: a second client waiting for a
    table's lock is refused while the first holds it, and gets it once released."""
    root, _ = merged
    assert status(root, pg)["last_committed"] == day(1)  # the server runs (a test above restarts it)
    uri = MetastoreService(root / "warehouse").running().uri
    with MetastoreClient(uri) as first, MetastoreClient(uri) as second:
        with first.exclusive_lock("dw", "dim", wait_s=0, agent="first publish") as held:
            assert pg.psql("SELECT hl_lock_ext_id, hl_agent_info FROM hive_locks") == [[str(held), "first publish"]]
            with pytest.raises(LockNotGranted, match=f"lock {held} of `first publish` by "):
                with second.exclusive_lock("dw", "dim", wait_s=0.2, agent="second publish"):
                    pass
        with second.exclusive_lock("dw", "dim", wait_s=0, agent="second publish"):
            assert pg.psql("SELECT hl_agent_info, hl_lock_state FROM hive_locks") == [["second publish", "a"]]
    assert pg.psql("SELECT count(*) FROM hive_locks") == [["0"]]


def test_a_drop_that_moves_a_column_of_another_type_passes_the_check_of_a_postgresql_metastore(pg, merged):
    """Dropping `name` (text) moves `n` (int) into its place, which the metastore's positional type
    check (on) refuses in one call: the drop makes it two calls the check passes, the columns
    kept in PostgreSQL."""
    root, _ = merged
    spec_root = root / "moved"
    specs = make_spec(spec_root, "scores")
    support.write_parquet(
        spec_root / "data" / "base", [(1, "ann", 7, "Oslo")], "id bigint, name string, n int, city string"
    )
    made = zipper(root, "init", "scores", "--specs", str(specs), **settings(pg))
    assert made.returncode == 0, made.stderr[-2000:]
    uri = MetastoreService(root / "warehouse").running().uri
    with MetastoreClient(uri) as metastore:  # the check is on: one call moving the types is refused
        table = metastore.table("dw", "scores")
        table.sd.cols = [c for c in table.sd.cols if c.name != "name"]
        with pytest.raises(InvalidOperationException, match="incompatible with the existing columns"):
            metastore.alter_table("dw", "scores", table)
    dropped = zipper(root, "alter", "scores", "--drop-column", "name", "--specs", str(specs), **settings(pg))
    assert dropped.returncode == 0 and "dropped column name" in dropped.stdout, dropped.stderr[-2000:]
    with MetastoreClient(uri) as metastore:
        assert [c.name for c in metastore.table("dw", "scores").sd.cols] == ["id", "n", "city", "begin_dt"]
    assert pg.psql(
        'SELECT c."COLUMN_NAME" FROM "COLUMNS_V2" c JOIN "SDS" s ON s."CD_ID" = c."CD_ID"'
        ' JOIN "TBLS" t ON t."SD_ID" = s."SD_ID" WHERE t."TBL_NAME" = \'scores\' ORDER BY c."INTEGER_IDX"'
    ) == [["id"], ["n"], ["city"], ["begin_dt"]]
    history = zipper(
        root, "history", "scores", "--key", "id=1", "--format", "json", "--specs", str(specs), **settings(pg)
    )
    assert [json.loads(line)["city"] for line in history.stdout.splitlines()] == ["Oslo"], history.stderr


def test_status_names_the_postgresql_database_and_never_its_password(pg, merged):
    root, _ = merged
    result = zipper(root, "metastore", "status", wait=False, **settings(pg))
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["running"] is True
    assert shown["database"] == f"postgresql://127.0.0.1:{pg.port}/{pg.database}"
    service = MetastoreService(root / "warehouse")
    server = service.running()
    assert server is not None
    secrets = (pg.password, quote(pg.password, safe=""))  # as given, and as the URL encodes it
    cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode(errors="replace")
    for text in (result.stdout, result.stderr, service.record_path.read_text(), service.log_path.read_text(), cmdline):
        assert not any(secret in text for secret in secrets)


@pytest.mark.parametrize(
    ("setting", "fragment"),
    [
        ({DATABASE_ENV: "mysql://hive:t0ps3cret@127.0.0.1:3306/metastore"}, "expected postgresql://"),
        ({JDBC_JAR_ENV: "/nonexistent.jar"}, "/nonexistent.jar"),
    ],
    ids=["wrong-scheme", "no-jdbc-driver"],
)
@pytest.mark.parametrize("command", [["status", "dim"], ["metastore", "start"]], ids=["status", "metastore-start"])
def test_a_wrong_database_setting_is_one_line(pg, tmp_path, setting, fragment, command):
    make_spec(tmp_path)
    result = zipper(tmp_path, *command, wait=False, **settings(pg, **setting))
    assert result.returncode == 1
    assert_one_line_error(result, fragment)
    assert "t0ps3cret" not in result.stderr and pg.password not in result.stderr
    assert MetastoreService(tmp_path / "warehouse").running() is None
