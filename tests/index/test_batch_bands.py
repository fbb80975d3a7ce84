"""The batch calls over documents with LSH bands, table restrictions, payloads and ``once`` give what
the one-document loop gives: every answer (hits with their distance, time, via and payload) and the
final index's answers, with near copies inside a batch, deletes and redeliveries between batches,
SimHash buckets that split (forced small), hot band values, a tiny read cache, and a store that the
index does not write alone."""

from __future__ import annotations

import random
from collections.abc import Collection

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex, IndexHit
from stream.storage import MemoryStore
from tests.index.helpers import FORCED, SKEWS, brute_force, flip, make_set

BANDS = 3
Doc = tuple[str, int, tuple[tuple[int, int], ...], bytes]


def make_docs(seed: int, k: int, skew: str) -> list[Doc]:
    """Documents whose bands are mostly unique, some from a few hot band values, and near copies that
    share some bands with their original."""
    rng = random.Random(seed)
    docs = []
    for doc, fp in make_set(seed, k, 160, skew).items():
        bands = tuple((rng.randrange(6) if rng.random() < 0.1 else rng.getrandbits(64),  # a few hot buckets
                       rng.getrandbits(64) & rng.choice([0xF000F, (1 << 64) - 1])) for _ in range(BANDS))
        docs.append((doc, fp, bands, f"payload of {doc}".encode()))
    for n in range(30):  # near copies: a flipped fingerprint, some bands kept
        doc, fp, bands, _ = rng.choice(docs)
        copy = tuple(b if rng.random() < 0.6 else (100 + rng.randrange(50), rng.getrandbits(64)) for b in bands)
        docs.insert(rng.randrange(len(docs) + 1), (f"{doc}~{n}", flip(fp, rng.randrange(k + 3), rng), copy, b""))
    return docs


def tables_for(rng: random.Random, k: int, mode: str) -> Collection[int] | None:
    if mode == "all":
        return None
    return sorted(rng.sample(range(k + 1 + BANDS), rng.randrange(1, k + 2 + BANDS)))


def new_index(k: int, store: str) -> BlockIndex:
    if store == "shared":  # a caller's store, not vouched for: no fresh-cache shortcut
        return BlockIndex(k=k, bands=BANDS, store=MemoryStore(), **FORCED)  # type: ignore[arg-type]
    cache_bytes = 30_000 if store == "tiny_cache" else 256 << 20
    return BlockIndex(k=k, bands=BANDS, cache_bytes=cache_bytes, **FORCED)  # type: ignore[arg-type]


def key(hits: list[IndexHit]) -> list[tuple[str, int, float, int, str, bytes]]:
    return [tuple(hit) for hit in hits]  # type: ignore[misc]


@settings(max_examples=14, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3]), skew=SKEWS, size=st.sampled_from([1, 5, 40]),
       mode=st.sampled_from(["all", "subsets"]), once=st.booleans(),
       store=st.sampled_from(["own", "tiny_cache", "shared"]))
def test_query_insert_many_with_bands_equals_the_loop(seed: int, k: int, skew: str, size: int, mode: str,
                                                     once: bool, store: str) -> None:
    rng = random.Random(seed)
    docs = make_docs(seed, k, skew)
    docs += [rng.choice(docs) for _ in range(8)]  # redeliveries, some within a batch
    loop, batch = new_index(k, store), new_index(k, store)
    indexed: dict[str, int] = {}
    for start in range(0, len(docs), size):
        chunk = docs[start : start + size]
        tables = [tables_for(rng, k, mode) for _ in chunk]
        times = [float(rng.randrange(40)) for _ in chunk]
        expected = []
        for (doc, fp, bands, payload), chosen, t in zip(chunk, tables, times, strict=True):
            expected.append(key(loop.query(fp, bands, chosen, once)))
            loop.insert(fp, doc, t, bands, chosen, payload)
        got = batch.query_insert_many([d[1] for d in chunk], [d[0] for d in chunk], times, [d[2] for d in chunk],
                                      tables, [d[3] for d in chunk], once)
        assert [key(hits) for hits in got] == expected
        indexed.update((doc, fp) for doc, fp, _, _ in chunk)
        if rng.random() < 0.3 * min(1.0, size / 5):  # deletes between batches
            for doc in rng.sample(sorted(indexed), min(3, len(indexed))):
                assert loop.delete(doc) == batch.delete(doc)
                del indexed[doc]
    assert len(loop) == len(batch) == len(indexed)
    probes = [(fp, bands) for _, fp, bands, _ in rng.sample(docs, 40)]
    probes += [(flip(fp, rng.randrange(k + 2), rng), bands) for fp, bands in probes[:20]]
    for fp, bands in probes:
        expected_hits = key(loop.query(fp, bands))
        assert key(batch.query(fp, bands)) == expected_hits
        if mode == "all":  # every table holds every document: the SimHash hits are the brute-force set
            near = {h[0]: h[1] for h in expected_hits if h[1] <= k}
            assert near == brute_force(indexed, fp, k)
    assert [key(h) for h in batch.query_many([p[0] for p in probes], [p[1] for p in probes])] == [
        key(loop.query(fp, bands)) for fp, bands in probes
    ]
    if skew in ("one_block", "two_blocks"):
        assert batch.stats().kinds["simhash"].splits > 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([2, 3]), skew=SKEWS, groups=st.integers(2, 5),
       size=st.sampled_from([1, 7, 40]))
def test_once_reports_each_pair_from_exactly_one_group_of_tables(seed: int, k: int, skew: str, groups: int,
                                                                 size: int) -> None:
    """Each group of tables in an index of its own (the service's partitions: every document indexed in
    each of its groups), queried and filled with ``once``: every pair the one index of all tables finds
    comes from exactly one group, band mates beyond k included (a pair is verified once), whether the
    earlier document is in the index or earlier in the same batch."""
    rng = random.Random(seed)
    docs = make_docs(seed, k, skew)
    tables = list(range(k + 1 + BANDS))
    rng.shuffle(tables)
    parts = [sorted(tables[g::groups]) for g in range(groups)]
    whole, split = new_index(k, "own"), [new_index(k, "own") for _ in parts]
    beyond_k = 0
    for start in range(0, len(docs), size):
        chunk = docs[start : start + size]
        args = ([d[1] for d in chunk], [d[0] for d in chunk], [0.0] * len(chunk), [d[2] for d in chunk])
        expected = whole.query_insert_many(*args, None, [d[3] or b"-" for d in chunk])
        found: list[list[str]] = [[] for _ in chunk]
        for part, index in zip(parts, split, strict=True):
            got = index.query_insert_many(*args, [part] * len(chunk), [d[3] or b"-" for d in chunk], once=True)
            for i, hits in enumerate(got):
                found[i] += [hit.doc_id for hit in hits]
        for hits, ids in zip(expected, found, strict=True):
            assert sorted(ids) == sorted(hit.doc_id for hit in hits), "a pair missed, or reported twice"
            beyond_k += sum(1 for hit in hits if hit.distance > k)
    assert beyond_k > 0  # band mates beyond k were among them
