"""The worker's process-wide tuning: giving freed C-heap pages back to the system."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stream.service.runtime.process_tuning import heap_trimmer


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_heap_trimmer_gives_freed_pages_back() -> None:
    """~200 MB of 2 KB objects (malloc, not Python's small-object pools), every 50th kept so that the
    heap cannot shrink from its top by itself: the trim gives most of the rest back."""
    trim = heap_trimmer()
    assert trim is not None
    blocks = [bytes(2000) + i.to_bytes(4, "little") for i in range(100_000)]
    kept = blocks[::50]
    del blocks
    before = _rss()
    trim()
    assert before - _rss() > 100 << 20
    assert len(kept) == 2000
