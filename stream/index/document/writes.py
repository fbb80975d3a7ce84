"""The writes of one document: ``insert`` (new, redelivered, more tables, replaced), ``delete``, ``expire``.

Each change writes its keys in commit order, the order a changelog replays and a crash cuts: an
insert writes the handle reservation, the entries, the record, then the expiry key and the doc id
last (``insert`` takes a present doc id as done, so a replayed prefix is always redone); a delete
removes the entries and the expiry key first, then the doc id, the record last (a replayed prefix
leaves the doc id in place for a redelivered delete to finish); a deleted entry's key is kept,
empty, as a tombstone over the segment that may hold it (simhash/segments.py). Then the cached leaves and the level
counters take the change, and hot leaves re-split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

import numpy as np

from stream.index.document.query import cached_roots, probe
from stream.index.records import (
    EXPIRY_NS,
    HANDLE_NS,
    IndexHit,
    StoredDocument,
    doc_key,
    handle_bytes,
    lookup_puts,
    ts_key,
)
from stream.index.simhash.buckets import Bucket
from stream.index.simhash.table import ENTRY_TAG, BucketTable, Leaf
from stream.index.state import IndexState, Probe

# Leaves that reached the split threshold, to consider once every table took the change.
Grown = list[tuple[BucketTable, Leaf, tuple[int, int]]]


def insert(state: IndexState, fingerprint: int, doc_id: str, ts: float = 0.0, bands: Sequence[tuple[int, int]] = (),
           tables: Collection[int] | None = None, payload: bytes = b"") -> None:
    """``BlockIndex.insert``."""
    layout = state.layout
    if not 0 <= fingerprint < layout.limit:
        layout.check_fingerprint(fingerprint)
    if math.isnan(ts):
        raise ValueError("ts is NaN")
    if bands or tables is not None:
        band_pairs = state.band_pairs(bands) if bands else ()
        used = layout.tables_for(tables, band_pairs)
    else:  # the common call: what tables_for(None, ()) returns, without the call
        band_pairs, used = (), layout.simhash_tables
    id_key = doc_key(doc_id)
    raw_handle = state.kv.get(id_key)
    if raw_handle is not None:
        old = state.document(raw_handle)
        if old is not None and (old.fingerprint, old.ts, old.bands) == (fingerprint, ts, band_pairs):
            if used <= old.tables and old.payload == payload:  # a redelivery
                return
            handle = int.from_bytes(raw_handle, "big")
            if state.anchors is not None and old.payload != payload:
                state.anchors.remove(handle, old.payload)
                state.anchors.add(handle, payload)
            add(state, handle, old._replace(tables=old.tables | used, payload=payload), used - old.tables)
            return
        delete_handle(state, raw_handle, old)
    doc = StoredDocument(fingerprint, ts, used, band_pairs, doc_id, payload)
    add(state, state.handles.take(), doc, used, id_key=id_key)


def add(state: IndexState, handle: int, doc: StoredDocument, tables: frozenset[int],
        id_key: bytes | None = None) -> None:
    """Write the document's record and its entries in ``tables`` (commit order: module doc), then
    mirror the entries into the cache and re-split hot leaves. ``id_key`` (the doc-id key) is given
    for a new document: then its expiry and id keys go too (else it gains tables)."""
    layout = state.layout
    fingerprint = doc.fingerprint
    hb = handle_bytes(handle)
    puts: list[tuple[bytes, bytes | None]] = []
    reservation = state.handles.reservation()
    if reservation is not None:
        puts.append(reservation)
    roots = cached_roots(state, fingerprint) if tables is layout.simhash_tables else None
    probed: Probe = []
    if roots is not None:  # the common insert: k + 1 cached, unsplit roots
        keys = layout.root_keys(fingerprint)
        tail = ENTRY_TAG + hb
        puts += [(key + tail, payload) for key, payload in zip(keys, layout.root_payloads(fingerprint), strict=True)]
    else:
        probed = probe(state, fingerprint, tables)
        puts += _leaf_entries(probed, fingerprint, hb)
    if doc.bands and tables is not layout.simhash_tables:  # before the record can be read
        map_bands(state, handle, doc.bands, tables, state.band_map.add_many)
    puts.append((HANDLE_NS + hb, state.codec.encode(doc)))
    if id_key is not None:
        puts += lookup_puts(hb, doc.ts, id_key)
        state.stats.documents += 1
        if state.anchors is not None:
            state.anchors.add(handle, doc.payload)
    state.kv.write_ops(puts)
    state.mutated()
    big: Grown = []
    grown = 0
    if roots is not None:
        grown = _append_to_roots(state, keys, roots, handle, fingerprint, big)
    for table, leaves, source in probed:
        grown += _append_to_leaves(state, table, leaves, source, handle, fingerprint, big)
    if grown:
        state.cache.grew_entries(grown)
    for table, leaf, source in big:  # splits wait until every table took the entry
        table.maybe_split(leaf, source)


def _leaf_entries(probed: Probe, fingerprint: int, hb: bytes) -> list[tuple[bytes, bytes | None]]:
    """One entry per table, at the top-level bucket; whole once it is split (simhash/table.py)."""
    puts: list[tuple[bytes, bytes | None]] = []
    for table, leaves, source in probed:
        if leaves[0].path:
            puts.append((table.root_key(source) + ENTRY_TAG + hb, table.scheme.whole_payload(fingerprint, source)))
        else:
            puts.append((leaves[0].key + ENTRY_TAG + hb, table.scheme.payload(fingerprint, source)))
    return puts


def _append_to_roots(state: IndexState, keys: list[bytes], roots: list[Bucket], handle: int, fingerprint: int,
                     big: Grown) -> int:
    """Mirror a written entry into the k + 1 cached roots (level 0) and their counters; adds the
    roots that reach ``min_split`` to ``big``. Returns how many cached buckets grew."""
    stats, tables = state.stats, state.tables
    min_split = state.policy.min_split
    for t, (key, bucket, mask) in enumerate(zip(keys, roots, state.layout.filter_masks, strict=True)):
        bucket.handles.append(handle)
        bucket.fps.append(fingerprint & mask)
        size = len(bucket.handles)
        stats.added("simhash", 0, size)
        if size >= min_split:
            big.append((tables[t], Leaf(key, bucket, (), None), (fingerprint, 0)))
    return len(roots)


def _append_to_leaves(state: IndexState, table: BucketTable, leaves: list[Leaf], source: tuple[int, int],
                      handle: int, fingerprint: int, big: Grown) -> int:
    """Mirror a written entry into the leaves its descent reached (and the split nodes above them)
    and the level counters; adds the leaves that reach ``min_split`` to ``big``. Returns how many
    cached leaves grew (``BucketCache.grew_entries``, left to the caller)."""
    if leaves[0].path:  # below a split: its split nodes keep every entry of their subtree
        table.added_below_split(source, handle, fingerprint)
    cached = state.cache.buckets
    stats = state.stats
    min_split = state.policy.min_split
    masked = fingerprint & table.filter_mask
    grown = 0
    for leaf in leaves:
        bucket = leaf.bucket
        bucket.handles.append(handle)
        bucket.fps.append(fingerprint & table.scheme.leaf_mask(leaf.path) if leaf.path else masked)
        if leaf.key in cached:  # an evicted leaf's object no longer counts
            grown += 1
        size = len(bucket.handles)
        stats.added(table.kind, len(leaf.path), size)
        if size >= min_split:
            big.append((table, leaf, source))
    return grown


def map_bands(state: IndexState, handle: int, bands: tuple[tuple[int, int], ...], tables: frozenset[int],
              change: Callable[[np.ndarray, np.ndarray, np.ndarray], None]) -> None:
    """Add (``BandMap.add_many``) or remove the document's entries in the band tables of ``tables``."""
    k = state.layout.k
    columns = [t - k - 1 for t in sorted(tables) if t > k]
    if columns:
        values = np.fromiter((bands[c][0] for c in columns), dtype=np.uint64, count=len(columns))
        change(state.layout.band_ids[columns], values, np.full(len(columns), handle, dtype=np.uint64))


