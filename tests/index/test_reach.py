"""Which SimHash table reaches a pair (``SimhashBlocks.reaches``: the same block, at most one bit apart in
the next), and the root arena's sub-chains that rely on it: every pair within k is still found, through
the batch path and one document at a time, with all tables and with groups of them."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex, TableLayout

from .helpers import brute_force, insert_batch_exactly

MASK = (1 << 64) - 1


def _differences(a: int, b: int, layout: TableLayout) -> list[int]:
    return [(((a ^ b) >> low) & mask).bit_count() for low, mask in layout.blocks]


@settings(max_examples=120, deadline=None)
@given(st.integers(0, MASK), st.lists(st.integers(0, 63), max_size=8, unique=True), st.sampled_from([1, 2, 3, 5]))
def test_first_shared_is_the_lowest_table_reaching_the_pair(a: int, flips: list[int], k: int) -> None:
    layout = TableLayout(k=k)
    b = a
    for bit in flips:
        b ^= 1 << bit
    d = _differences(a, b, layout)
    reached = [t for t in range(k + 1) if d[t] == 0 and d[(t + 1) % (k + 1)] <= 1]
    assert [t for t, s in enumerate(layout.simhash) if s.reaches(a ^ b)] == reached
    assert layout.first_shared(a, b) == (reached[0] if reached else None)
    if len(flips) <= k:
        assert reached


def _splits_within(k: int, blocks: int) -> Iterator[tuple[int, ...]]:
    """Every way to spread at most ``k`` differences over ``blocks`` blocks (not a filter over all
    (k + 1) ** blocks tuples: 16.7M at k = 7)."""
    if blocks == 0:
        yield ()
        return
    for first in range(k + 1):
        for rest in _splits_within(k - first, blocks - 1):
            yield (first, *rest)


def test_every_split_of_at_most_k_differences_is_reached_by_some_table() -> None:
    """The lemma the index's exactness rests on, for every split of <= k differences over k + 1
    blocks; radius 0 in the next block is not enough (e.g. 0, 1, 0, 1 at k = 3)."""
    for k in range(1, 8):
        blocks = k + 1
        splits = list(_splits_within(k, blocks))
        assert len(splits) == math.comb(k + blocks, blocks)  # all of them (stars and bars)
        for split in splits:
            assert any(split[t] == 0 and split[(t + 1) % blocks] <= 1 for t in range(blocks)), (k, split)
    assert not any(split[t] == 0 and split[(t + 1) % 4] == 0 for split in [(0, 1, 0, 1)] for t in range(4))


def _patterned(base: int, split: tuple[int, ...], rng: random.Random, top: int) -> int:
    """``base`` with ``split[b]`` bits flipped in block b (16-bit blocks), among its ``top`` highest bits:
    the bits that key the root arena's sub-chains."""
    fp = base
    for block, count in enumerate(split):
        high = 63 - 16 * block
        for bit in rng.sample(range(high - top + 1, high + 1), count):
            fp ^= 1 << bit
    return fp


def _splits(k: int = 3) -> list[tuple[int, ...]]:
    return [s for s in _splits_within(k, k + 1) if sum(s)]


def test_pairs_one_bit_apart_in_the_next_block_are_found_by_the_batch_path() -> None:
    """Near copies whose differences sit in the sub-chain keys (the top bits of the blocks), in every
    split of at most 3 over the 4 blocks (0, 1, 0, 1: only tables 0 and 2 reach it, each only through
    the sub-chain one bit away). The batch path's answers equal brute force, against the index and
    inside a batch; one document at a time too, and over disjoint groups of tables with ``once``."""
    rng = random.Random(5)
    index = BlockIndex(k=3)
    arena = index.cache.arena
    arena.SUB_LENGTH = 0  # the widest sub-keys from the first compaction on
    arena.MIN_GARBAGE = 64
    docs: dict[str, int] = {}
    bases = [rng.getrandbits(64) for _ in range(300)]
    index.query_insert_many(bases, [f"b{i}" for i in range(300)])
    docs.update({f"b{i}": fp for i, fp in enumerate(bases)})
    splits = _splits()
    for step in range(6):
        batch = {}
        for j, split in enumerate(splits):
            base = rng.choice(bases)
            batch[f"s{step}-{j}"] = _patterned(base, split, rng, top=arena.MAX_SHIFT)
            if j % 4 == 0:  # a pair inside the batch too
                batch[f"t{step}-{j}"] = _patterned(batch[f"s{step}-{j}"], rng.choice(splits), rng, arena.MAX_SHIFT)
        docs = insert_batch_exactly(index, docs, batch)
    assert arena.shift == arena.MAX_SHIFT and arena.compactions > 0
    tables = [0, 1, 2, 3]
    for fp in rng.sample(sorted(docs.values()), 60):
        query = _patterned(fp, rng.choice(splits), rng, arena.MAX_SHIFT)
        expected = brute_force(docs, query, 3)
        assert {h.doc_id: h.distance for h in index.query(query)} == expected
        rng.shuffle(tables)
        parts = [set(tables[:2]), set(tables[2:])]
        once = [h.doc_id for part in parts for h in index.query(query, tables=part, once=True)]
        assert sorted(once) == sorted(expected)  # each from one group
        batched = [index.query_many([query], tables=[part], once=True)[0] for part in parts]
        assert sorted(h.doc_id for hits in batched for h in hits) == sorted(expected)


def test_a_group_of_tables_reports_the_pairs_its_tables_reach() -> None:
    """Without ``once`` a query over some tables reports a neighbour when one of them reaches it: a
    pair that shares table 0's block but is two bits apart in block 1 comes from table 3 (0, 2, 1, 0),
    not from table 0, through the batch path and one document at a time alike."""
    rng = random.Random(8)
    index = BlockIndex(k=3)
    base = rng.getrandbits(64)
    near = _patterned(base, (0, 2, 1, 0), rng, top=16)
    index.insert_many([base], ["base"])
    layout = index.layout
    assert [t for t, s in enumerate(layout.simhash) if s.reaches(base ^ near)] == [3]
    for tables in ([0], [0, 1, 2], [3], [1, 3]):
        expected = ["base"] if 3 in tables else []
        assert [h.doc_id for h in index.query(near, tables=tables)] == expected
        assert [h.doc_id for h in index.query_many([near], tables=[tables])[0]] == expected
    fps = np.array([base, near], dtype=np.uint64)
    assert layout.first_shared(int(fps[0]), int(fps[1])) == 3
    # a document stored in table 0 alone is in the root the query reads there, but no table it is in
    # reaches the pair: neither path reports it
    index.insert_many([base], ["partial"], tables=[[0]])
    assert [h.doc_id for h in index.query(near)] == ["base"]
    assert [h.doc_id for h in index.query_many([near])[0]] == ["base"]
