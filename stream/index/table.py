"""Generic bucket / split machinery of the block table, and its in-memory read cache.

Key layout (all keys of a bucket and of its split descendants start with the bucket's routing prefix
``bytes([table]) + top``, so a bucket and its descendants live in one state partition)::

    node  := table(1) top(scheme.top_len)          top-level bucket
           | node b"x" group(1) value(var)          sub-bucket after a split (seed 002 §2.3)
    top b"e" handle(5)   -> payload                 one key per entry (small writes: one changelog
                                                    message per entry, never a whole bucket), always
                                                    under the top-level bucket: ``scheme.payload``
                                                    (a filter) while it is unsplit, the whole source
                                                    (``scheme.whole_payload``) once it is split
    node b"s"            -> b""                     split marker

Sub-buckets are not stored (format 5): a split top-level bucket keeps each entry once, and its
sub-buckets (where each entry sits in k + 1 of them per level) live in memory only. Storing them had
cost k + 1 entries per document and level (Zipf 100k: 76 B/fp, 6.8 entries per document;
docs/index.md). In the cache a split node (``SplitBucket``) keeps every entry of its subtree and
deals a sub-bucket from them when a descent reaches it; the cache evicts a leaf sub-bucket on its
own (it is dealt again) and a split node only with its top-level bucket. A document's entry is at
its top-level bucket, so deleting it needs no list of its keys, and the descent finds it in the
leaves.

Reads go through ``BucketCache``: per leaf, packed fingerprints (masked to the bits the entries keep,
``scheme.leaf_mask``) and handles (``array('Q')``), bounded by an estimate of their memory, LRU; a
top-level miss is loaded by one prefix scan. Writes go to the store first and then update the cached leaves in
place. See docs/index.md for the measurements behind this layout.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stream.index import batch_keys
from stream.index.schemes import BlockScheme, Source, State
from stream.index.stats import StatsRecorder
from stream.index.store import KVStore

HANDLE_LEN = 5  # bytes: 2^40 documents per state partition before handles wrap
ENTRY_TAG, SPLIT_TAG, CHILD_TAG = b"e", b"s", b"x"
ROOT_ABSENT, ROOT_LEAF, ROOT_SPLIT = 0, 1, 2  # BucketCache.root_states: not cached, a leaf, split


def sub_key(node: bytes, group: int, value: bytes) -> bytes:
    """The key of ``node``'s sub-bucket ``value`` in ``group`` (the key layout above)."""
    return node + CHILD_TAG + bytes([group]) + value


def handle_bytes(handle: int) -> bytes:
    return handle.to_bytes(HANDLE_LEN, "big")


class Bucket:
    """A cached leaf with its entries' handles and fingerprints (a split node is a ``SplitBucket``)."""

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
        self._delete_at(i)
        return True

    def _delete_at(self, i: int) -> None:
        del self.handles[i]
        del self.fps[i]


