"""BlockIndex returns exactly the brute-force neighbour set (distance <= k), whatever the data and state.

Random and adversarially skewed sets (most fingerprints sharing one or two blocks, exact duplicates,
planted neighbours at distances 0..k and k + 1), k in {2, 3, 5}, before and after forced splits,
after deletes, expiry, replacement, and after reopening a RocksDB index.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex
from stream.storage import MemoryStore
from tests.index.helpers import BITS, FORCED, MASK, SKEWS, brute_force, flip, make_set


def check(index: BlockIndex, docs: dict[str, int], k: int, rng: random.Random, queries: int = 60) -> None:
    values = list(docs.values())
    probes = rng.sample(values, min(queries, len(values)))
    probes += [flip(v, rng.randrange(k + 2), rng) for v in probes[:20]]
    probes += [rng.getrandbits(BITS) for _ in range(5)]
    for query in probes:
        hits = index.query(query)
        got = {hit.doc_id: hit.distance for hit in hits}
        assert len(got) == len(hits), "a document appears twice"
        assert got == brute_force(docs, query, k)
        assert all(hit.fingerprint == docs[hit.doc_id] and hit.via == "simhash" for hit in hits)


# Thresholds small enough that the skewed sets split several levels deep.


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3, 5]), skew=SKEWS)
def test_query_equals_brute_force_with_splits(seed: int, k: int, skew: str) -> None:
    docs = make_set(seed, k, 200, skew)  # splits are forced small (FORCED): 200 documents split deep
    rng = random.Random(seed + 1)
    plain = BlockIndex(k=k, resplit=False)
    split = BlockIndex(k=k, **FORCED)  # type: ignore[arg-type]
    for doc, fp in docs.items():
        plain.insert(fp, doc, ts=float(len(doc)))
        split.insert(fp, doc, ts=float(len(doc)))
    if skew in ("one_block", "two_blocks"):
        assert split.stats().splits > 0, "skewed data must have split"
    assert plain.stats().splits == 0
    check(plain, docs, k, rng)
    check(split, docs, k, rng)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3, 5]), skew=SKEWS, groups=st.integers(2, 4))
def test_once_reports_each_neighbour_from_exactly_one_group_of_tables(seed: int, k: int, skew: str,
                                                                       groups: int) -> None:
    """query(once=True) over disjoint groups of tables (the service's partitions): together they give
    the brute-force set, each neighbour from one group only, also after splits."""
    docs = make_set(seed, k, 200, skew)
    rng = random.Random(seed + 2)
    index = BlockIndex(k=k, **FORCED)  # type: ignore[arg-type]
    for doc, fp in docs.items():
        index.insert(fp, doc)
    tables = list(range(k + 1))
    rng.shuffle(tables)
    parts = [set(tables[g::groups]) for g in range(groups)]
    for query in rng.sample(list(docs.values()), 40) + [flip(v, k, rng) for v in rng.sample(list(docs.values()), 10)]:
        seen = [hit.doc_id for part in parts if part for hit in index.query(query, tables=part, once=True)]
        assert len(seen) == len(set(seen)), "a neighbour came from two groups"
        assert set(seen) == set(brute_force(docs, query, k))
        everywhere = [hit.doc_id for part in parts if part for hit in index.query(query, tables=part)]
        assert len(everywhere) >= len(seen)  # without once, shared neighbours come from several groups


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3, 5]), skew=SKEWS)
def test_deletes_expiry_and_replacement_stay_exact(seed: int, k: int, skew: str) -> None:
    rng = random.Random(seed)
    docs = make_set(seed, k, 300, skew)
    ts = {doc: float(rng.randrange(100)) for doc in docs}
    index = BlockIndex(k=k, **FORCED)  # type: ignore[arg-type]
    for doc, fp in docs.items():
        index.insert(fp, doc, ts=ts[doc])
    for doc in rng.sample(sorted(docs), len(docs) // 4):
        assert index.delete(doc)
        assert not index.delete(doc)
        del docs[doc]
    expired = index.expire(30.0)
    assert expired == sum(1 for doc in list(docs) if ts[doc] < 30.0)
    docs = {doc: fp for doc, fp in docs.items() if ts[doc] >= 30.0}
    for doc in rng.sample(sorted(docs), len(docs) // 5):  # a new fingerprint replaces the old one
        docs[doc] = flip(docs[doc], k + 3, rng)
        index.insert(docs[doc], doc, ts=50.0)
    assert len(index) == len(docs)
    check(index, docs, k, rng)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fps=st.lists(st.integers(0, MASK), min_size=1, max_size=60),
    query=st.integers(0, MASK),
    k=st.sampled_from([1, 2, 3, 5]),
)
def test_arbitrary_fingerprints(fps: list[int], query: int, k: int) -> None:
    """Hypothesis-chosen fingerprints (it favours edge values: 0, all ones, single bits)."""
    index = BlockIndex(k=k, split_mu=0.0, min_split=2)
    docs = {f"d{i}": fp for i, fp in enumerate(fps)}
    for doc, fp in docs.items():
        index.insert(fp, doc)
    for q in (query, fps[0], fps[-1] ^ 1):
        assert {h.doc_id: h.distance for h in index.query(q)} == brute_force(docs, q, k)


def test_reopened_rocksdb_index_is_the_same(tmp_path: Path) -> None:
    k = 3
    docs = make_set(7, k, 1500, "one_block")
    path = str(tmp_path / "idx")
    rng = random.Random(3)
    index = BlockIndex(path, k=k, **FORCED)  # type: ignore[arg-type]
    for i, (doc, fp) in enumerate(docs.items()):
        index.insert(fp, doc, ts=float(i))
    for doc in list(docs)[:100]:
        index.delete(doc)
        del docs[doc]
    before = index.stats()
    queries = [rng.choice(list(docs.values())) for _ in range(50)]
    answers = [index.query(q) for q in queries]
    index.close()

    reopened = BlockIndex(path, k=k, **FORCED)  # type: ignore[arg-type]
    after = reopened.stats()
    assert after.documents == before.documents == len(docs)
    assert after.splits == before.splits > 0
    assert after.entries == before.entries
    assert [reopened.query(q) for q in queries] == answers
    check(reopened, docs, k, rng)
    # The reopened index keeps working: new documents get fresh handles, old ones expire.
    reopened.insert(queries[0], "new-doc", ts=1e9)
    assert "new-doc" in {h.doc_id for h in reopened.query(queries[0])}
    assert reopened.expire(1e8) == len(docs)
    assert [h.doc_id for h in reopened.query(queries[0])] == ["new-doc"]
    reopened.close()


def test_reopen_with_other_k_is_refused(tmp_path: Path) -> None:
    BlockIndex(str(tmp_path / "i"), k=3).close()
    with pytest.raises(ValueError, match="built with"):
        BlockIndex(str(tmp_path / "i"), k=2)


@pytest.mark.parametrize("version", [6, 7])
def test_a_store_of_an_older_format_is_refused_with_a_clear_error(tmp_path: Path, version: int) -> None:
    import json

    from stream.storage import RocksStore

    store = RocksStore(str(tmp_path / "i"))
    store.put(b"\xffconfig", json.dumps({"version": version, "k": 3, "bits": 64, "bands": 16}).encode())
    store.close()
    # format 6 records keep 16 bytes per band (value and extension); format 7 entries keep other filter
    # bits, and its tables report other pairs (SimhashBlocks.reaches)
    with pytest.raises(ValueError, match=f"format version {version}, this code reads version 9 only: rebuild it"):
        BlockIndex(str(tmp_path / "i"), k=3, bands=16)


def test_payloads_come_back_with_hits_and_follow_reinserts() -> None:
    """A record keeps the caller's payload; a redelivery with the same payload writes nothing,
    another payload (same fingerprint) rewrites the record, more tables keep it."""
    store = CountingStore()
    index = BlockIndex(k=3, bands=2, store=store)
    bands = ((1, 2), (3, 4))
    index.insert(0xABC, "a", 1.0, bands, payload=b"first")
    index.insert(0xABC ^ 1, "b", 2.0, bands, tables=[0], payload=b"")
    assert {(h.doc_id, h.payload) for h in index.query(0xABC, bands)} == {("a", b"first"), ("b", b"")}
    writes = store.writes
    index.insert(0xABC, "a", 1.0, bands, payload=b"first")  # redelivery: nothing written
    assert store.writes == writes
    index.insert(0xABC, "a", 1.0, bands, payload=b"second \x00 \xff")
    index.insert(0xABC ^ 1, "b", 2.0, bands, payload=b"b")  # more tables, new payload
    assert store.writes == writes + 2
    index.close()
    reopened = BlockIndex(k=3, bands=2, store=store)
    hits = reopened.query(0xABC, bands)
    assert [(h.doc_id, h.payload, h.via) for h in hits] == [("a", b"second \x00 \xff", "simhash"),
                                                            ("b", b"b", "simhash")]
    assert {h.doc_id for h in reopened.query(0xABC ^ 0xFFFF, bands)} == {"a", "b"}  # via the bands
    assert reopened.delete("a") and [h.doc_id for h in reopened.query(0xABC, bands)] == ["b"]
    reopened.close()


class CountingStore(MemoryStore):
    """A MemoryStore that counts its write batches."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write_ops(self, ops: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.writes += 1
        super().write_ops(ops)


def test_tiny_cache_gives_the_same_answers() -> None:
    docs = make_set(11, 3, 400, "two_blocks")  # enough to evict all the time: the cache is the point
    small = BlockIndex(k=3, cache_bytes=4096, **FORCED)  # type: ignore[arg-type]
    for doc, fp in docs.items():
        small.insert(fp, doc)
    assert len(small.cache) < 20  # evicting all the time
    check(small, docs, 3, random.Random(2))
    assert small.stats().cache_misses > 0


@pytest.mark.parametrize("skew", ["one_block", "two_blocks"])
def test_tiny_cache_stays_exact_while_splits_deal_and_evict_between_writes(skew: str) -> None:
    """Inserts, deletes and queries interleaved under a cache that evicts split buckets with what
    they dealt all the time: every answer equals brute force (a split node or sub-bucket left out of
    a write would lose an entry)."""
    docs = make_set(23, 3, 300, skew)
    rng = random.Random(4)
    small = BlockIndex(k=3, cache_bytes=6000, **FORCED)  # type: ignore[arg-type]
    live: dict[str, int] = {}
    for i, (doc, fp) in enumerate(docs.items()):
        small.insert(fp, doc)
        live[doc] = fp
        if i % 7 == 3:
            gone = rng.choice(sorted(live))
            assert small.delete(gone)
            del live[gone]
        if i % 5 == 0:
            query = flip(rng.choice(list(live.values())), rng.randrange(5), rng)
            assert {h.doc_id: h.distance for h in small.query(query)} == brute_force(live, query, 3)
    assert small.stats().splits > 0 and small.stats().cache_misses > 0
    check(small, live, 3, rng)


def test_more_matches_than_the_filter_buffer() -> None:
    """The compiled filter writes matches into a preallocated buffer (1024): a query matching more
    (here 4 tables x 1500 copies of one fingerprint) retries with room and still returns them all."""
    index = BlockIndex(k=3)
    fp = 0x0123456789ABCDEF
    for i in range(1500):
        index.insert(fp ^ (1 << (i % 64)) if i % 2 else fp, f"d{i}")
    hits = index.query(fp)
    assert len(hits) == 1500
    assert sorted(hit.distance for hit in hits) == [0] * 750 + [1] * 750
