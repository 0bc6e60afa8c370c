"""The `zipper` command end to end, in subprocesses, read back with a plain Hive session."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys

import pytest

from tests import support
from tests.cli.helpers import BIN, REPO, day, env_for, make_spec, probe, wait_for_jvms, write_parquet, zipper
from zipper.core.reports import REPORT_PREFIX

pytestmark = pytest.mark.subprocess
OPEN = "9999-12-31"


def assert_one_line_error(result, *fragments):
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("zipper: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.stderr and "\tat " not in result.stderr


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    make_spec(root)
    write_parquet(root / "data" / "base", [(1, "ann", "Oslo"), (2, "bob", "Rome")])
    write_parquet(root / "data" / "incr" / f"ds={day(1)}", [(2, "bob", "Paris"), (3, "cid", None)])
    write_parquet(root / "data" / "incr" / f"ds={day(2)}", [(1, "ann", "Oslo"), (1, "ann", "Bergen")])
    return root


@pytest.fixture(scope="module")
def merged(workspace):
    """The shared table as the tests that read it expect it: initialized and 2024-01-01 merged,
    by whichever of them runs first (alone, too). A test that changes the table puts it back;
    test_init_merge_inspect_and_errors checks what these two commands said."""
    init = zipper(workspace, "init", "dim")
    merge = zipper(workspace, "merge", "dim", "--ds", day(1))
    assert init.returncode == 0 and merge.returncode == 0, init.stderr + merge.stderr
    return {"init": init, "merge": merge}


def test_spec_and_argument_errors_need_no_spark(workspace, tmp_path):
    bad = tmp_path / "specs"
    bad.mkdir()
    (bad / "dim.yaml").write_text(
        "name: dim\ntable: dw.dim\nkeys: [id]\nsource: {path: /x}\nstart_date: '2024-01-01'\nflavour: x\n"
    )
    result = zipper(workspace, "merge", "dim", "--ds", day(1), "--specs", str(bad))
    assert_one_line_error(result, str(bad / "dim.yaml"), "key 'flavour': unknown key")

    result = zipper(workspace, "merge", "dim", "--ds", "2024-02-30")
    assert_one_line_error(result, "dw.dim", "--ds '2024-02-30' is not a date")

    result = zipper(workspace, "merge", "nosuch", "--ds", day(1))
    assert_one_line_error(result, "no spec named 'nosuch'")

    # argparse's own usage error; a negative count listed every commit but the oldest
    result = zipper(workspace, "status", "dim", "--recent", "-1")
    assert result.returncode == 2 and "argument --recent: '-1': commits cannot be negative" in result.stderr


def test_init_merge_inspect_and_errors(workspace, merged):
    result = merged["init"]
    assert re.fullmatch(r"dw\.dim 2023-12-31: table created, base loaded: 2 open rows; [\d.]+ s\n", result.stdout)
    assert result.stderr == ""

    result = merged["merge"]
    assert re.fullmatch(
        r"dw\.dim 2024-01-01: 1 new, 1 changed, 0 re-sent unchanged, 1 closed; 3 open rows after; [\d.]+ s\n",
        result.stdout,
    )

    # day 2 repeats key 1: refused with the key named, nothing committed
    result = zipper(workspace, "merge", "dim", "--ds", day(2))
    assert_one_line_error(result, "dw.dim 2024-01-02", "1 key ['id'] more than once (2 rows) in part-", "ds=2024-01-02")

    # a gap: day 3 before day 2
    result = zipper(workspace, "merge", "dim", "--ds", day(3), "--verbose")
    assert result.returncode == 1 and "Traceback" in result.stderr
    assert "merge the missing dates first: 2024-01-02" in result.stderr

    result = zipper(workspace, "status", "dim")
    status = json.loads(result.stdout)
    assert status["last_committed"] == day(1) and status["open_rows"] == 3 and status["closed_rows"] == 1
    assert status["recent_commits"][0]["counts"]["new"] == 1

    result = zipper(workspace, "history", "dim", "--key", "id=2", "--format", "json")
    history = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(h["city"], h["begin_dt"], h["end_dt"]) for h in history] == [
        ("Rome", "2023-12-31", day(1)),
        ("Paris", day(1), OPEN),
    ]

    out = workspace / "slice.csv"
    result = zipper(workspace, "slice", "dim", "--as-of", "2023-12-31", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert list(csv.reader(io.StringIO(out.read_text()))) == [
        ["id", "name", "city", "begin_dt", "end_dt"],
        ["1", "ann", "Oslo", "2023-12-31", OPEN],
        ["2", "bob", "Rome", "2023-12-31", day(1)],
    ]

    # stdout a pipe its reader closed (`zipper slice ... | head -0`): no error line, SIGPIPE's exit
    read_end, write_end = os.pipe()
    os.close(read_end)
    piped = subprocess.run(
        [str(BIN / "zipper"), "slice", "dim", "--as-of", "2023-12-31"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(workspace),
        cwd=workspace,
        timeout=300,
    )
    os.close(write_end)
    wait_for_jvms(workspace)
    assert piped.returncode == 141 and "zipper: error" not in piped.stderr and "Traceback" not in piped.stderr, (
        piped.stderr
    )

    result = zipper(workspace, "check", "dim")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True

    # read back with a plain Hive session: exactly the rows the rules give
    seen = probe(workspace, "dw.dim")["before"]
    assert seen["rows"] == [
        ["1", "ann", "Oslo", "2023-12-31", OPEN],
        ["2", "bob", "Paris", day(1), OPEN],
        ["2", "bob", "Rome", "2023-12-31", day(1)],
        ["3", "cid", "", day(1), OPEN],
    ]
    assert seen["partitions"] == [day(1), OPEN]


def test_adopt_takes_over_a_zipper_history_in_one_line_or_refuses_in_one_line(workspace, merged):
    """`zipper adopt` of the shared table (an SCD2 table like any other) as a new one: too early a
    --through refused naming the keys, a dry run that makes nothing, then the adoption."""
    specs = make_spec(
        workspace / "adopting",
        "dim_adopted",
        start_date=day(2),
        adopt={"table": "dw.dim", "begin_column": "begin_dt", "end_column": "end_dt", "end_style": "exclusive"},
    )
    early = zipper(workspace, "adopt", "dim_adopted", "--through", "2023-12-31", "--specs", str(specs))
    assert_one_line_error(
        early,
        "dw.dim_adopted 2023-12-31: adopted table dw.dim, keys ['id']: 2 keys with a version that begins or ends"
        " after --through: 2, 3; nothing was changed",
    )
    dry = zipper(workspace, "adopt", "dim_adopted", "--through", day(1), "--dry-run", "--specs", str(specs))
    assert re.fullmatch(
        r"dw\.dim_adopted 2024-01-01: dry run: would adopt 3 open rows, 1 closed row in 1 history partition"
        r" from dw\.dim; nothing was written; [\d.]+ s\n",
        dry.stdout,
    ), dry.stdout + dry.stderr
    done = zipper(workspace, "adopt", "dim_adopted", "--through", day(1), "--specs", str(specs))
    assert re.fullmatch(
        r"dw\.dim_adopted 2024-01-01: adopted 3 open rows, 1 closed row in 1 history partition from dw\.dim;"
        r" committed through 2024-01-01; [\d.]+ s\n",
        done.stdout,
    ), done.stdout + done.stderr
    history = zipper(workspace, "history", "dim_adopted", "--key", "id=2", "--format", "json", "--specs", str(specs))
    assert [(h["city"], h["begin_dt"], h["end_dt"]) for h in map(json.loads, history.stdout.splitlines())] == [
        ("Rome", "2023-12-31", day(1)),
        ("Paris", day(1), OPEN),
    ], history.stderr


def test_a_slice_that_cannot_read_the_table_names_the_date_and_keeps_out(workspace, merged):
    """A Spark failure of `slice` named the table but not its --as-of date, and truncated --out."""
    status = json.loads(zipper(workspace, "status", "dim").stdout)
    closed = next(p for p in status["partitions"] if p["end"] == day(1))["location"].removeprefix("file:")
    (part,) = [p for p in os.scandir(closed) if p.name.endswith(".parquet")]
    saved = open(part.path, "rb").read()
    out = workspace / "kept.csv"
    out.write_text("yesterday\n")
    try:
        open(part.path, "wb").write(b"garbage")
        result = zipper(workspace, "slice", "dim", "--as-of", "2023-12-31", "--out", str(out))
    finally:
        open(part.path, "wb").write(saved)
    assert_one_line_error(result, "dw.dim 2023-12-31: cannot read file ", "it is not a Parquet file")
    assert out.read_text() == "yesterday\n" and sorted(os.listdir(workspace)).count("kept.csv") == 1
    assert not [name for name in os.listdir(workspace) if name.endswith(".partial")]


def test_vacuum_names_what_it_removes_and_keeps_what_partitions_use(workspace, merged):
    """The summary said only how many directories went (`would remove 1 directories`), so a dry
    run previewed nothing an on-call engineer could check."""
    versions = workspace / "warehouse" / "dw.db" / "dim" / "versions"
    stale = versions / "20200101T000000.000000Z-0ld0ld"
    (stale / "zipper_slot=open").mkdir(parents=True)
    (stale / "zipper_slot=open" / "part-0.parquet").write_bytes(b"12345")
    live_before = sorted(p["location"] for p in json.loads(zipper(workspace, "status", "dim").stdout)["partitions"])
    for flags, verb in ((["--dry-run"], "would remove"), ([], "removed")):
        result = zipper(workspace, "vacuum", "dim", *flags)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"dw.dim: {verb} {stale} (5 bytes)"  # a local path as typed, not a file: URI
        assert lines[-1].startswith(f"dw.dim: {verb} 1 directory (5 bytes), kept ") and len(lines) == 2
    assert not stale.exists()
    live_after = sorted(p["location"] for p in json.loads(zipper(workspace, "status", "dim").stdout)["partitions"])
    assert live_after == live_before and all(os.path.isdir(p.removeprefix("file:")) for p in live_after)


def test_a_slice_makes_the_folders_of_a_new_out_whatever_the_format(workspace, merged, tmp_path):
    """Parquet (written by Spark) made a missing --out folder; CSV and JSON failed with `No such
    file or directory`."""
    for fmt in ("csv", "parquet"):
        out = tmp_path / fmt / "new" / f"slice.{fmt}"
        result = zipper(workspace, "slice", "dim", "--as-of", "2023-12-31", "--format", fmt, "--out", str(out))
        assert result.returncode == 0 and result.stdout == "", result.stderr
    assert (tmp_path / "csv" / "new" / "slice.csv").read_text().splitlines()[0] == "id,name,city,begin_dt,end_dt"
    assert list((tmp_path / "parquet" / "new" / "slice.parquet").glob("part-*.parquet"))

    # written by Python, a CSV cannot go to remote storage: refused, not made as local folders `hdfs:/nn`
    result = zipper(workspace, "slice", "dim", "--as-of", "2023-12-31", "--out", "hdfs://nn/new/slice.csv")
    assert_one_line_error(result, "--out hdfs://nn/new/slice.csv: CSV and JSON are written to a local file")
    assert not (workspace / "hdfs:").exists()


def test_reads_name_the_warehouse_and_check_key_values(workspace, merged, tmp_path):
    elsewhere = tmp_path / "typo"
    result = zipper(workspace, "status", "dim", "--warehouse", str(elsewhere))
    assert_one_line_error(result, "dw.dim", f"no metastore at {elsewhere}/metastore_db", "check --warehouse")
    assert not (elsewhere / "metastore_db").exists()  # a read creates no metastore of its own
    result = zipper(workspace, "merge", "dim", "--ds", day(3), "--warehouse", str(elsewhere))
    assert_one_line_error(
        result,
        "dw.dim",
        "not initialized",
        f"this command created a new, empty metastore at {elsewhere}/metastore_db: check --warehouse",
    )

    result = zipper(workspace, "history", "dim", "--key", "id=abc")
    assert_one_line_error(result, "dw.dim", "--key values are not of the key columns' types: id='abc' (bigint)")
    result = zipper(workspace, "history", "dim", "--key", "id=01")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split()[:3] == ["1", "ann", "Oslo"]
    assert result.stdout.strip().endswith("(1 version)")


def test_profile_says_where_the_runs_time_went(workspace, merged):
    """A committed date's merge is a no-op told over thrift: the profile counts its metastore calls, no Spark."""
    result = zipper(workspace, "merge", "dim", "--ds", day(1), "--profile", "--json-report")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"profile of zipper merge dim --ds {day(1)}: "), result.stderr
    assert re.fullmatch(r"  metastore calls +[1-9]\d* +[\d.]+ s", lines[1]), lines
    assert not any("spark executions" in line for line in lines), lines
    report = json.loads(
        next(x for x in result.stdout.splitlines() if x.startswith(REPORT_PREFIX))[len(REPORT_PREFIX) :]
    )
    assert report["action"] == "noop" and report["profile"]["metastore calls"]["calls"] >= 1
    assert report["profile"]["spark_executions"] == []


