"""The reliability benchmark's accounting on a tiny run: its fuzz scenario (bad messages among good
documents, one worker, its own broker) reports every record and compares the table it claims to."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.reliability_run import SIZES, Run
from benchmarks.reliability_scenarios import timed
from tests.harness import demo_docs

pytestmark = pytest.mark.integration


def test_the_fuzz_scenario_accounts_for_every_record(tmp_path: Path) -> None:
    scale = replace(SIZES["small"], fuzz_bad=120, fuzz_good=60, timeout=120.0)
    result = timed(Run(demo_docs(), scale, tmp_path, echo=lambda _m: None), "fuzz")
    assert "error" not in result, result.get("error")
    assert result["inputs"] == 180 and result["unaccounted"] == 0, result
    assert result["verdicts"] == 60 and result["dead_letters"] == 120
    assert result["equal"] and result["compare"]["ids"] == 60
    assert result["bad_with_a_verdict"] == {} and result["worker_alive"]
    assert sum(sum(codes.values()) for codes in result["dead_letter_codes"].values()) == 120
