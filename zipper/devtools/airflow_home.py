"""Set up an AIRFLOW_HOME for this package: render airflow.cfg.template, migrate the metadata
database, create the merge pool.

    python -m zipper.devtools.airflow_home [--airflow-home DIR] [--force]

Default AIRFLOW_HOME: the environment's, else `<repo>/airflow_home` (ignored by git). Runs the
`airflow` command of the Python it runs with, so .venv and .venv-airflow2 each get theirs."""

from __future__ import annotations

import argparse
import configparser
import os
import secrets
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import jinja2

from zipper.airflow.environment import DEFAULT_POOL, REPO, merge_pool_slots, python_bin
from zipper.devtools.local_airflow import free_ports
from zipper.runtime import metastore

TEMPLATE = REPO / "airflow.cfg.template"
DEFAULT_HOME = REPO / "airflow_home"
DEFAULT_PORT = 8080
POOL_DESCRIPTION = (
    "zipper merges, reruns and corrections, clients of the warehouse's Spark server: as many at once as the slots"
    " (default: the server's cores, ZIPPER_SPARK_CORES, 2)."
)


def airflow_home(explicit: str | os.PathLike | None = None) -> Path:
    return Path(explicit or os.environ.get("AIRFLOW_HOME") or DEFAULT_HOME).expanduser().resolve()


def airflow_major() -> int:
    return int(version("apache-airflow").split(".")[0])


def render_config(home: Path, api_port: int = DEFAULT_PORT) -> str:
    """airflow.cfg for `home`; the log servers get ports free at set-up (not Airflow's 8793 and 8794, which
    another Airflow on the machine may hold), recorded in the file."""
    airflow3 = airflow_major() >= 3
    worker_log_port, trigger_log_port = free_ports(2, taken=(api_port,))
    return jinja2.Template(TEMPLATE.read_text(), keep_trailing_newline=True).render(
        repo=REPO,
        airflow_home=home,
        airflow3=airflow3,
        executor="LocalExecutor" if airflow3 else "SequentialExecutor",
        api_port=api_port,
        worker_log_port=worker_log_port,
        trigger_log_port=trigger_log_port,
        jwt_secret=secrets.token_urlsafe(32),
    )


def airflow_env(home: Path, **zipper_env: str) -> dict[str, str]:
    """The environment for `airflow` commands: this home, this venv's bin first on PATH (Airflow
    2.11's backfill starts `airflow tasks run` subprocesses), and ZIPPER_* settings."""
    env = dict(os.environ)
    env["AIRFLOW_HOME"] = str(home)
    env["PATH"] = f"{python_bin()}{os.pathsep}{env.get('PATH', '')}"
    env.update({k: str(v) for k, v in zipper_env.items()})
    return env


def airflow(home: Path, *args: str, check: bool = True, env: dict | None = None, timeout: float = 600):
    return subprocess.run(
        [str(python_bin() / "airflow"), *args],
        env=env or airflow_env(home),
        check=check,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pool_slots(env: dict | None = None) -> int:
    """The merge pool's slots, the warehouse's Spark server's cores in `env` (default: this process's
    environment); a ZIPPER_METASTORE there the tasks would refuse is refused here, before any is created."""
    metastore.mode(env)
    return merge_pool_slots(env)


def ensure_pool(home: Path, env: dict | None = None, slots: int | None = None) -> None:
    """Create the merge pool unless it exists (a changed slot count is kept); `slots` default:
    `pool_slots(env)`, the Spark server's cores."""
    if airflow(home, "pools", "get", DEFAULT_POOL, check=False, env=env).returncode != 0:
        count = pool_slots(env) if slots is None else slots
        airflow(home, "pools", "set", DEFAULT_POOL, str(count), POOL_DESCRIPTION, env=env)


def setup(home: Path, force: bool = False, api_port: int = DEFAULT_PORT, env: dict | None = None) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    config = home / "airflow.cfg"
    if force or not config.exists():
        config.write_text(render_config(home, api_port))
    airflow(home, "db", "migrate", env=env)
    ensure_pool(home, env=env)
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zipper.devtools.airflow_home", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("--airflow-home", help="default: $AIRFLOW_HOME, else <repo>/airflow_home")
    parser.add_argument("--force", action="store_true", help="render airflow.cfg again even if it exists")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="API server / webserver port")
    args = parser.parse_args(argv)
    home = airflow_home(args.airflow_home)
    try:
        config = setup(home, args.force, args.port)
    except subprocess.CalledProcessError as exc:
        print(f"zipper: error: `airflow {' '.join(exc.cmd[1:])}` failed:\n{exc.stderr[-2000:]}", file=sys.stderr)
        return 1
    rendered = configparser.ConfigParser(interpolation=None)
    rendered.read(config)
    ports = ", ".join(
        f"{key} {rendered.get('logging', key, fallback='default')}"
        for key in ("worker_log_server_port", "trigger_log_server_port")
    )
    print(f"AIRFLOW_HOME={home} (config {config}; pool {DEFAULT_POOL}, {pool_slots()} slots if new; {ports})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
