"""Compiling the kernels that only growth, compaction, deletion and the band runs on disk reach
(``compile_rare_kernels``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from stream.index.bands.memtable import BandMap
from stream.index.bands.tables import BandTables
from stream.index.simhash.arena import RootArena


def compile_rare_kernels() -> None:
    """Call, on tiny throwaway structures and through the same methods as an index, the kernels a
    batch meets only once its band map grows (rehash), its root arena compacts, a document is deleted
    or a band memtable fills (~175k documents: a run written, searched and merged). In a fresh install
    numba compiles each at its first call (0.3-1 s on a 2-core VM), which an index met mid-stream."""
    n = 64
    tables = np.zeros(n, dtype=np.int64)
    values = np.arange(1, n + 1, dtype=np.uint64)
    handles = np.arange(n, dtype=np.uint64)
    band_map = BandMap(capacity=4)
    band_map.find_add_many(tables, values, handles)  # more than its room: rehashed
    band_map.remove_many(tables, values, handles)
    arena = RootArena(capacity=4)
    arena.MIN_GARBAGE = 0  # compact at the first chance
    arena.add_table(0, 2, (1 << 24) - 1, 48)
    arena.push(0, 0, handles[:4], values[:4])
    arena.drop(0, 0)
    arena.push(0, 1, handles[:4], values[:4])  # the pools are full of garbage: compacted
    assert arena.compactions == 1 and len(band_map) == 0
    _band_runs()


def _band_runs() -> None:
    """A flush, finds through a run's filter, a merge and a removal, on runs in a temporary directory."""
    rng = np.random.default_rng(2)
    with tempfile.TemporaryDirectory() as folder:
        tables = BandTables(Path(folder), memtable_entries=64)
        for batch in range(4):
            t, v = rng.integers(0, 4, 50, dtype=np.int64), rng.integers(0, 2**63, 50, dtype=np.uint64)
            h = np.arange(batch * 50, (batch + 1) * 50, dtype=np.uint64)
            tables.find_add_many(t, v, h)
        tables.find_many(t, v)
        tables.remove_many(t, v, h)
        assert len(tables.runs) >= 1
        tables.close()
