"""A crash at any point of the changelog, then redelivery, leaves a lossless index.

The streaming service sends every store write to a Kafka changelog in the order the index gives
(``KVStore.write_ops``). A worker killed mid-flush leaves a prefix of
that log; the uncommitted input is redelivered and applied again. Here the log of an index that
splits hot buckets is cut after every single record, replayed into a fresh store, the interrupted
operation is redelivered, the rest of the stream follows, and every query must equal brute force.
"""

from __future__ import annotations

import random

import pytest

from stream.index import BlockIndex
from stream.index.simhash.segments import SEGMENT_TAG
from tests.index.helpers import (
    ChangelogStore,
    K,
    Log,
    brute_force,
    check_every_prefix_plus_redelivery,
    flip,
    make_set,
    open_index,
    replay,
)


def test_every_changelog_prefix_plus_redelivery_is_lossless() -> None:
    def open_live(_name: str) -> tuple[BlockIndex, Log]:
        store = ChangelogStore()
        return open_index(store), store.log

    check_every_prefix_plus_redelivery(open_live, lambda log, _name: open_index(replay(log)))


@pytest.mark.parametrize("entry_limit", [1 << 21, 24])
def test_a_batch_cut_anywhere_and_redelivered_is_lossless(entry_limit: int) -> None:
    """``insert_many`` writes a batch's records, expiry keys and doc ids; its SimHash entries stay
    pending until ``entry_limit`` of them make a checkpoint (stream/index/simhash/segments.py). Cut its log after
    every record, recover (the open redoes the entries of the records after the watermark), redeliver
    the batch: every query equals brute force."""
    rng = random.Random(3)
    docs = list(make_set(9, K, 45, "uniform").items())
    head, batch = docs[:30], docs[30:42]
    store = ChangelogStore()
    index = BlockIndex(None, k=K, store=store, entry_limit=entry_limit)
    index.insert_many([fp for _, fp in head], [doc_id for doc_id, _ in head])
    before = len(store.log)
    index.insert_many([fp for _, fp in batch], [doc_id for doc_id, _ in batch])
    full_log = list(store.log)
    assert len(full_log) - before >= 3 * len(batch)  # record, expiry key, doc id each
    segments = [key for key, _ in full_log if key[0] <= K and key[3:4] == SEGMENT_TAG]
    assert bool(segments) == (entry_limit < 4 * len(docs)), "checkpoints wrote segments"
    final = dict(head + batch)
    queries = [fp for _, fp in batch] + [flip(fp, K, rng) for _, fp in batch]
    for cut in range(before, len(full_log) + 1):
        recovered = BlockIndex(None, k=K, store=replay(full_log[:cut]))
        recovered.insert_many([fp for _, fp in batch], [doc_id for doc_id, _ in batch])
        for query in queries:
            got = {hit.doc_id: hit.distance for hit in recovered.query(query)}
            assert got == brute_force(final, query, K), f"cut {cut - before}/{len(full_log) - before}"


def test_a_split_cut_short_keeps_every_entry_reachable() -> None:
    """Cut inside a split's writes (the top-level bucket's entries rewritten with whole payloads, then
    the marker): before the marker the bucket is unsplit with payloads of both kinds, after it split."""
    docs = make_set(11, K, 60, "one_block")
    store = ChangelogStore()
    index = open_index(store)
    inserted: dict[str, int] = {}
    cuts_checked = 0
    for doc_id, fp in docs.items():
        mark = len(store.log)
        splits = index.stats().splits
        index.insert(fp, doc_id)
        inserted[doc_id] = fp
        if index.stats().splits == splits:
            continue
        markers = [mark + i for i, (key, _) in enumerate(store.log[mark:]) if key.endswith(b"s")]
        rewrites = [mark + i for i, (_, value) in enumerate(store.log[mark:])
                    if value is not None and len(value) == 6]
        assert markers and rewrites and rewrites[-1] < markers[0], "a split rewrites the entries, then marks"
        for cut in (rewrites[len(rewrites) // 2], markers[0], markers[0] + 1):
            recovered = open_index(replay(store.log[:cut]))
            for query in inserted.values():
                got = {hit.doc_id: hit.distance for hit in recovered.query(query)}
                assert got == brute_force(inserted, query, K)
            cuts_checked += 1
    assert cuts_checked > 0


def test_write_buffer_sends_the_same_writes_in_the_same_order() -> None:
    """A write buffer changes only when writes reach the store, not which or in what order: the store
    holds a prefix of the unbuffered commit order at any time, so a crash (losing the pending writes)
    is one of the cuts the tests above replay. Queries see the pending writes meanwhile."""
    rng = random.Random(5)
    docs = make_set(5, K, 60, "two_blocks")
    logs, lengths = [], []
    for write_buffer in (0, 40):  # writes, ~6 documents
        store = ChangelogStore()
        index = open_index(store, write_buffer)
        live: dict[str, int] = {}
        lengths.append([])
        for i, (doc_id, fp) in enumerate(docs.items()):
            index.insert(fp, doc_id, ts=float(i % 10))
            live[doc_id] = fp
            if i % 7 == 3:
                victim = sorted(live)[i % len(live)]
                assert index.delete(victim)
                del live[victim]
            lengths[-1].append(len(store.log))
            query = flip(fp, rng.randrange(K + 2), rng)
            assert {h.doc_id: h.distance for h in index.query(query)} == brute_force(live, query, K)
        assert index.expire(5.0) > 0
        index.flush()
        logs.append(store.log)
    assert index.stats().splits > 0
    assert logs[0] == logs[1]
    assert all(b <= a for a, b in zip(*lengths, strict=True))
    assert any(b < a for a, b in zip(*lengths, strict=True)), "the writes were buffered"
