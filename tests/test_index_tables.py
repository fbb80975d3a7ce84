"""Band tables, ``tables=`` restriction, routing keys, redelivery, statistics and the split schemes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex, MemoryStore
from stream.index.schemes import SimhashBlocks, near_equal_widths
from stream.index.stats import size_bin

MASK = (1 << 64) - 1


def test_block_widths_cover_the_fingerprint() -> None:
    assert near_equal_widths(64, 4) == (16, 16, 16, 16)
    assert near_equal_widths(48, 4) == (12, 12, 12, 12)
    assert near_equal_widths(64, 3) == (22, 21, 21)
    for k in range(1, 12):
        widths = near_equal_widths(64, k + 1)
        assert sum(widths) == 64 and max(widths) - min(widths) <= 1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, MASK), st.sampled_from([1, 2, 3, 5, 7]), st.data())
def test_simhash_payload_round_trips_and_subblocks_are_lossless(fp: int, k: int, data: st.DataObject) -> None:
    block = data.draw(st.integers(0, k))
    scheme = SimhashBlocks(64, k, block)
    top = scheme.top((fp, 0))
    payload = scheme.payload(fp, (fp, 0))
    # Entries keep the block (in the key) and FILTER_BITS more bits; the rest comes from the record.
    assert bin(scheme.filter_mask).count("1") == scheme.width + min(64 - scheme.width, scheme.FILTER_BITS)
    assert scheme.source_of(top, payload) == (fp & scheme.filter_mask, 0)
    assert scheme.decode(top, [payload]).tolist() == [fp & scheme.filter_mask]
    short = SimhashBlocks(32, k, 0)  # fingerprints whose rest fits the filter: nothing dropped
    assert short.exact == (32 - short.width <= short.FILTER_BITS)
    # A neighbour that shares the block shares, at every split level, at least one sub-block.
    flips = data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
    other = fp
    for bit in flips:
        other ^= 1 << bit
    if scheme.top((other, 0)) != top:
        return
    mine, theirs = scheme.root_state((fp, 0)), scheme.root_state((other, 0))
    while scheme.groups(mine):
        pairs = [(scheme.child(mine, g), scheme.child(theirs, g)) for g in range(scheme.groups(mine))]
        shared = [g for g, ((v1, _), (v2, _)) in enumerate(pairs) if v1 == v2]
        assert shared, "pigeonhole: one sub-block must match"
        (_, mine), (_, theirs) = pairs[shared[0]]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, MASK), st.sampled_from([1, 2, 3, 5]), st.data())
def test_filter_and_whole_payloads_decode_side_by_side(fp: int, k: int, data: st.DataObject) -> None:
    """Format 5: an unsplit bucket's entries keep a filter, a split one's the whole rest (its
    sub-buckets are rebuilt from it). A split cut short by a crash leaves both kinds in one bucket:
    ``decode`` reads either as the filter, ``decode_whole`` gives back the fingerprint itself."""
    scheme = SimhashBlocks(64, k, data.draw(st.integers(0, k)))
    block = scheme.block_mask << scheme.low
    other = data.draw(st.integers(0, MASK)) & ~block | (fp & block)  # same top-level bucket
    top = scheme.top((fp, 0))
    whole = scheme.whole_payload(fp, (fp, 0))
    assert len(whole) == scheme.whole_len and scheme.source_of(top, whole) == (fp, 0)
    assert scheme.decode_whole(top, [whole]).tolist() == [fp]
    mixed = [scheme.payload(fp, (fp, 0)), scheme.whole_payload(other, (other, 0)), whole]
    assert scheme.decode(top, mixed).tolist() == [fp & scheme.filter_mask, other & scheme.filter_mask,
                                                  fp & scheme.filter_mask]
    assert scheme.leaf_mask(()) == scheme.filter_mask and scheme.leaf_mask((0,)) == MASK


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, MASK), min_size=1, max_size=20), st.sampled_from([1, 2, 3, 5]), st.data())
def test_child_values_deal_many_states_as_child_does_one(fps: list[int], k: int, data: st.DataObject) -> None:
    """A split node deals its entries into sub-buckets with ``child_values`` (numpy, all entries at
    once); it must give what ``child`` gives each state, at every level."""
    scheme = SimhashBlocks(64, k, data.draw(st.integers(0, k)))
    top = scheme.top((fps[0], 0))
    block = scheme.block_mask << scheme.low
    fps = [fp & ~block | (fps[0] & block) for fp in fps]  # one top-level bucket
    states = [scheme.root_state((fp, 0)) for fp in fps]
    rests = scheme.root_rests(top, [scheme.whole_payload(fp, (fp, 0)) for fp in fps])
    assert rests.tolist() == [rest for rest, _ in states]
    while scheme.groups(states[0]):
        group = data.draw(st.integers(0, scheme.groups(states[0]) - 1))
        values, below = scheme.child_values(rests, states[0][1], group)
        children = [scheme.child(state, group) for state in states]
        assert values.tolist() == [int.from_bytes(value, "big") for value, _ in children]
        assert below.tolist() == [rest for _, (rest, _) in children]
        states, rests = [state for _, state in children], below


def test_a_split_node_values_its_entries_as_child_does_after_adds_and_removes() -> None:
    """A split node keeps each group's sub-key values and values entries added since on the next
    deal; a removal moves positions, so the values are computed again."""
    from stream.index.table import SplitBucket

    rng = random.Random(13)
    scheme = SimhashBlocks(64, 3, 0)
    node = SplitBucket(scheme.root_state((0, 0))[1])

    def expected(group: int) -> list[int]:
        return [int.from_bytes(scheme.child((rest, node.aux), group)[0], "big") for rest in node.rests]

    for round_ in range(4):
        for _ in range(50):
            fp = rng.getrandbits(64)
            node.add(len(node) + 1000 * round_, fp, scheme.root_state((fp, 0))[0])
        for group in range(scheme.groups((0, node.aux))):
            assert node.group_values(scheme, group).tolist() == expected(group)
        assert node.remove(node.handles[rng.randrange(len(node))])
        assert node.group_values(scheme, 1).tolist() == expected(1)


def test_a_split_bucket_deals_only_the_sub_buckets_a_query_reaches(tmp_path: object) -> None:
    """A split top-level bucket is loaded with its entries and deals a sub-bucket when a descent
    reaches it: after reopening, one query caches the root and the k + 1 leaves it reaches (not the
    thousands a split makes), answers exactly, and inserts and deletes below the split stay exact
    for sub-buckets dealt later."""
    from pathlib import Path

    from stream.index.table import CHILD_TAG, SplitBucket

    rng = random.Random(11)
    hot = 0xBEEF << 48
    docs = {f"d{i}": hot | rng.getrandbits(48) for i in range(3000)}
    path = str(Path(str(tmp_path)) / "i")
    index = BlockIndex(path, k=3, min_split=256)
    for doc, fp in docs.items():
        index.insert(fp, doc)
    assert index.stats().splits >= 1
    index.close()
    reopened = BlockIndex(path, k=3, min_split=256)
    query = next(iter(docs.values())) ^ 0b101  # two bits away from d0
    found = {hit.doc_id: hit.distance for hit in reopened.query(query)}
    assert found == {doc: (fp ^ query).bit_count() for doc, fp in docs.items() if (fp ^ query).bit_count() <= 3}
    root = reopened.cache.buckets[b"\x00" + (0xBEEF).to_bytes(2, "big")]
    assert isinstance(root, SplitBucket) and len(root) == len(docs)
    sub_buckets = [key for key in reopened.cache.buckets if CHILD_TAG in key[3:4]]
    assert 4 <= len(sub_buckets) <= 4 * 4  # the leaves reached (and a nested level at most)
    # a new neighbour and a delete below the split, then sub-buckets dealt after them
    reopened.insert(query ^ 1, "new")
    assert reopened.delete("d0")
    for probe in (query, query ^ (1 << 40), query ^ (1 << 20)):
        expected = {doc for doc, fp in {**docs, "new": query ^ 1}.items()
                    if doc != "d0" and (fp ^ probe).bit_count() <= 3}
        assert {hit.doc_id for hit in reopened.query(probe)} == expected
    reopened.close()


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


def test_a_refused_split_is_remembered_when_its_bucket_is_evicted_and_dealt_again() -> None:
    """A leaf whose split was refused (here: copies of one fingerprint, which no split separates)
    is not checked again until it doubles, also after the cache dropped it and dealt it anew: the
    check walks every entry, and at Zipf 1M re-dealt leaves re-ran it on every insert."""
    rng = random.Random(14)
    hot = 0xBEEF << 48
    index = BlockIndex(k=3, min_split=64)
    for i in range(3000):  # a split hot bucket among many small ones
        index.insert(hot | rng.getrandbits(48) if i % 4 == 0 else rng.getrandbits(64), f"d{i}")
    copy = hot | rng.getrandbits(48)
    for i in range(100):
        index.insert(copy, f"copy{i}")
    refused = index.stats().kinds["simhash"].refused_splits
    assert refused >= 1
    index.cache.max_bytes = 1  # the next put evicts everything: loaded and dealt again from the store
    index.insert(copy, "copy100")
    index.cache.max_bytes = 1 << 30
    for i in range(101, 120):
        index.insert(copy, f"copy{i}")
    assert index.stats().kinds["simhash"].refused_splits == refused
    assert {hit.doc_id for hit in index.query(copy)} >= {f"copy{i}" for i in range(120)}


def test_band_tables_find_same_band_only() -> None:
    idx = BlockIndex(k=3, bands=2)
    far_a, far_b, far_c = 0, MASK, 0x00FF00FF00FF00FF  # far apart in Hamming distance
    idx.insert(far_a, "a", bands=[(111, 5), (222, 6)])
    idx.insert(far_b, "b", bands=[(111, 7), (333, 8)])
    idx.insert(far_c, "c", bands=[(444, 9), (555, 10)])
    hits = idx.query(far_a, bands=[(111, 0), (999, 0)])
    assert {h.doc_id: (h.via, h.distance) for h in hits} == {"a": ("simhash", 0), "b": ("band", 64)}
    assert [h.doc_id for h in idx.query(12345 << 20, bands=[(444, 0), (0, 0)])] == ["c"]
    assert idx.query(0x0F0F0F0F0F0F0F0F, bands=[(1, 0), (2, 0)]) == []
    with pytest.raises(ValueError, match="bands"):
        idx.query(0, bands=[(1, 0)])  # one band for two band tables


def test_a_hot_band_value_finds_every_mate_and_survives_deletes_and_reopening(tmp_path: Path) -> None:
    """Band tables do not split (bandmap.py): a band value that 300 documents share finds all of them,
    with any extension; a delete takes one out; a reopened index rebuilds them from the records."""
    path = str(tmp_path / "idx")
    idx = BlockIndex(path, k=3, bands=2, min_split=4)
    rng = random.Random(1)
    for i in range(300):
        idx.insert(rng.getrandbits(64), f"d{i}", bands=[(7, rng.getrandbits(64)), (rng.getrandbits(64), 0)])
    assert idx.delete("d5")
    expected = {f"d{i}" for i in range(300)} - {"d5"}
    assert {h.doc_id for h in idx.query(rng.getrandbits(64), bands=[(7, 1), (0, 0)]) if h.via == "band"} == expected
    assert idx.stats().kinds["band"].splits == 0 and len(idx.band_map) == 2 * 299
    idx.close()
    reopened = BlockIndex(path, k=3, bands=2, min_split=4)
    assert len(reopened.band_map) == 2 * 299
    assert {h.doc_id for h in reopened.query(rng.getrandbits(64), bands=[(7, 2), (0, 0)])} == expected
    reopened.close()


def test_tables_restriction_and_routing_prefixes() -> None:
    store = MemoryStore()
    idx = BlockIndex(k=3, bands=1, store=store, split_mu=0.0, split_cap=4, min_split=4)
    rng = random.Random(5)
    hot = 0xABCD << 48
    fps = [hot | rng.getrandbits(48) for _ in range(60)]  # table 0 splits several levels deep
    for i, fp in enumerate(fps):
        idx.insert(fp, f"d{i}", bands=[(i % 3, rng.getrandbits(64))], tables={0, 4})
    assert idx.stats().kinds["simhash"].splits > 0
    # Every bucket key (entries, markers, sub-buckets) starts with a routing prefix of table 0 or 4.
    prefixes = {p for i, fp in enumerate(fps) for t, p in idx.routing_keys(fp, [(i % 3, 0)]) if t in (0, 4)}
    bucket_keys = [key for key, _ in store.scan_prefix(b"") if key[0] < 0xFC]
    assert bucket_keys and all(any(key.startswith(p) for p in prefixes) for key in bucket_keys)
    assert {key[0] for key in bucket_keys} == {0}  # the band table keeps no keys (bandmap.py)
    assert {h.doc_id for h in idx.query(0, bands=[(1, 0)], tables={4})} == {f"d{i}" for i in range(1, 60, 3)}
    routes = idx.routing_keys(fps[0], [(0, 0)])
    assert [t for t, _ in routes] == [0, 1, 2, 3, 4]
    assert routes[0][1] == b"\x00\xab\xcd" and routes[4][1] == b"\x04" + (0).to_bytes(8, "big")
    # Queries restricted to table 1 see nothing; table 0 sees the exact match.
    assert idx.query(fps[0], tables={1}) == []
    assert [h.doc_id for h in idx.query(fps[0], tables={0})] == ["d0"]
    # Adding table 1 later for the same document extends it (redelivery to another shard owner).
    idx.insert(fps[0], "d0", bands=[(0, 0)], tables={1})
    assert [h.doc_id for h in idx.query(fps[0], tables={1})] == ["d0"]
    with pytest.raises(ValueError, match="unknown table"):
        idx.query(0, tables={9})


def test_redelivery_is_idempotent_and_new_fingerprint_replaces() -> None:
    store = MemoryStore()
    idx = BlockIndex(k=3, store=store)
    idx.insert(0xFFFF, "doc", ts=5.0)
    keys = len(store)
    idx.insert(0xFFFF, "doc", ts=5.0)
    assert len(store) == keys and len(idx) == 1
    assert [(h.doc_id, h.ts) for h in idx.query(0xFFFF)] == [("doc", 5.0)]
    idx.insert(MASK, "doc", ts=6.0)
    assert idx.query(0xFFFF) == [] and len(idx) == 1
    assert [(h.doc_id, h.distance, h.ts) for h in idx.query(MASK ^ 1)] == [("doc", 1, 6.0)]
    assert idx.stats().entries == 4


def test_unicode_and_odd_doc_ids() -> None:
    idx = BlockIndex(k=3)
    ids = ["", "新闻/2024/页面?id=1", "\x00\xff", "a" * 500, "\ud800lone-surrogate"]
    for i, doc in enumerate(ids):
        idx.insert(i, doc)
    assert {h.doc_id for h in idx.query(0)} == set(ids)
    for doc in ids:
        assert idx.delete(doc)
    assert idx.query(0) == [] and len(idx) == 0


def test_expire_is_by_event_time_including_negative() -> None:
    idx = BlockIndex(k=3)
    for i, ts in enumerate([-5.0, -0.0, 0.0, 1.5, 1e12]):
        idx.insert(i, f"d{i}", ts=ts)
    assert idx.expire(0.0) == 1  # only -5.0 (-0.0 == 0.0 is not < 0.0)
    assert idx.expire(2.0) == 3
    assert [h.doc_id for h in idx.query(4)] == ["d4"]
    with pytest.raises(ValueError):
        idx.insert(1, "nan", ts=float("nan"))


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


def test_resplit_off_keeps_one_level() -> None:
    idx = BlockIndex(k=3, resplit=False, split_cap=2, min_split=1)
    for i in range(100):
        idx.insert(0xFFFF << 48 | i, f"d{i}")
    assert idx.stats().splits == 0 and len(idx.stats().kinds["simhash"].levels) == 1
    idx.query(0xFFFF << 48)
    assert idx.stats().kinds["simhash"].candidates_max >= 100


def test_size_bins() -> None:
    assert [size_bin(n) for n in (1, 2, 3, 4, 7, 8)] == [1, 2, 2, 3, 3, 4]


def test_filter_survivors_beyond_k_are_dropped_by_the_record() -> None:
    """Bits 48-63 are block 0: tables 1-3 keep no copy of them in their entries, so a query that
    differs only there passes their filters; the record's whole fingerprint must then reject it."""
    index = BlockIndex(k=3, bands=1)
    fp = 0x0123_4567_89AB_CDEF
    index.insert(fp, "doc", bands=[(5, 6)])
    far = fp ^ (0b1111111 << 50)  # distance 7
    assert index.query(far) == []
    (hit,) = index.query(far, bands=[(5, 6)])  # a band mate still comes back, with its true distance
    assert (hit.doc_id, hit.distance, hit.via, hit.fingerprint) == ("doc", 7, "band", fp)
    (hit,) = index.query(fp ^ 0b111 << 60)
    assert (hit.distance, hit.via) == (3, "simhash")