def test_history_of_a_key_the_table_never_held_says_so(workspace, merged):
    """It printed an empty table (or a lone CSV header) and exited 0, as if the key had no columns set."""
    result = zipper(workspace, "history", "dim", "--key", "id=99", "--format", "csv")
    assert result.returncode == 4 and result.stdout == ""
    assert result.stderr == "zipper: dw.dim: no version of id=99: the table never held this key\n"
    result = zipper(workspace, "history", "dim", "--key", "town=Oslo")
    assert_one_line_error(result, "dw.dim", "--key 'town' is not a key column; keys are ['id']")
    assert result.returncode == 1


def test_a_slice_to_dev_stdout_appends_where_the_shell_says(workspace, merged, tmp_path):
    """`zipper slice ... --out /dev/stdout >> log` replaced the log: the slice was renamed onto
    the file /dev/stdout links to."""
    log = tmp_path / "slices.csv"
    log.write_text("earlier\n")
    with open(log, "a") as appended:
        result = subprocess.run(
            [str(BIN / "zipper"), "slice", "dim", "--as-of", "2023-12-31", "--out", "/dev/stdout"],
            stdout=appended,
            stderr=subprocess.PIPE,
            text=True,
            env=env_for(workspace),
            cwd=workspace,
            timeout=300,
        )
    wait_for_jvms(workspace)
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == [
        "earlier",
        "id,name,city,begin_dt,end_dt",
        f"1,ann,Oslo,2023-12-31,{OPEN}",
        f"2,bob,Rome,2023-12-31,{day(1)}",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slices.csv"]


def test_a_stdout_that_cannot_encode_a_value(workspace):
    """With PYTHONIOENCODING=ascii a slice stopped half-way through its rows with Python's
    UnicodeEncodeError; the table shows what it cannot encode as escapes. NULL is apart from `NULL`."""
    schema = "id bigint, name string, city string, note string"
    support.write_parquet(workspace / "data" / "intl_base", [(1, "José", None, "NULL"), (2, "ann", "Oslo", "")], schema)
    make_spec(
        workspace,
        "intl",
        base={"format": "parquet", "path": str(workspace / "data" / "intl_base")},
        source={"mode": "upsert", "format": "parquet", "path": str(workspace / "data" / "intl_incr" / "ds={{ ds }}")},
    )
    assert zipper(workspace, "init", "intl").returncode == 0

    result = zipper(workspace, "slice", "intl", "--as-of", "2023-12-31", PYTHONIOENCODING="ascii")
    assert_one_line_error(
        result,
        "dw.intl: stdout's encoding (ascii) cannot write '\\xe9' of column name;"
        " nothing was written: set PYTHONIOENCODING=utf-8",
    )
    assert result.stdout == ""

    result = zipper(workspace, "history", "intl", "--key", "id=1", PYTHONIOENCODING="ascii")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split() == ["1", "Jos\\xe9", "\\N", "NULL", "2023-12-31", OPEN]


def spark_submit(workspace, *job_args: str) -> subprocess.CompletedProcess:
    """spark_jobs/zipper_job.py under spark-submit, as the Airflow operator runs it on the embedded default."""
    from zipper.runtime.settings import SessionSettings, spark_submit_conf

    settings = SessionSettings(warehouse=str(workspace / "warehouse"))
    conf = [arg for key, value in spark_submit_conf(settings).items() for arg in ("--conf", f"{key}={value}")]
    result = subprocess.run(
        [
            str(BIN / "spark-submit"),
            "--master",
            "local[2]",
            *conf,
            str(REPO / "spark_jobs" / "zipper_job.py"),
            *job_args,
        ],
        env=env_for(workspace, SPARK_LOCAL_IP="127.0.0.1"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workspace,
    )
    wait_for_jvms(workspace)
    return result


def test_spark_submit_entry_point_runs_the_same_code(workspace, merged):
    result = spark_submit(workspace, "status", "dim")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout[result.stdout.index("{") :])["table"] == "dw.dim"


# The JVM's own notice, printed as it starts (Spark's launcher adds the module), before any zipper code runs.
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


def test_a_corrupt_file_under_spark_submit_leaves_one_error_line_in_the_task_log(workspace, merged):
    """Under spark-submit (the Airflow task) the JVM's stderr is the task log: a corrupt input
    file put about 90 lines of Executor and TaskSetManager traces there before zipper's line."""
    corrupt = workspace / "data" / "incr" / f"ds={day(2)}" / "part-corrupt.parquet"
    logs = workspace / "warehouse" / "logs"
    before = set(logs.glob("spark-*.log"))
    corrupt.write_bytes(b"garbage, not a Parquet file")
    try:
        quiet = spark_submit(workspace, "merge", "dim", "--ds", day(2), "--json-report")
        (log,) = set(logs.glob("spark-*.log")) - before
        verbose = spark_submit(workspace, "merge", "dim", "--ds", day(2), "--verbose")
    finally:
        corrupt.unlink()
    # the task log: spark-submit's stdout and stderr (the job's Python writes through the JVM's stdout)
    task_log = quiet.stdout.splitlines() + quiet.stderr.splitlines()
    assert quiet.returncode == 1
    lines = [line for line in task_log if line != JVM_NOTICE and not line.startswith(REPORT_PREFIX)]
    assert len(lines) == 1, "\n".join(task_log)
    assert lines[0].startswith(f"zipper: error: dw.dim {day(2)}: cannot read file part-corrupt.parquet of ")
    assert lines[0].endswith("it is not a Parquet file. Expected magic number at tail, but found [102, 105, 108, 101]")
    # the traces are in the driver's log file, and in the task log with --verbose
    assert "ERROR Executor: Exception in task" in log.read_text() and "\n\tat org.apache." in log.read_text()
    assert verbose.returncode == 1 and "ERROR Executor: Exception in task" in verbose.stderr
    assert "\n\tat org.apache." in verbose.stderr and "Traceback" in verbose.stdout
    assert json.loads(zipper(workspace, "status", "dim").stdout)["last_committed"] == day(1)


def test_metastore_in_use_is_a_clear_one_line_error(workspace):
    """The warehouse's Derby database held by another Spark driver with Derby inside (an analyst's)."""
    zipper(workspace, "metastore", "stop")  # the server holds the database while it runs
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; sys.path.insert(0, sys.argv[1]); from table_probe import plain_session;"
            " s = plain_session(sys.argv[2], embedded=True); s.sql('SHOW DATABASES').collect();"
            " print('READY', flush=True); time.sleep(600)",
            str(REPO / "tests" / "cli"),
            str(workspace / "warehouse"),
        ],
        env=env_for(workspace),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=workspace,
    )
    try:
        assert holder.stdout.readline().strip() == "READY"
        # The default: the server cannot open the database, and says who has it
        served = zipper(workspace, "status", "dim", wait=False)
        assert_one_line_error(
            served,
            "dw.dim: the metastore server of",
            "metastore_db: another process has it open (a Spark driver with Derby inside",
        )
    finally:
        holder.kill()
        holder.wait()
        wait_for_jvms(workspace)
