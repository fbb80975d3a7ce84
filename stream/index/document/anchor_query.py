"""``BlockIndex.anchor_query_many``: the anchor table's proposals (index/anchors.py) as index hits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stream.index.batch.data import BatchBands
from stream.index.records import RECORD_HEAD, IndexHit, doc_key, first_shared_band, record_tail
from stream.index.state import IndexState


def query_many(state: IndexState, fingerprints: Sequence[int], payloads: Sequence[bytes], doc_ids: Sequence[str],
               bands: BatchBands | None = None) -> list[list[IndexHit]]:
    """Each document's proposals among the documents indexed before it: those with a lower handle
    when it is indexed with a handle of its own, else every one (module doc of index/anchors.py).
    With ``bands`` (each document's), a pair the tables find (within k, or a band value in common) is
    left out, before the table counts its anchors: it is a candidate already, wherever its tables are."""
    table = state.anchors
    if table is None:
        raise ValueError("this index keeps no anchor table (BlockIndex.use_anchors)")
    if not len(fingerprints) == len(payloads) == len(doc_ids) == (len(doc_ids) if bands is None else len(bands)):
        raise ValueError(f"{len(fingerprints)} fingerprints, {len(payloads)} payloads, {len(doc_ids)} ids"
                         + ("" if bands is None else f", {len(bands)} band rows"))
    own = state.kv.multi_get([doc_key(doc_id) for doc_id in doc_ids])
    queries = [(*table.anchors_of(payload), None if raw_handle is None else int.from_bytes(raw_handle, "big"))
               for payload, raw_handle in zip(payloads, own, strict=True)]
    records: dict[int, bytes | None] = {}
    packed: dict[int, bytes] = {}  # per query, its band values as pack_bands packs them

    def not_found_by_tables(query: np.ndarray, handles: np.ndarray) -> np.ndarray:
        wanted = sorted(set(handles.tolist()) - records.keys())
        records.update(zip(wanted, state.records(wanted), strict=True))
        if bands is None:
            return np.ones(len(query), dtype=bool)
        for q in set(query.tolist()) - packed.keys():  # bands[q]: pairs or an array of them
            packed[q] = np.asarray(bands[q], dtype=np.uint64)[:, 0].astype(">u8").tobytes() if len(bands[q]) else b""
        return np.array([_not_found_by_tables(state, records[h], fingerprints[q], packed[q])
                         for q, h in zip(query.tolist(), handles.tolist(), strict=True)], dtype=bool)

    proposed = table.proposed_many(queries, not_found_by_tables)
    return [_hits(state, fingerprint, [records[h] for h in handles]) if handles else []
            for fingerprint, handles in zip(fingerprints, proposed, strict=True)]


def _not_found_by_tables(state: IndexState, record: bytes | None, fingerprint: int, bands: bytes) -> bool:
    """Whether no table finds the pair: beyond k and no band value in common (``bands``: the query's,
    packed); a record missing: no pair."""
    if record is None:
        return False
    stored, _, n = RECORD_HEAD.unpack_from(record)
    if (stored ^ fingerprint).bit_count() <= state.layout.k:
        return False
    return not bands or first_shared_band(record, state.codec.head, n, bands) is None


def _hits(state: IndexState, fingerprint: int, records: list[bytes | None]) -> list[IndexHit]:
    found = []
    head = state.codec.head
    for value in records:
        if value is None:  # not in the table's derived state unless recorded; a store edited behind it
            continue
        stored, ts, n = RECORD_HEAD.unpack_from(value)
        payload, start = record_tail(value, head, n)
        found.append(IndexHit(value[start:].decode("utf-8", "surrogatepass"), (stored ^ fingerprint).bit_count(), ts,
                              stored, "anchor", payload))
    found.sort(key=lambda hit: (hit.distance, hit.doc_id))
    return found
