"""Generic bucket / split machinery of the block table, and its in-memory read cache.

Key layout (all keys of a bucket and of its split descendants start with the bucket's routing prefix
``bytes([table]) + top``, so a bucket and its descendants live in one state partition)::

    node  := table(1) top(scheme.top_len)          top-level bucket
           | node b"x" group(1) value(var)          sub-bucket after a split (seed 002 §2.3)
    node b"e" handle(5)  -> scheme payload          one key per entry (small writes: one changelog
                                                    message per entry, never a whole bucket); in a
                                                    sub-bucket the payload of its path
                                                    (``scheme.entry_payload``)
    node b"s"            -> b""                     split marker: the bucket's entries moved below it

After a component the next byte is always a tag (e / s / x) and every component has a width fixed by
the path, so keys of distinct nodes never collide. Entries live only in leaves; an entry of source S
sits exactly in the leaves reached by descending S through the current split structure, so deleting
a document needs no list of its keys: descending again finds them.

Reads go through ``BucketCache``: per leaf, packed fingerprints (masked to the bits the entries keep,
``scheme.filter_mask``) and handles (``array('Q')``), bounded by an estimate of their memory, LRU; a
miss is rebuilt from one prefix scan. Writes go to the store first and then update the cached leaf in
place. See docs/index.md for the measurements behind this layout.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stream.index.schemes import BlockScheme, Source, State
from stream.index.stats import StatsRecorder
from stream.index.store import KVStore

HANDLE_LEN = 5  # bytes: 2^40 documents per state partition before handles wrap
ENTRY_TAG, SPLIT_TAG, CHILD_TAG = b"e", b"s", b"x"
ROOT_ABSENT, ROOT_LEAF, ROOT_SPLIT = 0, 1, 2  # BucketCache.root_states: not cached, a leaf, split


def handle_bytes(handle: int) -> bytes:
    return handle.to_bytes(HANDLE_LEN, "big")


class Bucket:
    """A cached node: either split (no entries of its own) or a leaf with its entries' fingerprints."""

    __slots__ = ("fps", "handles", "refused_at", "split", "used")

    def __init__(self, split: bool = False) -> None:
        self.split = split
        self.fps = array("Q")
        self.handles = array("Q")
        # size at which a split was refused (see SplitPolicy.gain); retried once the size doubles
        self.refused_at = 0
        self.used = 0  # BucketCache's clock at the last access (recency for eviction)

    def __len__(self) -> int:
        return len(self.handles)

    def append(self, handle: int, fingerprint: int) -> None:
        self.handles.append(handle)
        self.fps.append(fingerprint)

    def remove(self, handle: int) -> bool:
        try:
            i = self.handles.index(handle)
        except ValueError:
            return False
        del self.handles[i]
        del self.fps[i]
        return True


