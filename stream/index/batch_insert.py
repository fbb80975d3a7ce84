"""The insert half of a batch run (batch.py): the keys of ``writes.add`` for every document of the
run, built at once by numpy (``batch_keys``) and written in one batch, then the same cache and
counter updates.

Order, so that a load never reads an entry that is then appended to its cached bucket again:
1. the buckets the run appends to are resolved (cached, created empty, or loaded) before any write
   (``resolve``, before the run's query, which reads the same buckets);
2. everything is written in one batch, laid out by kind (every entry of table 0, ..., every
   record, every expiry key, every doc id): RocksDB then fills one column family at a time, 1.9 us
   less per document at 1M than switching families per document (docs/index.md, "Decisions").
   Each document's keys keep their commit order (entries, record, expiry key, doc id), so a
   changelog prefix holds a doc id only for a complete document;
3. the entries are appended to the buckets resolved in 1 (below a split root: to its split nodes,
   split_batch.py), counted, and hot buckets split.
The band tables take the run's band values in the band map (bandmap.py) before its queries
(``allocate``).
"""

from __future__ import annotations

import operator
from array import array as _array
from collections import deque
from itertools import repeat
from typing import TYPE_CHECKING

import numpy as np

from stream.index import batch_keys, batch_query, split_batch
from stream.index.batch_query import SplitRoots
from stream.index.buckets import Bucket
from stream.index.cache import ROOT_ABSENT, ROOT_SPLIT
from stream.index.kernels import bucket_growth
from stream.index.records import EXPIRY_NS, HANDLE_LEN, HANDLE_NS, PAYLOAD_FLAG, PAYLOAD_LEN
from stream.index.state import IndexState
from stream.index.store import WritePairs
from stream.index.table import ENTRY_TAG, Leaf

if TYPE_CHECKING:
    from stream.index.batch_data import Batch

_array_append = _array.append
_HANDLES, _FPS = operator.attrgetter("handles"), operator.attrgetter("fps")


class Resolved:
    """The buckets a run appends to (``resolve``): per SimHash table the root bucket of each
    document (None: no append there: the document does not use the table, or its root is split),
    the documents below split roots, and the cache's eviction count before resolving."""

    def __init__(self, n: int, tables: int, evictions: int) -> None:
        self.buckets: list[list[Bucket | None]] = [[None] * n for _ in range(tables)]
        self.below: SplitRoots = {}
        self.evictions = evictions


def allocate(state: IndexState, batch: Batch) -> int:
    """Handles for the documents of a run (the first is returned, the others follow in order), and
    their entries in the band map: the run's queries tell its own documents by their handles
    (batch_query), and the records that name them are written later."""
    n = len(batch)
    start = state.handles.take(n)
    reservation = state.handles.reservation()
    if reservation is not None:
        state.kv.put(*reservation)  # before any entry uses them
    k = state.layout.k
    if state.layout.bands:
        rows, cols = np.nonzero(batch.part[:, k + 1 :])
        handles = np.arange(start, start + n, dtype=np.uint64)
        state.band_map.add_many(cols + (k + 1), batch.values[rows, cols], handles[rows])
    return start


def insert_run(state: IndexState, batch: Batch, start: int, resolved: Resolved) -> None:
    """Insert the documents of a run (new, distinct ids; handles from ``start``, see ``allocate``;
    their buckets from ``resolve``)."""
    n = len(batch)
    handles = np.arange(start, start + n, dtype=np.uint64)
    keys: list[bytes] = []
    values: list[bytes] = []
    handle_matrix = batch_keys.big_endian(handles, HANDLE_LEN)
    _entry_keys(state, batch, resolved, handle_matrix, keys, values)
    _split_entries(state, batch, resolved.below, handle_matrix, keys, values)
    _document_keys(state, batch, handle_matrix, keys, values)
    state.kv.write_ops(WritePairs(keys, values))
    state.stats.documents += n
    state.mutated(n)
    _mirror(state, batch, resolved, handles, state.cache.evictions != resolved.evictions)
    _mirror_splits(state, batch, resolved.below, handles)


def resolve(state: IndexState, batch: Batch) -> Resolved:
    """The unsplit SimHash roots a run appends to (cached, created or loaded, each once), and the
    documents below split roots, by root. Before the run's query: it reads the same buckets (a
    created one is empty, as the absent root it replaces)."""
    assert state.root_slots is not None
    cache = state.cache
    resolved = Resolved(len(batch), len(state.tables), cache.evictions)
    for t, (slots, _, _) in enumerate(state.root_slots):
        use = batch.part[:, t]
        blocks = state.layout.block_values(t, batch.array)
        states = cache.root_states[t]
        assert states is not None  # a table with slots has them
        root_state = states[blocks]
        column = resolved.buckets[t]
        column[:] = map(slots.__getitem__, blocks.tolist())  # before any load can evict them
        absent = use & (root_state == ROOT_ABSENT)
        complete = cache.complete
        if absent.any() and complete:  # new buckets, created at once
            new = np.unique(blocks[absent])
            made = cache.add_empty_roots(t, new.tolist())
            for i, at in zip(np.flatnonzero(absent).tolist(), np.searchsorted(new, blocks[absent]).tolist(),
                             strict=True):
                column[i] = made[at]
        odd = np.flatnonzero(~use | (root_state == ROOT_SPLIT) | (absent & (not complete))).tolist()
        if odd:
            roots = batch_query.split_roots(state, batch, t, [i for i in odd if use[i]], column)
            resolved.below.update(roots)
            for i in odd:
                if not use[i]:
                    column[i] = None
            for _, _, docs in roots.values():
                for i in docs:
                    column[i] = None
    return resolved


