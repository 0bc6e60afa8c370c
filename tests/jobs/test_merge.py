"""Merge semantics, atomic publish and the committed state, on a real Hive table."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from decimal import Decimal

import pytest

from tests.support import TableFixture, day, table_rows, write_parquet
from zipper.core import faults, fs
from zipper.core.errors import AuditError, InputError, MissingInputError, SpecError, StateError
from zipper.inputs import reader, sources
from zipper.inputs.modes import mode_of
from zipper.inputs.refusals import validate_keys
from zipper.jobs import merge
from zipper.jobs.broadcast import broadcast_max_bytes, broadcasts, estimated_row_bytes
from zipper.jobs.init import init_table
from zipper.jobs.result import Opening
from zipper.runtime.session import is_connect
from zipper.table import catalog, check, inspect, state, vacuum
from zipper.table.catalog import Partition

OPEN = "9999-12-31"


@pytest.fixture
def users(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)])
    return t


def snapshot(spark, t):
    """Everything a reader or the next run could observe."""
    st = state.read_state(spark, t.spec)
    return (
        table_rows(spark, t.table),
        [(p.end, p.location) for p in catalog.list_partitions(spark, t.spec)],
        st.last_committed,
    )


def version_dirs(spark, t):
    st = state.read_state(spark, t.spec)
    return sorted(d for d, _ in fs.list_dirs(state.versions_root(st)))


def test_changed_unchanged_new_and_absent_keys(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris"), (3, "cid", None), (4, "dan", "Oslo")])
    result = merge.merge_date(spark, users.spec, day(1))
    assert result.counts == {
        "input": 3,
        "new": 1,
        "changed": 1,
        "unchanged": 1,
        "updated_in_place": 0,
        "closed": 1,
        "open_before": 3,
        "open_after": 4,
    }
    assert table_rows(spark, users.table) == [
        (1, "ann", "Oslo", "2023-12-31", OPEN),
        (2, "bob", "Paris", "2024-01-01", OPEN),
        (2, "bob", "Rome", "2023-12-31", "2024-01-01"),
        (3, "cid", None, "2023-12-31", OPEN),
        (4, "dan", "Oslo", "2024-01-01", OPEN),
    ]
    # the table's first merge: it was created and its base loaded first, and says so
    assert result.summary().startswith(
        f"{users.table} 2024-01-01: table created, base loaded as of 2023-12-31: 3 open rows;"
        " then 1 new, 1 changed, 1 re-sent unchanged, 1 closed; 4 open rows after;"
    )


def test_init_says_the_table_was_created_and_the_base_loaded_and_again_that_it_did_nothing(spark, users):
    first = init_table(spark, users.spec)
    assert re.fullmatch(
        re.escape(f"{users.table} 2023-12-31: table created, base loaded: 3 open rows; ") + r"\d+\.\d s",
        first.summary(),
    ), first.summary()
    again = init_table(spark, users.spec)
    assert again.summary() == f"{users.table} 2023-12-31: no-op, already initialized as of 2023-12-31"
    users.write_increment(spark, day(1), [(1, "ann", "Oslo")])
    merged = merge.merge_date(spark, users.spec, day(1))  # the first merge after an init: an ordinary one
    assert merged.summary().startswith(f"{users.table} 2024-01-01: 0 new, 0 changed, 1 re-sent unchanged")


def test_the_first_merge_of_a_table_without_a_base_says_it_created_it_then_its_counts(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, base=False)
    t.write_increment(spark, day(1), [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    first = merge.merge_date(spark, t.spec, day(1))
    assert first.action == "merge" and re.fullmatch(
        re.escape(
            f"{t.table} 2024-01-01: table created without a base; then 2 new, 0 changed, 0 re-sent unchanged,"
            " 0 closed; 2 open rows after; "
        )
        + r"\d+\.\d s",
        first.summary(),
    ), first.summary()
    assert first.report()["summary"] == first.summary()  # what the Airflow task logs
    t.write_increment(spark, day(2), [(3, "cid", "Nice")])
    assert merge.merge_date(spark, t.spec, day(2)).summary().startswith(f"{t.table} 2024-01-02: 1 new, 0 changed")


def test_a_table_an_interrupted_init_left_is_said_initialized_not_created():
    """Its first state is published by a later run, which did not create it."""
    assert Opening(False, True, 5, "2023-12-31").text() == "table initialized, base loaded: 5 open rows"
    assert Opening(False, False, 0, "2023-12-31").text(dated=True) == "table initialized without a base"
    assert Opening(True, False, 0, "2023-12-31").text() == "table created without a base: 0 open rows"


def test_a_day_too_large_to_broadcast_is_joined_by_a_shuffle_with_the_same_result(
    spark, tmp_path, unique_name, monkeypatch
):
    columns = [("id", "bigint"), ("name", "string"), ("city", "string")]
    row_bytes = estimated_row_bytes(spark, columns, "begin_dt")
    assert row_bytes == 8 + 8 * 4 + (8 + 20 + 20 + 20)  # slots, then Spark's sizes: bigint, 3 strings
    if not is_connect(spark):  # the driver's heap, asked of the JVM this process runs
        assert broadcast_max_bytes(spark) == spark._jvm.java.lang.Runtime.getRuntime().maxMemory() // 8
    assert broadcasts(spark, 1000, columns, "begin_dt")
    over = broadcast_max_bytes(spark) // row_bytes + 1
    assert not broadcasts(spark, over, columns, "begin_dt")  # over an eighth of the heap
    monkeypatch.setenv("ZIPPER_BROADCAST_MAX_ROWS", "999")
    assert not broadcasts(spark, 1000, columns, "begin_dt")
    monkeypatch.delenv("ZIPPER_BROADCAST_MAX_ROWS")

    days = {1: [(2, "bob", "Paris"), (3, "cid", None), (4, "dan", "Oslo")], 2: [(2, "bob", "Rome"), (5, "eve", None)]}
    results = {}
    for broadcast in (True, False):
        t = TableFixture(tmp_path / str(broadcast), f"{unique_name}_{str(broadcast).lower()}")
        t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome"), (3, "cid", None)])
        counts = []
        with monkeypatch.context() as env:
            if not broadcast:  # no broadcast by zipper, and none chosen by Spark either: a real shuffle join
                env.setenv("ZIPPER_BROADCAST_MAX_BYTES", "1")
                spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
            try:
                assert broadcasts(spark, 3, columns, "begin_dt") is broadcast
                for n, rows in days.items():
                    t.write_increment(spark, day(n), rows)
                    counts.append(merge.merge_date(spark, t.spec, day(n)).counts)
            finally:
                spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
        assert check.run_checks(spark, t.spec)["ok"]
        results[broadcast] = (table_rows(spark, t.table), counts)
    assert results[True] == results[False]
    assert (5, "eve", None, "2024-01-02", OPEN) in results[False][0]


def test_long_strings_are_sized_as_observed_so_a_day_of_long_texts_is_joined_by_a_shuffle(spark, users, monkeypatch):
    columns = [("id", "bigint"), ("name", "string"), ("city", "string")]
    # observed: the two strings' bytes per row plus padding replace Spark's 20 bytes each
    assert estimated_row_bytes(spark, columns, "begin_dt", 1000.0) == 8 + 8 * 4 + (8 + 20) + 1000 + 2 * 7
    assert estimated_row_bytes(spark, columns, "begin_dt", 0.0) == 8 + 8 * 4 + (8 + 20) + 2 * 7
    long_name = "n" * 3000
    monkeypatch.setenv("ZIPPER_BROADCAST_MAX_BYTES", "2000")  # three rows by Spark's estimate: 324 bytes
    assert broadcasts(spark, 3, columns, "begin_dt")  # what the estimate alone would do

    users.write_increment(spark, day(1), [(2, "bob", "Paris"), (4, "dan", "Oslo")])
    short = merge.merge_date(spark, users.spec, day(1))
    users.write_increment(spark, day(2), [(1, long_name, "Oslo"), (5, long_name, None), (4, "dan", "Oslo")])
    long = merge.merge_date(spark, users.spec, day(2))

    assert (short.join, short.report()["join"]) == ("broadcast", "broadcast")
    assert (long.join, long.report()["join"]) == ("shuffle", "shuffle")
    assert long.counts["new"] == 1 and long.counts["changed"] == 1 and long.counts["unchanged"] == 1
    assert [r for r in table_rows(spark, users.table) if r[-1] == OPEN] == [
        (1, long_name, "Oslo", "2024-01-02", OPEN),
        (2, "bob", "Paris", "2024-01-01", OPEN),
        (3, "cid", None, "2023-12-31", OPEN),
        (4, "dan", "Oslo", "2024-01-01", OPEN),
        (5, long_name, None, "2024-01-02", OPEN),
    ]


def test_the_key_check_observes_the_string_bytes_of_the_input(spark, users):
    rows = spark.createDataFrame(
        [(1, "ab", "中文"), (2, None, "x"), (3, "", None)], "id bigint, name string, city string"
    )
    seen = validate_keys(rows, users.spec, day(1), "increment", columns=["id", "name", "city"])
    assert (seen.rows, seen.variable_bytes) == (3, 2 + 6 + 1)  # UTF-8 bytes; NULL counts 0
    assert seen.variable_bytes_per_row == 3.0
    only_city = validate_keys(rows, users.spec, day(1), "increment", columns=["city"])
    assert only_city.variable_bytes == 7


def test_null_safe_comparison_and_return_to_an_earlier_value(spark, users):
    users.write_increment(spark, day(1), [(1, "ann", None)])  # value -> NULL: change
    users.write_increment(spark, day(2), [(1, "ann", None)])  # NULL -> NULL: no change
    users.write_increment(spark, day(3), [(1, "ann", "Oslo")])  # back to the first value: change
    for n in (1, 2, 3):
        merge.merge_date(spark, users.spec, day(n))
    history = inspect.history(spark, users.spec, {"id": "1"}).collect()
    assert [(r.city, r.begin_dt, r.end_dt) for r in history] == [
        ("Oslo", "2023-12-31", "2024-01-01"),
        (None, "2024-01-01", "2024-01-03"),
        ("Oslo", "2024-01-03", OPEN),
    ]


def test_empty_increments_commit_a_day_without_change(spark, users):
    users.write_increment(spark, day(1), [])
    os.makedirs(users.increment_dir(day(2)))  # a folder with no files at all
    before = table_rows(spark, users.table) if catalog.table_exists(spark, users.spec) else None
    for n in (1, 2):
        result = merge.merge_date(spark, users.spec, day(n))
        assert result.counts["input"] == 0 and result.counts["open_after"] == 3
    assert before is None
    st = state.read_state(spark, users.spec)
    assert st.last_committed == day(2) and sorted(st.commits) == ["2024-01-01", "2024-01-02"]
    assert [r[-1] for r in table_rows(spark, users.table)] == [OPEN] * 3


def test_a_folder_a_spark_job_is_still_writing_into_is_refused_until_it_commits(spark, users):
    """Spark makes the day's folder and its `_temporary` before the first file is committed: read
    then, the day would commit with no change (or with part of its files)."""
    init_table(spark, users.spec)
    folder = users.increment_dir(day(1))
    attempt = folder / "_temporary" / "0" / "_temporary" / "attempt_202401010000_0001_m_000000_0"
    write_parquet(attempt, [(2, "bob", "Paris")], users.schema, spark)
    before = snapshot(spark, users)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value) == (
        f"{users.table} 2024-01-01: increment {folder} is still being written: it holds _temporary, the uncommitted"
        " output of a Spark or Hadoop job; merge it once that job has finished (if the job died, delete"
        f" {folder}/_temporary)"
    )
    assert not err.value.final  # another try may find it committed
    assert snapshot(spark, users) == before
    for part in attempt.glob("part-*"):  # the job's commit
        part.rename(folder / part.name)
    shutil.rmtree(folder / "_temporary")
    assert merge.merge_date(spark, users.spec, day(1)).counts["changed"] == 1


def test_files_beside_partition_folders_are_refused_not_left_out(spark, users):
    """Spark reads only the files inside `name=value` folders when a folder holds some: bob's new
    city, beside a stray `backup=1`, would be lost and a `backup` column added."""
    init_table(spark, users.spec)
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    write_parquet(users.increment_dir(day(1)) / "backup=1", [(3, "cid", "Lima")], users.schema, spark)
    before = snapshot(spark, users)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    message = str(err.value)
    assert message.startswith(
        f"{users.table} 2024-01-01: {users.increment_dir(day(1))} holds partition folders"
        " (backup=1) beside other files, which Spark would leave out without a word: part-"
    )
    assert err.value.final  # it takes someone to move them
    assert snapshot(spark, users) == before
    shutil.rmtree(users.increment_dir(day(1)) / "backup=1")
    write_parquet(users.increment_dir(day(1)) / "old", [(3, "cid", "Lima")], users.schema, spark)
    with pytest.raises(InputError) as err:  # a plain subfolder: not read either
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value).startswith(
        f"{users.table} 2024-01-01: {users.increment_dir(day(1))} has files in"
        " subfolders, which Spark would leave out without a word: old/part-"
    )
    assert snapshot(spark, users) == before
    shutil.rmtree(users.increment_dir(day(1)) / "old")
    assert merge.merge_date(spark, users.spec, day(1)).counts["changed"] == 1


def test_a_file_still_being_copied_in_is_refused(spark, users):
    init_table(spark, users.spec)
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    part = next(users.increment_dir(day(1)).glob("part-*.parquet"))
    shutil.copy(part, part.with_name("part-9.parquet._COPYING_"))  # `hadoop fs -put` under way
    with pytest.raises(InputError, match=r"is still being written: part-9.parquet._COPYING_ is being copied in"):
        merge.merge_date(spark, users.spec, day(1))
    assert state.read_state(spark, users.spec).last_committed == day(0)


def test_a_file_whose_copy_has_only_begun_is_refused_as_the_sensor_waits_for_it(spark, users):
    """`hadoop fs -put` starts with an empty `._COPYING_` file: the merge left it out as a file
    without rows and committed the day without it, while the sensor waited for the copy."""
    init_table(spark, users.spec)
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    (users.increment_dir(day(1)) / "part-9.parquet._COPYING_").write_bytes(b"")
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value) == (
        f"{users.table} 2024-01-01: increment {users.increment_dir(day(1))} is still being"
        " written: part-9.parquet._COPYING_ is being copied in; merge it once the copy has"
        " finished"
    )
    assert not err.value.final  # another try may find the copy done
    assert state.read_state(spark, users.spec).last_committed == day(0)


@pytest.mark.parametrize(
    "column, reason", [("x" * 800, "800 characters, more than the metastore's 767"), ("a.b", "a dot")]
)
def test_a_column_the_metastore_cannot_take_is_refused_before_anything_is_published(spark, users, column, reason):
    """A name of 800 characters failed the ALTER TABLE after the publish: the day was committed,
    and every later merge failed on the column."""
    init_table(spark, users.spec)
    users.write_increment(spark, day(1), [(2, "bob", "Paris", 1)], f"{users.schema}, {column} int")
    before = snapshot(spark, users)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    shown = repr(column if len(column) <= 40 else column[:40] + "...")
    assert str(err.value) == (
        f"{users.table} 2024-01-01: increment {users.increment_dir(day(1))} has columns a Hive"
        f" table cannot take: {shown} ({reason}); rename them in the source"
    )
    assert snapshot(spark, users) == before


def test_a_struct_field_name_the_table_cannot_take_is_named(spark, users):
    """It failed with an empty `ParseException:` after the day's files were written."""
    init_table(spark, users.spec)
    folder = users.increment_dir(day(1))
    spark.createDataFrame([(2, "bob", "Paris", (1,))], f"{users.schema}, st struct<`f g`: int>").coalesce(
        1
    ).write.parquet(str(folder))
    before = snapshot(spark, users)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value) == (
        f"{users.table} 2024-01-01: increment {folder} column 'st' has type struct<f g:int>,"
        " whose nested field names a Hive table cannot take (a space, a dot, ...); rename them"
        " in the source"
    )
    assert snapshot(spark, users) == before


