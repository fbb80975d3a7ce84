"""Key-value storage under the block index: the ``KVStore`` protocol, ``MemoryStore`` and ``BufferedStore``.

Backends (one ``BlockIndex`` runs on each):
- ``MemoryStore`` (here): tests, in-process scans;
- ``RocksStore`` (rocks.py): rocksdict, one database per index or state partition;
- the streaming service's Faust-table adapter (its writes also go to the table's changelog).
``BufferedStore`` (here) collects writes in memory over any of them.

Keys and values are bytes. Writes are small (one entry per key) so that every state change fits in
one changelog message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, overload

from sortedcontainers import SortedList

# A write: a put (key, value) or a delete (key, None).
WriteOp = tuple[bytes, bytes | None]


class WritePairs(Sequence[WriteOp]):
    """Puts as two aligned lists, for ``write_ops``: iterating makes no tuple per write (``zip`` reuses
    its result when the loop unpacks it), where a list of 3,600 pairs per batch cost ~1 us per
    document to build (docs/decisions/index-hot-paths.md)."""

    __slots__ = ("key_list", "value_list")  # not "keys": dict.update would take it for a mapping

    def __init__(self, keys: list[bytes], values: list[bytes]) -> None:
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys, {len(values)} values")
        self.key_list, self.value_list = keys, values

    def __len__(self) -> int:
        return len(self.key_list)

    def __iter__(self) -> Iterator[WriteOp]:
        return zip(self.key_list, self.value_list, strict=True)

    @overload
    def __getitem__(self, i: int) -> WriteOp: ...

    @overload
    def __getitem__(self, i: slice) -> list[WriteOp]: ...

    def __getitem__(self, i: int | slice) -> WriteOp | list[WriteOp]:
        if isinstance(i, slice):
            return list(zip(self.key_list[i], self.value_list[i], strict=True))
        return self.key_list[i], self.value_list[i]


class KVStore(Protocol):
    """Everything the block index asks of a store; every store offers all of it.

    One write primitive, ``write_ops``: puts and deletes in the order given, as one batch. A
    changelog-backed store replays its writes in that order and after a crash may hold only a
    prefix of them, so the index orders each change's writes with its commit key last
    (docs/index.md, "Crash semantics").
    """

    def get(self, key: bytes) -> bytes | None: ...

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """The value of each key (None: missing), in the order of ``keys``."""
        ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None:
        """Remove ``key``; a missing key is no error."""
        ...

    def write_ops(self, ops: Sequence[WriteOp]) -> None:
        """Puts (a value) and deletes (None) in the given order, as one batch (atomic where the
        backend can)."""
        ...

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """All (key, value) whose key starts with ``prefix``, in key order."""
        ...

    def flush(self) -> None:
        """Make every write so far durable (as far as the backend is)."""
        ...

    def close(self) -> None: ...


def prefix_end(prefix: bytes) -> bytes | None:
    """Smallest key greater than every key that starts with ``prefix`` (None: no such bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class MemoryStore(KVStore):
    """In-process ``KVStore``: a dict for values plus a sorted key list for prefix scans.

    The key list is a ``SortedList`` (blocked B-tree-like list: O(log n) insert and delete, bisect to
    seek) because a plain list with ``bisect.insort`` costs an O(n) memmove per write.
    """

    SCAN_CHUNK = 64

    def __init__(self) -> None:
        self._values: dict[bytes, bytes] = {}
        self._keys: SortedList = SortedList()

    def get(self, key: bytes) -> bytes | None:
        return self._values.get(key)

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        values = self._values
        return [values.get(key) for key in keys]

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self._values:
            self._keys.add(key)
        self._values[key] = bytes(value)

    def delete(self, key: bytes) -> None:
        if self._values.pop(key, None) is not None:
            self._keys.remove(key)

    def write_ops(self, ops: Sequence[WriteOp]) -> None:
        for key, value in ops:
            if value is None:
                self.delete(key)
            else:
                self.put(key, value)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        # Lazy, in small chunks re-located by bisect, so a caller that stops early pays for what it
        # read, and writes between chunks cannot derail the iteration.
        keys, values = self._keys, self._values
        start = keys.bisect_left(prefix)
        while True:
            chunk = list(keys.islice(start, start + self.SCAN_CHUNK))
            for key in chunk:
                if not key.startswith(prefix):
                    return
                value = values.get(key)
                if value is not None:
                    yield key, value
            if len(chunk) < self.SCAN_CHUNK:
                return
            start = keys.bisect_right(chunk[-1])

    def __len__(self) -> int:
        return len(self._values)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


_MISSING = object()


class BufferedStore(KVStore):
    """Write-behind buffer over a ``KVStore``: writes collect in memory, in commit order, and go down
    in one batch once ``max_ops`` are pending (and on ``drain``/``flush``/``close``). A batch of
    ``max_ops`` writes or more goes straight down, after the pending ones.

    Why: a RocksDB write costs ~25 us per document in 7-key batches but ~9 us in batches of 64+
    documents (the WAL append and the per-call cost are paid once per batch;
    docs/decisions/index-storage-layout.md). Reads see pending writes: ``get``/``multi_get`` through
    an overlay, ``scan_prefix`` by draining first when a pending key may start with the prefix (tracked by its first
    ``ROOT_LEN`` bytes, the block index's routing prefix; the index's cache-miss scans rarely touch a
    bucket with pending entries, since written buckets are cached).

    Crash semantics: the store below receives the same writes in the same order, only later, so
    what survives a crash is still a prefix of the commit order (the index stays consistent and a
    redelivery finishes it); a crash loses the pending writes, at most ``max_ops`` of them (the
    last few hundred documents), which the caller must be able to replay.
    """

    ROOT_LEN = 3

    def __init__(self, store: KVStore, max_ops: int = 2048) -> None:
        self.store = store
        self.max_ops = max_ops
        self._ops: list[WriteOp] = []
        self._overlay: dict[bytes, bytes | None] = {}  # latest pending value per key (None: deleted)
        self._roots: set[bytes] = set()  # first ROOT_LEN bytes of the pending keys up to _rooted
        self._rooted = 0

    @property
    def pending(self) -> int:
        return len(self._ops)

    def get(self, key: bytes) -> bytes | None:
        value = self._overlay.get(key, _MISSING)
        if value is _MISSING:
            return self.store.get(key)
        return value  # type: ignore[return-value]

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        overlay = self._overlay
        if not overlay or not any(key in overlay for key in keys):
            return self.store.multi_get(keys)
        # the keys not pending in one multi-get below, not one get each
        below = [key for key in keys if key not in overlay]
        found = iter(self.store.multi_get(below) if below else [])
        return [overlay[key] if key in overlay else next(found) for key in keys]

    def put(self, key: bytes, value: bytes) -> None:
        self.write_ops(((key, value),))

    def delete(self, key: bytes) -> None:
        self.write_ops(((key, None),))

    def write_ops(self, ops: Iterable[WriteOp]) -> None:
        ops = ops if isinstance(ops, Sequence) else list(ops)
        if len(ops) >= self.max_ops:  # a batch big enough on its own
            self.drain()
            self.store.write_ops(ops)
            return
        self._ops.extend(ops)
        self._overlay.update(ops)  # C loops: this runs for every insert
        if len(self._ops) >= self.max_ops:
            self.drain()

    def drain(self) -> None:
        """Write every pending write to the store below (one batch)."""
        if self._ops:
            self.store.write_ops(self._ops)
            self._ops = []
            self._overlay = {}
            self._roots = set()
            self._rooted = 0

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        ops = self._ops
        if ops:
            if len(prefix) < self.ROOT_LEN:
                self.drain()
            else:
                # Roots of the writes since the last scan, computed here rather than per write: the
                # index scans only on cache misses and splits, far less often than it writes.
                root_len = self.ROOT_LEN
                self._roots.update([op[0][:root_len] for op in ops[self._rooted :]])
                self._rooted = len(ops)
                if prefix[:root_len] in self._roots:
                    self.drain()
        return self.store.scan_prefix(prefix)

    def flush(self) -> None:
        self.drain()
        self.store.flush()

    def close(self) -> None:
        self.drain()
        self.store.close()
