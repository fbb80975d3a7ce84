"""``BlockIndex``'s batch calls (seed 003: batch processing next to incremental): ``query_many``,
``insert_many`` and ``query_insert_many`` give the answers and the index of the one-document loops
they replace, for about half the work per document (docs/index.md, "Fourth round").

How: with new, distinct ids a batch is queried against the index as it was, the pairs inside the
batch are found by one compiled all-pairs pass, and it is inserted at once; numpy builds every key
(``batch_keys``), one RocksDB batch writes them (``put_many``), the k + 1 root buckets of every
document come from the cache's slot lists, and the per-document loops (filter, appends) run in C
through ``map``. Documents whose roots are split take the per-document path.
"""

from __future__ import annotations

import math
import operator
from array import array as _array
from collections import deque
from collections.abc import Collection, Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from stream.index import batch_keys
from stream.index.kernels import bucket_growth, pairs_within
from stream.index.records import EXPIRY_NS, HANDLE_BLOCK, HANDLE_NS, META_NS, IndexHit, Record, doc_key
from stream.index.store import KVStore, put_many
from stream.index.table import (
    ENTRY_TAG,
    HANDLE_LEN,
    ROOT_LEAF,
    ROOT_SPLIT,
    Bucket,
    BucketCache,
    BucketTable,
    Leaf,
    SplitPolicy,
)

if TYPE_CHECKING:
    from stream.index.stats import StatsRecorder

_array_append = _array.append
_EMPTY = Bucket()  # stands for an uncached root of a complete cache in a batch's queries (never written)
_BUCKET_FPS, _BUCKET_HANDLES = operator.attrgetter("fps"), operator.attrgetter("handles")


def _answer_lists(n: int) -> list[list[IndexHit]]:
    """A batch's n answer lists, made before anything else of the call. Why: Python's cyclic collector
    runs when enough container objects are alive, and a young collection walks every young one.
    Made here, the n lists start the collection before the batch's lists of cold root buckets exist;
    made later they set one off that walks those thousands of objects (~1.2 ms, ~1.1 us per document
    at 1M; docs/index.md, "Session 12")."""
    return [[] for _ in range(n)]


class _Roots(NamedTuple):
    """A batch's root buckets (``BlockIndex._batch_roots``): per table, each fingerprint's bucket (None
    if not cached); per fingerprint whether all its roots are cached leaves; and, when all are, per
    table the buckets' fps and handles arrays, read once for the queries and the inserts."""

    buckets: list[list[Bucket | None]]
    leaves: np.ndarray
    unsplit: np.ndarray  # per fingerprint: none of its roots is a cached split bucket
    fps: list[list[_array]] | None
    handles: list[list[_array]] | None