def _split_entries(state: IndexState, batch: Batch, below: SplitRoots, handle_matrix: np.ndarray,
                   keys: list[bytes], values: list[bytes]) -> None:
    """The entries of the documents below split roots: the whole rest, at the top-level bucket
    (``SimhashBlocks.whole_payload``)."""
    for (t, _), (root_key, _, docs) in below.items():
        scheme = state.layout.simhash[t]
        at = np.array(docs, dtype=np.int64)
        keys += batch_keys.rows(batch_keys.concat(root_key, ENTRY_TAG, handle_matrix[at]))
        values += batch_keys.rows(batch_keys.big_endian(scheme.fingerprint_rests(batch.array[at]), scheme.whole_len))


def _mirror_splits(state: IndexState, batch: Batch, below: SplitRoots, handles: np.ndarray) -> None:
    """As ``writes.add`` below split roots: every entry into the split nodes on its way (split_batch.py),
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


def _entry_keys(state: IndexState, batch: Batch, resolved: Resolved, handle_matrix: np.ndarray,
                keys: list[bytes], values: list[bytes]) -> None:
    """The entries of the unsplit SimHash roots (``SimhashBlocks.payload``), table by table."""
    array = batch.array
    for t, scheme in enumerate(state.layout.simhash):
        column = resolved.buckets[t]
        docs = np.flatnonzero(np.fromiter((b is not None for b in column), dtype=np.bool_, count=len(column)))
        if not len(docs):
            continue
        fps = array[docs]
        blocks = batch_keys.big_endian(state.layout.block_values(t, fps), scheme.top_len)
        keys += batch_keys.rows(batch_keys.concat(bytes([t]), blocks, ENTRY_TAG, handle_matrix[docs]))
        values += batch_keys.rows(batch_keys.big_endian(scheme.payload_values(fps), scheme.payload_len))


def _document_keys(state: IndexState, batch: Batch, handle_matrix: np.ndarray,
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
        pairs = np.stack([batch.values, batch.exts], axis=2).reshape(n, 2 * bands)
        rows = batch_keys.rows(batch_keys.big_endian(pairs.ravel(), 8).reshape(n, -1))
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


def _mirror(state: IndexState, batch: Batch, resolved: Resolved, handles: np.ndarray, evicted: bool) -> None:
    """As ``writes.add``: the entries into the resolved buckets (appends run in C, by map), the level
    counters (per distinct bucket its size before and after the run, one compiled call per kind),
    then splits. ``evicted``: the cache evicted during the run, so some resolved buckets may have
    left it (appending to them is harmless; they no longer count in its size)."""
    cache = state.cache
    masks = state.layout.filter_masks
    fps = batch.fps
    grown = 0
    sizes = np.zeros((len(batch), len(state.tables)), dtype=np.int64)
    use = np.zeros((len(state.tables), len(batch)), dtype=np.bool_)
    for t, column in enumerate(resolved.buckets):
        if None in column:  # some documents do not append here
            docs = np.flatnonzero(np.fromiter(map(operator.is_not, column, repeat(None)), np.bool_, len(column)))
            buckets: list[Bucket] = list(map(column.__getitem__, docs.tolist()))  # type: ignore[arg-type]
            doc_handles, masked = handles[docs].tolist(), (batch.array[docs] & np.uint64(masks[t])).tolist()
        else:
            docs, buckets = slice(None), column  # type: ignore[assignment]
            doc_handles, masked = handles.tolist(), (batch.array & np.uint64(masks[t])).tolist()
        if not buckets:
            continue
        sizes[docs, t] = np.fromiter(map(len, map(_HANDLES, buckets)), dtype=np.int64, count=len(buckets))
        use[t, docs] = True
        deque(map(_array_append, map(_HANDLES, buckets), doc_handles), maxlen=0)
        deque(map(_array_append, map(_FPS, buckets), masked), maxlen=0)
        if evicted:
            positions = range(len(column)) if isinstance(docs, slice) else docs.tolist()
            grown += sum(cache.buckets.get(_bucket_key(state, batch, t, i)) is b
                         for i, b in zip(positions, buckets, strict=True))
        else:
            grown += len(buckets)
    if grown:
        cache.grew_entries(grown)
    for t, i in _count_growth(state, batch, sizes, use):
        bucket = resolved.buckets[t][i]
        key = _bucket_key(state, batch, t, i)
        if bucket is not None and cache.buckets.get(key) is bucket:  # not evicted since
            state.tables[t].maybe_split(Leaf(key, bucket, (), None), (fps[i], 0))


def _bucket_key(state: IndexState, batch: Batch, t: int, i: int) -> bytes:
    """The top-level key of document i's bucket in table t."""
    return state.layout.root_keys(batch.fps[i])[t]


def _count_growth(state: IndexState, batch: Batch, sizes: np.ndarray, use: np.ndarray) -> list[tuple[int, int]]:
    """The level-0 counters for the run's appends to unsplit roots (``kernels.bucket_growth``);
    returns (table, first document) per bucket reaching ``min_split``."""
    if not use.any():
        return []
    blocks = np.stack([state.layout.block_values(t, batch.array) for t in range(len(state.tables))])
    bins = np.zeros(66, dtype=np.int64)
    new_buckets, big = bucket_growth(blocks, sizes, use, state.policy.min_split, bins)
    state.stats.level("simhash", 0).grow(int(use.sum()), new_buckets, bins)
    return [(p >> 32, p & 0xFFFFFFFF) for p in big.tolist()]