def test_a_local_path_with_a_colon_is_refused_in_words(spark, tmp_path, unique_name):
    from tests.support import TableFixture

    folder = tmp_path / "col:on"
    t = TableFixture(tmp_path, unique_name, source={"path": f"{folder}/ds=" + "{{ ds }}"})
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, t.spec, day(1))
    assert str(err.value) == (
        f"{t.table} 2024-01-01: increment path {folder}/ds=2024-01-01: Hadoop's file system"
        " cannot name a local folder or file with a ':' in it; rename it"
    )


def test_an_unreadable_single_file_is_named(spark, users):
    orc = users.spec.model_copy(update={"source": users.spec.source.model_copy(update={"format": "orc"})})
    init_table(spark, orc)
    folder = users.increment_dir(day(1))
    folder.mkdir(parents=True)
    (folder / "part-0.orc").write_bytes(b"")
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, orc, day(1))
    assert str(err.value).startswith(f"{users.table} 2024-01-01: cannot read file part-0.orc of {folder}: ")


def counted_jvm_calls(spark, monkeypatch) -> list[str]:
    """The calls this process makes to Spark's JVM from now on (`monkeypatch.undo()` stops
    counting): a classic session's py4j commands, not the deletes of objects Python let go of,
    which come at random; a Spark Connect client's requests to its server."""
    if is_connect(spark):
        return _counted_connect_requests(spark, monkeypatch)
    from py4j.protocol import MEMORY_COMMAND_NAME

    client = spark.sparkContext._gateway._gateway_client
    send = client.send_command
    calls: list[str] = []

    def counted_send(command, *args, **kwargs):
        if not command.startswith(MEMORY_COMMAND_NAME):
            calls.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted_send)
    return calls


def _counted_connect_requests(spark, monkeypatch) -> list[str]:
    client = spark.client
    calls: list[str] = []
    for name in ("_execute_and_fetch_as_iterator", "_analyze", "config"):
        sent = getattr(client, name)

        def counted(*args, _sent=sent, _name=name, **kwargs):
            calls.append(_name)
            return _sent(*args, **kwargs)

        monkeypatch.setattr(client, name, counted)
    return calls