class RootFilter:
    """Which top-level buckets may exist in the store beyond the cache: one bit per table and block
    value, blocks wider than ``BITS`` hashed onto their low bits (a band value is a hash already).
    A clear bit is certain (no scan), a set one may be a false positive (a scan that finds nothing,
    as without the filter). Built from an existing store's records on open (``BlockIndex``), or from
    the cache when a complete one first evicts; then every top-level bucket the cache loads sets its
    bit, so one evicted later is still found."""

    BITS = 20  # 128 KiB per band table (2^16 bits for a 16-bit SimHash block)

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

    ``slots(table, top_len)`` also files a table's top-level buckets in a list indexed by block value
    (tables whose top block fits in 2 bytes): the index's common query reads its k + 1 roots by list
    index instead of building keys and hashing them (docs/index.md, "Third round").
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
        self._entries = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.buckets)

    def __contains__(self, key: bytes) -> bool:
        return key in self.buckets

    def slots(self, table_id: int, top_len: int) -> list[Bucket | None] | None:
        """File ``table_id``'s top-level buckets (keys ``table(1) + top(top_len)``) by block value;
        returns the list (None if the block is too wide for one)."""
        if top_len > self.SLOT_BYTES:
            return None
        while len(self.roots) <= table_id:
            self.roots.append(None)
            self.root_states.append(None)
        slots: list[Bucket | None] = [None] * (1 << (8 * top_len))
        self.roots[table_id] = slots
        self.root_states[table_id] = np.full(len(slots), ROOT_ABSENT, dtype=np.int8)
        self.top_lens[table_id] = 1 + top_len
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
        return self.BUCKET_BYTES * len(self.buckets) + self.ENTRY_BYTES * self._entries

    def get(self, key: bytes) -> Bucket | None:
        bucket = self.buckets.get(key)
        if bucket is None:
            self.misses += 1
            return None
        self.hits += 1
        self.clock += 1
        bucket.used = self.clock
        return bucket

    def put(self, key: bytes, bucket: Bucket) -> None:
        old = self.buckets.pop(key, None)
        if old is not None:
            self._entries -= len(old)
        self.buckets[key] = bucket
        self.clock += 1
        bucket.used = self.clock
        self._file(key, bucket)
        self._entries += len(bucket)
        if self.size_bytes > self.max_bytes:
            self._evict()

    def grew(self, key: bytes, delta: int) -> None:
        """A bucket changed size by ``delta`` entries (ignored if it is no longer cached)."""
        if key in self.buckets:
            self._entries += delta
            if delta > 0 and self.size_bytes > self.max_bytes:
                self._evict()

    def clear(self) -> None:
        self.complete = False
        self.buckets.clear()
        self._entries = 0
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
        if self.complete and self.root_filter is not None:
            # while complete, misses skipped the filter: it learns every cached root now, once
            for cached in self.buckets:
                if self.top_lens.get(cached[0]) == len(cached):
                    self.root_filter.add(cached)
        for key, bucket in sorted(self.buckets.items(), key=lambda item: item[1].used):
            if self.size_bytes <= target or len(self.buckets) <= 1:
                break
            del self.buckets[key]
            self.complete = False
            self._entries -= len(bucket)
            self._file(key, None)


@dataclass(frozen=True)
class SplitPolicy:
    """When a leaf re-splits (seed 002 §2.3, plus two guards of ours).

    split if size >= min_split and (size > (1 + mu) x mean size of its level, or size > cap)
    and the split does not make queries dearer: for a query drawn from the bucket's own entries the
    expected candidates after it, sum over sub-buckets of size^2 / size, stay within
    (1 + 1/groups) x size (a one-group band split must lower them).

    Without that guard a cluster of identical or near-identical fingerprints (templated or empty
    documents) would be copied into every sub-bucket at every level, (k + 1)^levels times, without
    ever getting smaller. The slack of 1/groups lets one group stay concentrated (entries sharing
    two blocks still share the first sub-block; that sub-bucket re-splits on its own at the next
    level), while two concentrated groups already cost 2 x size. It also bounds the copies: at most
    one sub-bucket can hold more than half of the entries, so re-splits chain down one branch
    instead of fanning out. A refused bucket is retried when its size has doubled.
    """

    mu: float = 2.0
    cap: int | None = None
    min_split: int = 1024
    enabled: bool = True

    def wants(self, size: int, level_mean: float) -> bool:
        if not self.enabled or size < self.min_split:
            return False
        return size > (1.0 + self.mu) * level_mean or (self.cap is not None and size > self.cap)


class Leaf:
    """A leaf reached by a descent: its key, cached bucket, path of groups and the descent state."""

    __slots__ = ("bucket", "key", "path", "state")

    def __init__(self, key: bytes, bucket: Bucket, path: tuple[int, ...], state: State | None) -> None:
        self.key = key
        self.bucket = bucket
        self.path = path
        self.state = state  # None until needed (computing it costs; most leaves never split)


# sub-bucket key -> (its new leaf, [(handle bytes, payload, masked fingerprint)])
Children = dict[bytes, tuple[Leaf, list[tuple[bytes, bytes, int]]]]
# handles (HANDLE_LEN bytes each) -> their documents' whole fingerprints (None: no record)
Resolver = Callable[[list[bytes]], list[int | None]]


