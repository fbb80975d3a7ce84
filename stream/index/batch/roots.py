"""The SimHash root buckets of a batch run (batch/calls.py), resolved once before its query and insert.

Every unsplit root a run uses is put into the cache's root arena (simhash/arena.py): created there when new,
moved there when cached as a ``Bucket`` or loaded from the store. The run's query then filters all
its unsplit roots and its insert appends to them by one compiled call each; the documents below split
roots are descended per root (simhash/split_batch.py). The arena is pinned from here to the end of the run:
eviction cannot take a root the run reads or appends to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stream.index.simhash.buckets import SplitBucket
from stream.index.simhash.cache import ROOT_ABSENT, ROOT_ARENA, ROOT_LEAF, ROOT_SPLIT
from stream.index.state import IndexState

if TYPE_CHECKING:
    from stream.index.batch.data import DocumentBatch

SplitRoots = dict[tuple[int, int], tuple[bytes, SplitBucket, list[int]]]


class Resolved:
    """A run's roots: ``blocks[t, i]`` document i's block value in SimHash table t, ``arena[t, i]``
    whether it reads and appends to that root in the arena (False where the document does not use
    the table, its root is split, or it is known empty and the call inserts nothing), ``masked[t, i]``
    its fingerprint as table t's entries keep it (``filter_mask``: what the query compares and the
    insert appends), and the documents below split roots: (t, block) -> (root key, root, documents)."""

    def __init__(self, blocks: np.ndarray, arena: np.ndarray, masked: np.ndarray, below: SplitRoots) -> None:
        self.blocks = blocks
        self.arena = arena
        self.masked = masked
        self.below = below


def resolve(state: IndexState, batch: DocumentBatch, create: bool) -> Resolved:
    """The run's roots (``Resolved``), each unsplit one in the arena; ``create``: absent roots of a
    complete cache are created (empty) for the run's insert. The caller has pinned the arena."""
    assert state.root_slots is not None and state.cache.pinned
    cache = state.cache
    state.version += 1  # roots memoized by the one-document path may move into the arena
    tables = len(state.tables)
    blocks = np.empty((tables, len(batch)), dtype=np.int64)
    below: SplitRoots = {}
    for t in range(tables):
        blocks[t] = state.layout.block_values(t, batch.array)
        column = blocks[t]
        use = batch.part[:, t]
        states = cache.root_states[t]
        assert states is not None  # a table with slots has them
        root_state = states[column]
        absent = use & (root_state == ROOT_ABSENT)
        if create and cache.complete and absent.any():
            cache.add_arena_roots(t, np.unique(column[absent]))
            root_state = states[column]
        odd = use & (root_state != ROOT_ARENA)
        if odd.any():
            split = _settle_roots(state, t, np.unique(column[odd]).tolist())
            for i in np.flatnonzero(odd).tolist():
                value = int(column[i])
                if value in split:
                    below.setdefault((t, value), (*split[value], []))[2].append(i)
    arena = batch.part[:, :tables].T & _in_arena(state, blocks)
    for t in range(tables):
        cache.touch_arena(t, blocks[t, arena[t]])
    masked = state.layout.filter_mask_array[:, None] & batch.array[None, :]
    return Resolved(blocks, arena, masked, below)


def _settle_roots(state: IndexState, t: int, values: list[int]) -> dict[int, tuple[bytes, SplitBucket]]:
    """Table t's roots of block ``values`` (none in the arena) into the arena if unsplit: a cached
    ``Bucket`` is moved, an uncached one loaded first (a complete cache knows it is empty: left
    absent). Returns the split ones by value (kept here: a later load may evict them)."""
    cache, table = state.cache, state.tables[t]
    states = cache.root_states[t]
    assert states is not None
    split: dict[int, tuple[bytes, SplitBucket]] = {}
    for value in values:
        key = cache.root_key(t, value)
        if states[value] == ROOT_ABSENT and not cache.complete:
            table.bucket(key)  # loads it
        if states[value] == ROOT_LEAF:
            cache.adopt(t, value)
        elif states[value] == ROOT_SPLIT:
            root = table.bucket(key)
            assert isinstance(root, SplitBucket)
            split[value] = (key, root)
    return split


def _in_arena(state: IndexState, blocks: np.ndarray) -> np.ndarray:
    """``[t, i]``: root ``blocks[t, i]`` of table t is in the arena."""
    states = state.cache.root_states
    return np.stack([states[t][blocks[t]] == ROOT_ARENA for t in range(len(blocks))])  # type: ignore[index]
