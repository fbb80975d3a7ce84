"""`dedup scan` loads its cached kernels without numba's compiler registries (stream.startup)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes of its own (see pyproject.toml)

FIXTURES = Path(__file__).parents[1] / "fixtures"

# `dedup scan FILE` as the console script runs it, with numba's own loading when asked ("full"); then, on
# stderr, whether a module that numba imports for its registries (numba.cpython.heapq), not to load a
# kernel, got imported
_SCRIPT = """
import runpy, sys
import stream.batch.scan as scan
if sys.argv[1] == "full":
    scan.lean_cache_loads = lambda: None
sys.argv = ["dedup", "scan", sys.argv[2]]
try:
    runpy.run_module("stream", run_name="__main__")
finally:
    print("registries loaded:", "numba.cpython.heapq" in sys.modules, file=sys.stderr)
"""


def _scan(mode: str) -> tuple[str, bool]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(FIXTURES / "tang_small.jsonl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout, "registries loaded: True" in done.stderr


def test_cached_kernels_load_without_the_registries_and_give_the_same_verdicts() -> None:
    full, refreshed = _scan("full")  # numba's own loading (and the caches written, if they were not)
    assert refreshed  # the module this test watches is one the refresh imports
    lean, lean_refreshed = _scan("lean")
    assert lean.count("\n") == 60 and '"fingerprint"' in lean
    assert lean == full  # the same verdicts, fingerprints included
    assert not lean_refreshed
