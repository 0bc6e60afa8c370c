"""A run's work on the warehouse's Spark server: tagged, and stopped when the run was killed.

A Spark Connect client that dies mid-query does not stop its query: the server runs it on, with
no one to read its result, until it notices that no client came back for it (about 50 s with
runtime.spark_server's settings; 7 minutes with Spark's own). A merge's write running on after
its run was killed would race the next run of the table, which clears the killed run's files.

So a writing run tags its session's operations with a tag naming the table and its process, and
notes the session and the tag in the table's lock (runtime.locks). The next run of the table,
once it holds the lock, finds the killed run's note and stops that work at once: it joins the
killed run's session on the server (a session is named by its id; the token is the same), and
interrupts the operations carrying the tag before releasing the session. A killed run's session
that the server no longer has is nothing to stop."""

from __future__ import annotations

import contextlib
import os
import uuid

from zipper.runtime.session import give_up_soon_on_a_lost_server, is_connect, server_url
from zipper.runtime.settings import SessionSettings

SESSION_FIELD = "spark_session"  # the lock record's fields a client run adds
TAG_FIELD = "spark_tag"


def run_tag(table: str) -> str:
    """The tag of this process's operations on `table` (a tag may not hold a comma)."""
    return f"zipper:{table}:pid={os.getpid()}".replace(",", "_")


def tag_run(spark, table: str) -> dict[str, str]:
    """Tag the operations `spark` runs from now on as this run's on `table`: the fields to note in
    the table's lock (none for a driver in this process, whose work ends with it)."""
    if not is_connect(spark):
        return {}
    tag = run_tag(table)
    spark.addTag(tag)
    return {SESSION_FIELD: spark.session_id, TAG_FIELD: tag}


def stop_killed_run(settings: SessionSettings, killed: dict) -> list[str]:
    """Interrupt what a killed run (its lock record) left running on the server, and release its
    session: the ids of the operations interrupted (none when its session is gone)."""
    session_id, tag = killed.get(SESSION_FIELD), killed.get(TAG_FIELD)
    if not session_id or not tag:
        return []  # a driver's run, or one killed before its session opened
    try:
        uuid.UUID(str(session_id))
    except ValueError:
        return []
    from pyspark.sql.connect.session import SparkSession  # on use: a client's import

    url = server_url(settings)
    if url is None:
        return []  # no server: nothing of a killed run can be running on one
    url += f";session_id={session_id}" if "/;" in url else f"/;session_id={session_id}"
    # not through the builder, which would make this session the process's default and active one
    session = SparkSession(connection=url)
    give_up_soon_on_a_lost_server(session)
    try:
        return list(session.interruptTag(tag))
    except Exception:
        return []  # the server closed that session already: nothing of it runs
    finally:
        with contextlib.suppress(Exception):
            session.stop()  # releases the session on the server: its cached data goes too
