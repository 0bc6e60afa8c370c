"""Metastore operations on a real Hive table: listing and re-pointing partitions, widening columns."""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time

import pytest

from zipper.core.errors import StateError
from zipper.core.hms import MetastoreClient
from zipper.table import catalog, hive_catalog, state
from zipper.table.catalog import Partition
from zipper.tablespec.model import TableSpec


def _table(spark, tmp_path, name, ends):
    spec = TableSpec.model_validate(
        dict(name=name, table=f"db_{name}.{name}", keys=["id"], source=dict(path="/nowhere"), start_date="2024-01-01")
    )
    catalog.create_table(spark, spec, [("id", "bigint")], str(tmp_path / name), {state.P_SPEC_NAME: name})
    catalog.add_partitions(spark, spec, {end: str(tmp_path / "old" / end) for end in ends})
    return spec


def _storage(spark, spec, end):
    with MetastoreClient(catalog.metastore_uri(spark)) as metastore:
        part = metastore.partition(spec.database, spec.table_name, {spec.end_column: end})
    sd = part.sd
    return sd.inputFormat, sd.outputFormat, sd.serdeInfo.serializationLib, part.createTime


def test_repoint_many_partitions_in_one_call_keeps_storage_and_foreign_parameters(spark, tmp_path, unique_name):
    ends = [f"2024-01-{d:02d}" for d in range(1, 31)]
    spec = _table(spark, tmp_path, unique_name, ends)
    # a parameter another tool set on one partition
    catalog.repoint(
        spark,
        spec,
        [Partition("2024-01-05", str(tmp_path / "old" / "2024-01-05"), {"owner.note": "keep me"})],
        expected_run=None,
    )
    before = {end: _storage(spark, spec, end) for end in ("2024-01-01", "2024-01-05")}

    catalog.repoint(
        spark,
        spec,
        [
            Partition(end, str(tmp_path / "new" / end), {state.DS: end, state.ROWS: str(i)})
            for i, end in enumerate(ends)
        ],
        expected_run=None,
    )

    listed = {p.end: p for p in catalog.list_partitions(spark, spec)}
    assert sorted(listed) == ends
    for i, end in enumerate(ends):
        assert listed[end].location == f"file:{tmp_path}/new/{end}"
        assert listed[end].params[state.DS] == end and listed[end].params[state.ROWS] == str(i)
    assert listed["2024-01-05"].params["owner.note"] == "keep me"
    assert {end: _storage(spark, spec, end) for end in before} == before


def test_repoint_replaces_zipper_parameters_and_drops_stale_statistics(spark, tmp_path, unique_name):
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01"])
    catalog.repoint(
        spark,
        spec,
        [Partition("2024-01-01", str(tmp_path / "a"), {state.DS: "x", state.RUN_ID: "r1", "numRows": "5"})],
        expected_run=None,
    )
    catalog.repoint(spark, spec, [Partition("2024-01-01", str(tmp_path / "b"), {state.DS: "y"})], expected_run=None)
    params = catalog.list_partitions(spark, spec)[0].params
    assert params[state.DS] == "y" and state.RUN_ID not in params and "numRows" not in params


def test_repoint_is_one_alter_partitions_call(spark, tmp_path, unique_name, monkeypatch):
    """The publish is one metastore transaction: every partition it moves goes in one call."""
    ends = ["2024-01-01", "2024-01-02", "9999-12-31"]
    spec = _table(spark, tmp_path, unique_name, ends)
    calls = []
    sent = MetastoreClient.alter_partitions

    def counted(self, database, name, partitions):
        calls.append([p.values for p in partitions])
        return sent(self, database, name, partitions)

    monkeypatch.setattr(MetastoreClient, "alter_partitions", counted)
    catalog.repoint(
        spark,
        spec,
        [
            Partition("2024-01-02", str(tmp_path / "new" / "a"), {}),
            Partition("9999-12-31", str(tmp_path / "new" / "b"), {}),
        ],
        expected_run="",
    )

    assert calls == [[["2024-01-02"], ["9999-12-31"]]]
    locations = {p.end: p.location for p in catalog.list_partitions(spark, spec)}
    assert locations["2024-01-02"] == f"file:{tmp_path}/new/a" and locations["9999-12-31"] == f"file:{tmp_path}/new/b"


def test_repoint_refuses_after_another_run_published_and_changes_nothing(spark, tmp_path, unique_name):
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01", "9999-12-31"])
    catalog.repoint(
        spark, spec, [Partition("9999-12-31", str(tmp_path / "other"), {state.RUN_ID: "other"})], expected_run=None
    )

    with pytest.raises(catalog.ConcurrentChange, match="another run \\(other"):
        catalog.repoint(spark, spec, [Partition("2024-01-01", str(tmp_path / "mine"), {})], expected_run="")

    assert catalog.list_partitions(spark, spec)[0].location == f"file:{tmp_path}/old/2024-01-01"