def test_the_files_spark_reads_are_found_for_many_files_partition_folders_and_subfolders(spark, users):
    """The files Spark reads come from `DataFrame.inputFiles()` (one request on Spark Connect;
    on a classic session PySpark asks the JVM for each path), and of a folder holding partition
    folders only those inside them: many small files, partition folders and subfolders read with
    recursiveFileLookup are still each read, none taken for a file left out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write_files(folder, count, first_id):
        folder.mkdir(parents=True)
        for i in range(count):
            pq.write_table(
                pa.table({"id": pa.array([first_id + i], pa.int64()), "name": ["x"], "city": ["y"]}),
                folder / f"part-{i:05d}.parquet",
            )

    init_table(spark, users.spec)
    flat = users.increment_dir(day(1))
    write_files(flat, 300, 100)
    write_files(users.data / "one", 1, 1)
    partitioned = users.increment_dir(day(2))
    write_files(partitioned / "part=a", 150, 1000)
    write_files(partitioned / "part=b", 150, 2000)
    write_files(users.data / "few" / "part=a", 1, 1)
    write_files(users.data / "few" / "part=b", 1, 2)

    def files_found(folder):
        return len(reader._files_spark_reads(spark, spark.read.parquet(str(folder)), [str(folder)]))

    found = {
        name: files_found(folder)
        for name, folder in [
            ("one", users.data / "one"),
            ("flat", flat),
            ("few", users.data / "few"),
            ("partitioned", partitioned),
        ]
    }
    assert found == {"one": 1, "flat": 300, "few": 2, "partitioned": 300}

    assert merge.merge_date(spark, users.spec, day(1)).counts["new"] == 300
    assert merge.merge_date(spark, users.spec, day(2)).counts["new"] == 300  # `part` is a column of the input
    recursive = users.spec.model_copy(
        update={"source": users.spec.source.model_copy(update={"options": {"recursiveFileLookup": "true"}})}
    )
    write_parquet(users.increment_dir(day(3)) / "old", [(3, "cid", "Rome")], users.schema)
    assert merge.merge_date(spark, recursive, day(3)).counts["changed"] == 1


def test_an_inputs_files_are_listed_in_as_many_jvm_calls_for_many_files_as_for_few(spark, tmp_path, monkeypatch):
    """Listing an input's files took about six py4j calls for each file: seconds at `zipper init`
    of a base of many thousand files. It takes a few for each folder, and finds what Hadoop's
    recursive listing found: every file in any subfolder, with its size and modification time,
    but those whose name or folder's name starts with _ or . (a partition folder `_a=1` is data)."""

    def write_tree(root, count):
        for folder in ("", "sub/deeper", "_a=1", "_temporary/0", ".hidden"):
            (root / folder).mkdir(parents=True, exist_ok=True)
            for i in range(count):
                (root / folder / f"part {i:03d}%20#.parquet").write_bytes(b"x" * i)
        for name in ("_SUCCESS", ".part-0.tmp"):
            (root / name).write_text("")

    def on_disk(root):
        found = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(("_", ".")) or "=" in d]
            found += [
                (
                    f"file:{folder}/{n}",
                    os.stat(f"{folder}/{n}").st_size,
                    os.stat(f"{folder}/{n}").st_mtime_ns // 1_000_000,
                )
                for n in names
                if not n.startswith(("_", "."))
            ]
        return sorted(found)

    write_tree(tmp_path / "few", 3)
    write_tree(tmp_path / "many", 300)
    calls = counted_jvm_calls(spark, monkeypatch)

    def counted(listing, folder):
        calls.clear()
        found = listing(spark, folder)
        return len(calls), found

    listed = {name: counted(lambda s, f: fs.list_data_files([f]), str(tmp_path / name)) for name in ("few", "many")}
    flat = {name: counted(lambda s, f: fs.list_files(f), str(tmp_path / name)) for name in ("few", "many")}
    monkeypatch.undo()
    assert listed["many"][0] == listed["few"][0]
    assert flat["many"][0] == flat["few"][0]
    for name in ("few", "many"):
        assert [(f.path, f.size, f.modified_ms) for f in listed[name][1]] == on_disk(tmp_path / name)
        assert len(listed[name][1]) == (3 if name == "few" else 300) * 3
        assert [fs.name_of(f.path) for f in flat[name][1]] == sorted(
            n for n in os.listdir(tmp_path / name) if os.path.isfile(tmp_path / name / n)
        )


def test_an_empty_parquet_file_is_named_as_likely_unfinished_and_may_be_tried_again(spark, users):
    """Spark refused it as 'not a Parquet file (length is too low: 0)', as if unreadable: a file
    of 0 bytes is most likely one a writer is still at work on (or died writing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    init_table(spark, users.spec)
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    folder = users.increment_dir(day(1))
    (folder / "part-1.parquet").write_bytes(b"")
    before = snapshot(spark, users)
    with pytest.raises(MissingInputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value) == (
        f"{users.table} 2024-01-01: increment {folder}: file part-1.parquet is empty (0 bytes),"
        " which no Parquet file is: it is likely still being written, or its writer died; merge"
        " once it is complete (if its writer died, delete it or write it again)"
    )
    assert not err.value.final  # another try, once the writer has finished, may pass
    assert snapshot(spark, users) == before
    pq.write_table(
        pa.table({"id": pa.array([4], pa.int64()), "name": ["dan"], "city": ["Lima"]}), folder / "part-1.parquet"
    )  # the writer finished
    assert (merge.merge_date(spark, users.spec, day(1)).counts["changed"], snapshot(spark, users)[0][-1]) == (
        1,
        (4, "dan", "Lima", "2024-01-01", OPEN),
    )


@pytest.mark.parametrize("fmt", ["orc", "csv"])  # a zero-byte Parquet file is refused as likely unfinished
def test_an_empty_file_beside_the_data_is_no_file_left_out(spark, users, fmt):
    """Spark skips zero-byte files (they hold no rows): not a file it would leave out unsaid."""
    spec = users.spec.model_copy(update={"source": users.spec.source.model_copy(update={"format": fmt})})
    init_table(spark, spec)
    folder = users.increment_dir(day(1))
    spark.createDataFrame([(1, "ann", "Rome")], users.schema).write.format(fmt).option("header", "true").save(
        str(folder)
    )
    (folder / f"part-99999.{fmt}").write_bytes(b"")
    result = merge.merge_date(spark, spec, day(1))
    assert (result.counts["changed"], result.counts["open_after"]) == (1, 3)


def test_a_path_that_renders_empty_or_fails_for_one_date_names_table_date_and_spec(spark, tmp_path, unique_name):
    from tests.support import TableFixture

    folder = tmp_path / "data" / unique_name / "incr"
    t = TableFixture(
        tmp_path,
        unique_name,
        source={
            "path": "{% if ds == '2024-01-02' %}{{ nope.x }}{% elif ds == '2024-01-03' %}{% else %}"
            + f"{folder}/ds="
            + "{{ ds }}{% endif %}"
        },
    )
    t.write_base(spark, [(1, "ann", "Oslo")])
    t.write_increment(spark, day(1), [(1, "ann", "Rome")])
    merge.merge_date(spark, t.spec, day(1))  # the spec loads: the template fails only for some dates
    with pytest.raises(SpecError) as err:
        merge.merge_date(spark, t.spec, day(2))
    assert str(err.value).startswith(f"{t.table} 2024-01-02: {t.path}: key 'source.path': cannot render ")
    assert str(err.value).endswith("'nope' is undefined")
    with pytest.raises(SpecError) as err:  # what a rerun or the sensor locates for that date
        mode_of(t.spec).locate(spark, t.spec, state.read_state(spark, t.spec), day(3))
    assert str(err.value).startswith(f"{t.table} 2024-01-03: {t.path}: key 'source.path' renders empty for 2024-01-03")


def test_an_init_killed_before_its_publish_does_not_keep_the_columns_of_the_base_it_read(spark, users, monkeypatch):
    """The table is created before the base is written and published: killed in between, it kept
    the old base's columns, and the corrected base was refused by every command."""

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the publish")

    with monkeypatch.context() as patch:
        patch.setattr(catalog, "repoint", killed)
        with pytest.raises(KeyboardInterrupt):
            init_table(spark, users.spec)
    assert catalog.table_exists(spark, users.spec) and not state.read_state(spark, users.spec).initialized
    users.write_base(spark, [(1, "ann", "Oslo", 30), (2, "bob", "Rome", 40)], f"{users.schema}, age int")
    result = init_table(spark, users.spec)
    assert result.counts == {"open_after": 2}
    assert catalog.data_columns(spark, users.spec) == [
        ("id", "bigint"),
        ("name", "string"),
        ("city", "string"),
        ("age", "int"),
    ]
    assert [r[:4] for r in table_rows(spark, users.table)] == [(1, "ann", "Oslo", 30), (2, "bob", "Rome", 40)]


def test_missing_increment_is_an_error_naming_the_path(spark, users):
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(users.increment_dir(day(1))) in str(err.value) and "2024-01-01" in str(err.value)


