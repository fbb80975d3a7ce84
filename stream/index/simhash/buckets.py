"""The cached buckets of the block table: ``Bucket`` (a leaf) and ``SplitBucket`` (a split node)."""

from __future__ import annotations

from array import array

import numpy as np

from stream.index.simhash.schemes import BlockScheme


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
    descent reaches it (``BucketTable.deal``). A top-level one also knows the split nodes below it
    (``markers``, from the store's split markers). Writes below a split keep every cached node's
    arrays equal to the union of its subtree (``added_below_split``, ``removed``), so a sub-bucket
    dealt later is right whichever of its siblings were dealt before.

    Why not every sub-bucket at once: each entry sits in k + 1 sub-buckets per level, and a split of
    a bucket of n entries makes up to (k + 1) x min(n, 2^12) mostly tiny sub-buckets (~360 bytes of
    objects each): at Zipf 1M they did not fit the read cache, which then rebuilt and evicted
    whole subtrees on every query (docs/decisions/index-resplitting.md)."""

    __slots__ = ("aux", "markers", "matched", "rests", "sorted", "values")

    def __init__(self, aux: int = 0) -> None:
        super().__init__(split=True)
        self.rests = array("Q")
        self.aux = aux  # the state's second part at this node (SimHash: bits left)
        self.markers: set[bytes] | None = None
        # per group: (buffer, count): the sub-key value of each of the first count entries (new ones
        # are valued when the next deal needs them, into a buffer that doubles): a deal compares one
        # small array instead of recomputing every entry's value (docs/decisions/index-resplitting.md)
        self.values: dict[int, tuple[np.ndarray, int]] = {}
        # per group: (entry positions in value order, their values, count): ``matching``'s index of
        # the first count entries; later ones are compared directly until a re-sort
        self.sorted: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        # per group: the last ``matching`` call (entry count, values, its answer): a batch run asks
        # the same of a node twice, for its query and for its insert's leaf counters
        self.matched: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

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
        self.matched.clear()

    def matching(self, scheme: BlockScheme, group: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query positions q, entry positions e) with entry e's sub-key value in ``group`` equal to
        ``values[q]``: the sub-bucket each query value names, for many at once, without dealing it.
        Binary search in a sorted index of the entries, re-sorted once a quarter of them came later."""
        column = self.group_values(scheme, group)
        n = len(column)
        values = values.astype(column.dtype)
        last = self.matched.get(group)
        if last is not None and last[0] == n and np.array_equal(last[1], values):
            return last[2], last[3]
        order, ordered, upto = self.sorted.get(group, (_NO_POSITIONS, _NO_VALUES, 0))
        if n - upto > max(64, upto // 4):
            order = np.argsort(column, kind="stable")
            ordered, upto = column[order], n
            self.sorted[group] = (order, ordered, upto)
        queries, entries = _equal_pairs(order, ordered, values)
        if upto < n:  # the entries added since the sort: sorted here, once per call
            later = column[upto:n]
            later_order = np.argsort(later, kind="stable")
            q, e = _equal_pairs(later_order, later[later_order], values)
            queries, entries = np.concatenate([queries, q]), np.concatenate([entries, e + upto])
        self.matched[group] = (n, values, queries, entries)
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


def _equal_pairs(order: np.ndarray, ordered: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q, order[j]) for every j with ``ordered[j] == values[q]`` (``ordered``: values sorted, ``order``:
    their positions), q-major."""
    low = np.searchsorted(ordered, values, side="left")
    counts = np.searchsorted(ordered, values, side="right") - low
    queries = np.repeat(np.arange(len(values)), counts)
    offsets = np.arange(len(queries)) - np.repeat(np.cumsum(counts) - counts, counts)
    return queries, order[np.repeat(low, counts) + offsets]


_NO_VALUES = np.zeros(0, dtype=np.uint16)  # read only: any value makes a new buffer
_NO_POSITIONS = np.zeros(0, dtype=np.int64)


def take(values: array, positions: np.ndarray) -> array:
    """``values[positions]`` of an ``array('Q')`` as a new ``array('Q')``."""
    if not len(values) or not len(positions):
        return array("Q")
    return array("Q", np.frombuffer(values, dtype=np.uint64)[positions].tobytes())
