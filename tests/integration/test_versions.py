"""One truth per id against a real broker and workers: 300 ids each sent twice, the older version under
another key (another partition) and, for every other id, published after the newer one; with and
without a SIGKILL of the worker halfway. Every final verdict is the newest version's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.reliability_run import SIZES, Run
from benchmarks.reliability_scenarios import timed
from tests.harness import demo_docs

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scenario", ["two-keys", "two-keys-sigkill"])
def test_the_newest_version_of_each_id_wins_under_two_keys(tmp_path: Path, scenario: str) -> None:
    # a tail lost to the SIGKILL is read again once the agent is idle for 5 s, or after 5 minutes while it
    # stays busy (docs/service.md, "Replay ledger"): on a loaded machine the wait must allow the latter
    scale = replace(SIZES["small"], two_key_ids=300, timeout=420.0)
    result = timed(Run(demo_docs(), scale, tmp_path, echo=lambda _m: None), scenario)
    assert "error" not in result, result.get("error")
    assert result["final_from_newest"] == 300, result
    assert result["inputs"] == 600 and result["unaccounted"] == 0, result
