"""Debian's Chromium for the browser tests, driven by Playwright (its Python package, no browser
download): installed by the test set-up when it is missing and we are root, else the tests are
skipped with the command that installs it."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import urllib.request
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


def airflow_token(url: str, home: Path) -> str:
    """A JWT of Airflow's API server at `url` for its admin, whose password Airflow's simple auth
    manager generated in `home`: what the UI keeps in its `_token` cookie."""
    passwords = json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())
    request = urllib.request.Request(
        url + "/auth/token",
        data=json.dumps({"username": "admin", "password": passwords["admin"]}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["access_token"]


def attention_shown(url: str, home: Path, table: str) -> str:
    """The Zipper tables page's Attention cell of `table`, as Chromium shows it to Airflow's admin."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), args=ARGS, headless=True)
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "_token", "value": airflow_token(url, home), "url": url}])
            page = context.new_page()
            page.set_default_timeout(120_000)
            page.goto(url + "/zipper/tables")
            row = page.locator(f"#tables tbody tr[data-table='{table}']")
            row.wait_for()
            return row.locator("td").nth(7).inner_text()
        finally:
            browser.close()