class SplitBucket(Bucket):
    """A cached split node. It keeps every entry of its subtree once (handle, whole fingerprint, and
    the descent state's rest at this node, ``rests``) and deals them into a sub-bucket only when a
    descent reaches it (``BucketTable._child``). A top-level one also knows the split nodes below it
    (``markers``, from the store's split markers). Writes below a split keep every cached node's
    arrays equal to the union of its subtree (``added_below_split``, ``removed``), so a sub-bucket
    dealt later is right whichever of its siblings were dealt before.

    Why not every sub-bucket at once: each entry sits in k + 1 sub-buckets per level, and a split of
    a bucket of n entries makes up to (k + 1) x min(n, 2^12) mostly tiny sub-buckets (~360 bytes of
    objects each): at Zipf 1M they did not fit the read cache, which then rebuilt and evicted
    whole subtrees on every query (docs/index.md, "Session 14")."""

    __slots__ = ("aux", "markers", "rests", "sorted", "values")

    def __init__(self, aux: int = 0) -> None:
        super().__init__(split=True)
        self.rests = array("Q")
        self.aux = aux  # the state's second part at this node (SimHash: bits left)
        self.markers: set[bytes] | None = None
        # per group: (buffer, count): the sub-key value of each of the first count entries (new ones
        # are valued when the next deal needs them, into a buffer that doubles): a deal compares one
        # small array instead of recomputing every entry's value (docs/index.md, "Sessions 14-15")
        self.values: dict[int, tuple[np.ndarray, int]] = {}
        # per group: (entry positions in value order, their values, count): ``matching``'s index of
        # the first count entries; later ones are compared directly until a re-sort
        self.sorted: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}

    def add(self, handle: int, fingerprint: int, rest: int) -> None:
        self.handles.append(handle)
        self.fps.append(fingerprint)
        self.rests.append(rest)

    def add_many(self, handles: np.ndarray, fingerprints: np.ndarray, rests: np.ndarray) -> None:
        """``add`` of each (uint64 arrays), at once."""
        self.handles.frombytes(handles.astype(np.uint64).tobytes())
        self.fps.frombytes(fingerprints.astype(np.uint64).tobytes())
        self.rests.frombytes(rests.astype(np.uint64).tobytes())

    def _delete_at(self, i: int) -> None:
        super()._delete_at(i)
        del self.rests[i]
        self.values.clear()  # positions moved
        self.sorted.clear()

    def matching(self, scheme: BlockScheme, group: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query positions q, entry positions e) with entry e's sub-key value in ``group`` equal to
        ``values[q]``: the sub-bucket each query value names, for many at once, without dealing it.
        Binary search in a sorted index of the entries, re-sorted once a quarter of them came later."""
        column = self.group_values(scheme, group)
        n = len(column)
        order, ordered, upto = self.sorted.get(group, (_NO_POSITIONS, _NO_VALUES, 0))
        if n - upto > max(64, upto // 4):
            order = np.argsort(column, kind="stable")
            ordered, upto = column[order], n
            self.sorted[group] = (order, ordered, upto)
        values = values.astype(column.dtype)
        low = np.searchsorted(ordered, values, side="left")
        counts = np.searchsorted(ordered, values, side="right") - low
        queries = np.repeat(np.arange(len(values)), counts)
        offsets = np.arange(len(queries)) - np.repeat(np.cumsum(counts) - counts, counts)
        entries = order[np.repeat(low, counts) + offsets]
        if upto < n:  # the entries added since the sort
            q, later = np.nonzero(values[:, None] == column[None, upto:n])
            queries, entries = np.concatenate([queries, q]), np.concatenate([entries, later + upto])
        return queries, entries

    def group_values(self, scheme: BlockScheme, group: int) -> np.ndarray:
        """Every entry's sub-key value in ``group`` (uint16 when they fit), valuing new entries."""
        buffer, done = self.values.get(group, (_NO_VALUES, 0))
        n = len(self.rests)
        if done < n:
            rests = np.frombuffer(self.rests, dtype=np.uint64)[done:n]
            new = scheme.child_values(rests, self.aux, group)[0]
            del rests  # the view pins self.rests, which inserts append to
            narrow = buffer.dtype == np.uint16 and not (new >> np.uint64(16)).any()
            dtype = np.uint16 if narrow else np.uint64
            if len(buffer) < n or buffer.dtype != dtype:
                grown = np.empty(max(2 * n, 64), dtype=dtype)
                grown[:done] = buffer[:done]
                buffer = grown
            buffer[done:n] = new
            self.values[group] = (buffer, n)
        return buffer[:n]


_NO_VALUES = np.zeros(0, dtype=np.uint16)  # read only: any value makes a new buffer
_NO_POSITIONS = np.zeros(0, dtype=np.int64)