def delete_handle(state: IndexState, raw_handle: bytes, doc: StoredDocument | None) -> None:
    """Remove the document with this handle (``doc``: its record, None if it has none)."""
    deletes: list[bytes] = []
    tombstones: list[tuple[bytes, bytes | None]] = []  # an entry may sit in a segment: simhash/segments.py
    handle = int.from_bytes(raw_handle, "big")
    touched: list[tuple[BucketTable, tuple[int, int], list[Leaf]]] = []
    if doc is not None:
        source = (doc.fingerprint, 0)
        for t in sorted(doc.tables & state.layout.simhash_tables):
            table = state.tables[t]
            leaves = table.leaves(source)
            tombstones.append((table.root_key(source) + ENTRY_TAG + raw_handle, b""))
            touched.append((table, source, leaves))
        deletes += [key for key, _ in lookup_puts(raw_handle, doc.ts, doc_key(doc.doc_id))]
    deletes.append(HANDLE_NS + raw_handle)
    state.kv.write_ops([*tombstones, *((key, None) for key in deletes)])
    if doc is not None and doc.bands:
        map_bands(state, handle, doc.bands, doc.tables, state.band_map.remove_many)
    if doc is not None and state.anchors is not None:
        state.anchors.remove(handle, doc.payload)
    for table, source, leaves in touched:
        table.removed(source, leaves, handle)
    if doc is not None:
        state.stats.documents -= 1
    state.mutated()


def delete(state: IndexState, doc_id: str) -> bool:
    """``BlockIndex.delete``."""
    key = doc_key(doc_id)
    raw_handle = state.kv.get(key)
    if raw_handle is None:
        return False
    doc = state.document(raw_handle)
    if doc is None:  # half-written document (store edited behind the index): drop the id
        state.kv.delete(key)
        return True
    delete_handle(state, raw_handle, doc)
    return True


def expire(state: IndexState, before_ts: float) -> int:
    """``BlockIndex.expire``: delete every document with ts < ``before_ts``; returns how many."""
    bound = ts_key(before_ts)
    removed = 0
    while True:
        chunk: list[bytes] = []
        for key, _ in state.kv.scan_prefix(EXPIRY_NS):
            if key[1:9] >= bound or len(chunk) >= 1024:
                break
            chunk.append(key[9:])
        if not chunk:
            return removed
        for raw_handle in chunk:
            delete_handle(state, raw_handle, state.document(raw_handle))
        removed += len(chunk)


def document(state: IndexState, doc_id: str) -> IndexHit | None:
    """``BlockIndex.document``."""
    raw_handle = state.kv.get(doc_key(doc_id))
    doc = None if raw_handle is None else state.document(raw_handle)
    if doc is None:
        return None
    return IndexHit(doc_id, 0, doc.ts, doc.fingerprint, "id", doc.payload)
