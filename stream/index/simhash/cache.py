"""The block table's read cache (``BucketCache``) and its filter of top-level buckets (``RootFilter``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from stream.index.simhash.arena import RootArena
from stream.index.simhash.buckets import Bucket

# BucketCache.root_states: not cached, a leaf (a Bucket), split, a leaf in the root arena
ROOT_ABSENT, ROOT_LEAF, ROOT_SPLIT, ROOT_ARENA = 0, 1, 2, 3


class RootFilter:
    """Which top-level buckets may exist in the store beyond the cache: one bit per table and block
    value, blocks wider than ``BITS`` hashed onto their low bits.
    A clear bit is certain (no scan), a set one may be a false positive (a scan that finds nothing,
    as without the filter). Built from an existing store's records on open (``BlockIndex``), or from
    the cache when a complete one first evicts; then every top-level bucket the cache loads sets its
    bit, so one evicted later is still found."""

    BITS = 20  # 128 KiB per table of blocks that wide (2^16 bits for a 16-bit SimHash block)

    def __init__(self) -> None:
        self._maps: dict[int, tuple[bytearray, int]] = {}  # table id -> (bitmap, block mask)

    def _map(self, table_id: int, top_len: int) -> tuple[bytearray, int]:
        found = self._maps.get(table_id)
        if found is None:
            bits = min(8 * top_len, self.BITS)
            found = self._maps[table_id] = (bytearray(max(1, (1 << bits) // 8)), (1 << bits) - 1)
        return found

    def _slot(self, key: bytes) -> tuple[bytearray, int]:
        bitmap, mask = self._map(key[0], len(key) - 1)
        return bitmap, int.from_bytes(key[1:], "big") & mask

    def add(self, key: bytes) -> None:
        bitmap, i = self._slot(key)
        bitmap[i >> 3] |= 1 << (i & 7)

    def add_tops(self, table_id: int, top_len: int, tops: np.ndarray) -> None:
        """``add`` of the keys ``table_id + top`` for top-level block values ``tops`` (uint64) at once."""
        bitmap, mask = self._map(table_id, top_len)
        i = tops & np.uint64(mask)
        bits = np.frombuffer(bitmap, dtype=np.uint8)  # a view: writes land in the bytearray
        np.bitwise_or.at(bits, i >> np.uint64(3), np.left_shift(1, i & np.uint64(7)).astype(np.uint8))

    def may_exist(self, key: bytes) -> bool:
        bitmap, i = self._slot(key)
        return bool(bitmap[i >> 3] >> (i & 7) & 1)


class BucketCache:
    """Cache of ``Bucket`` by node key, bounded by an estimate of its memory in bytes; evicts the
    least recently used buckets first.

    Estimate: ~360 bytes of Python objects per bucket (two arrays, the Bucket, the dict slot, the key)
    plus ~18 bytes per entry (two 8-byte array items and their over-allocation); tracemalloc measured
    366 + 17 x entries (docs/index.md). Entry counts are tracked as buckets grow and shrink, so the
    bound holds while cached buckets fill up.

    Recency is a clock stamped on the bucket (``Bucket.used``) rather than an ``OrderedDict`` kept in
    LRU order: at 1M fingerprints a ``move_to_end`` cost ~0.85 us (a hash probe and four pointer
    writes in a 262k-entry table, all cache misses), as much as the lookup itself. Eviction sorts by
    the stamps and drops down to ``EVICT_TO`` of the bound at once, so its cost is amortized.

    Leaf sub-buckets dealt from a cached split node go first, oldest dealt first (``dealt``), with no
    sort: they are many and small (Zipf 1M: ~450k cached buckets, most of them dealt leaves of 1-10
    entries), are dealt again from their parent without I/O, and a sort over every bucket at each
    eviction took a quarter of the build (docs/decisions/index-resplitting.md).

    ``slots(table, top_len)`` also files a table's top-level buckets in a list indexed by block value
    (tables whose top block fits in 2 bytes): the index's common query reads its k + 1 roots by list
    index instead of building keys and hashing them (docs/decisions/index-hot-paths.md).

    Unsplit roots of those tables may instead live in ``arena`` (``RootArena``, state ``ROOT_ARENA``,
    no slot object), where the batch calls put them (``adopt``, ``add_arena_roots``); ``get`` takes one
    out as a ``Bucket`` for everything else. While ``pinned`` (a batch between resolving its roots and
    appending to them) eviction leaves the arena alone.
    """

    BUCKET_BYTES = 360
    ENTRY_BYTES = 18
    EVICT_TO = 0.9
    SLOT_BYTES = 2  # top blocks of at most 2 bytes get a slot list (2^16 slots, 512 KiB per table)

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.buckets: dict[bytes, Bucket] = {}
        # per table id: its top-level buckets by block value (None: table without slots), and each
        # one's state (ROOT_ABSENT / ROOT_LEAF / ROOT_SPLIT): the batch calls test a batch at once
        self.roots: list[list[Bucket | None] | None] = []
        self.root_states: list[np.ndarray | None] = []
        self.clock = 0  # public for BlockIndex's hot path, which stamps its k + 1 roots inline
        # True while the cache holds every bucket there is (set by an index that opened an empty store
        # of its own; false from the first eviction): a miss is then an empty bucket, no scan needed
        self.complete = False
        # Top-level buckets known to be absent beyond the cache (None: unknown); outlives complete
        self.root_filter: RootFilter | None = None
        self.top_lens: dict[int, int] = {}  # table id -> length of its top-level keys (BucketTable, slots)
        # top-level key -> the keys of its cached sub-buckets: they leave the cache with it (module doc)
        self.subtrees: dict[bytes, set[bytes]] = {}
        # keys of dealt leaf sub-buckets, oldest first; stale keys (split or gone since) are skipped
        self.dealt: deque[bytes] = deque()
        # node key -> size at which its split was refused (Bucket.refused_at): outlives the bucket's
        # eviction, or every bucket dealt or loaded again would re-run the policy's O(n) check
        self.refused: dict[bytes, int] = {}
        self._entries = 0
        self.hits = 0
        self.misses = 0
        self.arena = RootArena(max(1024, max_bytes // RootArena.ENTRY_BYTES))
        self.pinned = False
        # called with the (table, block value) of the top-level buckets an eviction dropped: an index
        # whose batch path keeps entries pending writes theirs (simhash/segments.py)
        self.on_evict: Callable[[list[tuple[int, int]]], None] | None = None

    def __len__(self) -> int:
        return len(self.buckets) + sum(int((states == ROOT_ARENA).sum()) for states in self.root_states
                                       if states is not None)

    def __contains__(self, key: bytes) -> bool:
        return key in self.buckets or self._arena_slot(key) is not None

    def slots(self, table_id: int, top_len: int, filter_bits: int, block_shift: int,
              sub_bits: int = 0) -> list[Bucket | None] | None:
        """File ``table_id``'s top-level buckets (keys ``table(1) + top(top_len)``) by block value;
        returns the list (None if the block is too wide for one). ``filter_bits``: the fingerprint
        bits the table's unsplit entries keep besides the block, which starts at ``block_shift``;
        ``sub_bits``: those that key the arena's sub-chains (``RootArena``)."""
        if top_len > self.SLOT_BYTES:
            return None
        while len(self.roots) <= table_id:
            self.roots.append(None)
            self.root_states.append(None)
        slots: list[Bucket | None] = [None] * (1 << (8 * top_len))
        self.roots[table_id] = slots
        self.root_states[table_id] = np.full(len(slots), ROOT_ABSENT, dtype=np.int8)
        self.top_lens[table_id] = 1 + top_len
        self.arena.add_table(table_id, len(slots), filter_bits, block_shift, sub_bits)
        for key, bucket in self.buckets.items():
            self._file(key, bucket)
        return slots

    def grew_entries(self, count: int) -> None:
        """Cached buckets gained ``count`` entries in all."""
        self._entries += count
        if self.size_bytes > self.max_bytes:
            self._evict()

    @property
    def size_bytes(self) -> int:
        return self.BUCKET_BYTES * len(self.buckets) + self.ENTRY_BYTES * self._entries + self.arena.size_bytes

    def get(self, key: bytes) -> Bucket | None:
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self._from_arena(key)
            if bucket is None:
                self.misses += 1
                return None
        self.hits += 1
        self.clock += 1
        bucket.used = self.clock
        return bucket

    def put(self, key: bytes, bucket: Bucket, evict: bool = True, dealt: bool = False) -> None:
        """Cache ``bucket``; ``evict=False`` defers eviction to ``settle`` (a subtree put at once);
        ``dealt``: a leaf sub-bucket dealt from its split parent (evicted first, see the class doc)."""
        if dealt:
            self.dealt.append(key)
            if len(self.dealt) > 2 * len(self.buckets) + 1024:  # bound the stale keys
                self.dealt = deque(k for k in self.dealt if k in self.buckets)
        old = self.buckets.pop(key, None)
        if old is not None:
            self._entries -= len(old)
        elif (in_arena := self._arena_slot(key)) is not None:
            self.arena.drop(*in_arena)
        self.buckets[key] = bucket
        self.clock += 1
        bucket.used = self.clock
        top_len = self.top_lens.get(key[0]) if key else None
        if top_len is not None and len(key) > top_len:
            self.subtrees.setdefault(key[:top_len], set()).add(key)
        self._file(key, bucket)
        self._entries += len(bucket)
        if evict:
            self.settle()

    def add_arena_roots(self, table_id: int, values: np.ndarray) -> None:
        """New, empty top-level buckets for block values of a table with slots, in the arena."""
        states = self.root_states[table_id]
        assert states is not None, "a table with slots"
        states[values] = ROOT_ARENA
        self.misses += len(values)

    def adopt(self, table_id: int, value: int) -> None:
        """Move the cached unsplit top-level bucket (table, block value) into the arena."""
        slots, states = self.roots[table_id], self.root_states[table_id]
        assert slots is not None and states is not None, "a table with slots"
        bucket = slots[value]
        assert bucket is not None and not bucket.split, "a cached leaf"
        del self.buckets[self.root_key(table_id, value)]
        self._entries -= len(bucket)
        slots[value] = None
        states[value] = ROOT_ARENA
        self.arena.push(table_id, value, np.frombuffer(bucket.handles, dtype=np.uint64),
                        np.frombuffer(bucket.fps, dtype=np.uint64))

    def root_key(self, table_id: int, value: int) -> bytes:
        """The key of the top-level bucket of block ``value`` in table ``table_id`` (one with slots)."""
        return bytes([table_id]) + value.to_bytes(self.top_lens[table_id] - 1, "big")

    def touch_arena(self, table_id: int, values: np.ndarray) -> None:
        """Arena roots were used now (recency for eviction)."""
        self.clock += 1
        self.arena.used[table_id, values] = self.clock
        self.hits += len(values)

    def _arena_slot(self, key: bytes) -> tuple[int, int] | None:
        """(table, block value) of ``key`` if it names a root in the arena."""
        if not key or self.top_lens.get(key[0]) != len(key) or key[0] >= len(self.root_states):
            return None
        states = self.root_states[key[0]]
        value = int.from_bytes(key[1:], "big")
        return (key[0], value) if states is not None and states[value] == ROOT_ARENA else None

    def _from_arena(self, key: bytes) -> Bucket | None:
        """The arena root ``key`` taken out as a cached ``Bucket`` (None: not in the arena)."""
        in_arena = self._arena_slot(key)
        if in_arena is None:
            return None
        handles, fps = self.arena.release(*in_arena)
        bucket = Bucket()
        bucket.handles.frombytes(handles.tobytes())
        bucket.fps.frombytes(fps.tobytes())
        bucket.refused_at = self.refused.get(key, 0)
        self.buckets[key] = bucket
        self._entries += len(bucket)
        self._file(key, bucket)
        return bucket

    def settle(self) -> None:
        """Evict down to the bound if the cache is over it."""
        if self.size_bytes > self.max_bytes:
            self._evict()

    def grew(self, key: bytes, delta: int) -> None:
        """A bucket changed size by ``delta`` entries (ignored if it is no longer cached)."""
        if key in self.buckets:
            self._entries += delta
            if delta > 0 and self.size_bytes > self.max_bytes:
                self._evict()

    def drop_subtree(self, root: bytes) -> None:
        """Forget the nodes cached below top-level bucket ``root``, which is being loaded: any left
        there (put while it was out of the cache) may have missed writes, and it deals them again."""
        for node in self.subtrees.pop(root, ()):
            self._forget(node)

    def _forget(self, key: bytes) -> None:
        gone = self.buckets.pop(key, None)
        if gone is not None:
            self._entries -= len(gone)

    def _forget_dealt(self, key: bytes, root: bytes) -> None:
        """Drop a dealt leaf below the cached split ``root``: its parent deals it again when needed."""
        self._forget(key)
        subtree = self.subtrees.get(root)
        if subtree is not None:
            subtree.discard(key)

    def drop_dealt(self, root: bytes) -> None:
        """Forget the leaf sub-buckets dealt below top-level bucket ``root`` (its split nodes stay):
        a batch added entries to the split nodes without them (simhash/split_batch.py)."""
        subtree = self.subtrees.get(root)
        if subtree:
            for key in [key for key in subtree if not self.buckets[key].split]:
                self._forget_dealt(key, root)

    def clear(self) -> None:
        self.complete = False
        self.buckets.clear()
        self.subtrees.clear()
        self.dealt.clear()
        self.refused.clear()
        self._entries = 0
        self.arena.clear()
        for slots, states in zip(self.roots, self.root_states, strict=True):
            if slots is not None and states is not None:
                slots[:] = [None] * len(slots)
                states[:] = ROOT_ABSENT

    def _file(self, key: bytes, bucket: Bucket | None) -> None:
        """Keep the slot of a top-level key in step with the cache (None: evicted)."""
        if key and self.top_lens.get(key[0]) == len(key) and key[0] < len(self.roots):
            slots, states = self.roots[key[0]], self.root_states[key[0]]
            if slots is None or states is None:  # a table without slots
                return
            value = int.from_bytes(key[1:], "big")
            slots[value] = bucket
            states[value] = ROOT_ABSENT if bucket is None else ROOT_SPLIT if bucket.split else ROOT_LEAF

    def _evict(self) -> None:
        target = self.max_bytes * self.EVICT_TO
        top_lens = self.top_lens
        dealt = self.dealt
        while dealt and self.size_bytes > target:
            key = dealt.popleft()
            bucket = self.buckets.get(key)
            if bucket is None or bucket.split:
                continue  # gone with its top-level bucket, or split since it was dealt
            self._forget_dealt(key, key[: top_lens[key[0]]])
        if self.size_bytes <= target:
            return  # the cache still holds every top-level bucket it held
        if self.complete and self.root_filter is not None:
            self._learn_roots(self.root_filter)
        aged: list[tuple[int, bytes | tuple[int, int]]] = [(bucket.used, key) for key, bucket in self.buckets.items()]
        if not self.pinned:  # while pinned, only buckets go (see the class doc)
            aged += [(used, (t, value)) for t, values, stamps in self._arena_roots()
                     for value, used in zip(values.tolist(), stamps.tolist(), strict=True)]
        aged.sort(key=lambda item: item[0])
        # never the newest top-level bucket: it is being used (a descent, or a load)
        newest = next((name for _, name in reversed(aged)
                       if isinstance(name, bytes) and len(name) == top_lens.get(name[0], len(name))), None)
        evicted: list[tuple[int, int]] = []  # top-level buckets of tables with slots
        for _, name in aged:
            if self.size_bytes <= target:
                break
            if isinstance(name, tuple):  # an arena root: (table, block value)
                self._drop_arena_root(*name)
                evicted.append(name)
            elif name != newest:
                self._evict_bucket(name)
                if len(name) == top_lens.get(name[0]) and len(name) <= 1 + self.SLOT_BYTES:
                    evicted.append((name[0], int.from_bytes(name[1:], "big")))
        if evicted and self.on_evict is not None:
            self.on_evict(evicted)

    def _evict_bucket(self, key: bytes) -> None:
        bucket = self.buckets.get(key)
        if bucket is None:
            return
        top_len = self.top_lens.get(key[0], len(key))
        if len(key) > top_len:
            root = key[:top_len]
            if bucket.split and root in self.buckets:
                return  # a split node goes with its top-level bucket: writes walk them
            self._forget_dealt(key, root)  # or left behind by an eviction during a descent
        else:
            self._forget(key)
            self._file(key, None)
            self.drop_subtree(key)
        self.complete = False

    def _learn_roots(self, root_filter: RootFilter) -> None:
        """While complete, misses skipped the filter: it learns every cached root at the first eviction."""
        for cached in self.buckets:
            if self.top_lens.get(cached[0]) == len(cached):
                root_filter.add(cached)
        for t, values, _ in self._arena_roots():
            root_filter.add_tops(t, self.top_lens[t] - 1, values.astype(np.uint64))

    def _arena_roots(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per table with slots: (table, block values of its arena roots, their recency stamps)."""
        out = []
        for t, states in enumerate(self.root_states):
            if states is not None:
                values = np.flatnonzero(states == ROOT_ARENA)
                out.append((t, values, self.arena.used[t, values]))
        return out

    def _drop_arena_root(self, table_id: int, value: int) -> None:
        states = self.root_states[table_id]
        if states is not None and states[value] == ROOT_ARENA:
            self.arena.drop(table_id, value)
            states[value] = ROOT_ABSENT
            self.complete = False