def _locks(uri, spec) -> list:
    from pymetastore.hive_metastore.ttypes import ShowLocksRequest

    with MetastoreClient(uri) as metastore:
        request = ShowLocksRequest(dbname=spec.database, tablename=spec.table_name)
        return metastore.client.show_locks(request).locks or []


def test_two_clients_publishing_at_once_take_turns_and_the_second_is_refused(spark, tmp_path, unique_name, monkeypatch):
    """Two publishes of one table through one metastore server, each on its own connection, both
    expecting the same run: the first holds the table's metastore lock from its read to its
    `alter_partitions`, the second waits for it there, then reads the first one's run and
    publishes nothing. (Without the lock the second would pass its check and overwrite.)"""
    from pymetastore.hive_metastore.ttypes import LockState

    spec = _table(spark, tmp_path, unique_name, ["2024-01-01", "9999-12-31"])
    catalog.repoint(
        spark, spec, [Partition("9999-12-31", str(tmp_path / "r0"), {state.RUN_ID: "r0"})], expected_run=None
    )
    uri = catalog.metastore_uri(spark)
    outcome, seen_waiting = {}, []

    def publish(run: str) -> None:
        changes = [
            Partition("2024-01-01", str(tmp_path / run / "history"), {state.RUN_ID: run}),
            Partition("9999-12-31", str(tmp_path / run / "open"), {state.RUN_ID: run}),
        ]
        try:
            catalog.repoint(spark, spec, changes, expected_run="r0", ds="2024-01-02")
            outcome[run] = "published"
        except catalog.ConcurrentChange as refused:
            outcome[run] = str(refused)

    sent = MetastoreClient.alter_partitions
    second = threading.Thread(target=publish, args=("second",))

    def alter_once_the_second_waits(self, database, name, partitions):
        if threading.current_thread().name == "first":  # checked, holding the lock, about to write
            second.start()
            deadline = time.monotonic() + 60  # bounds a broken run only: the second asks at once
            while not seen_waiting and time.monotonic() < deadline:
                seen_waiting.extend(lock for lock in _locks(uri, spec) if lock.state == LockState.WAITING)
                time.sleep(0.05)
        sent(self, database, name, partitions)

    monkeypatch.setattr(MetastoreClient, "alter_partitions", alter_once_the_second_waits)
    first = threading.Thread(target=publish, args=("first",), name="first")
    first.start()
    first.join()
    second.join()

    assert [lock.agentInfo for lock in seen_waiting] == [f"zipper publish {spec.table} 2024-01-02 pid {os.getpid()}"]
    assert outcome["first"] == "published"
    assert outcome["second"].startswith(
        f"{spec.table} 2024-01-02: another run (first, table now at no date) published to the table"
    )
    listed = {p.end: p for p in catalog.list_partitions(spark, spec)}
    assert {end: p.location for end, p in listed.items()} == {
        "2024-01-01": f"file:{tmp_path}/first/history",
        "9999-12-31": f"file:{tmp_path}/first/open",
    }
    assert {p.params[state.RUN_ID] for p in listed.values()} == {"first"}
    assert _locks(uri, spec) == []  # both released


def test_a_publish_that_cannot_get_the_table_lock_in_time_is_refused(spark, tmp_path, unique_name, monkeypatch):
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01", "9999-12-31"])
    uri = catalog.metastore_uri(spark)
    monkeypatch.setattr(hive_catalog, "PUBLISH_LOCK_WAIT_S", 0.5)
    change = [Partition("2024-01-01", str(tmp_path / "mine"), {})]
    with MetastoreClient(uri) as other:
        with other.exclusive_lock(spec.database, spec.table_name, wait_s=0, agent="a publish elsewhere") as held:
            with pytest.raises(catalog.TableLocked) as err:
                catalog.repoint(spark, spec, change, expected_run="", ds="2024-01-02")
            assert [lock.lockid for lock in _locks(uri, spec)] == [held]  # the refused request withdrawn

    assert isinstance(err.value, catalog.ConcurrentChange)
    assert re.fullmatch(
        rf"{spec.table} 2024-01-02: another client held the table's metastore lock for more than 0.5 s"
        rf" \(lock {held} of `a publish elsewhere` by \S+@\S+, since \S+\); nothing of this run was published\."
        r" Run it again: it plans from the table as it is then \(a date already committed is a no-op\)",
        str(err.value),
    )
    assert catalog.list_partitions(spark, spec)[0].location == f"file:{tmp_path}/old/2024-01-01"
    catalog.repoint(spark, spec, change, expected_run="", ds="2024-01-02")  # released: the next try publishes
    assert catalog.list_partitions(spark, spec)[0].location == f"file:{tmp_path}/mine"


