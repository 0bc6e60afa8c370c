"""Debian's Chromium for the browser tests, driven by Playwright (its Python package, no browser
download): installed by the test set-up when it is missing and we are root, else the tests are
skipped with the command that installs it."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = "chromium"
INSTALL = f"apt-get update && apt-get install -y {PACKAGE}"
# As root, headless, and quiet on a closed network: without the background-networking flags
# Chromium keeps dialling Google's hosts, which this machine refuses.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> Path | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return Path(found) if found else None


@functools.cache
def _installed() -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait_for_lock = ["-o", "DPkg::Lock::Timeout=600"]
    for command in (["apt-get", *wait_for_lock, "update"], ["apt-get", *wait_for_lock, "install", "-y", PACKAGE]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return True


def require_chromium() -> Path:
    if chromium() is None:
        if os.geteuid() != 0:
            pytest.skip(f"Chromium is missing: as root, run `{INSTALL}`")
        _installed()
    found = chromium()
    if found is None:
        pytest.fail(f"after `{INSTALL}`: no chromium on PATH")
    return found
