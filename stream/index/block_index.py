"""``BlockIndex``: a lossless, adaptively re-split SimHash block table (plus MinHash LSH band tables).

Tables 0..k are SimHash block tables (seeds 000/001: k + 1 blocks, pigeonhole), tables k+1..k+bands
are LSH band tables; all share one store, one read cache and one statistics view (table.py, schemes.py).

Besides the bucket keys (table.py), each document has three small records (records.py): by doc id,
by handle (with the caller's payload) and by event time. The batch calls live in batch.py.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Collection, Sequence

import numpy as np

from stream.index.bandmap import BandMap
from stream.index.batch import BatchCalls
from stream.index.kernels import as_signed, within, within_tables
from stream.index.records import (
    DOC_NS,
    EXPIRY_NS,
    HANDLE_BLOCK,
    HANDLE_NS,
    META_NS,
    PAYLOAD_FLAG,
    PAYLOAD_LEN,
    RECORD_HEAD,
    IndexHit,
    Record,
    doc_key,
    lookup_puts,
    pack_bands,
    record_tail,
    ts_key,
)
from stream.index.schemes import SimhashBlocks, Source
from stream.index.stats import IndexStats, StatsRecorder
from stream.index.store import BufferedStore, KVStore, MemoryStore, RocksStore
from stream.index.table import (
    ENTRY_TAG,
    HANDLE_LEN,
    Bucket,
    BucketCache,
    BucketTable,
    Leaf,
    RootFilter,
    SplitPolicy,
    handle_bytes,
)

MAX_TABLES = 0xFC  # table ids must stay below the record namespaces
STATS_EVERY = 512  # mutations between stats checkpoints
# 2: simhash entries keep a 32-bit filter instead of the whole rest; 3: records keep a payload; 4: the
# filter keeps 24 bits (SimhashBlocks.FILTER_BITS); 5: sub-buckets are not stored, a split bucket keeps
# each entry once with its whole rest (table.py); 6: band tables are not stored (bandmap.py)
FORMAT_VERSION = 6
# pending writes (store keys) before a batch goes to RocksDB: ~290 documents; docs/index.md
DEFAULT_WRITE_BUFFER = 2048
DEFAULT_MIN_SPLIT = 1024  # chosen by measurement: docs/index.md "Minimum split size"


class BlockIndex(BatchCalls):
    """Index of (fingerprint, doc id, event time): query returns every entry within Hamming distance k.

    ``path=None`` keeps the index in memory; ``path="DIR"`` persists it in RocksDB (reopening gives
    the same index). ``split_mu``/``split_cap``/``min_split`` set the re-split rule (seed 002 §2.3,
    see ``SplitPolicy``); ``resplit=False`` turns splitting off (the benchmark's baseline).
    ``cache_bytes`` bounds the read cache. ``write_buffer`` (store writes; default: 2048 for an index
    that opens its own RocksDB, else 0) collects writes in memory and writes them in one batch
    (``BufferedStore``); queries see them at once, ``flush``/``close`` write them, and a crash loses
    the pending ones (the last few hundred documents; the store keeps a prefix of the commit order).
    ``sole_writer``: the caller's ``store`` is written by nothing but this index while it lives, so an
    empty one counts as fresh, as a store the index opened itself does (cache misses skip their scan).
    ``root_filter`` (with a store of its own or ``sole_writer``): keep a filter of the top-level
    buckets that exist (``RootFilter``; on a store that is not empty, read from its records once on
    open); a cache miss on any other skips its scan, also after the cache evicts. For a store
    restored from a changelog, where new documents mostly meet band buckets that do not exist yet.
    """

    def __init__(
        self,
        path: str | None = None,
        k: int = 3,
        *,
        bands: int = 0,
        split_mu: float = 2.0,
        split_cap: int | None = None,
        min_split: int = DEFAULT_MIN_SPLIT,
        store: KVStore | None = None,
        bits: int = 64,
        resplit: bool = True,
        cache_bytes: int = 256 << 20,
        wal: bool = True,
        write_buffer: int | None = None,
        sole_writer: bool = False,
        root_filter: bool = False,
    ) -> None:
        if k + 1 + bands > MAX_TABLES:
            raise ValueError(f"at most {MAX_TABLES} tables (k + 1 + bands)")
        if bands >= PAYLOAD_FLAG:
            raise ValueError(f"at most {PAYLOAD_FLAG - 1} bands")
        if store is None:
            store = MemoryStore() if path is None else RocksStore(path, wal=wal)
            self._owns_store = True
        else:
            self._owns_store = False
        self.store: KVStore = store  # the store itself (the index reads and writes through _kv)
        if write_buffer is None:
            # Buffer only a store the index opened on disk: a caller's store (the service's changelog
            # table) may expect each write at once, and a MemoryStore gains nothing.
            write_buffer = DEFAULT_WRITE_BUFFER if self._owns_store and path is not None else 0
        self._kv: KVStore = BufferedStore(store, write_buffer) if write_buffer > 0 else store
        self.k, self.bits, self.bands = k, bits, bands
        fresh = self._check_config()
        self.policy = SplitPolicy(mu=split_mu, cap=split_cap, min_split=min_split, enabled=resplit)
        raw_stats = self._kv.get(META_NS + b"stats")
        self._stats = StatsRecorder.from_json(raw_stats) if raw_stats else StatsRecorder()
        self.cache = BucketCache(cache_bytes)
        # An empty store of our own: until the cache evicts, every bucket is in it (cache misses on new
        # blocks skip a scan of ~20 us; a 1M build meets 262k new root buckets). Not for a caller's
        # store, which may be filled behind the index, unless the caller says nothing else writes it
        # (the service's probe stage, for a partition that was empty when it opened it).
        self.cache.complete = fresh and (self._owns_store or sole_writer)
        if root_filter and not (self._owns_store or sole_writer):
            raise ValueError("root_filter needs a store nothing else writes (sole_writer=True)")
        simhash = [SimhashBlocks(bits, k, block) for block in range(k + 1)]
        # the SimHash tables 0..k; the band tables k+1..k+bands are the band map (bandmap.py)
        self.tables: list[BucketTable] = [
            BucketTable(t, scheme, self._kv, self.cache, self._stats, self.policy, self._fingerprints_of)
            for t, scheme in enumerate(simhash)
        ]
        self.band_map = BandMap()
        # The common probe (SimHash tables only, every root cached and unsplit; _roots) and insert
        # work from these instead of calls into the tables: per table (key prefix, block shift, block
        # mask, key bytes) and (rest shift, low mask, kept mask, payload bytes) as in
        # SimhashBlocks.top/payload, and the filter masks for within_tables.
        self._root_spec = tuple(
            (bytes([t]), scheme.low, scheme.block_mask, scheme.top_len) for t, scheme in enumerate(simhash)
        )
        self._fp_len = (bits + 7) // 8
        aligned = bits % 8 == 0 and all(scheme.low % 8 == 0 and scheme.width % 8 == 0 for scheme in simhash)
        self._root_slices = (
            tuple(
                (prefix, self._fp_len - (low + 8 * top_len) // 8, self._fp_len - low // 8)
                for prefix, low, _, top_len in self._root_spec
            )
            if aligned
            else None
        )
        self._payload_spec = tuple(
            (scheme.low + scheme.width, scheme.low, (1 << scheme.low) - 1, scheme.kept_mask, scheme.payload_len)
            for scheme in simhash
        )
        # The roots by block value (BucketCache.slots), for _roots: None if a block is too wide.
        slot_lists = [self.cache.slots(t, top_len) for t, (_, _, _, top_len) in enumerate(self._root_spec)]
        self._root_slots: tuple[tuple[list[Bucket | None], int, int], ...] | None = None
        if all(slots is not None for slots in slot_lists):
            self._root_slots = tuple(
                (slots, low, block_mask)
                for slots, (_, low, block_mask, _) in zip(slot_lists, self._root_spec, strict=True)
                if slots is not None
            )
        self._filter_mask_list = [scheme.filter_mask for scheme in simhash]
        self._filter_masks = np.array(self._filter_mask_list, dtype=np.uint64)
        self._roots_memo: tuple[int, int, list[Bucket] | None] | None = None
        self._limit = 1 << bits
        self._positions = np.empty(1024, dtype=np.int64)  # within()'s output, grown for big buckets
        write_ops = getattr(self._kv, "write_ops", None)
        self._write_puts: Callable[[list[tuple[bytes, bytes]]], None] = (
            write_ops if write_ops is not None else self._kv.write_batch
        )
        self._all_tables = frozenset(range(k + 1 + bands))
        self._simhash_tables = frozenset(range(k + 1))
        self._simhash_order = tuple(range(k + 1))
        self._table_count = k + 1 + bands
        self._mask_len = (self._table_count + 7) // 8
        self._masks: dict[frozenset[int], bytes] = {}
        self._tables_of_mask: dict[int, frozenset[int]] = {}  # _decode_record's inverse of _masks
        raw_handle = self._kv.get(META_NS + b"handle")
        self._next_handle = int.from_bytes(raw_handle, "big") if raw_handle else 0
        self._reserved = self._next_handle
        self._dirty = 0
        self._version = 0  # bumped by every mutation; keys the probe memo
        self._memo: tuple[int, object, list[tuple[BucketTable, list[Leaf], Source]]] | None = None
        # the last bands tuple and its int pairs (_band_pairs)
        self._bands_memo: tuple[object, tuple[tuple[int, int], ...]] | None = None
        self._band_ids = np.arange(k + 1, k + 1 + bands, dtype=np.int64)
        if not fresh and (root_filter or bands):  # derived state from the records that are there
            self._read_records(root_filter)
        elif root_filter:  # a fresh store: empty, it keeps the shortcut once the cache evicts
            self.cache.root_filter = RootFilter()

    # -- public API -----------------------------------------------------------------------------

    def insert(
        self,
        fingerprint: int,
        doc_id: str,
        ts: float = 0.0,
        bands: Sequence[tuple[int, int]] = (),
        tables: Collection[int] | None = None,
        payload: bytes = b"",
    ) -> None:
        """Index a document. Idempotent for a redelivery; a new fingerprint, ts or bands replaces it.

        Re-inserting the same document with other ``tables`` adds the missing tables; with another
        ``payload`` rewrites the record. Queries return ``payload`` with the document's hits.
        """
        if not 0 <= fingerprint < self._limit:
            self._check_fingerprint(fingerprint)
        if math.isnan(ts):
            raise ValueError("ts is NaN")
        if bands or tables is not None:
            band_pairs = self._band_pairs(bands) if bands else ()
            used = self._tables_for(tables, band_pairs)
        else:  # the common call: what _tables_for(None, ()) returns, without the call
            band_pairs, used = (), self._simhash_tables
        id_key = doc_key(doc_id)
        raw_handle = self._kv.get(id_key)
        if raw_handle is not None:
            old = self._record(raw_handle)
            if old is not None and (old.fingerprint, old.ts, old.bands) == (fingerprint, ts, band_pairs):
                if used <= old.tables and old.payload == payload:
                    return
                self._add(int.from_bytes(raw_handle, "big"), old._replace(tables=old.tables | used, payload=payload),
                          used - old.tables)
                return
            self._delete_handle(raw_handle, old)
        record = Record(fingerprint, ts, used, band_pairs, doc_id, payload)
        self._add(self._allocate_handle(), record, used, id_key=id_key)

    def query(
        self,
        fingerprint: int,
        bands: Sequence[tuple[int, int]] = (),
        tables: Collection[int] | None = None,
        once: bool = False,
    ) -> list[IndexHit]:
        """Every indexed document within distance k (SimHash tables), plus band-bucket mates.

        Sorted by (distance, doc_id); one hit per document, ``via="simhash"`` when both kinds found it.
        ``once``: the caller queries a document's tables in disjoint groups (the service's partitions)
        and wants each hit within distance k from one group only: the one holding ``first_shared``
        of the pair, the lowest SimHash table where the two share a block. That group always finds it
        (pigeonhole, and splits are lossless within distance k), so the others drop it; hits beyond
        k (band mates) come from every group that finds them.
        """
        if not 0 <= fingerprint < self._limit:
            self._check_fingerprint(fingerprint)
        once_in: frozenset[int] | None = None  # the tables a query(once=True) answers for
        band: dict[int, list[int]] = {}
        band_pairs: tuple[tuple[int, int], ...] = ()
        if bands or tables is not None:
            band_pairs = self._band_pairs(bands) if bands else ()
            used = self._tables_for(tables, band_pairs)
            probe = self._probe(fingerprint, used)
            if once and tables is not None:
                once_in = used
            if band_pairs:
                band = self._band_candidates(band_pairs, used)
        else:
            found = self._roots(fingerprint)
            if found is not None:  # the common query: one compiled call filters the k + 1 roots
                return self._filter_roots(fingerprint, found)
            probe = self._probe(fingerprint, self._simhash_tables)
        # Simhash candidates pass a filter on the bits their entries keep (a lower bound of the
        # distance); the records fetched for the hits' doc ids then give the exact distance.
        near: set[int] = set()
        simhash_total = 0
        k = self.k
        for table, leaves, _ in probe:
            root_query = as_signed(fingerprint & table.filter_mask)
            for leaf in leaves:
                bucket = leaf.bucket
                size = len(bucket.handles)
                if not size:
                    continue
                simhash_total += size
                out = self._room(size)
                # a sub-bucket's entries keep other bits than the root's (SimhashBlocks.leaf_mask)
                query = as_signed(fingerprint & table.scheme.leaf_mask(leaf.path)) if leaf.path else root_query
                count = within(bucket.fps, query, k, out)
                if count:
                    stored = bucket.handles
                    near.update([stored[i] for i in out[:count].tolist()])
        candidates = self._stats.candidates
        if band_pairs:
            candidates["band"].add(len(band))
        candidates["simhash"].add(simhash_total)
        if not near and not band:
            return []
        return self._hits(fingerprint, near, band, once_in, band_values=band_pairs)

    def _band_candidates(self, band_pairs: tuple[tuple[int, int], ...], used: frozenset[int]) -> dict[int, list[int]]:
        """Handle -> band columns under whose tag the band map holds it, for the band tables in ``used``."""
        columns = [t - self.k - 1 for t in sorted(used) if t > self.k]
        if not columns:
            return {}
        values = np.fromiter((band_pairs[c][0] for c in columns), dtype=np.uint64, count=len(columns))
        where, found = self.band_map.find_many(self._band_ids[columns], values)
        band: dict[int, list[int]] = {}
        for q, handle in zip(where.tolist(), found.tolist(), strict=True):
            band.setdefault(handle, []).append(columns[q])
        return band

    def first_shared(self, a: int, b: int) -> int | None:
        """The lowest SimHash table whose block ``a`` and ``b`` share (None if none: distance > k)."""
        differ = a ^ b
        for t, (_, low, block_mask, _) in enumerate(self._root_spec):
            if not (differ >> low) & block_mask:
                return t
        return None

    def _filter_roots(self, fingerprint: int, found: list[Bucket]) -> list[IndexHit]:
        """Hits among the k + 1 cached, unsplit root buckets of ``fingerprint``: one compiled call."""
        columns = tuple([bucket.fps for bucket in found])
        out = self._positions
        query = as_signed(fingerprint)
        packed = within_tables(columns, self._filter_masks, query, self.k, out)
        count = packed & 0xFFFFFFFF
        if count > len(out):  # more matches than room (duplicates): again, with room
            out = self._room(count)
            within_tables(columns, self._filter_masks, query, self.k, out)
        self._stats.candidates["simhash"].add(packed >> 32)
        if not count:
            return []
        return self._hits(fingerprint, {found[p >> 32].handles[p & 0xFFFFFFFF] for p in out[:count].tolist()}, {})

    def _room(self, count: int) -> np.ndarray:
        """The compiled filters' output buffer, grown (to twice what is asked) to hold ``count``."""
        if count > len(self._positions):
            self._positions = np.empty(2 * count, dtype=np.int64)
        return self._positions

    def _hits(self, fingerprint: int, near: Collection[int], band: dict[int, list[int]],
              once_in: frozenset[int] | None = None, records: dict[int, bytes | None] | None = None,
              band_values: Sequence[tuple[int, int]] = ()) -> list[IndexHit]:
        """Hits from the handles that passed the SimHash filter (``near``) or that the band map holds
        under the tag of the query's band in some columns (``band``: handle -> columns; the record
        settles whether the value itself is shared, ``band_values``); ``once_in``: the query's
        tables, for ``query(once=True)``; ``records``: the records by handle if the caller read
        them (a batch reads all of its hits' records at once)."""
        k = self.k
        head = RECORD_HEAD.size + self._mask_len
        unpack = RECORD_HEAD.unpack_from
        handles = list(set(near) | band.keys()) if band else list(near)
        if records is None:
            raw = self._kv.multi_get([HANDLE_NS + handle_bytes(h) for h in handles])
        else:
            raw = [records[h] for h in handles]
        hits = []
        for handle, value in zip(handles, raw, strict=True):
            if value is None:  # an entry left without its record by a crash cut (see table._partition)
                continue
            stored, ts, n = unpack(value)
            distance = (stored ^ fingerprint).bit_count()
            if distance <= k and handle in near:
                via = "simhash"
            elif handle in band and _shares_band(value, head, n, band[handle], band_values):
                via = "band"
            else:  # passed the filter only on the bits the entries keep
                continue
            if once_in is not None and distance <= k and self.first_shared(stored, fingerprint) not in once_in:
                continue
            payload, pos = record_tail(value, head, n)
            hits.append(IndexHit(value[pos:].decode("utf-8", "surrogatepass"), distance, ts, stored, via, payload))
        hits.sort(key=lambda hit: (hit.distance, hit.doc_id))
        return hits

    def _probe(self, fingerprint: int, used: frozenset[int]) -> list[tuple[BucketTable, list[Leaf], Source]]:
        """The leaves each used SimHash table reaches; memoized until the next mutation, so the usual
        query-then-insert of one document descends once."""
        memo = self._memo
        if memo is not None and memo[0] == self._version and memo[1] == (fingerprint, used):
            return memo[2]
        probe: list[tuple[BucketTable, list[Leaf], Source]] = []
        k = self.k
        cache_get = self.cache.get
        for t in self._simhash_order if used is self._simhash_tables else sorted(used):
            if t > k:
                continue
            table = self.tables[t]
            source = (fingerprint, 0)
            root = table.root_key(source)
            bucket = cache_get(root)
            if bucket is not None and not bucket.split:  # the common case, without the general descent
                probe.append((table, [Leaf(root, bucket, (), None)], source))
            else:
                probe.append((table, table.leaves(source), source))
        self._memo = (self._version, (fingerprint, used), probe)
        return probe

    def _roots(self, fingerprint: int) -> list[Bucket] | None:
        """The k + 1 SimHash root buckets of ``fingerprint`` if every one is cached and unsplit (the
        common case, served without keys, Leaf objects or calls into the tables), else None: the
        general ``_probe`` then descends and loads. Memoized until the next mutation."""
        memo = self._roots_memo
        if memo is not None and memo[0] == self._version and memo[1] == fingerprint:
            return memo[2]
        found: list[Bucket] | None = None
        if self._root_slots is not None:
            found = [slots[(fingerprint >> low) & mask] for slots, low, mask in self._root_slots]  # type: ignore[misc]
            for bucket in found:
                if bucket is None or bucket.split:
                    found = None
                    break
            else:
                cache = self.cache
                cache.clock += 1
                for bucket in found:
                    bucket.used = cache.clock
                cache.hits += len(found)
        self._roots_memo = (self._version, fingerprint, found)
        return found

    def _root_keys(self, fingerprint: int) -> list[bytes]:
        """Node keys of the k + 1 SimHash roots (BucketTable.root_key, for the tables at once)."""
        if self._root_slices is not None:  # byte-aligned blocks (64 bits, k = 3): slices are cheaper
            raw = fingerprint.to_bytes(self._fp_len, "big")
            return [prefix + raw[start:stop] for prefix, start, stop in self._root_slices]
        return [
            prefix + ((fingerprint >> low) & block_mask).to_bytes(top_len, "big")
            for prefix, low, block_mask, top_len in self._root_spec
        ]

    def document(self, doc_id: str) -> IndexHit | None:
        """The indexed document with this id (its ts, fingerprint and payload), or None."""
        raw_handle = self._kv.get(doc_key(doc_id))
        record = None if raw_handle is None else self._record(raw_handle)
        if record is None:
            return None
        return IndexHit(doc_id, 0, record.ts, record.fingerprint, "id", record.payload)

    def delete(self, doc_id: str) -> bool:
        """Remove a document from every table; False if it was not indexed."""
        raw_handle = self._kv.get(doc_key(doc_id))
        if raw_handle is None:
            return False
        record = self._record(raw_handle)
        if record is None:  # half-written document (store edited behind the index): drop the id
            self._kv.delete(doc_key(doc_id))
            return True
        self._delete_handle(raw_handle, record)
        return True

    def expire(self, before_ts: float) -> int:
        """Delete every document with ts < ``before_ts``; returns how many."""
        bound = ts_key(before_ts)
        removed = 0
        while True:
            chunk: list[bytes] = []
            for key, _ in self._kv.scan_prefix(EXPIRY_NS):
                if key[1:9] >= bound or len(chunk) >= 1024:
                    break
                chunk.append(key[9:])
            if not chunk:
                return removed
            for raw_handle in chunk:
                self._delete_handle(raw_handle, self._record(raw_handle))
            removed += len(chunk)

    def stats(self) -> IndexStats:
        return self._stats.snapshot(len(self.cache), self.cache.hits, self.cache.misses)

    def routing_keys(self, fingerprint: int, bands: Sequence[tuple[int, int]] = ()) -> list[tuple[int, bytes]]:
        """(table id, key prefix of its top-level bucket) per table: the unit of state sharding.

        Every key of that bucket and of its split descendants starts with the prefix.
        """
        self._check_fingerprint(fingerprint)
        band_pairs = tuple((int(v), int(e)) for v, e in bands)
        used = self._tables_for(None, band_pairs)
        return [(t, self.tables[t].routing_key((fingerprint, 0)) if t <= self.k
                 else bytes([t]) + band_pairs[t - self.k - 1][0].to_bytes(8, "big")) for t in sorted(used)]

    def _read_records(self, root_filter: bool) -> None:
        """The state derived from the records of a store that is not empty: the band map, and the
        root filter if asked for. One scan of the records, then numpy per table over their handles,
        fingerprints, masks and band values (the record layout, _encode_record)."""
        handles, fps, masks, band_rows = [], [], [], []
        head, mask_end, width = RECORD_HEAD.size, RECORD_HEAD.size + self._mask_len, 16 * self.bands
        empty = bytes(width)
        for key, value in self._kv.scan_prefix(HANDLE_NS):
            fingerprint, _, n = RECORD_HEAD.unpack_from(value)
            handles.append(int.from_bytes(key[1:], "big"))
            fps.append(fingerprint)
            masks.append(int.from_bytes(value[head:mask_end], "little"))
            band_rows.append(value[mask_end : mask_end + width] if n & ~PAYLOAD_FLAG else empty)
        handle_array, fp_array = np.array(handles, dtype=np.uint64), np.array(fps, dtype=np.uint64)
        mask_array = np.array(masks, dtype=np.uint64)
        pairs = np.frombuffer(b"".join(band_rows), dtype=">u8").astype(np.uint64).reshape(len(fps), 2 * self.bands)
        roots = RootFilter() if root_filter else None
        self.band_map = BandMap(capacity=len(fps) * self.bands)
        for t in range(self._table_count):
            has = ((mask_array >> np.uint64(t)) & np.uint64(1)).astype(bool)
            if t > self.k:  # a band table: its values (a record without bands has no band table)
                values = pairs[has, 2 * (t - self.k - 1)]
                self.band_map.add_many(np.full(len(values), t, dtype=np.int64), values, handle_array[has])
            elif roots is not None:
                _, low, block_mask, top_len = self._root_spec[t]
                roots.add_tops(t, top_len, (fp_array[has] >> np.uint64(low)) & np.uint64(block_mask))
        self.cache.root_filter = roots

    def lookup_keys(self, handle_key: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
        """The expiry and doc-id keys of a stored record (``handle_key`` = HANDLE_NS + handle, as a
        scan of HANDLE_NS returns it). They are a function of the records, so a changelog-backed
        store may leave them out of its log and rebuild them with this after recovery."""
        _, ts, n = RECORD_HEAD.unpack_from(value)
        _, start = record_tail(value, RECORD_HEAD.size + self._mask_len, n)
        return lookup_puts(handle_key[1:], ts, DOC_NS + value[start:])

    def flush(self) -> None:
        self._checkpoint()
        self._kv.flush()

    def close(self) -> None:
        """Persist statistics and flush; closes the store if the index opened it."""
        self._checkpoint()
        if self._owns_store:
            self._kv.close()
        else:
            self._kv.flush()
        self.cache.clear()

    def __len__(self) -> int:
        return self._stats.documents

    def __enter__(self) -> BlockIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------------

    def _check_config(self) -> bool:
        """Write the config to a new store, check it against an old one; True for a new (empty) store."""
        config = {"version": FORMAT_VERSION, "k": self.k, "bits": self.bits, "bands": self.bands}
        raw = self._kv.get(META_NS + b"config")
        if raw is None:
            empty = next(iter(self._kv.scan_prefix(b"")), None) is None
            self._kv.put(META_NS + b"config", json.dumps(config).encode())
            return empty
        stored = json.loads(raw)
        if stored != config:
            if stored.get("version") != FORMAT_VERSION:
                raise ValueError(
                    f"store has block-index format version {stored.get('version')}, this code reads version "
                    f"{FORMAT_VERSION} only: rebuild it (dedup scan: a new --state directory; the service: a "
                    "new app_id, or delete its state and changelog topics)")
            raise ValueError(f"store was built with {stored}, not {config}")
        return False

    def _check_fingerprint(self, fingerprint: int) -> None:
        if not 0 <= fingerprint < (1 << self.bits):
            raise ValueError(f"fingerprint must be an unsigned {self.bits}-bit int")

    def _tables_for(self, tables: Collection[int] | None, bands: tuple[tuple[int, int], ...]) -> frozenset[int]:
        if bands and len(bands) != self.bands:
            raise ValueError(f"expected {self.bands} bands, got {len(bands)}")
        # Band tables take part only when the document has bands (an empty document has none).
        available = self._all_tables if bands else self._simhash_tables
        if tables is None:
            return available
        chosen = frozenset(tables)
        if not chosen <= self._all_tables:
            raise ValueError(f"unknown table ids {sorted(chosen - self._all_tables)}")
        return chosen & available

    def _allocate_handle(self) -> int:
        handle = self._next_handle
        self._next_handle += 1
        return handle

    def _add(self, handle: int, record: Record, tables: frozenset[int], id_key: bytes | None = None) -> None:
        """Write the document's records and its entries in ``tables``, then re-split hot leaves.

        ``id_key`` (the doc-id key) is given for a new document: then its expiry and id keys go too.

        Key order is the commit order: a changelog replays a prefix of it after a crash, and
        ``insert`` treats a present doc id as done, so the doc id is written last (after the
        handle reservation, the entries and the record) and a replayed prefix is always redone.
        """
        hb = handle.to_bytes(HANDLE_LEN, "big")
        puts: list[tuple[bytes, bytes]] = []
        if self._next_handle > self._reserved:
            self._reserved = self._next_handle + HANDLE_BLOCK
            puts.append((META_NS + b"handle", self._reserved.to_bytes(8, "big")))
        fingerprint = record.fingerprint
        entry_tail = ENTRY_TAG + hb
        roots = self._roots(fingerprint) if tables is self._simhash_tables else None
        if roots is not None:
            touched = []
            keys = self._root_keys(fingerprint)
            for key, (above, low, low_mask, kept_mask, size) in zip(keys, self._payload_spec, strict=True):
                rest = ((fingerprint >> above) << low) | (fingerprint & low_mask)  # SimhashBlocks.payload
                puts.append((key + entry_tail, (rest & kept_mask).to_bytes(size, "big")))
        else:
            touched = self._probe(fingerprint, tables)
            for table, leaves, source in touched:
                # one entry per table, at the top-level bucket; whole once it is split (table.py)
                if leaves[0].path:
                    puts.append((table.root_key(source) + entry_tail, table.scheme.whole_payload(fingerprint, source)))
                else:
                    puts.append((leaves[0].key + entry_tail, table.scheme.payload(fingerprint, source)))
        if record.bands and tables is not self._simhash_tables:  # before the record can be read
            self._map_bands(handle, record.bands, tables, self.band_map.add_many)
        puts.append((HANDLE_NS + hb, self._encode_record(record)))
        if id_key is not None:  # a new document (else: more tables for an indexed one)
            puts += lookup_puts(hb, record.ts, id_key)
            self._stats.documents += 1
        self._write_puts(puts)
        self._version += 1  # _mutated, inline
        self._dirty += 1
        if self._dirty >= STATS_EVERY:
            self._checkpoint()
        # Mirror the entries into the cached leaves and the level counters, inline (this runs for
        # k + 1 leaves per insert): the same arithmetic as BucketCache.grew and LevelCounter.resize
        # for a +1 step. Splits wait until every table is updated.
        cache = self.cache
        stats = self._stats
        min_split = self.policy.min_split
        grown = 0
        big: list[tuple[BucketTable, Leaf, Source]] = []
        if roots is not None:  # k + 1 cached roots at level 0
            levels = stats.levels["simhash"]
            for t, (key, bucket, mask) in enumerate(zip(keys, roots, self._filter_mask_list, strict=True)):
                bucket.handles.append(handle)
                bucket.fps.append(fingerprint & mask)
                size = len(bucket.handles)
                if levels and size & (size - 1):
                    levels[0].entries += 1
                else:
                    stats.resize("simhash", 0, size - 1, size)
                if size >= min_split:
                    big.append((self.tables[t], Leaf(key, bucket, (), None), (fingerprint, 0)))
            grown = len(roots)
        for table, leaves, source in touched:
            grown += self._append_to_leaves(table, leaves, source, handle, fingerprint, big)
        if grown:
            cache.grew_entries(grown)
        for table, leaf, source in big:
            table.maybe_split(leaf, source)

    def _append_to_leaves(self, table: BucketTable, leaves: list[Leaf], source: Source, handle: int, fingerprint: int,
                          big: list[tuple[BucketTable, Leaf, Source]]) -> int:
        """Mirror a written entry into the leaves its descent reached (and the split nodes above them)
        and the level counters; adds the leaves that reach ``min_split`` to ``big``. Returns how many
        cached leaves grew (``BucketCache.grew_entries``, left to the caller)."""
        if leaves[0].path:  # below a split: its split nodes keep every entry of their subtree
            table.added_below_split(source, handle, fingerprint)
        cached = self.cache.buckets
        stats = self._stats
        min_split = self.policy.min_split
        masked = fingerprint & table.filter_mask
        levels = stats.levels[table.kind]
        grown = 0
        for leaf in leaves:
            bucket = leaf.bucket
            bucket.handles.append(handle)
            bucket.fps.append(fingerprint & table.scheme.leaf_mask(leaf.path) if leaf.path else masked)
            if leaf.key in cached:  # an evicted leaf's object no longer counts
                grown += 1
            size = len(bucket.handles)
            level = len(leaf.path)
            if level < len(levels) and size & (size - 1):  # a +1 step that stays in its size bin
                levels[level].entries += 1
            else:
                stats.resize(table.kind, level, size - 1, size)
            if size >= min_split:
                big.append((table, leaf, source))
        return grown

    def _map_bands(self, handle: int, bands: tuple[tuple[int, int], ...], tables: frozenset[int],
                   change: Callable[[np.ndarray, np.ndarray, np.ndarray], None]) -> None:
        """Add (``BandMap.add_many``) or remove the document's entries in the band tables of ``tables``."""
        columns = [t - self.k - 1 for t in sorted(tables) if t > self.k]
        if columns:
            values = np.fromiter((bands[c][0] for c in columns), dtype=np.uint64, count=len(columns))
            change(self._band_ids[columns], values, np.full(len(columns), handle, dtype=np.uint64))

    def _delete_handle(self, raw_handle: bytes, record: Record | None) -> None:
        # Commit order again (see _add): entries and expiry key first, the doc id, the record last,
        # so a replayed prefix leaves the doc id in place for a redelivered delete to finish.
        deletes: list[bytes] = []
        handle = int.from_bytes(raw_handle, "big")
        touched = []
        if record is not None:
            for t in sorted(record.tables & self._simhash_tables):
                table = self.tables[t]
                source = (record.fingerprint, 0)
                leaves = table.leaves(source)
                deletes.append(table.root_key(source) + ENTRY_TAG + raw_handle)
                touched.append((table, source, leaves))
            deletes += [key for key, _ in lookup_puts(raw_handle, record.ts, doc_key(record.doc_id))]
        deletes.append(HANDLE_NS + raw_handle)
        self._kv.write_batch((), deletes)
        if record is not None and record.bands:
            self._map_bands(handle, record.bands, record.tables, self.band_map.remove_many)
        for table, source, leaves in touched:
            table.removed(source, leaves, handle)
        if record is not None:
            self._stats.documents -= 1
        self._mutated()

    def _fingerprints_of(self, raw_handles: list[bytes]) -> list[int | None]:
        """Whole fingerprints by handle, for splits of tables whose entries keep only a filter."""
        values = self._kv.multi_get([HANDLE_NS + raw for raw in raw_handles])
        return [None if value is None else int.from_bytes(value[:8], "big") for value in values]

    def _record(self, raw_handle: bytes) -> Record | None:
        value = self._kv.get(HANDLE_NS + raw_handle)
        return None if value is None else self._decode_record(value)

    def _band_pairs(self, bands: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        """``bands`` as a tuple of int pairs. Memoized for the last tuple seen: the detector passes one
        tuple to the query and then the insert of a document (16 bands: 3.1 us a conversion). Only
        for a tuple, which cannot change between the two calls."""
        memo = self._bands_memo
        if memo is not None and memo[0] is bands:
            return memo[1]
        pairs = tuple((int(v), int(e)) for v, e in bands)
        if type(bands) is tuple:
            self._bands_memo = (bands, pairs)
        return pairs

    def _mask_bytes(self, tables: frozenset[int]) -> bytes:
        mask = self._masks.get(tables)
        if mask is None:
            mask = self._masks[tables] = sum(1 << t for t in tables).to_bytes(self._mask_len, "little")
        return mask

    def _encode_record(self, record: Record) -> bytes:
        mask = self._mask_bytes(record.tables)
        doc_id = record.doc_id.encode("utf-8", "surrogatepass")
        payload = record.payload
        n = len(record.bands) | (PAYLOAD_FLAG if payload else 0)
        parts = [RECORD_HEAD.pack(record.fingerprint, record.ts, n), mask]
        if record.bands:
            parts.append(pack_bands(record.bands))
        if payload:
            parts += (PAYLOAD_LEN.pack(len(payload)), payload)
        parts.append(doc_id)
        return b"".join(parts)

    def _decode_record(self, value: bytes) -> Record:
        fingerprint, ts, n = RECORD_HEAD.unpack_from(value)
        nbands = n & ~PAYLOAD_FLAG
        pos = RECORD_HEAD.size
        mask = int.from_bytes(value[pos : pos + self._mask_len], "little")
        pos += self._mask_len
        flat = struct.unpack_from(f">{2 * nbands}Q", value, pos)  # pack_bands; one call (a restore decodes all)
        bands = tuple(zip(flat[::2], flat[1::2], strict=True))
        tables = self._tables_of_mask.get(mask)
        if tables is None:
            tables = self._tables_of_mask[mask] = frozenset(t for t in range(self._table_count) if mask >> t & 1)
        payload, pos = record_tail(value, pos, n)  # from the end of the mask, past the bands
        return Record(fingerprint, ts, tables, bands, value[pos:].decode("utf-8", "surrogatepass"), payload)

    def _mutated(self, count: int = 1) -> None:
        """``count`` documents changed: bump the probe memos' version, checkpoint now and then."""
        self._version += 1
        self._dirty += count
        if self._dirty >= STATS_EVERY:
            self._checkpoint()

    def _checkpoint(self) -> None:
        self._kv.put(META_NS + b"stats", self._stats.to_json())
        self._kv.put(META_NS + b"handle", max(self._reserved, self._next_handle).to_bytes(8, "big"))
        self._dirty = 0


def _shares_band(record: bytes, head: int, n: int, columns: list[int], query: Sequence[tuple[int, int]]) -> bool:
    """Whether the record (bands from ``head``, ``n`` of them + PAYLOAD_FLAG) has the query's band
    value in one of ``columns`` (``pack_bands``: big-endian value then extension per band)."""
    count = n & ~PAYLOAD_FLAG
    return any(c < count and int.from_bytes(record[head + 16 * c : head + 16 * c + 8], "big") == query[c][0]
               for c in columns)


__all__ = ["HANDLE_LEN", "BlockIndex", "IndexHit"]

