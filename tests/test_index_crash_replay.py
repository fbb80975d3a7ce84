"""A crash at any point of the changelog, then redelivery, leaves a lossless index.

The streaming service sends every store write to a Kafka changelog in the order the index gives
(puts as given, then deletes; ``KVStore.write_batch``). A worker killed mid-flush leaves a prefix of
that log; the uncommitted input is redelivered and applied again. Here the log of an index that
splits hot buckets is cut after every single record, replayed into a fresh store, the interrupted
operation is redelivered, the rest of the stream follows, and every query must equal brute force.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from stream.index import BlockIndex, MemoryStore
from tests.test_index_lossless import FORCED, brute_force, flip, make_set

K = 3


class ChangelogStore(MemoryStore):
    """A MemoryStore that also records its writes in changelog order."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self.log.append((key, bytes(value)))
        super().put(key, value)

    def delete(self, key: bytes) -> None:
        self.log.append((key, None))
        super().delete(key)

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        for key, value in puts:
            self.put(key, value)
        for key in deletes:
            self.delete(key)


def replay(log: list[tuple[bytes, bytes | None]]) -> MemoryStore:
    store = MemoryStore()
    for key, value in log:
        if value is None:
            store.delete(key)
        else:
            store.put(key, value)
    return store


def open_index(store: MemoryStore, write_buffer: int = 0) -> BlockIndex:
    return BlockIndex(None, k=K, store=store, write_buffer=write_buffer, **FORCED)  # type: ignore[arg-type]


Log = list[tuple[bytes, bytes | None]]


def check_every_prefix_plus_redelivery(
    open_live: Callable[[str], tuple[BlockIndex, Log]], recover: Callable[[Log, str], BlockIndex]
) -> None:
    """Interrupt one insert (a plain one, or the replacement of an indexed id) after every prefix of
    its changelog records, recover from that prefix, redeliver it and the rest: queries must equal
    brute force. ``open_live(name)`` gives an index and its (growing) log; ``recover(log, name)``
    does what a worker taking the state over does. Shared with the service's table store tests."""
    rng = random.Random(7)
    docs = list(make_set(3, K, 40, "one_block").items())
    cut_at = 30  # the operations around here split buckets (FORCED thresholds)
    # a replacement (new fingerprint for an indexed id) is the interrupted operation in one variant
    stream = [*docs[:cut_at], (docs[5][0], flip(docs[5][1], 2, rng)), *docs[cut_at:]]
    for interrupted in (cut_at, cut_at + 1):
        index, log = open_live(f"live{interrupted}")
        for doc_id, fp in stream[:interrupted]:
            index.insert(fp, doc_id)
        before = len(log)
        index.insert(stream[interrupted][1], stream[interrupted][0])
        full_log = list(log)
        assert len(full_log) > before
        for cut in range(before, len(full_log) + 1):
            recovered = recover(full_log[:cut], f"cut{interrupted}-{cut}")
            for doc_id, fp in stream[interrupted:]:  # redelivery of the interrupted insert, then the rest
                recovered.insert(fp, doc_id)
            final = dict(stream)
            for query in list(final.values())[::3] + [flip(fp, K, rng) for fp in list(final.values())[:10]]:
                got = {hit.doc_id: hit.distance for hit in recovered.query(query)}
                assert got == brute_force(final, query, K), f"cut {cut - before}/{len(full_log) - before}"


def test_every_changelog_prefix_plus_redelivery_is_lossless() -> None:
    def open_live(_name: str) -> tuple[BlockIndex, Log]:
        store = ChangelogStore()
        return open_index(store), store.log

    check_every_prefix_plus_redelivery(open_live, lambda log, _name: open_index(replay(log)))


def test_a_batch_cut_anywhere_and_redelivered_is_lossless() -> None:
    """``insert_many`` lays a batch's keys out by kind (all entries, then records, expiry keys, doc
    ids): cut its log after every record, recover, redeliver the batch: every query equals brute force."""
    rng = random.Random(3)
    docs = list(make_set(9, K, 45, "uniform").items())
    head, batch = docs[:30], docs[30:42]
    store = ChangelogStore()
    index = BlockIndex(None, k=K, store=store)
    index.insert_many([fp for _, fp in head], [doc_id for doc_id, _ in head])
    before = len(store.log)
    index.insert_many([fp for _, fp in batch], [doc_id for doc_id, _ in batch])
    full_log = list(store.log)
    assert len(full_log) - before >= 7 * len(batch)  # 4 entries, record, expiry key, doc id each
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
