"""Statistics: level histograms and candidates, size bins, the +1 fast path and the batch growth kernel
against ``resize`` one entry at a time."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex
from stream.index.simhash.kernels import bucket_growth
from stream.index.simhash.stats import LevelCounter, StatsRecorder, size_bin


def test_stats_histograms_and_candidates() -> None:
    idx = BlockIndex(k=3, split_mu=0.0, split_cap=16, min_split=16)
    rng = random.Random(9)
    for i in range(500):
        idx.insert(0x1234 << 48 | rng.getrandbits(48), f"h{i}")  # one hot block in table 0
    for i in range(500):
        idx.insert(rng.getrandbits(64), f"u{i}")
    for _ in range(50):
        idx.query(0x1234 << 48 | rng.getrandbits(48))
    stats = idx.stats()
    simhash = stats.kinds["simhash"]
    assert stats.documents == 1000 and simhash.splits >= 1
    for level in simhash.levels:
        assert sum(level.size_histogram.values()) == level.buckets
        assert level.buckets == 0 or level.mean_size == pytest.approx(level.entries / level.buckets)
    assert stats.entries == sum(level.entries for level in simhash.levels)
    assert simhash.levels[1].entries >= 4 * 16  # a split copies each entry into k + 1 sub-buckets
    # The hot bucket (500 entries) is split, so a query into it sees far fewer candidates.
    assert simhash.queries == 50 and 0 < simhash.candidates_mean < 150 and simhash.candidates_max < 250
    assert stats.to_dict()["documents"] == 1000


def test_size_bins() -> None:
    assert [size_bin(n) for n in (1, 2, 3, 4, 7, 8)] == [1, 2, 2, 3, 3, 4]


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3000)), max_size=200))
def test_added_is_resize_by_one(steps: list[tuple[int, int]]) -> None:
    """``added`` (the inserts' fast path) changes the counters as ``resize(size - 1, size)`` does."""
    fast, plain = StatsRecorder(), StatsRecorder()
    for level, size in steps:
        fast.added("simhash", level, size)
        plain.resize("simhash", level, size - 1, size)
    assert fast.to_json() == plain.to_json()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, 20), st.booleans()), min_size=1, max_size=3), min_size=1, max_size=80),
    st.dictionaries(st.tuples(st.integers(0, 2), st.integers(0, 20)), st.integers(0, 3000)),
    st.integers(1, 3100),
)
def test_bucket_growth_is_resize_one_entry_at_a_time(
    docs: list[list[tuple[int, bool]]], sizes: dict[tuple[int, int], int], min_split: int
) -> None:
    """A batch appends one entry per document to its bucket in each table it uses (``docs[i][t]``:
    the block value and whether it appends there); buckets start at ``sizes`` (else empty). The
    compiled batch count equals ``resize`` by +1 steps, and it names exactly the buckets reaching
    ``min_split``, each by its first appending document."""
    tables = min(map(len, docs))
    blocks = np.array([[doc[t][0] for doc in docs] for t in range(tables)], dtype=np.uint64)
    use = np.array([[doc[t][1] for doc in docs] for t in range(tables)], dtype=np.bool_)
    before = np.array([[sizes.get((t, doc[t][0]), 0) for t in range(tables)] for doc in docs], dtype=np.int64)
    one_by_one, batch = LevelCounter(), LevelCounter()
    for size in sizes.values():  # both start from the same buckets
        one_by_one.resize(0, size)
        batch.resize(0, size)
    grown = dict(sizes)
    firsts: dict[tuple[int, int], int] = {}
    for i, doc in enumerate(docs):
        for t in range(tables):
            block, used = doc[t]
            if used:
                old = grown.get((t, block), 0)
                one_by_one.resize(old, old + 1)
                grown[t, block] = old + 1
                firsts.setdefault((t, block), i)
    bins = np.zeros(66, dtype=np.int64)
    new_buckets, big = bucket_growth(blocks, before, use, min_split, bins)
    batch.grow(int(use.sum()), new_buckets, bins)
    assert batch == one_by_one
    expected = {(t, i) for (t, block), i in firsts.items() if grown[t, block] >= min_split}
    got = [(p >> 32, p & 0xFFFFFFFF) for p in big.tolist()]
    assert sorted(got) == sorted(expected) and len(got) == len(expected)
