"""The insert half of a batch run (batch/calls.py): the keys of ``writes.add`` for every document of the
run, built at once by numpy (``batch_keys``) and written in one batch, then the same cache and
counter updates.

Order, so that a load never reads an entry that is then appended to its cached bucket again:
1. the buckets the run appends to are resolved (in the root arena, created empty or loaded) before
   any write (batch/roots.py, before the run's query, which reads the same buckets);
2. the entries of unsplit roots go to the pending entries (simhash/segments.py), which reach the
   store a root at a time (an open after a crash redoes them from the records); everything else is
   written in one batch, laid out by kind (the entries below split roots, every record, every expiry
   key, every doc id): RocksDB then fills one column family at a time, 1.9 us less per document at
   1M than switching families per document (docs/decisions/index-hot-paths.md). Each document's keys
   keep their commit order (entries, record, expiry key, doc id), so a changelog prefix holds a doc
   id only for a document whose record is there;
3. the entries are appended to the roots resolved in 1 (one compiled call; below a split root: to
   its split nodes, simhash/split_batch.py), counted, and hot buckets split.
The band tables take the run's band values in the band map (bands/memtable.py) before its queries
(``allocate``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stream.index.batch import keys as batch_keys
from stream.index.batch.roots import Resolved, SplitRoots
from stream.index.records import EXPIRY_NS, HANDLE_LEN, HANDLE_NS, PAYLOAD_FLAG, PAYLOAD_LEN
from stream.index.simhash import split_batch
from stream.index.simhash.kernels import bucket_growth
from stream.index.simhash.table import ENTRY_TAG, Leaf
from stream.index.state import IndexState
from stream.storage import WritePairs

if TYPE_CHECKING:
    from stream.index.batch.data import DocumentBatch

def allocate(state: IndexState, batch: DocumentBatch, queried: bool) -> int:
    """Handles for the documents of a run (the first is returned, the others follow in order), and
    their entries in the band map unless the run is ``queried`` (its query adds them as it finds,
    batch/run_query.py): the run's queries tell its own documents by their handles, and the records
    that name them are written later."""
    n = len(batch)
    start = state.handles.take(n)
    reservation = state.handles.reservation()
    if reservation is not None:
        state.kv.put(*reservation)  # before any entry uses them
    k = state.layout.k
    if state.layout.bands and not queried:
        rows, cols = np.nonzero(batch.part[:, k + 1 :])
        handles = np.arange(start, start + n, dtype=np.uint64)
        state.band_map.add_many(cols + (k + 1), batch.values[rows, cols], handles[rows])
    return start


def insert_run(state: IndexState, batch: DocumentBatch, start: int, resolved: Resolved) -> None:
    """Insert the documents of a run (new, distinct ids; handles from ``start``, see ``allocate``;
    their roots from ``batch_roots.resolve``)."""
    n = len(batch)
    handles = np.arange(start, start + n, dtype=np.uint64)
    keys: list[bytes] = []
    values: list[bytes] = []
    handle_matrix = batch_keys.big_endian(handles, HANDLE_LEN)
    _pend_entries(state, batch, resolved, handles)
    _split_entries(state, batch, resolved.below, handle_matrix, keys, values)
    _document_keys(state, batch, handle_matrix, keys, values)
    state.kv.write_ops(WritePairs(keys, values))
    state.stats.documents += n
    state.mutated(n)
    if state.anchors is not None:
        for handle, payload in enumerate(batch.payloads, start):
            state.anchors.add(handle, payload)
    _mirror(state, batch, resolved, handles)
    _mirror_splits(state, batch, resolved.below, handles)
    assert state.pending is not None
    if state.pending.count >= state.pending.limit:
        state.checkpoint_entries()


def _split_entries(state: IndexState, batch: DocumentBatch, below: SplitRoots, handle_matrix: np.ndarray,
                   keys: list[bytes], values: list[bytes]) -> None:
    """The entries of the documents below split roots: the whole rest, at the top-level bucket
    (``SimhashBlocks.whole_payload``)."""
    for (t, _), (root_key, _, docs) in below.items():
        scheme = state.layout.simhash[t]
        at = np.array(docs, dtype=np.int64)
        keys += batch_keys.rows(batch_keys.concat(root_key, ENTRY_TAG, handle_matrix[at]))
        values += batch_keys.rows(batch_keys.big_endian(scheme.fingerprint_rests(batch.array[at]), scheme.whole_len))


def _mirror_splits(state: IndexState, batch: DocumentBatch, below: SplitRoots, handles: np.ndarray) -> None:
    """As ``writes.add`` below split roots: every entry into the split nodes on its way (simhash/split_batch.py),
    the leaf counters, then splits of leaves that grew enough. The leaves dealt from these nodes are
    dropped from the cache (they lack the new entries; a descent deals them again)."""
    for (t, _), (root_key, root, docs) in below.items():
        table = state.tables[t]
        at = np.array(docs, dtype=np.int64)
        visits = split_batch.descend(table, root_key, root, at, batch.array[at])
        big = split_batch.count_leaf_growth(table, state.stats, state.policy.min_split, visits)
        for visit in visits:
            visit.node.add_many(handles[visit.docs], batch.array[visit.docs], visit.rests)
            state.cache.grew(visit.key, len(visit.docs))
        state.cache.drop_dealt(root_key)
        for i in big:
            source = (batch.fps[i], 0)
            for leaf in table.leaves(source):
                table.maybe_split(leaf, source)


def _pend_entries(state: IndexState, batch: DocumentBatch, resolved: Resolved, handles: np.ndarray) -> None:
    """The entries of the unsplit SimHash roots (``SimhashBlocks.payload``), table by table, into the
    pending entries (simhash/segments.py): they reach the store a root at a time."""
    assert state.pending is not None, "an index with slot lists keeps pending entries"
    array = batch.array
    for t, scheme in enumerate(state.layout.simhash):
        docs = np.flatnonzero(resolved.arena[t])
        if len(docs):
            state.pending.add(t, resolved.blocks[t, docs], handles[docs], scheme.payload_values(array[docs]))


def _document_keys(state: IndexState, batch: DocumentBatch, handle_matrix: np.ndarray,
                   keys: list[bytes], values: list[bytes]) -> None:
    """Records (``RecordCodec.encode``), expiry keys and doc ids (``lookup_puts``) of the run."""
    n = len(batch)
    bands = state.layout.bands
    ts_array = np.array(batch.times, dtype=np.float64)
    counts = np.where(batch.has_bands, bands, 0).astype(np.uint64)
    counts |= np.array([PAYLOAD_FLAG if p else 0 for p in batch.payloads], dtype=np.uint64)
    heads = batch_keys.rows(batch_keys.concat(
        batch_keys.big_endian(batch.array, 8), batch_keys.float_bytes(ts_array), batch_keys.big_endian(counts, 1)))
    band_rows: list[bytes] = [b""] * n
    if bands and batch.has_bands.any():
        rows = batch_keys.rows(batch_keys.big_endian(batch.values.ravel(), 8).reshape(n, -1))
        band_rows = [row if has else b"" for row, has in zip(rows, batch.has_bands.tolist(), strict=True)]
    mask_bytes = state.codec.mask_bytes
    pack_len = PAYLOAD_LEN.pack
    keys += batch_keys.rows(batch_keys.concat(HANDLE_NS, handle_matrix))
    values += [
        b"".join((head, mask_bytes(used), bands, pack_len(len(payload)) if payload else b"", payload, id_key[1:]))
        for head, used, bands, payload, id_key in zip(heads, batch.used, band_rows, batch.payloads, batch.id_keys,
                                                     strict=True)
    ]
    keys += batch_keys.rows(batch_keys.concat(EXPIRY_NS, batch_keys.ts_keys(ts_array), handle_matrix))
    values += [b""] * n
    keys += batch.id_keys  # lookup_puts, batched
    values += batch_keys.rows(handle_matrix)


def _mirror(state: IndexState, batch: DocumentBatch, resolved: Resolved, handles: np.ndarray) -> None:
    """As ``writes.add``: the entries into the run's roots in the arena (one compiled call), the level
    counters (per distinct root its size before and after the run, one compiled call), then splits
    of the roots that grew enough (taken out of the arena as a ``Bucket`` to split, moved back if the
    split is refused)."""
    arena, cache = state.cache.arena, state.cache
    blocks, use = resolved.blocks, resolved.arena
    if not use.any():
        return
    sizes = arena.lengths(blocks)
    arena.append(blocks, use, resolved.masked, handles)
    bins = np.zeros(66, dtype=np.int64)
    new_buckets, big = bucket_growth(blocks, sizes.T.copy(), use, state.policy.min_split, bins)
    state.stats.level("simhash", 0).grow(int(use.sum()), new_buckets, bins)
    for p in big.tolist():
        t, i = p >> 32, p & 0xFFFFFFFF
        value, table = int(blocks[t, i]), state.tables[t]
        key = cache.root_key(t, value)
        if table.may_split(int(arena.length[t, value]), cache.refused.get(key, 0), 0):
            bucket = cache.get(key)
            assert bucket is not None, "an arena root"
            table.maybe_split(Leaf(key, bucket, (), None), (batch.fps[i], 0))
            if not bucket.split and cache.buckets.get(key) is bucket:  # refused: back into the arena
                cache.adopt(t, value)