def test_a_past_merge_whose_later_input_is_gone_says_why_it_needs_it_and_changes_nothing(spark, users):
    """A cleared merge of a past date after the source dropped a later date's files said only
    `<table> <later date>: increment not found`, about a date the user did not ask for."""
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    users.write_increment(spark, day(2), [(3, "cid", "Nice")])
    merge.merge_date(spark, users.spec, day(1))
    merge.merge_date(spark, users.spec, day(2))
    before, dirs = snapshot(spark, users), version_dirs(spark, users)
    shutil.rmtree(users.increment_dir(day(2)))
    with pytest.raises(MissingInputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    assert str(err.value) == (
        f"{users.table} {day(1)}: increment not found: {users.increment_dir(day(2))}; the input of {day(2)},"
        f" committed after {day(1)}, is needed to tell whether {day(1)}..{day(2)} are still as committed (and to"
        " replay them if not); nothing was changed"
    )
    assert (snapshot(spark, users), version_dirs(spark, users)) == (before, dirs)


def test_a_snapshot_date_without_input_is_skipped_closes_nothing_and_replays_once_its_input_appears(
    spark, tmp_path, unique_name
):
    """on_missing_input: skip. A date whose input is not there commits without changes (a snapshot's
    missing day closes no key), says so in its report and in the status; the next date merges; the
    input appearing later changes the skipped date's fingerprint, and the next merge replays it."""
    t = TableFixture(tmp_path, unique_name, source={"mode": "snapshot", "on_missing_input": "skip"})
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    skipped = merge.merge_date(spark, t.spec, day(1))
    assert skipped.counts["skipped"] == "no input" and skipped.counts["closed"] == 0
    assert skipped.summary().startswith(
        f"{t.table} 2024-01-01: table created, base loaded as of 2023-12-31: 2 open rows; then skipped: no input:"
        f" {t.increment_dir(day(1))} not found; committed without changes; 2 open rows after;"
    )
    base_rows = [(1, "ann", "Oslo", "2023-12-31", OPEN), (2, "bob", "Rome", "2023-12-31", OPEN)]
    assert table_rows(spark, t.table) == base_rows
    status = inspect.status(spark, t.spec, 5)
    assert status["skipped_dates"] == [{"ds": "2024-01-01", "skipped": "no input"}]
    assert status["recent_commits"][0]["skipped"] == "no input"
    assert status["recent_commits"][0]["fingerprint"] == sources.NO_INPUT
    assert merge.merge_date(spark, t.spec, day(1)).action == "noop"  # still no input: as committed

    t.write_increment(spark, day(2), [(1, "ann", "Oslo")])  # bob left the source on day 2
    merged = merge.merge_date(spark, t.spec, day(2))  # the skipped date counts as committed
    assert "skipped" not in merged.counts and merged.counts["closed"] == 1
    # a spec that stops skipping keeps its skipped dates as committed: a later merge does not fail on them
    failing = t.spec.model_copy(update={"source": t.spec.source.model_copy(update={"on_missing_input": None})})
    assert merge.merge_date(spark, failing, day(2)).action == "noop"

    t.write_increment(spark, day(1), [(1, "ann", "Oslo"), (2, "bob", "Paris")])  # day 1's file arrives late
    t.write_increment(spark, day(3), [(1, "ann", "Oslo")])
    lines = []
    merged = merge.merge_date(spark, t.spec, day(3), progress=lines.append)  # a later date's merge replays it
    assert lines[0] == (
        f"{t.table} 2024-01-03: table is at 2024-01-02 and the input of 2024-01-01 differs from what was committed"
    )
    assert [r.ds for r in merged.replayed] == ["2024-01-01", "2024-01-02"] and merged.ds == "2024-01-03"
    assert table_rows(spark, t.table) == [
        (1, "ann", "Oslo", "2023-12-31", OPEN),
        (2, "bob", "Paris", "2024-01-01", "2024-01-02"),
        (2, "bob", "Rome", "2023-12-31", "2024-01-01"),
    ]
    assert inspect.status(spark, t.spec)["skipped_dates"] == []

    # a date committed with input whose input is gone is not turned into a skipped one by a merge
    before = snapshot(spark, t)
    shutil.rmtree(t.increment_dir(day(1)))
    with pytest.raises(MissingInputError, match="2024-01-01 was committed with input; a merge does not commit"):
        merge.merge_date(spark, t.spec, day(1))
    assert snapshot(spark, t) == before


def only_file(folder) -> str:
    """The name of the one Parquet file in `folder` (`write_parquet` names it anew each time)."""
    (name,) = [f.name for f in folder.iterdir() if f.suffix == ".parquet"]
    return name


def test_null_and_duplicate_keys_fail_in_one_refusal_and_write_nothing(spark, users):
    """NULL keys were refused first, and only once fixed were the repeated keys named: two runs,
    two fixes. One refusal names both, each with its count, keys and file."""
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    before, dirs = snapshot(spark, users), version_dirs(spark, users)

    rows = [(None, "x", "y"), (5, "e", "f"), (None, "z", "w"), (5, "e", "g"), (7, "g", "h"), (6, "f", "g")]
    users.write_increment(spark, day(2), rows + [(6, "f", "i"), (6, "f", "j")])
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(2))
    folder, part = users.increment_dir(day(2)), only_file(users.increment_dir(day(2)))
    assert str(err.value) == (
        f"{users.table} {day(2)}: increment {folder} has 2 rows with NULL in key column 'id' in {part};"
        f" 2 keys ['id'] more than once (5 rows) in {part}: 5, 6"
    )
    assert err.value.final  # the same files fail the same way

    users.write_increment(spark, day(2), [(k, "n", "c") for k in range(30) for _ in range(2)])
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(2))
    assert str(err.value) == (
        f"{users.table} {day(2)}: increment {folder} has 30 keys ['id'] more than once (60 rows)"
        f" in {only_file(folder)}, the first 20: " + ", ".join(str(k) for k in range(20))
    )
    assert snapshot(spark, users) == before and version_dirs(spark, users) == dirs


def test_key_problems_name_each_file_that_holds_them(spark, users, tmp_path):
    """A file delivered twice, under another name, beside one with a NULL key: each problem names
    the files that hold its keys. On the table's first date: the table it created goes too."""
    folder = users.increment_dir(day(1))
    write_parquet(folder, [(1, "ann", "Bergen"), (4, "dan", "Oslo")], users.schema)
    sent = only_file(folder)
    shutil.copy(folder / sent, folder / "part-again.parquet")
    write_parquet(tmp_path / "late", [(None, "eve", "Rome"), (8, "fay", "Nice")], users.schema)
    late = only_file(tmp_path / "late")
    shutil.move(tmp_path / "late" / late, folder / late)
    with pytest.raises(InputError) as err:
        merge.merge_date(spark, users.spec, day(1))
    twice = sorted([sent, "part-again.parquet"])
    assert str(err.value) == (
        f"{users.table} {day(1)}: increment {folder} has 1 row with NULL in key column 'id' in {late};"
        f" 2 keys ['id'] more than once (4 rows) in {twice[0]} and {twice[1]}: 1, 4"
    )
    assert not catalog.table_exists(spark, users.spec)


def test_composite_keys(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, keys=("tenant", "id"), schema="tenant string, id int, v string")
    t.write_base(spark, [("a", 1, "x"), ("b", 1, "x")])
    t.write_increment(spark, day(1), [("a", 1, "y"), ("b", 1, "x"), ("b", 2, "z")])
    assert merge.merge_date(spark, t.spec, day(1)).counts["changed"] == 1
    assert table_rows(spark, t.table) == [
        ("a", 1, "x", "2023-12-31", "2024-01-01"),
        ("a", 1, "y", "2024-01-01", OPEN),
        ("b", 1, "x", "2023-12-31", OPEN),
        ("b", 2, "z", "2024-01-01", OPEN),
    ]
    assert [r.v for r in inspect.history(spark, t.spec, {"tenant": "a", "id": "1"}).collect()] == ["x", "y"]


def test_inclusive_end_style_closes_on_the_day_before(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, end_style="inclusive")
    t.write_base(spark, [(1, "ann", "Oslo")])
    t.write_increment(spark, day(1), [(1, "ann", "Rome")])
    t.write_increment(spark, day(2), [(1, "ann", "Nice")])
    merge.merge_date(spark, t.spec, day(1))
    merge.merge_date(spark, t.spec, day(2))
    assert table_rows(spark, t.table) == [
        (1, "ann", "Nice", "2024-01-02", OPEN),
        (1, "ann", "Oslo", "2023-12-31", "2023-12-31"),
        (1, "ann", "Rome", "2024-01-01", "2024-01-01"),
    ]
    assert [r.city for r in inspect.slice_as_of(spark, t.spec, day(1)).collect()] == ["Rome"]
    assert [r.city for r in inspect.slice_as_of(spark, t.spec, day(0)).collect()] == ["Oslo"]
    assert check.run_checks(spark, t.spec)["ok"]


def test_track_columns_update_others_in_place(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, track_columns=["city"])
    t.write_base(spark, [(1, "ann", "Oslo")])
    t.write_increment(spark, day(1), [(1, "anna", "Oslo")])
    result = merge.merge_date(spark, t.spec, day(1))
    assert result.counts["updated_in_place"] == 1 and result.counts["closed"] == 0
    assert table_rows(spark, t.table) == [(1, "anna", "Oslo", "2023-12-31", OPEN)]


@pytest.mark.parametrize("mode", ["upsert", "cdc", "landing_zone", "snapshot"])
def test_track_columns_except_updates_those_in_place_and_versions_the_others(spark, tmp_path, unique_name, mode):
    """With `track_columns_except: [city]` a new city updates the open version in place and a new
    name opens a version, on every mode."""
    import pyarrow as pa

    from tests.inputs.test_landing import LandingZone

    base, changed = [(1, "ann", "Oslo"), (2, "bob", "Rome")], [(1, "ann", "Lima"), (2, "bo", "Rome")]
    if mode == "landing_zone":
        zone = LandingZone(tmp_path, unique_name, key_columns=("id",))
        spec, table, first, second = zone.spec, zone.table, day(1).isoformat(), day(2).isoformat()
        spec = spec.model_copy(update={"track_columns_except": ["city"]})
        files = pa.schema(
            [("__rowMarker__", pa.int32()), ("id", pa.int64()), ("name", pa.string()), ("city", pa.string())]
        )
        zone.write(1, [(0, *row) for row in base], schema=files)
        merge.merge_date(spark, spec, day(1))
        zone.write(2, [(1, *row) for row in changed], schema=files)
        result = merge.merge_date(spark, spec, day(2))
    else:
        t = TableFixture(tmp_path, unique_name, source={"mode": mode}, track_columns_except=["city"])
        spec, table, first, second = t.spec, t.table, day(0).isoformat(), day(1).isoformat()
        t.write_base(spark, base)
        init_table(spark, spec)
        if mode == "cdc":
            t.write_increment(spark, day(1), [(*row, 0) for row in changed], t.schema + ", sys_op int")
        else:
            t.write_increment(spark, day(1), changed)
        result = merge.merge_date(spark, spec, day(1))
    assert (result.counts["updated_in_place"], result.counts["changed"]) == (1, 1)
    assert table_rows(spark, table) == [
        (1, "ann", "Lima", first, OPEN),
        (2, "bo", "Rome", second, OPEN),
        (2, "bob", "Rome", first, second),
    ]


