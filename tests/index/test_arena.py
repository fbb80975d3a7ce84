"""The root arena: chains equal to a plain model through appends, releases, drops and compactions, and
an index whose roots move between the arena and ``Bucket`` objects answering exactly."""

from __future__ import annotations

import random

import numpy as np

from stream.index import BlockIndex
from stream.index.simhash.arena import RootArena

from .helpers import brute_force, insert_batch_exactly

FILTER, SHIFT = (1 << 24) - 1, 48  # the entries keep the low 24 bits; the block is the top 16
SUB = 0xFC0000  # the top 6 filter bits key the sub-chains


def _arena(tables: int = 2, width: int = 8) -> RootArena:
    arena = RootArena(capacity=16)
    for t in range(tables):
        arena.add_table(t, width, FILTER, SHIFT, SUB)
    arena.MIN_GARBAGE = 4  # compact as soon as garbage outgrows the live entries
    return arena


def _kept(value: int, block: int) -> int:
    """What the arena gives back of a masked fingerprint: its filter bits and the chain's block."""
    return (value & FILTER) | (block << SHIFT)


def test_chains_equal_a_model_through_appends_releases_and_compactions() -> None:
    rng = random.Random(3)
    arena = _arena()
    model: dict[tuple[int, int], list[tuple[int, int]]] = {}
    next_handle = peak = 0
    for step in range(400):
        action = rng.random()
        if action < 0.6:  # a batch of documents, one root per table each
            n = rng.randint(1, 12)
            blocks = np.array([[rng.randrange(8) for _ in range(n)] for _ in range(2)], dtype=np.int64)
            use = np.array([[rng.random() < 0.8 for _ in range(n)] for _ in range(2)], dtype=np.bool_)
            values = np.array([[rng.getrandbits(63) for _ in range(n)] for _ in range(2)], dtype=np.uint64)
            handles = np.arange(next_handle, next_handle + n, dtype=np.uint64)
            next_handle += n
            arena.append(blocks, use, values, handles)
            for i in range(n):
                for t in range(2):
                    if use[t, i]:
                        b = int(blocks[t, i])
                        model.setdefault((t, b), []).append((int(handles[i]), _kept(int(values[t, i]), b)))
        else:
            t, b = rng.randrange(2), rng.randrange(8)
            if action < 0.8:
                handles, fps = arena.release(t, b)
                assert list(zip(handles.tolist(), fps.tolist(), strict=True)) == model.pop((t, b), [])
            else:
                arena.drop(t, b)
                model.pop((t, b), None)
        assert arena.live == sum(map(len, model.values())), step
        peak = max(peak, arena.live)
    assert arena.compactions > 0 and arena.capacity <= 4 * (peak + 24)  # compacted rather than grown
    assert arena.shift > 0  # the compactions keyed sub-chains by the entries' top bits
    assert arena.top - arena.laid_out <= max(arena.laid_out // arena.SCATTERED, arena.MIN_GARBAGE) + 24
    for (t, b), entries in model.items():
        assert arena.length[t, b] == len(entries)
        handles, fps = arena.release(t, b)
        assert list(zip(handles.tolist(), fps.tolist(), strict=True)) == entries


def test_within_finds_exactly_the_entries_within_k_in_the_sub_chains_within_one_bit() -> None:
    """A query walks its own sub-chain and those one bit away (at every width compactions pick):
    it finds the entries within k whose sub-key is at most one bit from its own, no others."""
    rng = random.Random(4)
    arena = _arena(tables=1, width=4)
    arena.MIN_GARBAGE = 16
    for _ in range(3):
        values = np.array([[rng.getrandbits(64) for _ in range(300)]], dtype=np.uint64)
        # half the entries' top filter bits are close: their sub-keys one or two bits apart
        values[0, ::2] = (values[0, ::2] & np.uint64(~SUB & (1 << 64) - 1)) | np.uint64(rng.choice([0, 1 << 23]))
        blocks = np.array([[rng.randrange(4) for _ in range(300)]], dtype=np.int64)
        first = arena.live
        arena.append(blocks, np.ones((1, 300), dtype=np.bool_), values, np.arange(first, first + 300, dtype=np.uint64))
        queries = np.array([[int(v) ^ (1 << rng.randrange(64)) for v in values[0, :50].tolist()]], dtype=np.uint64)
        used = np.ones((1, 50), dtype=np.bool_)
        docs, handles, walked = arena.within(blocks[:, :50], used, queries, 3)
        found = set(zip(docs.tolist(), handles.tolist(), strict=True))
        low, n = int(arena.sub_low[0]), int(arena.sub_n[0])
        sub = ((1 << n) - 1) << low  # the filter's low 24 bits are packed in place
        expected = {(i, first + e) for i in range(50) for e in range(300)
                    if blocks[0, e] == blocks[0, i]
                    and ((int(values[0, e]) ^ int(queries[0, i])) & FILTER).bit_count() <= 3
                    and ((int(values[0, e]) ^ int(queries[0, i])) & sub).bit_count() <= 1}
        assert found >= expected and len(found & expected) >= 40
        assert {(i, h) for i, h in found if h >= first} == expected
        whole = arena.length[0, blocks[0, :50]].sum()
        assert walked.sum() == whole if arena.shift == 0 else walked.sum() < whole / 2  # not whole roots
    assert arena.shift == RootArena.MAX_SHIFT  # keyed again as the roots grew


def test_roots_move_between_the_arena_and_the_one_document_path_exactly() -> None:
    """Batches put roots in the arena; a one-document insert, query or delete takes them out as
    buckets, the next batch moves them back; a small cache evicts arena roots and reads them back
    from the store. Every answer equals brute force."""
    rng = random.Random(9)
    index = BlockIndex(k=3, cache_bytes=40_000, min_split=64)
    docs: dict[str, int] = {}
    hot = rng.getrandbits(16) << 48
    for step in range(30):
        batch = {f"b{step}-{i}": (hot | rng.getrandbits(48)) if i % 3 == 0 else rng.getrandbits(64)
                 for i in range(40)}
        if docs:  # near copies of earlier documents, inside the batch too
            for i, old in enumerate(rng.sample(sorted(docs.values()), 5)):
                batch[f"n{step}-{i}"] = old ^ (1 << rng.randrange(64))
        docs = insert_batch_exactly(index, docs, batch)
        one = rng.choice(sorted(docs))  # the one-document path on roots the batch left in the arena
        assert {h.doc_id: h.distance for h in index.query(docs[one])} == brute_force(docs, docs[one], 3)
        index.delete(one)
        del docs[one]
        extra = rng.choice(sorted(docs.values())) ^ 0b101
        index.insert(extra, f"x{step}")
        docs[f"x{step}"] = extra
    assert not index.cache.complete  # the cache evicted on the way
    for fp in rng.sample(sorted(docs.values()), 60):
        assert {h.doc_id: h.distance for h in index.query(fp)} == brute_force(docs, fp, 3)
    assert index.stats().splits > 0
