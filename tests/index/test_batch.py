"""The batch calls (query_many, insert_many, query_insert_many) equal their one-document loops.

Same answers as ``query`` then ``insert`` per document, exact against brute force, and (when no
split intervenes) the very same keys and values in the store; batches that must not take the batch
path (ids already indexed or repeated, blocks too wide for root slots) still behave like the loop.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex, IndexHit
from stream.index.batch.keys import big_endian, ts_keys
from stream.index.records import ts_key
from stream.index.simhash.arena import RootArena
from stream.storage import KVStore, MemoryStore
from tests.index.helpers import FORCED, SKEWS, brute_force, flip, make_set, stored_contents


def count_scans(store: KVStore) -> list[bytes]:
    """Record the prefix of every scan of ``store`` (instrumentation: the store still scans)."""
    scans: list[bytes] = []
    scan = store.scan_prefix

    def counted(prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        scans.append(prefix)
        return scan(prefix)

    store.scan_prefix = counted  # type: ignore[method-assign]
    return scans


def streaming_loop(index: BlockIndex, docs: dict[str, int], ts: dict[str, float]) -> list[list[IndexHit]]:
    answers: list[list[IndexHit]] = []
    for doc, fp in docs.items():
        answers.append(index.query(fp))
        index.insert(fp, doc, ts[doc])
    return answers


def streaming_batches(index: BlockIndex, docs: dict[str, int], ts: dict[str, float], size: int) -> list[list[IndexHit]]:
    ids = list(docs)
    answers: list[list[IndexHit]] = []
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        answers += index.query_insert_many([docs[d] for d in chunk], chunk, [ts[d] for d in chunk])
    return answers


def contents(index: BlockIndex) -> dict[bytes, bytes]:
    return stored_contents(index)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3, 5]), skew=SKEWS, size=st.sampled_from([1, 7, 64]))
def test_query_insert_many_equals_the_loop(seed: int, k: int, skew: str, size: int) -> None:
    docs = make_set(seed, k, 150, skew)  # splits are forced small (FORCED): 150 documents split deep
    rng = random.Random(seed)
    ts = {doc: float(rng.randrange(50)) for doc in docs}
    loop, batch = BlockIndex(k=k, **FORCED), BlockIndex(k=k, **FORCED)  # type: ignore[arg-type]
    assert streaming_batches(batch, docs, ts, size) == streaming_loop(loop, docs, ts)
    # every answer is the brute-force set of the documents before it
    seen: dict[str, int] = {}
    for doc, answer in zip(docs, streaming_loop(BlockIndex(k=k), docs, ts), strict=True):
        assert {hit.doc_id: hit.distance for hit in answer} == brute_force(seen, docs[doc], k)
        seen[doc] = docs[doc]
    probes = [flip(fp, rng.randrange(k + 2), rng) for fp in rng.sample(list(docs.values()), 40)]
    assert batch.query_many(probes) == [loop.query(p) for p in probes]
    assert len(batch) == len(loop) == len(docs)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.sampled_from([3, 50, 256]))
def test_without_splits_the_store_holds_the_same_keys(seed: int, size: int) -> None:
    """The batch path writes byte for byte what the loop writes (the same handles, records, expiry and
    doc-id keys, entries), and the statistics agree."""
    docs = make_set(seed, 3, 250, "uniform")
    rng = random.Random(seed)
    ts = {doc: rng.choice([0.0, -0.0, -1.5, 3.25, 1e12, float(rng.randrange(100))]) for doc in docs}
    loop, batch = BlockIndex(k=3), BlockIndex(k=3)
    streaming_loop(loop, docs, ts)
    streaming_batches(batch, docs, ts, size)
    assert contents(batch) == contents(loop)
    # candidates differ by design (a batch finds its own pairs outside the index), the structure not
    sa, sb = batch.stats(), loop.stats()
    assert (sa.documents, sa.entries, sa.splits) == (sb.documents, sb.entries, sb.splits)
    assert sa.kinds["simhash"].levels == sb.kinds["simhash"].levels


@pytest.mark.parametrize("size", [16, 200])
def test_batches_over_cached_roots_keep_the_loops_answers_keys_and_statistics(size: int) -> None:
    """16-bit fingerprints, 4-bit blocks: after the first few documents every root is cached, so the
    batches take the all-cached path (roots and bucket sizes read once, by the filter, for the
    inserts too), buckets take several entries per batch and cross size bins."""
    rng = random.Random(size)
    docs = {f"d{i}": rng.getrandbits(16) for i in range(600)}
    ts = {doc: float(i) for i, doc in enumerate(docs)}
    loop, batch = BlockIndex(k=3, bits=16), BlockIndex(k=3, bits=16)
    assert streaming_batches(batch, docs, ts, size) == streaming_loop(loop, docs, ts)
    assert contents(batch) == contents(loop)
    sa, sb = batch.stats(), loop.stats()
    assert sa.kinds["simhash"].levels == sb.kinds["simhash"].levels
    assert sa.kinds["simhash"].levels[0].buckets == 4 * 16


def test_insert_many_then_reopen(tmp_path: Path) -> None:
    docs = make_set(5, 3, 2000, "one_block")
    path = str(tmp_path / "idx")
    index = BlockIndex(path, k=3, **FORCED)  # type: ignore[arg-type]
    ids = list(docs)
    for start in range(0, len(ids), 300):
        chunk = ids[start : start + 300]
        index.insert_many([docs[d] for d in chunk], chunk, [float(i) for i in range(len(chunk))])
    assert index.stats().splits > 0
    index.close()
    reopened = BlockIndex(path, k=3, **FORCED)  # type: ignore[arg-type]
    rng = random.Random(1)
    for query in rng.sample(list(docs.values()), 50):
        assert {h.doc_id: h.distance for h in reopened.query(query)} == brute_force(docs, query, 3)
    assert len(reopened) == len(docs)
    reopened.close()


def test_known_or_repeated_ids_take_the_loop_semantics() -> None:
    """A redelivered id is a no-op, a changed one replaces the old entry, an id twice in one batch is
    the last one: exactly as a loop of insert (later documents do not see the replaced version)."""
    fp, other = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    loop, batch = BlockIndex(k=3), BlockIndex(k=3)
    for index in (loop, batch):
        index.insert(fp, "a", 1.0)
    fps, ids, ts = [fp, other, fp ^ 1, other ^ 3], ["a", "b", "c", "b"], [1.0, 2.0, 3.0, 4.0]
    expected = []
    for f, d, t in zip(fps, ids, ts, strict=True):
        expected.append(loop.query(f))
        loop.insert(f, d, t)
    assert batch.query_insert_many(fps, ids, ts) == expected
    assert {h.doc_id for h in batch.query(other)} == {"b"}
    assert [h.ts for h in batch.query(other)] == [4.0]
    assert contents(batch) == contents(loop)


def test_wide_blocks_without_root_slots() -> None:
    """k = 1 cuts 64 bits into two 32-bit blocks (no slot lists): the batch calls still work."""
    docs = make_set(3, 1, 200, "uniform")
    loop, batch = BlockIndex(k=1), BlockIndex(k=1)
    ts = dict.fromkeys(docs, 0.0)
    assert streaming_batches(batch, docs, ts, 32) == streaming_loop(loop, docs, ts)
    assert contents(batch) == contents(loop)


def test_bad_batches_are_refused_and_change_nothing() -> None:
    index = BlockIndex(k=3)
    with pytest.raises(ValueError, match="fingerprints"):
        index.insert_many([1, 2], ["a"], [0.0, 0.0])
    with pytest.raises(ValueError, match="unsigned"):
        index.query_insert_many([1, -2], ["a", "b"])
    with pytest.raises(ValueError, match="unsigned"):
        index.query_many([1 << 64])
    with pytest.raises(TypeError):
        index.insert_many([1.5], ["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="NaN"):
        index.insert_many([1], ["a"], [float("nan")])
    assert len(index) == 0 and contents(index) == {}
    assert index.query_many([]) == [] and index.query_insert_many([], []) == []


def test_batch_key_columns_match_the_scalar_code() -> None:
    values = [0.0, -0.0, -1.5, 1.5, 1e300, -1e300, float("inf"), float("-inf")]
    assert [bytes(row) for row in ts_keys(np.array(values))] == [ts_key(v) for v in values]
    ints = [0, 1, 0xFF00, (1 << 64) - 1, 0x0123456789ABCDEF]
    assert [bytes(row) for row in big_endian(np.array(ints, dtype=np.uint64), 5)] == [
        (v & ((1 << 40) - 1)).to_bytes(5, "big") for v in ints
    ]


def test_a_fresh_index_skips_scans_until_it_evicts() -> None:
    """An index that began on an empty store of its own knows every bucket (a miss is an empty one)
    until its cache first evicts; from then on misses read the store, and answers stay exact."""
    index = BlockIndex(k=3, cache_bytes=600 * RootArena.ENTRY_BYTES)  # ~600 entries in the root arena
    scans = count_scans(index.store)
    docs = make_set(4, 3, 300, "uniform")
    ids = list(docs)
    index.insert_many([docs[d] for d in ids[:40]], ids[:40])
    assert index.cache.complete and scans == []
    for start in range(40, len(ids), 50):
        index.insert_many([docs[d] for d in ids[start:start + 50]], ids[start:start + 50])
    assert not index.cache.complete and scans  # evicted, then read the store for buckets not cached
    for query in list(docs.values())[:60]:
        assert {h.doc_id: h.distance for h in index.query(query)} == brute_force(docs, query, 3)


def test_an_index_on_a_callers_store_reads_what_others_wrote() -> None:
    """A store passed in may be filled behind the index (the service restores changelogs into it), so
    its index never takes a cache miss for an empty bucket."""
    store = MemoryStore()
    reader = BlockIndex(k=3, store=store)
    writer = BlockIndex(k=3, store=store)
    docs = make_set(6, 3, 100, "uniform")
    writer.insert_many(list(docs.values()), list(docs))
    # the batch path's entries reach the store a root at a time (stream/index/simhash/segments.py)
    writer.write_pending()
    assert not reader.cache.complete
    for query in list(docs.values())[:20]:
        assert {h.doc_id for h in reader.query_many([query])[0]} == set(brute_force(docs, query, 3))


def test_a_sole_writer_on_an_empty_callers_store_skips_scans_but_not_on_a_filled_one() -> None:
    """``sole_writer``: the caller vouches that only this index writes its store (the service's probe
    stage for a partition it owns). Empty: misses skip their scan, answers stay exact; not empty: the
    index reads what is there."""
    docs = make_set(7, 3, 200, "uniform")
    ids = list(docs)
    empty = MemoryStore()
    scans = count_scans(empty)
    index = BlockIndex(k=3, store=empty, sole_writer=True)
    scans.clear()  # the emptiness check itself
    for fp, doc_id in zip([docs[d] for d in ids], ids, strict=True):
        index.query(fp)
        index.insert(fp, doc_id)
    assert index.cache.complete and scans == []
    for query in list(docs.values())[:40]:
        assert {h.doc_id: h.distance for h in index.query(query)} == brute_force(docs, query, 3)
    filled = BlockIndex(k=3, store=empty, sole_writer=True)  # the same store, now holding the documents
    assert not filled.cache.complete
    for query in list(docs.values())[:40]:
        assert {h.doc_id: h.distance for h in filled.query(query)} == brute_force(docs, query, 3)


def test_a_root_filter_skips_scans_for_absent_roots_and_changes_no_answer() -> None:
    """``root_filter``: an index reopened on a filled store learns its top-level buckets from the
    records (SimHash and band tables), skips the scan for any other, and answers as an index that
    scans, also after splits, new documents and evictions from a tiny cache."""
    rng = random.Random(11)
    n_bands = 4
    docs = make_set(11, 3, 300, "one_block")
    bands = {d: tuple((rng.randrange(60), rng.getrandbits(64)) for _ in range(n_bands)) for d in docs}
    filled = MemoryStore()
    with BlockIndex(k=3, bands=n_bands, store=filled, sole_writer=True, **FORCED) as writer:  # type: ignore[arg-type]
        for doc, fp in docs.items():
            writer.insert(fp, doc, bands=bands[doc])
    copy = MemoryStore()
    copy.write_ops(list(filled.scan_prefix(b"")))
    plain_scans, filtered_scans = count_scans(filled), count_scans(copy)
    plain = BlockIndex(k=3, bands=n_bands, store=filled, sole_writer=True, cache_bytes=20_000,
                       **FORCED)  # type: ignore[arg-type]
    filtered = BlockIndex(k=3, bands=n_bands, store=copy, sole_writer=True, root_filter=True, cache_bytes=20_000,
                          **FORCED)  # type: ignore[arg-type]
    assert filtered.cache.root_filter is not None and plain.cache.root_filter is None

    def answers(index: BlockIndex, fp: int, doc_bands: tuple[tuple[int, int], ...]) -> list[tuple[str, int, str]]:
        return [(h.doc_id, h.distance, h.via) for h in index.query(fp, doc_bands)]

    new = {f"new{i}": (rng.getrandbits(64),
                       tuple((1000 + rng.randrange(60), rng.getrandbits(64)) for _ in range(n_bands)))
           for i in range(60)}
    before = len(plain_scans), len(filtered_scans)
    fresh_fp, fresh_bands = new["new0"]
    assert answers(plain, fresh_fp, fresh_bands) == answers(filtered, fresh_fp, fresh_bands) == []
    # both have the band filter (sole writers): only the plain one scans, for its 4 SimHash roots
    assert len(plain_scans) - before[0] >= 4 and len(filtered_scans) == before[1]
    for doc, (fp, doc_bands) in new.items():
        for index in (plain, filtered):
            index.insert(fp, doc, bands=doc_bands)
    queries = [(fp, bands[doc]) for doc, fp in list(docs.items())[:80]] + list(new.values())
    queries += [(flip(fp, 2, rng), doc_bands) for fp, doc_bands in queries[:40]]
    found = 0
    for fp, doc_bands in queries:
        expected = answers(plain, fp, doc_bands)
        assert answers(filtered, fp, doc_bands) == expected
        found += len(expected)
    assert found > len(queries)  # the queries meet SimHash neighbours and band mates
    assert filtered.cache.misses > 0 and filtered.stats().splits > 0
    assert len(filtered_scans) < len(plain_scans)  # the same cache size: only the absent roots differ


def test_a_root_filter_keeps_the_fresh_store_shortcut_after_evictions() -> None:
    docs = make_set(5, 3, 300, "uniform")
    store = MemoryStore()
    scans = count_scans(store)
    index = BlockIndex(k=3, store=store, sole_writer=True, root_filter=True, cache_bytes=20_000)
    for doc, fp in docs.items():
        index.insert(fp, doc)
    assert not index.cache.complete  # the tiny cache evicted
    for query in list(docs.values())[:60]:
        assert {h.doc_id: h.distance for h in index.query(query)} == brute_force(docs, query, 3)
    scans.clear()
    rng = random.Random(9)
    stranger = next(fp for fp in (rng.getrandbits(64) for _ in range(1000))
                    if not any((fp ^ other) >> (16 * t) & 0xFFFF == 0 for other in docs.values() for t in range(4)))
    assert index.query(stranger) == [] and scans == []  # its 4 roots are absent: no scan
