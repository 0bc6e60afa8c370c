"""A private PostgreSQL server for tests: Debian's packages, installed when missing (as root).

The server is a cluster of its own (`initdb`) in a temporary folder, listening on a free loopback
port only, with a database and a user with a password, as a metastore's database would be. It
runs as the `postgres` system user when the tests run as root (PostgreSQL refuses root), and is
stopped by its process id at the end: nothing is left running, and the folder is removed."""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from zipper.runtime import metastore

PACKAGES = ("postgresql", "libpostgresql-jdbc-java")
INSTALL = f"apt-get update && apt-get install -y {' '.join(PACKAGES)}"
SYSTEM_USER = "postgres"
HOST = "127.0.0.1"
READY_S = 120  # bounds the wait for a start; a start takes a second or two
STOP_S = 60


def server_binaries() -> Path | None:
    """The folder of `initdb` and `postgres`: Debian's newest version, else whichever is on PATH."""
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    found = debian[-1] if debian else shutil.which("initdb")
    if found is None:
        return None
    folder = Path(found).resolve().parent
    return folder if (folder / "postgres").is_file() else None


def jdbc_jar() -> Path:
    return Path(os.environ.get(metastore.JDBC_JAR_ENV) or metastore.DEBIAN_POSTGRESQL_JAR)


@functools.cache
def _installed() -> bool:
    """apt-get update and install, once per test run (the package lists are fetched once)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait_for_lock = ["-o", "DPkg::Lock::Timeout=600"]  # another apt-get on the machine: wait for it, bounded
    for command in (["apt-get", *wait_for_lock, "update"], ["apt-get", *wait_for_lock, "install", "-y", *PACKAGES]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return True


def require_postgresql() -> Path:
    """The server binaries' folder, with the JDBC driver present: installed first when we are root
    and they are missing, else the test is skipped with the command that installs them."""
    if server_binaries() is None or not jdbc_jar().is_file():
        if os.geteuid() != 0:
            pytest.skip(f"PostgreSQL or its JDBC driver is missing: as root, run `{INSTALL}`")
        _installed()
    binaries = server_binaries()
    if binaries is None or not jdbc_jar().is_file():
        pytest.fail(f"after `{INSTALL}`: no initdb/postgres ({binaries}) or no JDBC driver at {jdbc_jar()}")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            pytest.skip(f"PostgreSQL will not run as root and there is no `{SYSTEM_USER}` user: run `{INSTALL}`")
    return binaries


@dataclass(frozen=True)
class Postgres:
    """A running server: where it listens, its superuser's and the test user's credentials."""

    port: int
    database: str
    user: str
    password: str
    superuser_password: str
    binaries: Path

    def url(self) -> str:
        """As ZIPPER_METASTORE_DB takes it; the password percent-encoded, as a URL needs."""
        return f"postgresql://{self.user}:{quote(self.password, safe='')}@{HOST}:{self.port}/{self.database}"

    def psql(self, sql: str, database: str | None = None, as_superuser: bool = False) -> list[list[str]]:
        """Rows of `sql` (unaligned, one per line, fields split at |), run with psql over TCP."""
        user, password = (SYSTEM_USER, self.superuser_password) if as_superuser else (self.user, self.password)
        done = subprocess.run(
            [
                str(self.binaries / "psql"),
                "-h",
                HOST,
                "-p",
                str(self.port),
                "-U",
                user,
                "-d",
                database or self.database,
                "-v",
                "ON_ERROR_STOP=1",
                "-A",
                "-t",
                "-F",
                "|",
                "-c",
                sql,
            ],
            env={**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"psql {sql!r}: {done.stderr}"
        return [line.split("|") for line in done.stdout.splitlines() if line]


def _as_owner() -> dict:
    """Popen arguments that run a command as the `postgres` user when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": SYSTEM_USER, "group": pwd.getpwnam(SYSTEM_USER).pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running(database: str = "metastore", user: str = "hive", password: str = "s3cret p@ss:/%") -> Iterator[Postgres]:
    """A new cluster, started, with `database` owned by `user`; stopped and removed at the end."""
    binaries = require_postgresql()
    # Not under pytest's tmp_path: that is root's alone (0700), and the server runs as `postgres`.
    folder = Path(tempfile.mkdtemp(prefix="zipper-postgres-"))
    process = None
    try:
        superuser_password = "superuser-" + os.urandom(8).hex()
        (folder / "pwfile").write_text(superuser_password + "\n")
        data = folder / "data"
        if os.geteuid() == 0:
            shutil.chown(folder, SYSTEM_USER, SYSTEM_USER)
            shutil.chown(folder / "pwfile", SYSTEM_USER, SYSTEM_USER)
        initdb = [str(binaries / "initdb"), "-D", str(data), "-U", SYSTEM_USER, f"--pwfile={folder / 'pwfile'}"]
        initdb += ["--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"]
        done = subprocess.run(initdb, cwd=folder, capture_output=True, text=True, timeout=600, **_as_owner())
        assert done.returncode == 0, f"initdb: {done.stderr[-2000:]}"
        port = _free_port()
        with open(folder / "server.log", "ab") as log:
            process = subprocess.Popen(
                [
                    str(binaries / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(port),
                    "-c",
                    f"listen_addresses={HOST}",
                    "-c",
                    "unix_socket_directories=",  # TCP only: no socket in /var/run/postgresql
                    "-c",
                    "fsync=off",  # a throw-away cluster
                ],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **_as_owner(),
            )
        server = Postgres(port, database, user, password, superuser_password, binaries)
        _wait_until_ready(server, process, folder / "server.log")
        literal = password.replace("'", "''")
        server.psql(f"CREATE USER {user} WITH PASSWORD '{literal}'", "postgres", as_superuser=True)
        server.psql(f"CREATE DATABASE {database} OWNER {user}", "postgres", as_superuser=True)
        yield server
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_until_ready(server: Postgres, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"postgres exited ({process.returncode}): {log.read_text(errors='replace')[-2000:]}")
        ready = subprocess.run(
            [str(server.binaries / "pg_isready"), "-q", "-h", HOST, "-p", str(server.port)], timeout=60
        )
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"postgres did not accept connections: {log.read_text(errors='replace')[-2000:]}")


def _stop(process: subprocess.Popen) -> None:
    """By its process id: a fast shutdown (SIGINT: clients are disconnected), else SIGQUIT, else SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, sig)
        try:
            process.wait(timeout=STOP_S)
            return
        except subprocess.TimeoutExpired:
            continue
