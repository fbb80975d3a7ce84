"""The read cache: recency, dealt leaves first, root slots in step, exact answers while it evicts."""

from __future__ import annotations

import random

from stream.index import BlockIndex


def test_a_full_cache_evicts_dealt_leaves_before_any_top_level_bucket() -> None:
    """Dealt leaf sub-buckets are many, small and dealt again without I/O: a full cache drops them
    (oldest dealt first) and keeps every top-level bucket, even ones no query has used since, and
    the answers stay exact, for entries added below the split since too."""
    rng = random.Random(12)
    hot = 0xBEEF << 48
    docs = {f"d{i}": (hot | rng.getrandbits(48)) if i % 2 else rng.getrandbits(64) for i in range(4000)}
    index = BlockIndex(k=3, min_split=256)
    for doc, fp in docs.items():
        index.insert(fp, doc)
    cache = index.cache
    roots_before = {key for key in cache.buckets if len(key) == 3}
    cache.max_bytes = cache.size_bytes + 20_000  # room for ~50 more dealt leaves
    added: list[int] = []
    for i in range(300):  # each query below the hot block deals k + 1 leaves it has not seen
        # documents added below the split, found again after their leaves were evicted and dealt anew
        added.append(hot | rng.getrandbits(48))
        docs[f"new{i}"] = added[-1]
        index.insert(added[-1], f"new{i}")
        for probe in (hot | rng.getrandbits(48), added[i // 2] ^ 0b11 << (i % 40)):
            expected = {doc for doc, fp in docs.items() if (fp ^ probe).bit_count() <= 3}
            assert {hit.doc_id for hit in index.query(probe)} == expected
    assert cache.size_bytes <= cache.max_bytes
    assert roots_before <= {key for key in cache.buckets if len(key) == 3}


def test_cache_evicts_least_recently_used_and_keeps_root_slots_in_step() -> None:
    """Recency is a stamp per bucket (not an ordered dict): a bucket read recently survives an
    eviction that takes older ones, and the by-block slots of the roots always show exactly the
    cached root buckets (a stale slot would serve a bucket the cache no longer updates)."""
    from stream.index.simhash.table import Bucket, BucketCache

    cache = BucketCache(max_bytes=10 * BucketCache.BUCKET_BYTES)
    slots = cache.slots(0, 2, (1 << 24) - 1, 48)
    assert slots is not None and len(slots) == 1 << 16
    assert cache.slots(1, 3, (1 << 24) - 1, 40) is None  # a 3-byte block would need 2^24 slots
    keys = [b"\x00" + i.to_bytes(2, "big") for i in range(10)]
    for key in keys:
        cache.put(key, Bucket())
    assert cache.get(keys[0]) is not None  # the oldest, read again: now the newest
    cache.put(b"\x00\x00\x00x\x00\x01", Bucket())  # a child key: no slot, but it forces an eviction
    assert len(cache) == 9  # evicted down to EVICT_TO of the bound
    assert keys[0] in cache and keys[1] not in cache and keys[2] not in cache
    for i in range(1 << 16):
        key = b"\x00" + i.to_bytes(2, "big")
        assert slots[i] is cache.buckets.get(key)


def test_queries_stay_exact_while_roots_are_evicted_and_reloaded() -> None:
    rng = random.Random(5)
    fps = {f"d{i}": rng.getrandbits(64) for i in range(400)}
    small = BlockIndex(k=3, cache_bytes=8 * 1024)
    for doc, fp in fps.items():
        small.insert(fp, doc)
        near = fp ^ (1 << rng.randrange(64))  # one bit away: must find doc
        assert doc in {hit.doc_id for hit in small.query(near)}
    roots = small.cache.roots[0]
    assert roots is not None
    cached_roots = sum(len(key) == 3 and key[0] == 0 for key in small.cache.buckets)
    assert sum(bucket is not None for bucket in roots) == cached_roots
