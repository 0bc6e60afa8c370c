"""Connection arguments for the embedded Airflow's SQLite metadata database.

SQLite has one writer at a time. The scheduler, the dag-processor, the API server and CLI commands
such as `airflow backfill create` share the file, and Python's sqlite3 gives up on a held lock
after 5 s ("database is locked"), which a busy two-core machine exceeds. With these, a writer
waits up to a minute instead. `airflow.cfg.template` points `[database]
sql_alchemy_connect_args` (and `_async` on Airflow 3) here; they are for SQLite only."""

SQLITE_BUSY_TIMEOUT_SECONDS = 60.0

# Two dicts: Airflow adds its own keys to the synchronous one.
CONNECT_ARGS = {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
ASYNC_CONNECT_ARGS = {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