def _take(values: array, positions: np.ndarray) -> array:
    """``values[positions]`` of an ``array('Q')`` as a new ``array('Q')``."""
    if not len(values) or not len(positions):
        return array("Q")
    return array("Q", np.frombuffer(values, dtype=np.uint64)[positions].tobytes())


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
    eviction took a quarter of the build (docs/index.md, "Session 15").

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
        self.evictions = 0  # calls of _evict: a batch knows whether buckets it resolved may have left

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

    def add_empty_roots(self, table_id: int, values: list[int]) -> list[Bucket]:
        """Cache a new, empty top-level bucket for each block value of a table with slots: what
        ``put`` of each does, at once (a batch of new documents meets ~2 new roots each at 120k)."""
        slots, states = self.roots[table_id], self.root_states[table_id]
        assert slots is not None and states is not None, "a table with slots"
        prefix, top_len = bytes([table_id]), self.top_lens[table_id] - 1
        self.clock += 1
        made = [Bucket() for _ in values]
        for value, bucket in zip(values, made, strict=True):
            bucket.used = self.clock
            self.buckets[prefix + value.to_bytes(top_len, "big")] = bucket
            slots[value] = bucket
        states[values] = ROOT_LEAF
        self.misses += len(values)
        self.settle()
        return made

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
        a batch added entries to the split nodes without them (split_batch.py)."""
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
        self.evictions += 1
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
            # while complete, misses skipped the filter: it learns every cached root now, once
            for cached in self.buckets:
                if self.top_lens.get(cached[0]) == len(cached):
                    self.root_filter.add(cached)
        by_age = sorted(self.buckets.items(), key=lambda item: item[1].used)
        # never the newest top-level bucket: it is being used (a descent, or a load)
        newest = next((key for key, _ in reversed(by_age) if len(key) == top_lens.get(key[0], len(key))), None)
        for key, bucket in by_age:
            if self.size_bytes <= target:
                break
            if key not in self.buckets or key == newest:
                continue
            top_len = top_lens.get(key[0], len(key))
            if len(key) > top_len:
                root = key[:top_len]
                if bucket.split and root in self.buckets:
                    continue  # a split node goes with its top-level bucket: writes walk them
                self._forget_dealt(key, root)  # or left behind by an eviction during a descent
            else:
                self._forget(key)
                self._file(key, None)
                self.drop_subtree(key)
            self.complete = False


@dataclass(frozen=True)
class SplitPolicy:
    """When a leaf re-splits (seed 002 §2.3, plus two guards of ours).

    split if size >= min_split and (size > (1 + mu) x mean size of its level, or size > cap)
    and the split does not make queries dearer: for a query drawn from the bucket's own entries the
    expected candidates after it, sum over sub-buckets of size^2 / size, stay within
    (1 + 1/groups) x size (a one-group split must lower them).

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


@dataclass
class Partition:
    """A leaf's entries dealt into the sub-buckets of a split (``BucketTable._partition``)."""

    rewrites: list[tuple[bytes, bytes]]  # whole payloads of a top-level split's entries
    orphans: list[bytes]  # entry keys without a record, to delete
    node: SplitBucket  # what replaces the leaf
    sizes: list[np.ndarray]  # per group, the sub-buckets' sizes
    big: list[Leaf]  # the sub-buckets of at least min_split entries, filled: they may split again
    size: int  # entries (orphans left out)

# handles (HANDLE_LEN bytes each) -> their documents' whole fingerprints (None: no record)
Resolver = Callable[[list[bytes]], list[int | None]]


