"""The correction model tests (tests/jobs/test_correct_model.py) on the options whose rules differ
most: a snapshot table that keeps tombstones, an upsert table with untracked columns, and one with
`source.updated_at` (validity columns). The same scenarios, the explicit ones included, with one
generated example each: they run beside the in-line tests, in the group of subprocess tests."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.jobs.test_correct_model import CORRECTION_SETTINGS, run_corrections, scenarios_of_corrections


@pytest.mark.slow
@pytest.mark.parametrize("option", ["tombstones", "untracked", "updated_at"])
@settings(CORRECTION_SETTINGS, max_examples=1)
@scenarios_of_corrections
def test_corrections_on_every_option_match_the_reference(spark, tmp_path_factory, scenario, option):
    run_corrections(spark, tmp_path_factory, scenario, option)