def test_table_without_base_is_created_by_the_first_merge(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, base=False)
    t.write_increment(spark, day(1), [(1, "ann", "Oslo")])
    with pytest.raises(StateError, match="not initialized"):
        merge.merge_date(spark, t.spec, day(2))
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 1
    assert table_rows(spark, t.table) == [(1, "ann", "Oslo", "2024-01-01", OPEN)]


def test_init_with_ds_and_declared_columns(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, base=False, columns={"id": "bigint", "name": "string", "city": "string"})
    result = init_table(spark, t.spec, dt.date(2024, 1, 3))
    assert result.action == "init" and result.counts["open_after"] == 0
    assert init_table(spark, t.spec, dt.date(2024, 1, 3)).action == "noop"
    with pytest.raises(StateError, match="already initialized"):
        init_table(spark, t.spec, dt.date(2024, 1, 5))
    t.write_increment(spark, day(4), [(1, "ann", "Oslo")])
    assert merge.merge_date(spark, t.spec, day(4)).counts["new"] == 1
    assert [f.name for f in spark.table(t.table).schema] == ["id", "name", "city", "begin_dt", "end_dt"]


def test_order_and_idempotency(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    before = snapshot(spark, users)
    again = merge.merge_date(spark, users.spec, day(1))
    assert again.action == "noop" and "same input" in again.summary()
    assert snapshot(spark, users) == before
    with pytest.raises(StateError, match="merge the missing dates first: 2024-01-02, 2024-01-03"):
        merge.merge_date(spark, users.spec, day(4))
    users.write_increment(spark, day(1), [(2, "bob", "Lyon")])  # re-delivered with other content: replayed
    replayed = merge.merge_date(spark, users.spec, day(1))
    assert replayed.action == "replay" and "the input of 2024-01-01 differs" in replayed.message
    assert ("bob", "Lyon", "2024-01-01", OPEN) in [r[1:] for r in table_rows(spark, users.table)]


def record_as_committed_before(spark, t, ds):
    """The fingerprint a merge recorded before file filters were heeded: every file counted."""
    commit = state.read_state(spark, t.spec).commits[ds.isoformat()]
    part = next(p for p in catalog.list_partitions(spark, t.spec) if p.end == commit.end)
    every_file = sources.fingerprint(fs.list_data_files([str(t.increment_dir(ds))]))
    params = {k: v for k, v in part.params.items() if k.startswith("zipper.")}
    catalog.repoint(
        spark,
        t.spec,
        [Partition(part.end, part.location, {**params, state.FINGERPRINT: every_file})],
        expected_run=None,
    )


def test_files_a_filter_leaves_out_change_no_dates_input_nor_do_dates_committed_before_look_changed(
    spark, tmp_path, unique_name
):
    """Whether a past date's input changed (and so replays) was told from every file of its
    folder, also those the source's file filters leave out: editing a `notes.txt` beside the data
    replayed the date and every later one. Only the files the read takes count; a date committed
    before that (its fingerprint counts every file) is unchanged while they all are."""
    t = TableFixture(tmp_path, unique_name, source={"options": {"pathGlobFilter": "*.parquet"}})
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(2, "bob", "Paris")])
    notes = t.increment_dir(day(1)) / "notes.txt"
    notes.write_text("exported by the nightly job")
    merge.merge_date(spark, t.spec, day(1))
    t.write_increment(spark, day(2), [(1, "ann", "Lima")])
    merge.merge_date(spark, t.spec, day(2))
    before = snapshot(spark, t)

    def edit_left_out_files(text):
        notes.write_text(text)
        (t.increment_dir(day(1)) / "readme.md").write_text(text)

    edit_left_out_files("exported by the nightly job, again")
    assert merge.merge_date(spark, t.spec, day(1)).action == "noop"
    assert snapshot(spark, t) == before

    for ds in (day(1), day(2)):
        record_as_committed_before(spark, t, ds)
    assert merge.merge_date(spark, t.spec, day(1)).action == "noop"
    assert snapshot(spark, t) == before
    edit_left_out_files("edited once more")  # as before this change: every file of a date committed then counts
    assert merge.merge_date(spark, t.spec, day(1)).action == "replay"
    edit_left_out_files("and once more")  # replayed: recorded anew
    assert merge.merge_date(spark, t.spec, day(1)).action == "noop"

    t.write_increment(spark, day(1), [(2, "bob", "Lyon")])  # a file the read takes: replayed, as ever
    replayed = merge.merge_date(spark, t.spec, day(1))
    assert replayed.action == "replay" and "the input of 2024-01-01 differs" in replayed.message
    assert ("bob", "Lyon", "2024-01-01", OPEN) in [r[1:] for r in table_rows(spark, t.table)]


def test_a_rerun_takes_dates_committed_before_filters_were_heeded_as_unchanged(spark, tmp_path, unique_name):
    """With untracked columns a rerun rebuilds the state before its first date from the inputs
    committed, which must be unchanged: a date committed when every file of a filtered folder
    counted was refused as changed, and the rerun with it."""
    from zipper.jobs import replay

    t = TableFixture(tmp_path, unique_name, source={"options": {"pathGlobFilter": "*.parquet"}}, track_columns=["city"])
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    init_table(spark, t.spec)
    for n, row in ((1, (2, "bob", "Paris")), (2, (1, "ann", "Lima"))):
        t.write_increment(spark, day(n), [row])
        (t.increment_dir(day(n)) / "notes.txt").write_text("exported by the nightly job")
        merge.merge_date(spark, t.spec, day(n))
        record_as_committed_before(spark, t, day(n))
    before = table_rows(spark, t.table)
    assert replay.rerun(spark, t.spec, day(2)).action == "rerun"
    assert table_rows(spark, t.table) == before
    assert state.read_state(spark, t.spec).last_committed == day(2)


