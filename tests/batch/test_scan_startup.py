"""`dedup scan` loads its cached kernels without numba's compiler registries (stream.startup)."""

import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"

# one document through the Fingerprinter and its cached kernels; prints the fingerprint and whether a
# module that numba imports for its registries (numba.cpython.heapq), not to load a kernel, got imported
_SCRIPT = """
import sys
from stream.startup import lean_cache_loads
if sys.argv[1] == "lean":
    lean_cache_loads()
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
line = open(sys.argv[2], "rb").readline()
fp = Fingerprinter(FingerprintConfig()).fingerprint(parse_document(line))
print(fp.to_bytes().hex(), "numba.cpython.heapq" in sys.modules)
"""


def _run(mode: str) -> tuple[str, bool]:
    out = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(FIXTURES / "tang_small.jsonl")],
                         capture_output=True, text=True, timeout=300, check=True).stdout.split()
    return out[0], out[1] == "True"


def test_cached_kernels_load_without_the_registries_and_give_the_same_fingerprint() -> None:
    full, refreshed = _run("full")  # numba's own loading (and the caches written, if they were not)
    assert refreshed  # the module this test watches is one the refresh imports
    lean, lean_refreshed = _run("lean")
    assert lean == full
    assert not lean_refreshed


def test_scan_output_is_the_same_with_numba_own_loading(tmp_path: Path) -> None:
    script = ("import sys, runpy; import stream.batch.scan as scan; scan.lean_cache_loads = lambda: None; "
              "sys.argv = ['dedup', 'scan', sys.argv[1]]; runpy.run_module('stream', run_name='__main__')")
    source = str(FIXTURES / "tang_small.jsonl")
    lean = subprocess.run([sys.executable, "-m", "stream", "scan", source], capture_output=True, text=True,
                          timeout=300)
    full = subprocess.run([sys.executable, "-c", script, source], capture_output=True, text=True, timeout=300)
    assert lean.returncode == full.returncode == 0, (lean.stderr, full.stderr)
    assert lean.stdout.count("\n") == 60
    assert lean.stdout == full.stdout
