"""``BlockIndex.anchor_query_many``: the anchor table's proposals (index/anchors.py) as index hits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stream.index.batch.data import BatchBands
from stream.index.records import RECORD_HEAD, IndexHit, doc_key, first_shared_band, pack_bands, record_tail
from stream.index.state import IndexState


def query_many(state: IndexState, fingerprints: Sequence[int], payloads: Sequence[bytes], doc_ids: Sequence[str],
               bands: BatchBands | None = None) -> list[list[IndexHit]]:
    """Each document's proposals among the documents indexed before it: those with a lower handle
    when it is indexed with a handle of its own, else every one (module doc of index/anchors.py).
    With ``bands`` (each document's), a pair the tables find (within k, or a band value in common) is
    left out: it is a candidate already, wherever its tables are."""
    table = state.anchors
    if table is None:
        raise ValueError("this index keeps no anchor table (BlockIndex.use_anchors)")
    if not len(fingerprints) == len(payloads) == len(doc_ids) == (len(doc_ids) if bands is None else len(bands)):
        raise ValueError(f"{len(fingerprints)} fingerprints, {len(payloads)} payloads, {len(doc_ids)} ids"
                         + ("" if bands is None else f", {len(bands)} band rows"))
    own = state.kv.multi_get([doc_key(doc_id) for doc_id in doc_ids])
    queries = [(*table.anchors_of(payload), None if raw_handle is None else int.from_bytes(raw_handle, "big"))
               for payload, raw_handle in zip(payloads, own, strict=True)]
    proposed = table.proposed_many(queries)
    return [_hits(state, fingerprint, handles, None if bands is None else bands[i]) if handles else []
            for i, (fingerprint, handles) in enumerate(zip(fingerprints, proposed, strict=True))]


def _hits(state: IndexState, fingerprint: int, handles: list[int],
          bands: Sequence[tuple[int, int]] | np.ndarray | None) -> list[IndexHit]:
    found = []
    head, k = state.codec.head, state.layout.k
    query = None if bands is None or not len(bands) else pack_bands(bands)
    for value in state.records(handles):
        if value is None:  # not in the table's derived state unless recorded; a store edited behind it
            continue
        stored, ts, n = RECORD_HEAD.unpack_from(value)
        distance = (stored ^ fingerprint).bit_count()
        if query is not None and (distance <= k or first_shared_band(value, head, n, query) is not None):
            continue
        payload, start = record_tail(value, head, n)
        found.append(IndexHit(value[start:].decode("utf-8", "surrogatepass"), distance, ts, stored, "anchor", payload))
    found.sort(key=lambda hit: (hit.distance, hit.doc_id))
    return found
