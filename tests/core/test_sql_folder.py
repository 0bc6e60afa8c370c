"""The SQL templates live once, in the top-level sql/ folder: the code reads them there in a checkout,
and setup.cfg installs them as zipper/sql/ (its package list must then name every package)."""

from __future__ import annotations

import configparser
from pathlib import Path

from setuptools import find_packages

from zipper.core import sqltemplates

REPO = Path(__file__).resolve().parents[2]


def test_the_checkout_reads_the_top_level_sql_folder():
    assert sqltemplates.sql_dir() == REPO / "sql"
    assert not (REPO / "zipper" / "sql").exists()
    assert "check/null_keys.sql" in sqltemplates.template_names("check")
    assert "SELECT" in sqltemplates.render("current.sql", table="dw.t", end_column="end_dt", open_end="9999-12-31")


def test_setup_cfg_lists_every_package_and_maps_zipper_sql_to_the_sql_folder():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = set(find_packages(str(REPO), include=["zipper", "zipper.*"]))
    assert listed == found | {"zipper.sql", "zipper.sql.check"}
    assert config["options"]["package_dir"].split() == ["zipper.sql", "=", "sql"]
