"""``IndexState``: what a block index is made of, shared by its per-document calls (document/query.py,
document/writes.py) and its batch calls (batch/). ``BlockIndex`` (block_index.py) opens one and is its API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stream.index.anchors import AnchorTable
from stream.index.bands.tables import BandTables
from stream.index.layout import TableLayout
from stream.index.records import (
    HANDLE_BLOCK,
    HANDLE_KEY,
    HANDLE_NS,
    RECORD_HEAD,
    STATS_KEY,
    RecordCodec,
    StoredDocument,
    handle_bytes,
    record_tail,
)
from stream.index.simhash.arena import RootArena
from stream.index.simhash.buckets import Bucket
from stream.index.simhash.cache import BucketCache, RootFilter
from stream.index.simhash.segments import DEFAULT_LIMIT as DEFAULT_ENTRY_LIMIT
from stream.index.simhash.segments import PendingEntries, read_watermark, record_fingerprint, records_from, watermark_op
from stream.index.simhash.stats import StatsRecorder
from stream.index.simhash.table import BucketTable, Leaf, SplitPolicy
from stream.storage import KVStore, WriteOp

STATS_EVERY = 512  # mutations between statistics checkpoints

# Per SimHash table: its top-level buckets by block value (BucketCache.slots) and the block's
# (low bit, mask) in the fingerprint.
RootSlots = tuple[tuple[list[Bucket | None], int, int], ...]
# Per SimHash table a query or insert uses: the table, the leaves its descent reaches, its source.
Probe = list[tuple[BucketTable, list[Leaf], tuple[int, int]]]


class Handles:
    """Handles are a per-store sequence; they are reserved ``HANDLE_BLOCK`` at a time in the store's
    metadata, so that after a crash the sequence skips handles but never reuses a live one."""

    def __init__(self, store: KVStore) -> None:
        raw = store.get(HANDLE_KEY)
        self.next = int.from_bytes(raw, "big") if raw else 0
        self.reserved = self.next

    def take(self, count: int = 1) -> int:
        """The first of ``count`` new handles (the others follow it)."""
        first = self.next
        self.next += count
        return first

    def reservation(self) -> tuple[bytes, bytes] | None:
        """The metadata write that covers the handles taken so far, when they passed the reserved
        ones (to be written before any key that uses them)."""
        if self.next <= self.reserved:
            return None
        self.reserved = self.next + HANDLE_BLOCK
        return HANDLE_KEY, self.reserved.to_bytes(8, "big")

    def checkpoint(self) -> tuple[bytes, bytes]:
        return HANDLE_KEY, max(self.reserved, self.next).to_bytes(8, "big")


@dataclass(eq=False, slots=True)
class IndexState:
    """The parts of one block index. ``kv`` is the store the index reads and writes through (the
    store, or a ``BufferedStore`` over it); ``tables`` are its SimHash tables 0..k (band tables live
    in ``band_map``); ``root_slots`` serves the common probe (every root cached and unsplit) by list
    index, None when a block is too wide for slot lists (then every call takes the general path)."""

    layout: TableLayout
    codec: RecordCodec
    kv: KVStore
    cache: BucketCache
    tables: list[BucketTable]
    band_map: BandTables
    stats: StatsRecorder
    policy: SplitPolicy
    handles: Handles
    root_slots: RootSlots | None
    anchors: AnchorTable | None = None  # the anchor table, when the index keeps one (index/anchors.py)
    # the batch path's SimHash entries not yet in the store (simhash/segments.py; None: no batch path)
    pending: PendingEntries | None = None
    positions: np.ndarray = field(default_factory=lambda: np.empty(1024, dtype=np.int64))  # kernels' output
    version: int = 0  # bumped by every mutation; keys the memos below
    dirty: int = 0  # mutations since the last statistics checkpoint
    # the last probe (version, (fingerprint, tables), its leaves): a query then insert descends once
    probe_memo: tuple[int, object, Probe] | None = None
    # the last common probe (version, fingerprint, its k + 1 cached roots or None)
    roots_memo: tuple[int, int, list[Bucket] | None] | None = None
    # the last bands tuple and its int pairs (``band_pairs``)
    bands_memo: tuple[object, tuple[tuple[int, int], ...]] | None = None

    @classmethod
    def open(cls, layout: TableLayout, kv: KVStore, policy: SplitPolicy, cache_bytes: int,
             band_tables: BandTables, entry_limit: int = DEFAULT_ENTRY_LIMIT) -> IndexState:
        raw_stats = kv.get(STATS_KEY)
        stats = StatsRecorder.from_json(raw_stats) if raw_stats else StatsRecorder()
        cache = BucketCache(cache_bytes)
        state = cls(layout, RecordCodec(layout.table_count, layout.bands), kv, cache, [], band_tables, stats, policy,
                    Handles(kv), None)
        state.tables = [BucketTable(t, scheme, kv, cache, stats, policy, state.fingerprints_of)
                        for t, scheme in enumerate(layout.simhash)]
        slot_lists = [cache.slots(t, scheme.top_len, layout.filter_masks[t] & ~(mask << shift), shift,
                                  scheme.sub_mask(RootArena.MAX_SHIFT))
                      for t, (scheme, (shift, mask)) in enumerate(zip(layout.simhash, layout.blocks, strict=True))]
        if all(slots is not None for slots in slot_lists):
            pairs = zip(slot_lists, layout.blocks, strict=True)
            state.root_slots = tuple((slots, low, mask) for slots, (low, mask) in pairs if slots is not None)
            state.pending = PendingEntries([scheme.top_len for scheme in layout.simhash],
                                           [scheme.payload_len for scheme in layout.simhash], entry_limit)
            cache.on_evict = state.write_back
            for table in state.tables:
                table.write_back = state.write_back_root
                table.new_seq = state.new_seq
        return state

    # -- pending entries (simhash/segments.py) ----------------------------------------------------

    def new_seq(self) -> tuple[int, list[WriteOp]]:
        """A segment number (a handle: never reused) and the writes that must come before its use."""
        seq = self.handles.take()
        reservation = self.handles.reservation()
        return seq, [] if reservation is None else [reservation]

    def write_back(self, roots: list[tuple[int, int]]) -> None:
        """The pending entries of ``roots`` ((table, block value)) into the store: they leave the cache."""
        assert self.pending is not None
        segments = self.pending.take_roots(roots, self.handles.next) if self.pending.count else []
        if segments:  # numbered with the next handle: taken now, its reservation written first
            seq, ops = self.new_seq()
            assert seq == self.handles.next - 1
            self.kv.write_ops([*ops, *segments])

    def write_back_root(self, key: bytes) -> None:
        self.write_back([(key[0], int.from_bytes(key[1:], "big"))])

    def checkpoint_entries(self) -> None:
        """Every pending entry into the store, then the watermark: every document before the next handle
        has its entries there."""
        if self.pending is None:
            return
        seq, ops = self.new_seq()
        ops += self.pending.take_all(seq)
        ops.append(watermark_op(self.handles.next))
        self.kv.write_ops(ops)

    def replay_entries(self) -> int:
        """After a crash: the SimHash entries of every record from the watermark on, into the store
        (the pending entries the crash lost are among them). Returns how many documents."""
        if self.pending is None:
            return 0
        first = read_watermark(self.kv)
        handles, fingerprints, masks = [], [], []
        for handle, value in records_from(self.kv, first, self.handles.next):
            handles.append(handle)
            fingerprints.append(record_fingerprint(value))
            masks.append(int.from_bytes(value[RECORD_HEAD.size : self.codec.head], "little"))
        fps, mask = np.array(fingerprints, dtype=np.uint64), np.array(masks, dtype=np.uint64)
        handle_array = np.array(handles, dtype=np.uint64)
        for t, scheme in enumerate(self.layout.simhash):
            has = (mask >> np.uint64(t)) & np.uint64(1) == 1
            values = fps[has]
            self.pending.add(t, self.layout.block_values(t, values), handle_array[has], scheme.payload_values(values))
        if handles:
            self.checkpoint_entries()
        return len(handles)

    def restore(self, root_filter: bool, bands: bool) -> None:
        """The state derived from the records of a store that is not empty: the band tables if
        ``bands``, and the root filter if asked for. One scan of the records, a chunk at a time."""
        layout = self.layout
        roots = RootFilter() if root_filter else None
        for columns in self.codec.column_chunks(self.kv):
            for t in range(layout.table_count):
                has = columns.in_table(t)
                if t > layout.k:  # a band table: its values (a record without bands has no band table)
                    if bands:
                        values = columns.band_values[has, t - layout.k - 1]
                        self.band_map.add_many(np.full(len(values), t, dtype=np.int64), values, columns.handles[has])
                elif roots is not None:
                    roots.add_tops(t, layout.simhash[t].top_len, layout.block_values(t, columns.fingerprints[has]))
        self.cache.root_filter = roots

    def restore_anchors(self) -> None:
        """The anchor table from the payloads of every record, in handle order (one scan)."""
        assert self.anchors is not None
        head, add = self.codec.head, self.anchors.add
        for key, value in self.kv.scan_prefix(HANDLE_NS):
            payload, _ = record_tail(value, head, RECORD_HEAD.unpack_from(value)[2])
            add(int.from_bytes(key[1:], "big"), payload)

    def mutated(self, count: int = 1) -> None:
        """``count`` documents changed: bump the memos' version, checkpoint now and then."""
        self.version += 1
        self.dirty += count
        if self.dirty >= STATS_EVERY:
            self.checkpoint()

    def checkpoint(self) -> None:
        ops: list[WriteOp] = [(STATS_KEY, self.stats.to_json()), self.handles.checkpoint()]
        if self.pending is not None and not self.pending.count:  # every entry is in the store
            ops.append(watermark_op(self.handles.next))
        self.kv.write_ops(ops)
        self.dirty = 0

    def room(self, count: int) -> np.ndarray:
        """The compiled filters' output buffer, grown (to twice what is asked) to hold ``count``."""
        if count > len(self.positions):
            self.positions = np.empty(2 * count, dtype=np.int64)
        return self.positions

    def records(self, handles: Sequence[int]) -> list[bytes | None]:
        """The records of ``handles`` (None: no record), by one multi-get."""
        return self.kv.multi_get([HANDLE_NS + handle_bytes(h) for h in handles])

    def document(self, raw_handle: bytes) -> StoredDocument | None:
        value = self.kv.get(HANDLE_NS + raw_handle)
        return None if value is None else self.codec.decode(value)

    def fingerprints_of(self, raw_handles: list[bytes]) -> list[int | None]:
        """Whole fingerprints by handle, for splits of tables whose entries keep only a filter."""
        values = self.kv.multi_get([HANDLE_NS + raw for raw in raw_handles])
        return [None if value is None else int.from_bytes(value[:8], "big") for value in values]

    def band_pairs(self, bands: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        """``bands`` as a tuple of int pairs. Memoized for the last tuple seen: the detector passes one
        tuple to the query and then the insert of a document (16 bands: 3.1 us a conversion). Only
        for a tuple, which cannot change between the two calls."""
        memo = self.bands_memo
        if memo is not None and memo[0] is bands:
            return memo[1]
        pairs = tuple((int(v), 0) for v, _ in bands)  # extensions are not kept (records.pack_bands)
        if type(bands) is tuple:
            self.bands_memo = (bands, pairs)
        return pairs