class BucketTable:
    """One SimHash table of the block index (block t) over a shared store and cache."""

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
        self._root_aux = scheme.root_state((0, 0))[1]  # the same for every source (bits or rows left)

    def routing_key(self, source: Source) -> bytes:
        return self._prefix + self.scheme.top(source)

    root_key = routing_key  # the top-level bucket's node key is its routing prefix

    # -- reads -----------------------------------------------------------------------------------

    def bucket(self, key: bytes) -> Bucket:
        bucket = self.cache.get(key)
        return bucket if bucket is not None else self._load(key)

    def _load(self, key: bytes) -> Bucket:
        """The top-level bucket ``key``, missing from the cache, put into it: one prefix scan, its
        entries (tag e sorts first), then the split markers. A split one keeps its entries
        (``SplitBucket``) and deals them into sub-buckets as descents reach them."""
        assert len(key) == self._root_len, "sub-buckets come from their split parent (_child)"
        cache = self.cache
        cache.drop_subtree(key)
        empty = cache.complete  # complete: nothing was ever evicted
        roots = cache.root_filter
        if not empty and roots is not None:
            empty = not roots.may_exist(key)
            roots.add(key)  # it enters the cache now and may gain entries there
        if empty:
            bucket = Bucket()
            cache.put(key, bucket)
            return bucket
        handles = array("Q")
        payloads = []
        split_nodes = set()
        entry_prefix = key + ENTRY_TAG
        for entry_key, payload in self.store.scan_prefix(key):
            if entry_key.startswith(entry_prefix):
                handles.append(int.from_bytes(entry_key[-HANDLE_LEN:], "big"))
                payloads.append(payload)
            else:
                split_nodes.add(entry_key[: -len(SPLIT_TAG)])
        scheme, top = self.scheme, key[1:]
        if key not in split_nodes:
            bucket = Bucket()
            if payloads:
                bucket.handles = handles
                bucket.fps = array("Q", scheme.decode(top, payloads).tobytes())
                bucket.refused_at = cache.refused.get(key, 0)
            cache.put(key, bucket)
            return bucket
        # an entry without a whole payload was left by a changelog prefix cut inside an insert whose
        # redelivery took a new handle (every live entry was rewritten before the marker): unreachable
        whole_len = scheme.whole_len
        live = [i for i, payload in enumerate(payloads) if len(payload) == whole_len]
        kept = [payloads[i] for i in live]
        node = SplitBucket(self._root_aux)
        node.handles = array("Q", [handles[i] for i in live])
        node.fps = array("Q", scheme.decode_whole(top, kept).tobytes())
        node.rests = array("Q", scheme.root_rests(top, kept).tobytes())
        node.markers = split_nodes
        cache.put(key, node)
        return node

    def _child(self, root: Bucket, parent: SplitBucket, group: int, value: bytes, key: bytes, aux: int) -> Bucket:
        """The sub-bucket ``key`` (group ``group``, sub-key ``value``) of the cached split node
        ``parent``, dealt from its entries and put into the cache: split if the top-level bucket
        ``root`` has a marker for it, else a leaf (whole fingerprints, ``scheme.leaf_mask``)."""
        positions = np.flatnonzero(parent.group_values(self.scheme, group) == int.from_bytes(value, "big"))
        markers = root.markers if isinstance(root, SplitBucket) else None
        child: Bucket
        if markers is not None and key in markers:
            node = SplitBucket(aux)
            rests = _take(parent.rests, positions)
            below = self.scheme.child_values(np.frombuffer(rests, dtype=np.uint64), parent.aux, group)[1]
            node.rests = array("Q", below.tobytes())
            child = node
        else:
            child = Bucket()
        child.handles = _take(parent.handles, positions)
        child.fps = _take(parent.fps, positions)
        child.refused_at = self.cache.refused.get(key, 0)
        self.cache.put(key, child, dealt=not child.split)
        return child

    def leaves(self, source: Source) -> list[Leaf]:
        """Every leaf that ``source`` reaches (one if nothing is split; k + 1 per split SimHash level)."""
        root_key = self._prefix + self.scheme.top(source)
        root = self.cache.get(root_key)
        if root is None:
            root = self._load(root_key)
        if not root.split:  # the common case: one unsplit top-level bucket
            return [Leaf(root_key, root, (), None)]
        out: list[Leaf] = []
        cache_get, scheme = self.cache.get, self.scheme
        stack: list[tuple[bytes, Bucket, tuple[int, ...], State]] = [(root_key, root, (), scheme.root_state(source))]
        while stack:
            key, bucket, path, state = stack.pop()
            if not bucket.split:
                out.append(Leaf(key, bucket, path, state))
                continue
            assert isinstance(bucket, SplitBucket)
            for group in range(scheme.groups(state)):
                value, child_state = scheme.child(state, group)
                child_key = sub_key(key, group, value)
                child = cache_get(child_key)
                if child is None:
                    child = self._child(root, bucket, group, value, child_key, child_state[1])
                stack.append((child_key, child, (*path, group), child_state))
        return out

    def split_nodes(self, source: Source) -> list[tuple[bytes, SplitBucket, State]]:
        """The cached split nodes ``source`` passes through, with its state at each: an entry added
        or removed below a split is added to or removed from each of them (those not cached are dealt
        from their parent when needed, which has it)."""
        buckets = self.cache.buckets
        root_key = self._prefix + self.scheme.top(source)
        root = buckets.get(root_key)
        if not isinstance(root, SplitBucket):
            return []
        out = []
        stack: list[tuple[bytes, SplitBucket, State]] = [(root_key, root, self.scheme.root_state(source))]
        while stack:
            key, node, state = stack.pop()
            out.append((key, node, state))
            for group in range(self.scheme.groups(state)):
                value, child_state = self.scheme.child(state, group)
                child_key = sub_key(key, group, value)
                child = buckets.get(child_key)
                if isinstance(child, SplitBucket):
                    stack.append((child_key, child, child_state))
        return out

    def added_below_split(self, source: Source, handle: int, fingerprint: int) -> None:
        """An entry was added to the leaves of a split top-level bucket: add it to its split nodes."""
        for key, node, state in self.split_nodes(source):
            node.add(handle, fingerprint, state[0])
            self.cache.grew(key, 1)

    # -- writes ----------------------------------------------------------------------------------

    def removed(self, source: Source, leaves: list[Leaf], handle: int) -> None:
        for leaf in leaves:
            size = len(leaf.bucket)
            if leaf.bucket.remove(handle):
                self.cache.grew(leaf.key, -1)
                self.stats.resize(self.kind, len(leaf.path), size, size - 1)
        if leaves and leaves[0].path:
            for key, node, _ in self.split_nodes(source):
                if node.remove(handle):
                    self.cache.grew(key, -1)

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
        state = leaf.state = leaf.state if leaf.state is not None else self._state_at(source, leaf.path)
        groups = self.scheme.groups(state)
        if groups == 0:
            return 0
        part = self._partition(leaf, groups)
        size = part.size
        # Expected candidates after the split for a query drawn from the bucket's own entries.
        expected = sum(float((counts.astype(np.float64) ** 2).sum()) for counts in part.sizes) / max(size, 1)
        # One group must shrink something; k + 1 groups get the slack below.
        limit = (1.0 + 1.0 / groups) * size if groups > 1 else size - 1
        if expected > limit:
            bucket.refused_at = self.cache.refused[leaf.key] = size
            self.stats.refused[self.kind] += 1
            return 0
        self._write_split(leaf, part)
        splits = 1
        for child_leaf in part.big:  # the others are below min_split: no split to consider
            splits += self.maybe_split(child_leaf, source)
        return splits

    def _state_at(self, source: Source, path: tuple[int, ...]) -> State:
        state = self.scheme.root_state(source)
        for group in path:
            state = self.scheme.child(state, group)[1]
        return state

    def _entries_of(self, leaf: Leaf) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        """The leaf's entries as (handles, whole fingerprints), uint64 arrays, and the keys of entries
        without a document record (to delete)."""
        scheme, bucket = self.scheme, leaf.bucket
        if leaf.path and scheme.fingerprint_is_source:
            # below a split the cached fingerprints are whole (leaf_mask), and they are the source
            return (np.frombuffer(bucket.handles, dtype=np.uint64).copy(),
                    np.frombuffer(bucket.fps, dtype=np.uint64).copy(), [])
        root = leaf.key[: self._root_len]
        scanned = list(self.store.scan_prefix(root + ENTRY_TAG))
        if leaf.path:  # this leaf's entries among the split top-level bucket's (whole payloads)
            wanted = set(bucket.handles)
            scanned = [(key, payload) for key, payload in scanned
                       if len(payload) == scheme.whole_len and int.from_bytes(key[-HANDLE_LEN:], "big") in wanted]
        handles = np.array([int.from_bytes(key[-HANDLE_LEN:], "big") for key, _ in scanned], dtype=np.uint64)
        if scheme.exact or leaf.path:
            return handles, scheme.decode_whole(root[1:], [payload for _, payload in scanned]), []
        if self.resolve is None:
            raise RuntimeError("splitting entries that keep part of the fingerprint needs a resolver")
        wholes = self.resolve([key[-HANDLE_LEN:] for key, _ in scanned])
        # An entry without a document record: left by a changelog prefix cut inside an insert whose
        # redelivery took a new handle. Nothing can reach it any more: drop it.
        orphans = [key for (key, _), whole in zip(scanned, wholes, strict=True) if whole is None]
        live = np.array([whole is not None for whole in wholes], dtype=np.bool_)
        fps = np.array([whole or 0 for whole in wholes], dtype=np.uint64)
        return handles[live] if len(handles) else handles, fps[live] if len(fps) else fps, orphans

    def _partition(self, leaf: Leaf, groups: int) -> Partition:
        """The leaf's entries dealt into their sub-buckets in every group, at once (numpy): the split
        node that replaces the leaf, the sub-buckets' sizes, the sub-buckets big enough to split
        again (filled), and what ``_write_split`` writes besides the marker (the whole payloads of a
        top-level split, unless its payloads are whole already, and the orphan entries to delete)."""
        scheme = self.scheme
        handles, fps, orphans = self._entries_of(leaf)
        assert leaf.state is not None, "maybe_split sets it"
        aux = leaf.state[1]
        rests = scheme.fingerprint_rests(fps)
        below_aux = scheme.root_state((0, 0))[1]
        for group in leaf.path:  # the descent state's rest at this leaf, for every entry
            rests = scheme.child_values(rests, below_aux, group)[1]
            below_aux = scheme.child((0, below_aux), group)[1][1]
        rewrites: list[tuple[bytes, bytes]] = []
        if not leaf.path and not scheme.exact:
            keys = batch_keys.rows(batch_keys.concat(leaf.key + ENTRY_TAG, batch_keys.big_endian(handles, HANDLE_LEN)))
            rewrites = list(zip(keys, batch_keys.rows(batch_keys.big_endian(rests, scheme.whole_len)), strict=True))
        node = SplitBucket(aux)
        node.add_many(handles, fps, rests)
        sizes, big = [], []
        for group in range(groups):
            values, below = scheme.child_values(rests, aux, group)
            distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
            sizes.append(counts)
            value_bytes, (_, child_aux) = scheme.child((0, aux), group)
            for d in np.flatnonzero(counts >= self.policy.min_split).tolist():
                at = np.flatnonzero(inverse == d)
                key = sub_key(leaf.key, group, int(distinct[d]).to_bytes(len(value_bytes), "big"))
                child = Bucket()
                child.handles = array("Q", handles[at].tobytes())
                child.fps = array("Q", fps[at].tobytes())  # whole below a split (scheme.leaf_mask)
                big.append(Leaf(key, child, (*leaf.path, group), (int(below[at[0]]), child_aux)))
        return Partition(rewrites, orphans, node, sizes, big, len(handles))

    def _write_split(self, leaf: Leaf, part: Partition) -> None:
        # Commit order (a changelog may replay a prefix): the whole payloads, then the marker; any
        # prefix without the marker is the unsplit bucket (decode reads either payload).
        self.store.write_batch([*part.rewrites, (leaf.key + SPLIT_TAG, b"")], part.orphans)
        node = part.node
        level = len(leaf.path)
        self.stats.resize(self.kind, level, len(leaf.bucket), 0)
        self.stats.splits[self.kind] += 1
        root_key = leaf.key[: self._root_len]
        root = node if not leaf.path else self.cache.buckets.get(root_key)
        if isinstance(root, SplitBucket):
            if root.markers is None:
                root.markers = set()
            root.markers.add(leaf.key)
        # else: the top-level bucket left the cache; its next load reads the marker
        self.cache.put(leaf.key, node)
        leaf.bucket = node
        # the sub-buckets count in the statistics, but are not cached: a descent deals them from the
        # node when it reaches them (SplitBucket)
        for counts in part.sizes:
            bins = np.bincount(np.ceil(np.log2(counts + 1)).astype(np.int64), minlength=66)
            self.stats.level(self.kind, level + 1).grow(int(counts.sum()), len(counts), bins)
