"""``BlockIndex.anchor_query_many``: the anchor table's proposals (index/anchors.py) as index hits."""

from __future__ import annotations

from collections.abc import Sequence

from stream.index.records import RECORD_HEAD, IndexHit, doc_key, record_tail
from stream.index.state import IndexState


def query_many(state: IndexState, fingerprints: Sequence[int], payloads: Sequence[bytes],
               doc_ids: Sequence[str]) -> list[list[IndexHit]]:
    """Each document's proposals among the documents indexed before it: those with a lower handle
    when it is indexed with a handle of its own, else every one (module doc of index/anchors.py)."""
    table = state.anchors
    if table is None:
        raise ValueError("this index keeps no anchor table (BlockIndex.use_anchors)")
    if not len(fingerprints) == len(payloads) == len(doc_ids):
        raise ValueError(f"{len(fingerprints)} fingerprints, {len(payloads)} payloads, {len(doc_ids)} ids")
    own = state.kv.multi_get([doc_key(doc_id) for doc_id in doc_ids])
    queries = [(*table.anchors_of(payload), None if raw_handle is None else int.from_bytes(raw_handle, "big"))
               for payload, raw_handle in zip(payloads, own, strict=True)]
    proposed = table.proposed_many(queries)
    return [_hits(state, fingerprint, handles) if handles else []
            for fingerprint, handles in zip(fingerprints, proposed, strict=True)]


def _hits(state: IndexState, fingerprint: int, handles: list[int]) -> list[IndexHit]:
    found = []
    head = state.codec.head
    for value in state.records(handles):
        if value is None:  # not in the table's derived state unless recorded; a store edited behind it
            continue
        stored, ts, n = RECORD_HEAD.unpack_from(value)
        payload, start = record_tail(value, head, n)
        doc_id = value[start:].decode("utf-8", "surrogatepass")
        found.append(IndexHit(doc_id, (stored ^ fingerprint).bit_count(), ts, stored, "anchor", payload))
    found.sort(key=lambda hit: (hit.distance, hit.doc_id))
    return found
