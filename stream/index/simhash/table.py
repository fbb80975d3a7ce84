"""The block table's generic bucket and split machinery: ``BucketTable`` (one SimHash table), ``SplitPolicy``.

Key layout (all keys of a bucket and of its split descendants start with the bucket's routing prefix
``bytes([table]) + top``, so a bucket and its descendants live in one state partition)::

    node  := table(1) top(scheme.top_len)          top-level bucket
           | node b"x" group(1) value(var)          sub-bucket after a split (Wang & Wang 2019, §2.3)
    top b"e" handle(5)   -> payload                 one key per entry, always under the top-level
                                                    bucket: ``scheme.payload`` (a filter) while it is
                                                    unsplit, the whole source (``scheme.whole_payload``)
                                                    once it is split; empty: the entry was deleted
    top b"g" seq(5)      -> (handle(5) payload)*    a segment: entries the batch path wrote together
                                                    (simhash/segments.py); an entry key overrides it
    node b"s"            -> b""                     split marker

Sub-buckets are not stored: a split top-level bucket keeps each entry once, and its sub-buckets
(where each entry sits in k + 1 of them per level) live in memory only (storing them cost k + 1
entries per document and level: docs/decisions/index-resplitting.md). In the cache a split node
(``SplitBucket``, simhash/buckets.py) keeps every entry of its subtree and deals a sub-bucket from them
when a descent reaches it; the cache (simhash/cache.py) evicts a leaf sub-bucket on its own (it is dealt again)
and a split node only with its top-level bucket. A document's entry is at its top-level bucket, so
deleting it needs no list of its keys, and the descent finds it in the leaves.

Reads go through ``BucketCache``: per leaf, packed fingerprints (masked to the bits the entries keep,
``scheme.leaf_mask``) and handles (``array('Q')``), bounded by an estimate of their memory; a
top-level miss is loaded by one prefix scan. Writes go to the store first and then update the cached
leaves in place.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stream.index.batch import keys as batch_keys
from stream.index.records import HANDLE_LEN, handle_bytes
from stream.index.simhash.buckets import Bucket, SplitBucket, take
from stream.index.simhash.cache import BucketCache
from stream.index.simhash.schemes import BlockScheme, BlockSource, DescentState
from stream.index.simhash.segments import COMPACT_SEGMENTS, SEGMENT_TAG, root_entries, segment_arrays
from stream.index.simhash.stats import StatsRecorder
from stream.storage import KVStore, WriteOp

ENTRY_TAG, SPLIT_TAG, CHILD_TAG = b"e", b"s", b"x"


def sub_key(node: bytes, group: int, value: bytes) -> bytes:
    """The key of ``node``'s sub-bucket ``value`` in ``group`` (the key layout above)."""
    return node + CHILD_TAG + bytes([group]) + value


