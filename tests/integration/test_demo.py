"""``dedup demo``, the README's first command: its own embedded broker, a worker, the bundled sample."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness import demo_pairs

pytestmark = pytest.mark.integration


def test_demo_runs_end_to_end_and_summarizes() -> None:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "stream", "demo"], capture_output=True, text=True,
                          timeout=240)
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"documents\s+400\b", out), out
    found = re.search(r"duplicates found (\d+): (\d+) exact, (\d+) near\n", out)
    others = re.search(r"other documents\s+(\d+) unique, (\d+) empty", out)
    assert found and others, out
    total, exact, near = map(int, found.groups())
    unique, empty = map(int, others.groups())
    assert total == exact + near and exact + near + unique + empty == 400
    assert exact + near >= 0.9 * len(demo_pairs())  # the sample's known pairs are found
    # a person sees which poems: each pair line names both by title, and a legend says what the marks mean
    assert "legend" in out and "~" in out
    pair = re.search(r"near-duplicate\s+《[^》]+》 \S+ [~⊂] 《[^》]+》 \S+\s+similarity 0\.\d\d", out)
    assert pair, out
    # ready as soon as the worker is (its READY file), not after a start-up timeout (was 90 s)
    assert elapsed < 60, f"demo took {elapsed:.0f} s"
    assert "Traceback" not in out + done.stderr and "FAIL|rdkafka" not in out + done.stderr
    state = re.search(r"state in (\S+)", out)
    assert state and not Path(state.group(1)).exists(), out  # every document answered: nothing left behind
