"""Compiling the kernels that only growth, compaction and deletion reach (``compile_rare_kernels``)."""

from __future__ import annotations

import numpy as np

from stream.index.bands.memtable import BandMap
from stream.index.simhash.arena import RootArena


def compile_rare_kernels() -> None:
    """Call, on tiny throwaway structures and through the same methods as an index, the kernels a
    batch meets only once its band map grows (rehash), its root arena compacts or a document is
    deleted. In a fresh install numba compiles each at its first call (0.3-1 s on a 2-core VM), which
    an index met in its first minute of real work."""
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