@dataclass(frozen=True)
class SplitPolicy:
    """When a leaf re-splits (Wang & Wang 2019, §2.3, plus two guards of ours).

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

    def __init__(self, key: bytes, bucket: Bucket, path: tuple[int, ...], state: DescentState | None) -> None:
        self.key = key
        self.bucket = bucket
        self.path = path
        self.state = state  # None until needed (computing it costs; most leaves never split)


@dataclass
class Partition:
    """A leaf's entries dealt into the sub-buckets of a split (``BucketTable._partition``)."""

    rewrites: list[tuple[bytes, bytes]]  # whole payloads of a top-level split's entries
    orphans: list[bytes]  # entry keys without a record, to delete (a tombstone each)
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
        # Set by an index whose batch path keeps entries pending (simhash/segments.py): writes a
        # root's pending entries; a new segment number with the writes that must precede its use.
        self.write_back: Callable[[bytes], None] | None = None
        self.new_seq: Callable[[], tuple[int, list[WriteOp]]] | None = None
        self.filter_mask = scheme.filter_mask
        self._prefix = bytes([table_id])
        self._root_len = cache.top_lens[table_id] = 1 + scheme.top_len
        self._root_aux = scheme.root_state((0, 0))[1]  # the same for every source (bits or rows left)

    def routing_key(self, source: BlockSource) -> bytes:
        return self._prefix + self.scheme.top(source)

    root_key = routing_key  # the top-level bucket's node key is its routing prefix

    # -- reads -----------------------------------------------------------------------------------

    def bucket(self, key: bytes) -> Bucket:
        bucket = self.cache.get(key)
        return bucket if bucket is not None else self._load(key)

    def _load(self, key: bytes) -> Bucket:
        """The top-level bucket ``key``, missing from the cache, put into it: one prefix scan, its
        entries (keys and segments, ``_stored``) and split markers. A split one keeps its entries
        (``SplitBucket``) and deals them into sub-buckets as descents reach them."""
        assert len(key) == self._root_len, "sub-buckets come from their split parent (deal)"
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
        scanned = list(self.store.scan_prefix(key))
        segment_prefix = key + SEGMENT_TAG
        if all(stored_key.startswith(segment_prefix) for stored_key, _ in scanned):
            return self._load_segments(key, scanned)
        split_nodes, pairs = self._stored(key, scanned)
        handles = array("Q", [handle for handle, _ in pairs])
        payloads = [payload for _, payload in pairs]
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

    def _load_segments(self, key: bytes, scanned: list[tuple[bytes, bytes]]) -> Bucket:
        """``_load`` of an unsplit top-level bucket whose stored entries are all in segments (the
        batch path's): decoded as arrays, with no Python step per entry."""
        handles, values = segment_arrays([value for _, value in scanned], self.scheme.payload_len)
        if len(scanned) > COMPACT_SEGMENTS and self.new_seq is not None:
            self._compact(key, [(int(h), int(v).to_bytes(self.scheme.payload_len, "big"))
                                for h, v in zip(handles.tolist(), values.tolist(), strict=True)],
                          [stored_key for stored_key, _ in scanned])
        bucket = Bucket()
        if len(handles):
            bucket.handles = array("Q", handles.tobytes())
            bucket.fps = array("Q", self.scheme.decode_values(key[1:], values).tobytes())
            bucket.refused_at = self.cache.refused.get(key, 0)
        self.cache.put(key, bucket)
        return bucket

    def _stored(self, key: bytes, scanned: list[tuple[bytes, bytes]] | None = None,
                ) -> tuple[set[bytes], list[tuple[int, bytes]]]:
        """The split markers under top-level bucket ``key`` and its live entries in the store
        (simhash/segments.py; ``scanned``: its keys, if the caller scanned them), in handle order. An
        unsplit one with tombstones or many segments is rewritten as one segment first."""
        split_nodes: set[bytes] = set()
        kept: list[tuple[bytes, bytes]] = []
        entry_prefix, segment_prefix = key + ENTRY_TAG, key + SEGMENT_TAG
        for stored_key, value in self.store.scan_prefix(key) if scanned is None else scanned:
            if stored_key.startswith(entry_prefix) or stored_key.startswith(segment_prefix):
                kept.append((stored_key, value))
            else:
                split_nodes.add(stored_key[: -len(SPLIT_TAG)])
        payload_len = self.scheme.payload_len
        pairs, replaced, tombstones = root_entries(kept, entry_prefix, segment_prefix, payload_len)
        segments = len(replaced) - tombstones
        if (key not in split_nodes and self.new_seq is not None and (tombstones or segments > COMPACT_SEGMENTS)
                and all(len(payload) == payload_len for _, payload in pairs)):
            self._compact(key, pairs, replaced)
        return split_nodes, pairs

    def _compact(self, key: bytes, pairs: list[tuple[int, bytes]], replaced: list[bytes]) -> None:
        """Rewrite an unsplit top-level bucket's stored entries as one segment: the new segment first,
        then the keys it replaces (a prefix of these writes reads the same)."""
        assert self.new_seq is not None
        seq, ops = self.new_seq()
        segment = key + SEGMENT_TAG + handle_bytes(seq)
        if pairs:
            ops.append((segment, b"".join(handle_bytes(handle) + payload for handle, payload in pairs)))
        ops += [(old, None) for old in replaced if old != segment]
        self.store.write_ops(ops)

    def deal(self, root: Bucket, parent: SplitBucket, group: int, value: bytes, key: bytes, aux: int) -> Bucket:
        """The sub-bucket ``key`` (group ``group``, sub-key ``value``) of the cached split node
        ``parent``, dealt from its entries and put into the cache: split if the top-level bucket
        ``root`` has a marker for it, else a leaf (whole fingerprints, ``scheme.leaf_mask``)."""
        positions = np.flatnonzero(parent.group_values(self.scheme, group) == int.from_bytes(value, "big"))
        markers = root.markers if isinstance(root, SplitBucket) else None
        child: Bucket
        if markers is not None and key in markers:
            node = SplitBucket(aux)
            rests = take(parent.rests, positions)
            below = self.scheme.child_values(np.frombuffer(rests, dtype=np.uint64), parent.aux, group)[1]
            node.rests = array("Q", below.tobytes())
            child = node
        else:
            child = Bucket()
        child.handles = take(parent.handles, positions)
        child.fps = take(parent.fps, positions)
        child.refused_at = self.cache.refused.get(key, 0)
        self.cache.put(key, child, dealt=not child.split)
        return child

    def leaves(self, source: BlockSource) -> list[Leaf]:
        """Every leaf that ``source`` reaches (one if nothing is split; k + 1 per split SimHash level)."""
        root_key = self._prefix + self.scheme.top(source)
        root = self.cache.get(root_key)
        if root is None:
            root = self._load(root_key)
        if not root.split:  # the common case: one unsplit top-level bucket
            return [Leaf(root_key, root, (), None)]
        out: list[Leaf] = []
        cache_get, scheme = self.cache.get, self.scheme
        stack: list[tuple[bytes, Bucket, tuple[int, ...], DescentState]] = [
            (root_key, root, (), scheme.root_state(source))]
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
                    child = self.deal(root, bucket, group, value, child_key, child_state[1])
                stack.append((child_key, child, (*path, group), child_state))
        return out

    def split_nodes(self, source: BlockSource) -> list[tuple[bytes, SplitBucket, DescentState]]:
        """The cached split nodes ``source`` passes through, with its state at each: an entry added
        or removed below a split is added to or removed from each of them (those not cached are dealt
        from their parent when needed, which has it)."""
        buckets = self.cache.buckets
        root_key = self._prefix + self.scheme.top(source)
        root = buckets.get(root_key)
        if not isinstance(root, SplitBucket):
            return []
        out = []
        stack: list[tuple[bytes, SplitBucket, DescentState]] = [(root_key, root, self.scheme.root_state(source))]
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

    def added_below_split(self, source: BlockSource, handle: int, fingerprint: int) -> None:
        """An entry was added to the leaves of a split top-level bucket: add it to its split nodes."""
        for key, node, state in self.split_nodes(source):
            node.add(handle, fingerprint, state[0])
            self.cache.grew(key, 1)

    # -- writes ----------------------------------------------------------------------------------

    def removed(self, source: BlockSource, leaves: list[Leaf], handle: int) -> None:
        for leaf in leaves:
            size = len(leaf.bucket)
            if leaf.bucket.remove(handle):
                self.cache.grew(leaf.key, -1)
                self.stats.resize(self.kind, len(leaf.path), size, size - 1)
        if leaves and leaves[0].path:
            for key, node, _ in self.split_nodes(source):
                if node.remove(handle):
                    self.cache.grew(key, -1)

    def may_split(self, size: int, refused_at: int, level: int) -> bool:
        """Whether a bucket of ``size`` entries at ``level``, refused at ``refused_at`` (0: never),
        passes the checks ``maybe_split`` makes before any work."""
        if size < self.policy.min_split:  # the common case, decided before any other work
            return False
        if not self.policy.wants(size, self.stats.level_mean(self.kind, level)):
            return False
        return not (refused_at and size < 2 * refused_at)

    def maybe_split(self, leaf: Leaf, source: BlockSource) -> int:
        """Split ``leaf`` (and, recursively, its children) if the policy says so; returns splits made."""
        bucket, level = leaf.bucket, len(leaf.path)
        size = len(bucket.handles)
        if not self.may_split(size, bucket.refused_at, level):
            return 0
        state = leaf.state = leaf.state if leaf.state is not None else self._state_at(source, leaf.path)
        groups = self.scheme.groups(state)
        if groups == 0:
            return 0
        if not leaf.path and self.write_back is not None:  # the split reads its entries from the store
            self.write_back(leaf.key)
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

    def _state_at(self, source: BlockSource, path: tuple[int, ...]) -> DescentState:
        state = self.scheme.root_state(source)
        for group in path:
            state = self.scheme.child(state, group)[1]
        return state

    def _entries_of(self, leaf: Leaf) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        """The leaf's entries as (handles, whole fingerprints), uint64 arrays, and the keys of entries
        without a document record (to delete: a tombstone each)."""
        scheme, bucket = self.scheme, leaf.bucket
        if leaf.path and scheme.fingerprint_is_source:
            # below a split the cached fingerprints are whole (leaf_mask), and they are the source
            return (np.frombuffer(bucket.handles, dtype=np.uint64).copy(),
                    np.frombuffer(bucket.fps, dtype=np.uint64).copy(), [])
        root = leaf.key[: self._root_len]
        pairs = self._stored(root)[1]
        if leaf.path:  # this leaf's entries among the split top-level bucket's (whole payloads)
            wanted = set(bucket.handles)
            pairs = [(handle, payload) for handle, payload in pairs
                     if len(payload) == scheme.whole_len and handle in wanted]
        handles = np.array([handle for handle, _ in pairs], dtype=np.uint64)
        if scheme.exact or leaf.path:
            return handles, scheme.decode_whole(root[1:], [payload for _, payload in pairs]), []
        if self.resolve is None:
            raise RuntimeError("splitting entries that keep part of the fingerprint needs a resolver")
        wholes = self.resolve([handle_bytes(handle) for handle, _ in pairs])
        # An entry without a document record: left by a changelog prefix cut inside an insert whose
        # redelivery took a new handle. Nothing can reach it any more: a tombstone drops it.
        orphans = [root + ENTRY_TAG + handle_bytes(handle)
                   for (handle, _), whole in zip(pairs, wholes, strict=True) if whole is None]
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
        # prefix without the marker is the unsplit bucket (decode reads either payload); the orphan
        # entries go after it.
        self.store.write_ops([*part.rewrites, (leaf.key + SPLIT_TAG, b""), *((key, b"") for key in part.orphans)])
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