def test_a_metastore_without_lock_support_publishes_after_the_check_with_one_warning(
    spark, tmp_path, unique_name, monkeypatch, caplog
):
    """As a Hive metastore whose transaction tables were never created answers the lock call."""
    from pymetastore.hive_metastore.ThriftHiveMetastore import Client
    from pymetastore.hive_metastore.ttypes import MetaException

    spec = _table(spark, tmp_path, unique_name, ["2024-01-01", "9999-12-31"])

    def no_transaction_tables(self, request):
        raise MetaException(
            "Unable to update transaction database java.sql.SQLSyntaxErrorException: Table/View 'NEXT_LOCK_ID'"
            " does not exist."
        )

    monkeypatch.setattr(Client, "lock", no_transaction_tables)
    monkeypatch.setattr(hive_catalog, "_without_locks", set())
    with caplog.at_level(logging.WARNING, logger=hive_catalog.__name__):
        for n in (1, 2):
            catalog.repoint(spark, spec, [Partition("2024-01-01", str(tmp_path / f"p{n}"), {})], expected_run="")
        with pytest.raises(catalog.ConcurrentChange):  # the check remains
            catalog.repoint(spark, spec, [Partition("2024-01-01", str(tmp_path / "p3"), {})], expected_run="other")

    assert catalog.list_partitions(spark, spec)[0].location == f"file:{tmp_path}/p2"
    warnings = [r.getMessage() for r in caplog.records if r.name == hive_catalog.__name__]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"zipper: warning: the metastore at {catalog.metastore_uri(spark)} refused a table lock (MetaException: Unable to update"
        " transaction database"
    )


def test_alter_data_columns_writes_the_schema_spark_reads_split_when_long(spark, tmp_path, unique_name):
    """Spark reads a Hive table's types from its schema properties: a widened and an added column
    read back with their new types, also when the schema is longer than one property value holds."""
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01"])
    many = [(f"column_with_a_rather_long_name_{i:03d}", "decimal(12,2)") for i in range(60)]
    catalog.alter_data_columns(spark, spec, [("id", "decimal(20,0)"), *many])

    types = dict((f.name, f.dataType.simpleString()) for f in spark.table(spec.table).schema.fields)
    assert types["id"] == "decimal(20,0)" and types[many[-1][0]] == "decimal(12,2)"
    assert list(types)[:2] == ["id", spec.begin_column] and list(types)[-1] == spec.end_column
    with MetastoreClient(catalog.metastore_uri(spark)) as metastore:
        table = metastore.table(spec.database, spec.table_name)
    params = table.parameters
    assert catalog.SCHEMA_PARAM not in params and int(params[catalog.SCHEMA_PARAM + ".numParts"]) >= 2
    assert [c.type for c in table.sd.cols[:2]] == ["decimal(20,0)", "string"]
    assert catalog.table_properties(spark, spec) == {
        state.P_SPEC_NAME: unique_name,
        "transient_lastDdlTime": params["transient_lastDdlTime"],
    }


def test_no_metastore_uri_is_one_clear_line(monkeypatch):
    class Conf:
        def get(self, key, default=None):
            return default

    class Session:
        conf = Conf()

    monkeypatch.delenv(catalog.URI_ENV, raising=False)
    with pytest.raises(StateError, match=f"set {catalog.URIS_CONF} in the Spark conf or {catalog.URI_ENV}="):
        catalog.metastore_uri(Session())
    monkeypatch.setenv(catalog.URI_ENV, "thrift://example:9083")
    assert catalog.metastore_uri(Session()) == "thrift://example:9083"


def test_one_connection_serves_the_calls_and_one_the_server_closed_is_opened_again(spark, tmp_path, unique_name):
    spec = _table(spark, tmp_path, unique_name, ["2024-01-01"])
    key = (os.getpid(), catalog.metastore_uri(spark))
    assert catalog.table_exists(spark, spec)
    kept = catalog._kept.clients[key]
    assert catalog.list_partitions(spark, spec) and catalog._kept.clients[key] is kept
    # the server closes it (as a restarted server has): the next call opens another
    kept._socket.handle.shutdown(socket.SHUT_RDWR)
    assert not kept.is_open()
    assert [p.end for p in catalog.list_partitions(spark, spec)] == ["2024-01-01"]
    assert catalog._kept.clients[key] is not kept and catalog._kept.clients[key].is_open()


def test_a_metastore_that_stops_answering_mid_call_is_one_line_and_its_connection_dropped(
    spark, tmp_path, unique_name, monkeypatch
):
    from thrift.transport.TTransport import TTransportException

    spec = _table(spark, tmp_path, unique_name, ["2024-01-01"])
    key = (os.getpid(), catalog.metastore_uri(spark))

    def broken(self, database, name):
        raise TTransportException(TTransportException.END_OF_FILE, "TSocket read 0 bytes")

    monkeypatch.setattr(MetastoreClient, "partitions", broken)
    with pytest.raises(StateError, match="stopped answering \\(TTransportException: TSocket read 0 bytes\\)"):
        catalog.list_partitions(spark, spec)
    assert key not in catalog._kept.clients
    monkeypatch.undo()
    assert [p.end for p in catalog.list_partitions(spark, spec)] == ["2024-01-01"]
