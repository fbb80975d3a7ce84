"""BlockIndex calls: ``tables=`` restriction and routing keys, redelivery and replacement, odd doc ids,
expiry by event time, filter survivors."""

from __future__ import annotations

import random

import pytest

from stream.index import BlockIndex, TableLayout
from stream.storage import MemoryStore

MASK = (1 << 64) - 1


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
    layout = TableLayout(k=3, bands=1)
    prefixes = {p for i, fp in enumerate(fps) for t, p in layout.routing_keys(fp, [(i % 3, 0)]) if t in (0, 4)}
    bucket_keys = [key for key, _ in store.scan_prefix(b"") if key[0] < 0xFC]
    assert bucket_keys and all(any(key.startswith(p) for p in prefixes) for key in bucket_keys)
    assert {key[0] for key in bucket_keys} == {0}  # the band table keeps no keys (stream/index/bands/memtable.py)
    assert {h.doc_id for h in idx.query(0, bands=[(1, 0)], tables={4})} == {f"d{i}" for i in range(1, 60, 3)}
    routes = layout.routing_keys(fps[0], [(0, 0)])
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