def test_files_a_filter_leaves_out_beside_the_base_do_not_change_it(spark, tmp_path, unique_name):
    """With untracked columns a rerun rebuilds the state before its first date from the base, which
    must be the one `zipper init` loaded: a `notes.txt` the base's filter leaves out, once edited,
    made it look changed and the rerun was refused. A table initialized when every file counted
    keeps its recorded fingerprint while they all are unchanged."""
    from zipper.jobs import replay

    options = {"pathGlobFilter": "*.parquet"}
    t = TableFixture(tmp_path, unique_name, source={"options": options}, track_columns=["city"])
    t.spec = t.spec.model_copy(update={"base": t.spec.base.model_copy(update={"options": options})})
    t.write_base(spark, [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    notes = t.data / "base" / "notes.txt"
    notes.write_text("exported by the nightly job")
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, t.spec, day(1))
    before = table_rows(spark, t.table)

    notes.write_text("exported by the nightly job, again")
    assert replay.rerun(spark, t.spec, day(1)).action == "rerun"
    assert table_rows(spark, t.table) == before

    st = state.read_state(spark, t.spec)
    every_file = sources.fingerprint(fs.list_data_files([str(t.data / "base")]))
    params = {k: v for k, v in st.open_partition.params.items() if k.startswith("zipper.")}
    catalog.repoint(
        spark,
        t.spec,
        [Partition(OPEN, st.open_partition.location, {**params, state.INIT_FINGERPRINT: every_file})],
        expected_run=None,
    )
    assert replay.rerun(spark, t.spec, day(1)).action == "rerun"  # recorded as before: still the same base
    assert table_rows(spark, t.table) == before
    assert state.read_state(spark, t.spec).open_partition.params[state.INIT_FINGERPRINT] == every_file

    write_parquet(t.data / "base", [(1, "ann", "Oslo"), (2, "bob", "Lima")], t.schema, spark)  # a file it reads
    with pytest.raises(StateError, match="the base differs from the one loaded"):
        replay.rerun(spark, t.spec, day(1))


def test_publish_repoints_partitions_at_fresh_directories_with_the_commit(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris"), (4, "dan", "Oslo")])
    initial = state.read_state(spark, users.spec) if catalog.table_exists(spark, users.spec) else None
    result = merge.merge_date(spark, users.spec, day(1))
    st = state.read_state(spark, users.spec)
    assert initial is None
    assert st.open_partition.location.endswith(f"/versions/{result.run_id}/zipper_slot=open")
    closed = st.commits["2024-01-01"]
    assert closed.run_id == result.run_id and closed.counts["new"] == 1 and closed.rows == 1
    assert closed.fingerprint.startswith("1f-")
    assert st.open_partition.params[state.LAST_COMMITTED] == "2024-01-01"
    assert st.open_partition.params[state.ROWS] == "4"
    # the base's directory is kept for retention, untouched
    dirs = version_dirs(spark, users)
    assert len([d for d in dirs if not d.endswith("/empty")]) == 2
    assert check.run_checks(spark, users.spec)["ok"]


def test_audit_failure_publishes_nothing(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    st = state.read_state(spark, users.spec)
    # The recorded open count no longer matches the data (e.g. someone edited the files).
    tampered = dict(st.open_partition.params, **{state.ROWS: "99"})
    catalog.repoint(
        spark,
        users.spec,
        [Partition(OPEN, st.open_partition.location, {k: v for k, v in tampered.items() if k.startswith("zipper.")})],
        expected_run=st.open_run,
    )
    before = snapshot(spark, users)
    users.write_increment(spark, day(2), [(1, "ann", "Bergen")])
    with pytest.raises(AuditError, match="open rows read 3 != 99 recorded"):
        merge.merge_date(spark, users.spec, day(2))
    assert snapshot(spark, users) == before


def test_pending_partition_left_by_a_killed_run_is_dropped(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    st = state.read_state(spark, users.spec)
    catalog.add_partitions(spark, users.spec, {"2024-01-02": state.empty_dir(st.location)})
    assert [p.end for p in state.read_state(spark, users.spec).pending] == ["2024-01-02"]
    assert not check.run_checks(spark, users.spec)["ok"]
    users.write_increment(spark, day(2), [(1, "ann", "Bergen")])
    merge.merge_date(spark, users.spec, day(2))
    st = state.read_state(spark, users.spec)
    assert st.pending == [] and sorted(st.commits) == ["2024-01-01", "2024-01-02"]


@pytest.mark.parametrize(
    "rows, schema, message",
    [
        ([(1, "a", 7)], "id bigint, name string, city int", "column 'city' has type int, the table has string"),
        (
            [(1, "a", "b", "x")],
            "id bigint, name string, city string, begin_dt string",
            "must not contain the table's own columns",
        ),
        ([("a", "b")], "name string, city string", r"lacks key columns \['id'\] \(its columns: \['name', 'city'\]\)"),
        ([(1, "a", "b")], "id bigint, NAME string, name string", "differ only in case"),
    ],
)
def test_increment_that_does_not_fit_the_table_is_refused(spark, users, rows, schema, message):
    init_table(spark, users.spec)
    before = snapshot(spark, users)
    if "NAME" in schema:
        spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        users.write_increment(spark, day(1), rows, schema)
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")
    with pytest.raises(InputError, match=message):
        merge.merge_date(spark, users.spec, day(1))
    assert snapshot(spark, users) == before


def test_safe_widening_and_upper_case_columns_are_accepted(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")], "ID int, Name string, CITY string")
    assert merge.merge_date(spark, users.spec, day(1)).counts["changed"] == 1


def test_refuses_tables_it_did_not_create_and_changed_keys(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS db_{unique_name}")
    spark.sql(f"CREATE TABLE {t.table} (id bigint) STORED AS PARQUET")
    t.write_base(spark, [(1, "a", "b")])
    with pytest.raises(StateError, match="not created by zipper"):
        init_table(spark, t.spec)
    spark.sql(f"DROP TABLE {t.table}")
    init_table(spark, t.spec)
    other = TableFixture(tmp_path, unique_name, keys=("name",))
    other.write_increment(spark, day(1), [(1, "a", "b")])
    with pytest.raises(StateError, match=r"spec keys \['name'\] differ from the table's keys \['id'\]"):
        merge.merge_date(spark, other.spec, day(1))


def test_check_reports_a_duplicated_open_key(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    assert check.run_checks(spark, users.spec)["ok"]
    st = state.read_state(spark, users.spec)
    spark.createDataFrame(
        [(1, "ann", "Oslo", "2024-01-01")], "id bigint, name string, city string, begin_dt string"
    ).write.mode("append").parquet(st.open_partition.location)
    catalog.refresh(spark, users.spec)
    report = check.run_checks(spark, users.spec)
    assert not report["ok"]
    assert set(report["failed"]) == {"open_duplicate_keys", "overlapping_versions", "row_counts_match_commits"}
    duplicates = next(c for c in report["checks"] if c["check"] == "open_duplicate_keys")
    assert duplicates["examples"] == [{"id": 1, "versions": 2}]


def test_check_names_a_duplicated_timestamp_key_as_the_session_shows_it(spark, tmp_path, unique_name, monkeypatch):
    """check's examples took PySpark's rendering of a timestamp key, in the local time zone of the
    Python process: with TZ=America/New_York it named 2024-03-09 21:30:00, a key that does not exist."""
    import time

    schema = "at timestamp, amount decimal(20,10), v string"
    t = TableFixture(tmp_path, unique_name, keys=("at", "amount"), schema=schema)
    rows = spark.sql(
        "SELECT TIMESTAMP'2024-03-10 02:30:00' AS at, CAST('0.0000000123' AS decimal(20,10)) AS amount, 'a' AS v"
    )
    rows.write.parquet(str(t.data / "base"))
    init_table(spark, t.spec)
    st = state.read_state(spark, t.spec)
    rows.selectExpr("*", f"'{st.init_ds}' AS begin_dt").write.mode("append").parquet(st.open_partition.location)
    catalog.refresh(spark, t.spec)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        report = check.run_checks(spark, t.spec)
    finally:
        monkeypatch.undo()
        time.tzset()
    duplicates = next(c for c in report["checks"] if c["check"] == "open_duplicate_keys")
    assert duplicates["examples"] == [{"at": "2024-03-10 02:30:00", "amount": "0.0000000123", "versions": 2}]


def test_check_names_a_duplicated_binary_key_in_base64_as_history_takes_it(spark, tmp_path, unique_name):
    """check's examples showed a binary key as Python's repr (`b'\\xff'`), which history does not take."""
    t = TableFixture(tmp_path, unique_name, keys=("k",), schema="k binary, v string")
    t.write_base(spark, [(bytearray(b"\xff"), "a")])
    init_table(spark, t.spec)
    st = state.read_state(spark, t.spec)
    spark.createDataFrame(
        [(bytearray(b"\xff"), "b", st.init_ds.isoformat())], "k binary, v string, begin_dt string"
    ).write.mode("append").parquet(st.open_partition.location)
    catalog.refresh(spark, t.spec)
    duplicates = next(c for c in check.run_checks(spark, t.spec)["checks"] if c["check"] == "open_duplicate_keys")
    assert duplicates["examples"] == [{"k": "/w==", "versions": 2}]
    assert len(inspect.history(spark, t.spec, {"k": "/w=="}).collect()) == 2


def test_a_repeated_key_is_named_as_history_takes_it_whatever_the_local_time_zone(
    spark, tmp_path, unique_name, monkeypatch
):
    """The merge named a repeated timestamp key in the Python process's time zone (with
    TZ=America/New_York, 2024-03-09 21:30:00, a key the input does not hold), a decimal as
    1.23E-8 and a binary as b'\\xff'."""
    import time

    schema = "at timestamp, amount decimal(20,10), raw binary, v string"
    t = TableFixture(tmp_path, unique_name, keys=("at", "amount", "raw"), schema=schema, base=False)
    rows = spark.sql(
        "SELECT TIMESTAMP'2024-03-10 02:30:00' AS at, CAST('0.0000000123' AS decimal(20,10)) AS amount,"
        " X'FF' AS raw, 'a' AS v"
    )
    rows.union(rows).coalesce(1).write.parquet(str(t.increment_dir(day(1))))
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        with pytest.raises(InputError) as raised:
            merge.merge_date(spark, t.spec, day(1))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert str(raised.value).endswith(
        f"1 key ['at', 'amount', 'raw'] more than once (2 rows) in {only_file(t.increment_dir(day(1)))}:"
        " (2024-03-10 02:30:00, 0.0000000123, /w==)"
    )


def test_check_names_a_duplicated_nan_key_in_strict_json(spark, tmp_path, unique_name):
    """A NaN key in an example made `zipper check` print a bare NaN, which JSON does not have."""
    import json

    t = TableFixture(tmp_path, unique_name, keys=("k",), schema="k double, v string")
    t.write_base(spark, [(float("nan"), "a")])
    init_table(spark, t.spec)
    st = state.read_state(spark, t.spec)
    spark.createDataFrame(
        [(float("nan"), "b", st.init_ds.isoformat())], "k double, v string, begin_dt string"
    ).write.mode("append").parquet(st.open_partition.location)
    catalog.refresh(spark, t.spec)
    report = check.run_checks(spark, t.spec)
    duplicates = next(c for c in report["checks"] if c["check"] == "open_duplicate_keys")
    assert duplicates["examples"] == [{"k": "NaN", "versions": 2}]
    json.dumps(report, allow_nan=False, default=str)


def test_status_slice_and_vacuum(spark, users):
    for n, city in ((1, "Paris"), (2, "Lyon"), (3, "Nice")):
        users.write_increment(spark, day(n), [(2, "bob", city)])
        merge.merge_date(spark, users.spec, day(n))
    report = inspect.status(spark, users.spec)
    assert report["last_committed"] == "2024-01-03" and report["open_rows"] == 3 and report["closed_rows"] == 3
    assert [c["ds"] for c in report["recent_commits"]] == ["2024-01-03", "2024-01-02", "2024-01-01"]
    # `--recent 0` listed every commit (commits[-0:])
    assert [[c["ds"] for c in inspect.status(spark, users.spec, n)["recent_commits"]] for n in (0, 1)] == [
        [],
        ["2024-01-03"],
    ]
    assert [p["end"] for p in report["partitions"]] == [OPEN, "2024-01-01", "2024-01-02", "2024-01-03"]
    assert [r.city for r in inspect.slice_as_of(spark, users.spec, day(2)).where("id = 2").collect()] == ["Lyon"]
    with pytest.raises(StateError, match="only committed up to 2024-01-03"):
        inspect.slice_as_of(spark, users.spec, day(4))

    before = table_rows(spark, users.table)
    assert vacuum.vacuum(spark, users.spec)["removed"] == []  # everything is younger than retention
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=8)
    dry = vacuum.vacuum(spark, users.spec, dry_run=True, now=later)
    # superseded: the base's run directory, and the open directories of days 1 and 2
    assert [r["directory"].split("/versions/")[1].count("/") for r in dry["removed"]] == [0, 1, 1]
    assert all(r["directory"].endswith("zipper_slot=open") for r in dry["removed"][1:])
    done = vacuum.vacuum(spark, users.spec, now=later)
    assert [r["directory"] for r in done["removed"]] == [r["directory"] for r in dry["removed"]]
    assert all(not fs.exists(r["directory"]) for r in done["removed"])
    catalog.refresh(spark, users.spec)
    assert table_rows(spark, users.table) == before
    assert check.run_checks(spark, users.spec)["ok"]


def add_file(t, ds, rows, schema, scratch):
    """One more Parquet file in the increment folder of `ds`, beside the ones already there."""
    write_parquet(scratch, rows, schema)
    for part in scratch.glob("*.parquet"):
        part.rename(t.increment_dir(ds) / f"more-{part.name}")


def test_a_column_only_some_increment_files_have_is_added(spark, users, tmp_path):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    add_file(
        users, day(1), [(4, "dan", "Oslo", "x")], "id bigint, name string, city string, extra string", tmp_path / "more"
    )
    result = merge.merge_date(spark, users.spec, day(1))
    assert result.counts["columns_added"] == ["extra string"] and result.counts["new"] == 1
    assert table_rows(spark, users.table) == [  # an added column comes after begin_dt, as Hive appends it
        (1, "ann", "Oslo", "2023-12-31", None, OPEN),
        (2, "bob", "Paris", "2024-01-01", None, OPEN),
        (2, "bob", "Rome", "2023-12-31", None, "2024-01-01"),
        (3, "cid", None, "2023-12-31", None, OPEN),
        (4, "dan", "Oslo", "2024-01-01", "x", OPEN),
    ]


def test_increment_files_that_disagree_on_a_type_are_refused_naming_the_input(spark, users, tmp_path):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    add_file(users, day(1), [(4, "dan", 5)], "id bigint, name string, city int", tmp_path / "more")
    init_table(spark, users.spec)
    before = snapshot(spark, users)
    with pytest.raises(
        InputError,
        match=r"files of .*ds=2024-01-01 disagree on column types:"
        r" city is int in more-part-.*, string in part-",
    ) as raised:
        merge.merge_date(spark, users.spec, day(1))
    assert "\n" not in str(raised.value)
    assert snapshot(spark, users) == before


def test_a_file_whose_schema_cannot_be_read_is_passed_over_when_naming_a_type_conflict_and_a_bug_is_not(
    spark, users, tmp_path, monkeypatch
):
    """Finding which columns the files type differently reads each file's schema and passed over
    every failure, so a bug in it (a Python error) went unseen, as a file it could not read."""
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    add_file(users, day(1), [(4, "dan", 5)], "id bigint, name string, city int", tmp_path / "more")
    folder = users.increment_dir(day(1))
    (folder / "zz-broken.parquet").write_bytes(b"PAR1 not a Parquet file PAR1")
    init_table(spark, users.spec)
    located = sources.locate(spark, users.spec, users.spec.source, day(1), "increment")
    assert reader._type_conflicts(spark, located, located.files).startswith("city is int in more-part-")
    DataFrameReader = type(spark.read)  # a classic session's reader, or a Spark Connect client's
    load = DataFrameReader.load

    def buggy_load(self, path=None, *args, **kwargs):
        if str(path).endswith("zz-broken.parquet"):
            raise TypeError("a bug")
        return load(self, path, *args, **kwargs)

    monkeypatch.setattr(DataFrameReader, "load", buggy_load)
    with pytest.raises(TypeError, match="a bug"):
        reader._type_conflicts(spark, located, located.files)


def test_track_columns_naming_no_column_is_a_spec_error_and_writes_nothing(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, track_columns=["citty"])
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec)
    t.write_increment(spark, day(1), [(1, "ann", "Rome")])
    before, runs = snapshot(spark, t), version_dirs(spark, t)
    with pytest.raises(
        SpecError,
        match=r"key 'track_columns': \['citty'\] not among the table's columns"
        r" \['name', 'city'\]",
    ) as raised:
        merge.merge_date(spark, t.spec, day(1))
    assert str(raised.value).startswith(f"{t.table} 2024-01-01: {t.path}: ")
    assert snapshot(spark, t) == before and version_dirs(spark, t) == runs
    # the same check of the columns excluded from tracking, and of an exclusion of every column
    for excluded, problem in ((["citty"], "not among the table's columns"), (["name", "city"], "leaves no column")):
        t.spec = t.spec.model_copy(update={"track_columns": "all", "track_columns_except": excluded})
        with pytest.raises(
            SpecError,
            match=rf"^{t.table} 2024-01-01: {re.escape(str(t.path))}: key 'track_columns_except': .*{problem}",
        ):
            merge.merge_date(spark, t.spec, day(1))
        assert snapshot(spark, t) == before and version_dirs(spark, t) == runs


def test_reads_refuse_a_changed_end_style_and_dates_before_the_base(spark, users, tmp_path):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    with pytest.raises(StateError, match="table starts at its base date 2023-12-31"):
        inspect.slice_as_of(spark, users.spec, day(-1))
    assert len(inspect.slice_as_of(spark, users.spec, day(0)).collect()) == 3

    edited = TableFixture(tmp_path / "edited", users.name, end_style="inclusive")
    for read in (
        lambda s: inspect.slice_as_of(spark, s, day(1)),
        lambda s: check.run_checks(spark, s),
        lambda s: inspect.history(spark, s, {"id": "2"}),
    ):
        with pytest.raises(StateError, match="spec end_style inclusive differs from the table's exclusive"):
            read(edited.spec)


def test_history_reads_key_values_as_the_key_type(spark, users):
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    merge.merge_date(spark, users.spec, day(1))
    assert [r.city for r in inspect.history(spark, users.spec, {"id": "002"}).collect()] == ["Rome", "Paris"]
    with pytest.raises(InputError, match=r"--key values are not of the key columns' types: id='abc' \(bigint\)"):
        inspect.history(spark, users.spec, {"id": "abc"})


def test_history_refuses_a_decimal_key_value_that_would_round_to_another_key(spark, tmp_path, unique_name):
    """`amt=1.004` on a decimal(10,2) key found the history of key 1.00."""
    t = TableFixture(tmp_path, unique_name, keys=("k",), schema="k decimal(10,2), v string")
    t.write_base(spark, [(Decimal("1.00"), "a"), (Decimal("2.50"), "b")])
    init_table(spark, t.spec)
    assert [r.v for r in inspect.history(spark, t.spec, {"k": "1.0"}).collect()] == ["a"]
    assert [r.v for r in inspect.history(spark, t.spec, {"k": "2.500"}).collect()] == ["b"]
    with pytest.raises(
        InputError,
        match=r"--key values are not of the key columns' types: k='1.004'"
        r" \(decimal\(10,2\)\)",
    ):
        inspect.history(spark, t.spec, {"k": "1.004"})


def test_history_finds_binary_keys_by_their_base64_and_float_keys_as_the_merge_compares_them(
    spark, tmp_path, unique_name
):
    """Binary keys are base64 in slice and history's output, and bytes that are not UTF-8 could not be
    typed at all; a double key -0.0 is the key 0.0 to the merge, so history finds it by `0` too."""
    binary = TableFixture(tmp_path, unique_name, keys=("k",), schema="k binary, v string")
    binary.write_base(spark, [(bytearray(b"\xff"), "a"), (bytearray(b"\xfe"), "b"), (bytearray(b"ab"), "c")])
    init_table(spark, binary.spec)
    assert [r.v for r in inspect.history(spark, binary.spec, {"k": "/w=="}).collect()] == ["a"]
    assert [r.v for r in inspect.history(spark, binary.spec, {"k": "YWI="}).collect()] == ["c"]
    with pytest.raises(
        InputError,
        match=r"--key values are not of the key columns' types: k='ab' \(binary,"
        r" given as base64\)",
    ):
        inspect.history(spark, binary.spec, {"k": "ab"})

    double = TableFixture(tmp_path, unique_name + "_d", keys=("k",), schema="k double, v string")
    double.write_base(spark, [(-0.0, "zero"), (float("nan"), "nan")])
    init_table(spark, double.spec)
    assert [r.v for r in inspect.history(spark, double.spec, {"k": "0"}).collect()] == ["zero"]
    assert [r.v for r in inspect.history(spark, double.spec, {"k": "NaN"}).collect()] == ["nan"]


def test_history_refuses_a_key_column_it_cannot_take_a_value_for(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, keys=("k",), schema="k array<bigint>, v string")
    t.write_base(spark, [([1], "a")])
    init_table(spark, t.spec)
    with pytest.raises(
        InputError,
        match=r"^[^ ]+: --key k: history cannot take a value for a key column of type"
        r" array<bigint>; query the table",
    ):
        inspect.history(spark, t.spec, {"k": "[1]"})


def test_a_parquet_timestamp_in_nanoseconds_is_named_by_its_column(spark, users):
    """pyarrow writes pandas' timestamps in nanoseconds unless told otherwise; Spark's 'Illegal
    Parquet type: INT64 (TIMESTAMP(NANOS,true))' named no column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    init_table(spark, users.spec)
    folder = users.increment_dir(day(1))
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "id": pa.array([2], pa.int64()),
                "name": ["bob"],
                "city": ["Paris"],
                "seen": pa.array([dt.datetime(2024, 1, 1, 8, 30)], pa.timestamp("ns", tz="UTC")),
            }
        ),
        folder / "part-0.parquet",
    )
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, users.spec, day(1))
    assert str(raised.value) == (
        f"{users.table} 2024-01-01: cannot read file part-0.parquet of {folder}: column 'seen' holds timestamps in"
        " nanoseconds, which Spark cannot read (Illegal Parquet type: INT64 (TIMESTAMP(NANOS,true))); write them in"
        " microseconds (pyarrow: coerce_timestamps='us')"
    )


@pytest.mark.parametrize("files", [1, 2])
def test_a_file_that_is_not_parquet_is_named_with_the_reason(spark, users, files):
    if files == 2:
        users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    else:
        users.increment_dir(day(1)).mkdir(parents=True)
    (users.increment_dir(day(1)) / "notes.parquet").write_text("id,name\n1,ann\n")
    init_table(spark, users.spec)
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, users.spec, day(1))
    assert str(raised.value) == (
        f"{users.table} 2024-01-01: cannot read file notes.parquet of {users.increment_dir(day(1))}: it is not a"
        " Parquet file. Expected magic number at tail, but found [97, 110, 110, 10]"
    )


def test_a_truncated_file_among_several_is_named(spark, tmp_path, unique_name):
    """Spark's error for an ORC file it cannot read names no file; zipper tries each alone."""
    t = TableFixture(tmp_path, unique_name, source={"format": "orc"})
    t.write_base(spark, [(1, "ann", "Oslo")])
    spark.createDataFrame([(2, "bob", "Rome")], t.schema).coalesce(1).write.orc(str(t.increment_dir(day(1))))
    good = next(t.increment_dir(day(1)).glob("part-*.orc"))
    (t.increment_dir(day(1)) / "part-zz.orc").write_bytes(good.read_bytes()[:40])
    init_table(spark, t.spec)
    with pytest.raises(InputError, match=r"cannot read file part-zz\.orc of .*ds=2024-01-01: "):
        merge.merge_date(spark, t.spec, day(1))


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_file_among_two_is_named_without_spark_job_abort_text(spark, tmp_path, unique_name, fmt, damage):
    """ORC reads the files' schemas in a Spark job: a corrupt file failed as "Job aborted due to
    stage failure: Task 0 in stage ... Exception thrown in awaitResult: ; caused by ...". Garbage
    with Spark's .crc file beside it fails Hadoop's checksum; a truncated file without, its format."""
    t = TableFixture(tmp_path, unique_name, source={"format": fmt})
    t.write_base(spark, [(1, "ann", "Oslo")])
    folder = t.increment_dir(day(1))
    spark.createDataFrame([(2, "bob", "Rome"), (3, "cid", "Nice")], t.schema).repartition(2).write.format(fmt).save(
        str(folder)
    )
    good, bad = sorted(folder.glob("part-*"))
    data = bad.read_bytes()
    if damage == "garbage":
        bad.write_bytes(bytes((7 * i + 3) % 256 for i in range(len(data))))
    else:
        for crc in folder.glob(".*.crc"):
            crc.unlink()
        bad.write_bytes(data[: len(data) // 2])
    init_table(spark, t.spec)
    before = snapshot(spark, t)
    with pytest.raises(InputError) as raised:
        merge.merge_date(spark, t.spec, day(1))
    message = str(raised.value)
    assert message.startswith(f"{t.table} 2024-01-01: cannot read file {bad.name} of {folder}: "), message
    reason = message.split(f"{folder}: ", 1)[1]
    assert not any(noise in reason for noise in ("Job aborted", "stage", "awaitResult", "SparkException")), message
    assert len(message.splitlines()) == 1
    assert snapshot(spark, t) == before


def test_spark_analysis_errors_log_no_trace_on_stderr(spark, capfd):
    """PySpark logs an analysis error with its JVM trace before raising it; zipper's sessions
    (not --verbose) keep stderr for zipper's own one-line message."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        spark.range(1).select("no_such_column").collect()
    assert "no_such_column" not in capfd.readouterr().err


def test_a_failed_first_merge_leaves_no_table_so_the_fixed_input_defines_it(spark, tmp_path, unique_name):
    """Without base or columns the first increment types the table; when that merge fails, the
    table it created must go too, or the corrected file would be refused against it."""
    t = TableFixture(tmp_path, unique_name, base=False)
    t.write_increment(spark, day(1), [(1, "ann", "41"), (1, "ann", "42")], schema="id bigint, name string, age string")
    with pytest.raises(InputError, match="more than once"):
        merge.merge_date(spark, t.spec, day(1))
    assert not spark.catalog.tableExists(t.table)
    assert not fs.exists(catalog.default_table_location(spark, t.spec))
    t.write_increment(spark, day(1), [(1, "ann", 41), (2, "bob", 42)], schema="id bigint, name string, age bigint")
    assert merge.merge_date(spark, t.spec, day(1)).counts["new"] == 2
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(t.table).schema][:3] == [
        ("id", "bigint"),
        ("name", "string"),
        ("age", "bigint"),
    ]


def test_a_link_to_a_missing_file_fails_the_day_instead_of_being_skipped(spark, users):
    """Hadoop's listing skips a broken link silently: the day would commit without its rows."""
    init_table(spark, users.spec, day(0))
    before = snapshot(spark, users)
    users.write_increment(spark, day(1), [(2, "bob", "Paris")])
    os.symlink(users.increment_dir(day(1)) / "gone.parquet", users.increment_dir(day(1)) / "part-1.parquet")
    with pytest.raises(InputError, match=r"file .*/part-1\.parquet cannot be read: a link to a missing file"):
        merge.merge_date(spark, users.spec, day(1))
    assert snapshot(spark, users) == before


def test_a_killed_first_merge_leaves_a_table_that_the_corrected_input_types_again(spark, tmp_path, unique_name):
    """A kill skips the cleanup a failure gets: the table stays, typed by the first input. With no
    row committed, the next first merge takes the columns from the input as it is now."""
    t = TableFixture(tmp_path, unique_name, base=False)
    t.write_increment(spark, day(1), [(1, "ann", "41")], schema="id bigint, name string, age string")
    with faults.crash_at("after_write"), pytest.raises(faults.SimulatedCrash):
        merge.merge_date(spark, t.spec, day(1))
    assert dict(catalog.data_columns(spark, t.spec))["age"] == "string"

    t.write_increment(spark, day(1), [(1, "ann", 41), (2, "bob", 42)], schema="id bigint, name string, age bigint")
    lines = []
    assert merge.merge_date(spark, t.spec, day(1), progress=lines.append).counts["new"] == 2
    assert dict(catalog.data_columns(spark, t.spec))["age"] == "bigint"
    assert table_rows(spark, t.table) == [(1, "ann", 41, "2024-01-01", OPEN), (2, "bob", 42, "2024-01-01", OPEN)]
    assert lines == [
        f"{t.table} {day(1)}: the table held no rows and had the columns of an earlier copy of this input"
        " (id bigint, name string, age string); made again with the input's columns"
    ]
    assert check.run_checks(spark, t.spec)["ok"]


def test_a_table_typed_by_its_first_input_keeps_its_columns_once_it_holds_rows(spark, tmp_path, unique_name):
    t = TableFixture(tmp_path, unique_name, base=False)
    t.write_increment(spark, day(1), [(1, "ann", "41")], schema="id bigint, name string, age string")
    merge.merge_date(spark, t.spec, day(1))
    t.write_increment(spark, day(2), [(2, "bob", 42)], schema="id bigint, name string, age bigint")
    with pytest.raises(
        InputError, match=r"column 'age' has type bigint, the table has string; a column cannot change type"
    ):
        merge.merge_date(spark, t.spec, day(2))
    assert dict(catalog.data_columns(spark, t.spec))["age"] == "string"
    assert table_rows(spark, t.table) == [(1, "ann", "41", "2024-01-01", OPEN)]


@pytest.mark.parametrize("column", ["zipper_op", "Zipper_Slot"])
def test_an_input_column_named_like_zippers_own_columns_is_refused(spark, users, column):
    """An upsert column `zipper_op` holding 'delete' was taken for a delete; `zipper_slot` broke the write."""
    init_table(spark, users.spec, day(0))
    before = snapshot(spark, users)
    users.write_increment(
        spark, day(1), [(2, "bob", "Paris", "delete")], schema=f"id bigint, name string, city string, {column} string"
    )
    with pytest.raises(InputError) as refused:
        merge.merge_date(spark, users.spec, day(1))
    assert str(refused.value) == (
        f"{users.table} 2024-01-01: increment {users.increment_dir(day(1))} has columns ['{column.lower()}']: names"
        " starting with 'zipper_' are reserved for zipper's own columns; rename them in the source"
    )
    assert snapshot(spark, users) == before


def test_a_date_whose_versions_would_close_on_open_end_is_refused_and_changes_nothing(spark, tmp_path, unique_name):
    """Its closed partition would be the open partition itself: the publish replaced the open rows."""
    t = TableFixture(tmp_path, unique_name, open_end="2024-01-03")
    t.write_base(spark, [(1, "ann", "Oslo")])
    init_table(spark, t.spec, day(0))
    for n, city in ((1, "Rome"), (2, "Nice")):
        t.write_increment(spark, day(n), [(1, "ann", city)])
        merge.merge_date(spark, t.spec, day(n))
    before = snapshot(spark, t)
    t.write_increment(spark, day(3), [(1, "ann", "Bern")])
    with pytest.raises(
        StateError,
        match=r"2024-01-03: date would close versions on 2024-01-03, not before open_end"
        r" 2024-01-03: the last run date is 2024-01-02",
    ):
        merge.merge_date(spark, t.spec, day(3))
    assert snapshot(spark, t) == before
    assert (1, "ann", "Nice", "2024-01-02", "2024-01-03") in table_rows(spark, t.table)  # the open row