def test_cache_evicts_least_recently_used_and_keeps_root_slots_in_step() -> None:
    """Recency is a stamp per bucket (not an ordered dict): a bucket read recently survives an
    eviction that takes older ones, and the by-block slots of the roots always show exactly the
    cached root buckets (a stale slot would serve a bucket the cache no longer updates)."""
    from stream.index.table import Bucket, BucketCache

    cache = BucketCache(max_bytes=10 * BucketCache.BUCKET_BYTES)
    slots = cache.slots(0, 2)
    assert slots is not None and len(slots) == 1 << 16
    assert cache.slots(1, 3) is None  # a 3-byte block would need 2^24 slots
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


def test_bands_conversion_memo_follows_the_caller_objects() -> None:
    """The index converts a bands tuple once for a query and the insert that follows; a list the
    caller changes in place between calls is converted again, and records keep the right bands."""
    idx = BlockIndex(k=3, bands=2)
    mine = ((111, 5), (222, 6))
    assert idx.query(0, bands=mine) == []
    idx.insert(0, "a", bands=mine)
    idx.insert(MASK, "b", bands=((333, 7), (444, 8)))
    probe = [(111, 0), (999, 0)]
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=probe)] == ["a"]
    probe[0] = (333, 0)  # same list object, other bands
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=probe)] == ["b"]
    idx.insert(0, "a", bands=mine)  # redelivery: the stored record's bands equal, nothing changes
    assert len(idx) == 2
    idx.insert(0, "a", bands=((555, 1), (666, 2)))  # other bands replace the old ones
    assert idx.query(0x00FF00FF00FF00FF, bands=((111, 0), (999, 0))) == []
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=((555, 0), (0, 0)))] == ["a"]