class BatchCalls:
    """The batch calls of ``BlockIndex`` (its base class); they work on the index's own state."""

    if TYPE_CHECKING:  # provided by BlockIndex
        k: int
        cache: BucketCache
        tables: list[BucketTable]
        policy: SplitPolicy
        _kv: KVStore
        _stats: StatsRecorder
        _limit: int
        _positions: np.ndarray
        _filter_masks: np.ndarray
        _filter_mask_list: list[int]
        _simhash_tables: frozenset[int]
        _root_slots: tuple[tuple[list[Bucket | None], int, int], ...] | None
        _root_spec: tuple[tuple[bytes, int, int, int], ...]
        _payload_spec: tuple[tuple[int, int, int, int, int], ...]
        _next_handle: int
        _reserved: int

        def query(
            self, fingerprint: int, bands: Sequence[tuple[int, int]] = (), tables: Collection[int] | None = None
        ) -> list[IndexHit]: ...
        def insert(
            self, fingerprint: int, doc_id: str, ts: float = 0.0, bands: Sequence[tuple[int, int]] = (),
            tables: Collection[int] | None = None, payload: bytes = b"",
        ) -> None: ...
        def _filter_roots(self, fingerprint: int, found: list[Bucket]) -> list[IndexHit]: ...
        def _hits(self, fingerprint: int, near: set[int], band: set[int]) -> list[IndexHit]: ...
        def _add(self, handle: int, record: Record, tables: frozenset[int], id_key: bytes | None = None) -> None: ...
        def _allocate_handle(self) -> int: ...
        def _root_keys(self, fingerprint: int) -> list[bytes]: ...
        def _check_fingerprint(self, fingerprint: int) -> None: ...
        def _mask_bytes(self, tables: frozenset[int]) -> bytes: ...
        def _mutated(self, count: int = 1) -> None: ...
        def _room(self, count: int) -> np.ndarray: ...

    def query_many(self, fingerprints: Sequence[int]) -> list[list[IndexHit]]:
        """``query`` of each fingerprint (SimHash tables): the same answers for less work per document."""
        fps = self._fingerprint_batch(fingerprints)
        answers = _answer_lists(len(fps))
        self._query_batch(fps, np.array(fps, dtype=np.uint64), answers)
        return answers

    def insert_many(
        self, fingerprints: Sequence[int], doc_ids: Sequence[str], ts: Sequence[float] | None = None
    ) -> None:
        """``insert`` of each document in order (SimHash tables): the same index for less work per
        document. New, distinct ids take the batch path (keys built at once, one write); a batch with
        an id already indexed or repeated is inserted one document at a time."""
        fps, ids, times = self._documents_batch(fingerprints, doc_ids, ts)
        id_keys = [doc_key(doc_id) for doc_id in ids]
        if self._new_ids(id_keys):
            self._insert_new(fps, np.array(fps, dtype=np.uint64), ids, id_keys, times)
        else:
            for fp, doc_id, t in zip(fps, ids, times, strict=True):
                self.insert(fp, doc_id, t)

    def query_insert_many(
        self, fingerprints: Sequence[int], doc_ids: Sequence[str], ts: Sequence[float] | None = None
    ) -> list[list[IndexHit]]:
        """For each document in order, ``query`` and then ``insert`` (the streaming pattern): document
        i's answer includes the documents before it in the batch. Same answers and index as that loop.

        With new, distinct ids the batch is queried against the index as it was before the batch, the
        pairs inside the batch are found by one compiled all-pairs pass, and then it is inserted at once.
        """
        fps, ids, times = self._documents_batch(fingerprints, doc_ids, ts)
        id_keys = [doc_key(doc_id) for doc_id in ids]
        if not self._new_ids(id_keys):  # a redelivery or replacement changes what later ones see
            answers = []
            for fp, doc_id, t in zip(fps, ids, times, strict=True):
                answers.append(self.query(fp))
                self.insert(fp, doc_id, t)
            return answers
        answers = _answer_lists(len(fps))
        array = np.array(fps, dtype=np.uint64)
        roots = self._batch_roots(array) if self._root_slots is not None else None
        sizes = self._query_batch(fps, array, answers, roots)
        out = self._positions
        count = pairs_within(array, self.k, out)
        if count > len(out):  # more pairs than room: again, with room
            out = self._room(count)
            pairs_within(array, self.k, out)
        later: set[int] = set()
        for pair in out[:count].tolist():
            i, j = pair >> 32, pair & 0xFFFFFFFF
            answers[i].append(IndexHit(ids[j], (fps[i] ^ fps[j]).bit_count(), times[j], fps[j], "simhash"))
            later.add(i)
        for i in later:
            answers[i].sort(key=lambda hit: (hit.distance, hit.doc_id))
        # the roots found for the queries still hold if all were cached leaves (nothing was loaded),
        # and so do the sizes the filter saw (given exactly then)
        still = roots if roots is not None and roots.fps is not None else None
        self._insert_new(fps, array, ids, id_keys, times, still, sizes)
        return answers

    def _fingerprint_batch(self, fingerprints: Sequence[int]) -> list[int]:
        fps = list(map(operator.index, fingerprints))  # ints (numpy ints too); a float is an error
        for fp in fps:
            if not 0 <= fp < self._limit:
                self._check_fingerprint(fp)
        return fps

    def _documents_batch(
        self, fingerprints: Sequence[int], doc_ids: Sequence[str], ts: Sequence[float] | None
    ) -> tuple[list[int], list[str], list[float]]:
        fps = self._fingerprint_batch(fingerprints)
        ids = list(doc_ids)
        times = [0.0] * len(fps) if ts is None else [float(t) for t in ts]
        if not len(fps) == len(ids) == len(times):
            raise ValueError(f"{len(fps)} fingerprints, {len(ids)} doc ids and {len(times)} times")
        if any(math.isnan(t) for t in times):
            raise ValueError("ts is NaN")
        return fps, ids, times

    def _new_ids(self, id_keys: list[bytes]) -> bool:
        """Whether every id is new to the index and appears once in the batch."""
        return len(set(id_keys)) == len(id_keys) and not any(self._kv.multi_get(id_keys))

    def _batch_roots(self, array: np.ndarray) -> _Roots:
        """The root buckets of a batch by list lookups in C; which are cached leaves from
        ``BucketCache.root_states`` in one numpy pass per table."""
        assert self._root_slots is not None
        columns = []
        leaves = np.ones(len(array), dtype=np.bool_)
        unsplit = np.ones(len(array), dtype=np.bool_)
        for t, (slots, low, mask) in enumerate(self._root_slots):
            values = (array >> np.uint64(low)) & np.uint64(mask)
            table_states = self.cache.root_states[t]
            assert table_states is not None  # a table with slots has them
            states = table_states[values]
            leaves &= states == ROOT_LEAF
            unsplit &= states != ROOT_SPLIT
            columns.append(list(map(slots.__getitem__, values.tolist())))
        if not leaves.all():
            return _Roots(columns, leaves, unsplit, None, None)
        fps = [list(map(_BUCKET_FPS, column)) for column in columns]
        handles = [list(map(_BUCKET_HANDLES, column)) for column in columns]
        return _Roots(columns, leaves, unsplit, fps, handles)

    def _query_batch(
        self, fps: list[int], array: np.ndarray, answers: list[list[IndexHit]], roots: _Roots | None = None
    ) -> np.ndarray | None:
        """Fill ``answers[i]`` with the hits of ``fps[i]``. Returns the sizes of every document's root
        buckets (an (n, k + 1) array) when all of them were cached leaves, else None."""
        if self._root_slots is None or not fps:
            for i, fp in enumerate(fps):
                answers[i] = self.query(fp)
            return None
        roots = roots if roots is not None else self._batch_roots(array)
        if roots.fps is not None:
            return self._filter_batch(fps, array, roots.buckets, roots.fps, answers)  # type: ignore[arg-type]
        # Some roots are split or not cached. The documents whose roots are all cached leaves (or
        # not cached at all in a complete cache: empty buckets) still go through the batch filter;
        # the others take one query each, after it (a query may load and evict buckets).
        fast = roots.unsplit if self.cache.complete else roots.leaves
        chosen = np.flatnonzero(fast).tolist()
        if chosen:
            columns = [[_EMPTY if column[i] is None else column[i] for i in chosen] for column in roots.buckets]
            filtered = _answer_lists(len(chosen))
            self._filter_batch(
                [fps[i] for i in chosen], array[chosen], columns,  # type: ignore[arg-type]
                [list(map(_BUCKET_FPS, column)) for column in columns], filtered,
            )
            for i, answer in zip(chosen, filtered, strict=True):
                answers[i] = answer
        for i in np.flatnonzero(~fast).tolist():
            answers[i] = self.query(fps[i])
        return None

    def _filter_batch(
        self, fps: list[int], array: np.ndarray, columns: list[list[Bucket]], fps_columns: list[list[_array]],
        answers: list[list[IndexHit]],
    ) -> np.ndarray:
        """``_filter_roots`` for a batch whose roots are all cached leaves, into ``answers``; returns
        the buckets' sizes, (n, k + 1), which the inserts need too.

        One numpy pass for the whole batch: the buckets' arrays joined into one (``bytes.join`` reads
        each through the buffer protocol, in C), each candidate compared with its query's masked
        fingerprint. A compiled call per document cost ~1.6 us more at 1M, most of it numba's
        argument dispatch (docs/index.md, "Session 12")."""
        cache = self.cache
        cache.clock += 1
        for column in columns:
            deque(map(setattr, column, repeat("used"), repeat(cache.clock)), maxlen=0)
        cache.hits += len(fps) * len(columns)
        n, tables = len(fps), len(columns)
        buckets = list(chain.from_iterable(zip(*fps_columns, strict=True)))  # document by document
        lengths = np.fromiter(map(len, buckets), dtype=np.int64, count=n * tables)
        candidates = np.frombuffer(b"".join(buckets), dtype=np.uint64)
        queries = (array[:, None] & self._filter_masks[None, :]).ravel()  # as the entries keep them
        near = np.flatnonzero(np.bitwise_count(candidates ^ np.repeat(queries, lengths)) <= self.k)
        sizes = lengths.reshape(n, tables)
        self._stats.candidates["simhash"].add_many(sizes.sum(axis=1).tolist())
        if len(near):
            ends = np.cumsum(lengths)
            bucket_of = np.searchsorted(ends, near, side="right")  # (document, table) of each match
            handles: dict[int, set[int]] = {}
            starts = ends[bucket_of] - lengths[bucket_of]
            for b, position in zip(bucket_of.tolist(), (near - starts).tolist(), strict=True):
                i, t = divmod(b, tables)
                handles.setdefault(i, set()).add(columns[t][i].handles[position])
            for i, found in handles.items():
                answers[i] = self._hits(fps[i], found, set())
        return sizes

    def _insert_new(
        self, fps: list[int], array: np.ndarray, ids: list[str], id_keys: list[bytes], times: list[float],
        roots: _Roots | None = None, sizes: np.ndarray | None = None,
    ) -> None:
        """Insert documents with new, distinct ids: those whose k + 1 roots are cached leaves as one
        batch (``_insert_roots``), the others one at a time after them. ``roots``: ``_batch_roots``
        of ``array`` if the caller has them and nothing changed since; ``sizes``: their sizes then, if known
        (``_filter_batch``)."""
        slow = list(range(len(fps)))
        if self._root_slots is not None and fps:
            roots = roots if roots is not None else self._batch_roots(array)
            if roots.fps is None:  # load the roots not cached (an insert would; split ones stay slow)
                for i in np.flatnonzero(~roots.leaves).tolist():
                    for t, column in enumerate(roots.buckets):
                        if column[i] is None:
                            self.tables[t].bucket(self._root_keys(fps[i])[t])
                roots = self._batch_roots(array)
            columns, leaves = roots.buckets, roots.leaves
            if roots.fps is not None and roots.handles is not None:
                self._insert_roots(fps, array, id_keys, times, roots.fps, roots.handles, sizes)
                return
            fast = np.flatnonzero(leaves).tolist()
            slow = np.flatnonzero(~leaves).tolist()
            if fast:
                buckets = [[column[i] for i in fast] for column in columns]
                self._insert_roots(
                    [fps[i] for i in fast], array[fast], [id_keys[i] for i in fast], [times[i] for i in fast],
                    [list(map(_BUCKET_FPS, column)) for column in buckets],
                    [list(map(_BUCKET_HANDLES, column)) for column in buckets],
                )
        for i in slow:
            record = Record(fps[i], times[i], self._simhash_tables, (), ids[i])
            self._add(self._allocate_handle(), record, self._simhash_tables, id_key=id_keys[i])

    def _insert_roots(
        self, fps: list[int], array: np.ndarray, id_keys: list[bytes], times: list[float],
        fps_columns: list[list[_array]], handles_columns: list[list[_array]], sizes: np.ndarray | None = None,
    ) -> None:
        """The batch path of ``_add``: the same keys, built at once by numpy (``batch_keys``) and
        written in one batch; then the same cache and counter updates.

        The batch is laid out by kind (every entry of table 0, ..., every record, every expiry key,
        every doc id), not document by document: RocksDB then fills one column family at a time,
        1.9 us less per document at 1M than switching families 4 times per document (docs/index.md,
        "Session 12"). Each document's keys keep their commit order (entries, record, expiry key,
        doc id), so a changelog prefix of the batch still holds a doc id only for a complete document.
        """
        n = len(fps)
        start = self._next_handle
        self._next_handle += n
        handle_matrix = batch_keys.big_endian(np.arange(start, start + n, dtype=np.uint64), HANDLE_LEN)
        table_blocks: list[np.ndarray] = []  # per table the batch's block values: one per root bucket
        keys: list[bytes] = []
        values: list[bytes] = []
        if self._next_handle > self._reserved:
            self._reserved = self._next_handle + HANDLE_BLOCK
            keys.append(META_NS + b"handle")
            values.append(self._reserved.to_bytes(8, "big"))
        for (prefix, low, block_mask, top_len), (above, _, low_mask, kept_mask, size) in zip(
            self._root_spec, self._payload_spec, strict=True
        ):  # as _root_keys and SimhashBlocks.payload
            blocks = (array >> np.uint64(low)) & np.uint64(block_mask)
            table_blocks.append(blocks)
            entry_keys = batch_keys.concat(prefix, batch_keys.big_endian(blocks, top_len), ENTRY_TAG, handle_matrix)
            rest = ((array >> np.uint64(above)) << np.uint64(low)) | (array & np.uint64(low_mask))
            keys += batch_keys.rows(entry_keys)
            values += batch_keys.rows(batch_keys.big_endian(rest & np.uint64(kept_mask), size))
        ts_array = np.array(times, dtype=np.float64)
        heads = batch_keys.concat(  # _encode_record without bands
            batch_keys.big_endian(array, 8), batch_keys.float_bytes(ts_array), b"\x00",
            self._mask_bytes(self._simhash_tables),
        )
        keys += batch_keys.rows(batch_keys.concat(HANDLE_NS, handle_matrix))
        values += [head + id_key[1:] for head, id_key in zip(batch_keys.rows(heads), id_keys, strict=True)]
        keys += batch_keys.rows(batch_keys.concat(EXPIRY_NS, batch_keys.ts_keys(ts_array), handle_matrix))
        values += [b""] * n
        keys += id_keys  # lookup_puts, batched
        values += batch_keys.rows(handle_matrix)
        put_many(self._kv, keys, values)
        self._stats.documents += n
        self._mutated(n)
        # as _add: the entries into the cached roots (appends run in C, by map), the level counters
        # (per distinct bucket: its size before and after the batch, one compiled call), then splits
        if sizes is None:
            sizes = np.stack([np.fromiter(map(len, column), np.int64, count=n) for column in handles_columns], axis=1)
        handles = range(start, start + n)
        for fps_column, handles_column, mask in zip(fps_columns, handles_columns, self._filter_mask_list, strict=True):
            deque(map(_array_append, handles_column, handles), maxlen=0)
            deque(map(_array_append, fps_column, (array & np.uint64(mask)).tolist()), maxlen=0)
        bins = np.zeros(66, dtype=np.int64)
        new_buckets, big = bucket_growth(np.stack(table_blocks), sizes, self.policy.min_split, bins)
        self._stats.level("simhash", 0).grow(n * len(fps_columns), new_buckets, bins)
        self.cache.grew_entries(n * len(fps_columns))
        for t, i in ((p >> 32, p & 0xFFFFFFFF) for p in big.tolist()):  # one position per bucket
            key = self._root_keys(fps[i])[t]
            bucket = self.cache.buckets.get(key)  # not evicted by grew_entries
            if bucket is not None:
                self.tables[t].maybe_split(Leaf(key, bucket, (), None), (fps[i], 0))