class BucketTable:
    """One table of the block index (SimHash block t, or one LSH band) over a shared store and cache."""

    def __init__(
        self,
        table_id: int,
        scheme: BlockScheme,
        store: KVStore,
        cache: BucketCache,
        stats: StatsRecorder,
        policy: SplitPolicy,
        resolve: Resolver | None = None,
    ) -> None:
        self.table_id = table_id
        self.scheme = scheme
        self.kind = scheme.kind
        self.store = store
        self.cache = cache
        self.stats = stats
        self.policy = policy
        # Needed to split when entries keep only part of the fingerprint (scheme.exact is False).
        self.resolve = resolve
        self.filter_mask = scheme.filter_mask
        self._prefix = bytes([table_id])
        self._root_len = cache.top_lens[table_id] = 1 + scheme.top_len

    def routing_key(self, source: Source) -> bytes:
        return self._prefix + self.scheme.top(source)

    root_key = routing_key  # the top-level bucket's node key is its routing prefix

    # -- reads -----------------------------------------------------------------------------------

    def bucket(self, key: bytes) -> Bucket:
        bucket = self.cache.get(key)
        if bucket is None:
            bucket = self._load(key)
            self.cache.put(key, bucket)
        return bucket

    def _load(self, key: bytes) -> Bucket:
        if self.cache.complete:  # nothing was ever evicted from an index that began empty
            return Bucket()
        roots = self.cache.root_filter
        if roots is not None and len(key) == self._root_len:
            absent = not roots.may_exist(key)
            roots.add(key)  # it enters the cache now and may gain entries there
            if absent:
                return Bucket()
        # One seek: under the node, entries (tag e) sort before the split marker (s) and children (x),
        # and a split node has no entries, so the first non-entry key tells whether it is split.
        bucket = Bucket()
        payloads = []
        handles = bucket.handles
        entry_prefix = key + ENTRY_TAG
        for entry_key, payload in self.store.scan_prefix(key):
            if not entry_key.startswith(entry_prefix):
                if entry_key == key + SPLIT_TAG:
                    # entries left beside the marker come from a split cut short by a crash: the
                    # children already hold them (see _write_split)
                    return Bucket(split=True)
                break
            handles.append(int.from_bytes(entry_key[-HANDLE_LEN:], "big"))
            payloads.append(payload)
        if payloads:
            root_len = self._root_len
            path = self.scheme.path_of(key[root_len:]) if len(key) > root_len else ()
            bucket.fps = array("Q", self.scheme.decode_at(key[1:root_len], path, payloads).tobytes())
        return bucket

    def leaves(self, source: Source) -> list[Leaf]:
        """Every leaf that ``source`` reaches (one if nothing is split; k + 1 per split SimHash level)."""
        root = self._prefix + self.scheme.top(source)
        bucket = self.cache.get(root)
        if bucket is None:
            bucket = self._load(root)
            self.cache.put(root, bucket)
        if not bucket.split:  # the common case: one unsplit top-level bucket
            return [Leaf(root, bucket, (), None)]
        out: list[Leaf] = []
        stack: list[tuple[bytes, Bucket, tuple[int, ...], State]] = [(root, bucket, (), self.scheme.root_state(source))]
        while stack:
            key, bucket, path, state = stack.pop()
            if not bucket.split:
                out.append(Leaf(key, bucket, path, state))
                continue
            for group in range(self.scheme.groups(state)):
                value, child_state = self.scheme.child(state, group)
                child = key + CHILD_TAG + bytes([group]) + value
                stack.append((child, self.bucket(child), (*path, group), child_state))
        return out

    # -- writes ----------------------------------------------------------------------------------

    def removed(self, leaves: list[Leaf], handle: int) -> None:
        for leaf in leaves:
            size = len(leaf.bucket)
            if leaf.bucket.remove(handle):
                self.cache.grew(leaf.key, -1)
                self.stats.resize(self.kind, len(leaf.path), size, size - 1)

    def maybe_split(self, leaf: Leaf, source: Source) -> int:
        """Split ``leaf`` (and, recursively, its children) if the policy says so; returns splits made."""
        bucket, level = leaf.bucket, len(leaf.path)
        size = len(bucket.handles)
        if size < self.policy.min_split:  # the common case, decided before any other work
            return 0
        if not self.policy.wants(size, self.stats.level_mean(self.kind, level)):
            return 0
        if bucket.refused_at and size < 2 * bucket.refused_at:
            return 0
        state = leaf.state if leaf.state is not None else self._state_at(source, leaf.path)
        groups = self.scheme.groups(state)
        if groups == 0:
            return 0
        entry_keys, children = self._partition(leaf, groups)
        size = len(entry_keys)
        # Expected candidates after the split for a query drawn from the bucket's own entries.
        expected = sum(len(entries) ** 2 for _, entries in children.values()) / max(size, 1)
        # One group (a band adding a row) must shrink something; k + 1 groups get the slack below.
        limit = (1.0 + 1.0 / groups) * size if groups > 1 else size - 1
        if expected > limit:
            bucket.refused_at = size
            self.stats.refused[self.kind] += 1
            return 0
        self._write_split(leaf, entry_keys, children)
        splits = 1
        for child_leaf, _ in children.values():
            splits += self.maybe_split(child_leaf, source)
        return splits

    def _state_at(self, source: Source, path: tuple[int, ...]) -> State:
        state = self.scheme.root_state(source)
        for group in path:
            state = self.scheme.child(state, group)[1]
        return state

    def _partition(self, leaf: Leaf, groups: int) -> tuple[list[bytes], Children]:
        """Read the leaf's entries from the store and assign each to its sub-bucket in every group."""
        scheme = self.scheme
        top = leaf.key[1 : 1 + scheme.top_len]
        children: Children = {}
        entries = list(self.store.scan_prefix(leaf.key + ENTRY_TAG))
        handles = [entry_key[-HANDLE_LEN:] for entry_key, _ in entries]
        exact = scheme.exact
        if exact:
            # the payload keeps the whole source: the children keep it and its fingerprint as they are
            fps = scheme.decode(top, [payload for _, payload in entries]).tolist()
            sources: list[Source | None] = [scheme.source_of(top, payload) for _, payload in entries]
        else:
            if self.resolve is None:
                raise RuntimeError("splitting entries that keep part of the fingerprint needs a resolver")
            sources = [None if fp is None else (fp, 0) for fp in self.resolve(handles)]
            fps = [0] * len(entries)  # unused: each child keeps other bits (entry_payload, leaf_mask)
        for handle, source, payload, fingerprint in zip(handles, sources, (p for _, p in entries), fps, strict=True):
            if source is None:
                # An entry without a document record: left by a changelog prefix cut inside an insert
                # whose redelivery took a new handle. Nothing can reach it any more: drop it.
                continue
            state = self._state_at(source, leaf.path)
            for group in range(groups):
                value, child_state = scheme.child(state, group)
                child_key = leaf.key + CHILD_TAG + bytes([group]) + value
                child = children.get(child_key)
                if child is None:
                    child = children[child_key] = (Leaf(child_key, Bucket(), (*leaf.path, group), child_state), [])
                if exact:
                    child[1].append((handle, payload, fingerprint))
                else:
                    path = child[0].path
                    whole = source[0]
                    child[1].append(
                        (handle, scheme.entry_payload(whole, source, child_state, path), whole & scheme.leaf_mask(path))
                    )
        return [entry_key for entry_key, _ in entries], children

    def _write_split(self, leaf: Leaf, deletes: list[bytes], children: Children) -> None:
        # Commit order (a changelog may replay a prefix): children, then the split marker, then the
        # parent's entries go; any prefix still finds every entry in the parent or in the children.
        puts = []
        for child_key, (child_leaf, entries) in children.items():
            for handle, payload, fingerprint in entries:
                puts.append((child_key + ENTRY_TAG + handle, payload))
                child_leaf.bucket.append(int.from_bytes(handle, "big"), fingerprint)
        puts.append((leaf.key + SPLIT_TAG, b""))
        self.store.write_batch(puts, deletes)
        level = len(leaf.path)
        self.stats.resize(self.kind, level, len(deletes), 0)
        self.stats.splits[self.kind] += 1
        split_bucket = Bucket(split=True)
        self.cache.put(leaf.key, split_bucket)
        leaf.bucket = split_bucket
        for child_key, (child_leaf, _) in children.items():
            self.stats.resize(self.kind, level + 1, 0, len(child_leaf.bucket))
            self.cache.put(child_key, child_leaf.bucket)
