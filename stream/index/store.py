"""Key-value storage under the block table (store layer, as quix-streams layers its state).

Every backend offers the same small surface so that one ``BlockIndex`` runs on
- ``MemoryStore``  (tests, in-process scans),
- ``RocksStore``   (rocksdict, one database per state partition),
- the streaming service's Faust-table adapter (writes go through the table, hence to its changelog).

Keys and values are bytes. Writes are small (one entry per key) so that every state change fits in
one changelog message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from rocksdict import (
    BlockBasedOptions,
    BottommostLevelCompaction,
    Cache,
    CompactOptions,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)
from sortedcontainers import SortedList


class KVStore(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        """Apply many puts and deletes together (atomically where the backend can).

        A changelog-backed store replays the puts in the given order, then the deletes, and after a
        crash may hold only a prefix of them: callers write their commit key last.
        """
        ...

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """All (key, value) whose key starts with ``prefix``, in key order."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def prefix_end(prefix: bytes) -> bytes | None:
    """Smallest key greater than every key that starts with ``prefix`` (None: no such bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class MemoryStore:
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

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        # Deletes first, then puts: a batch never both deletes and writes one key in our use.
        for key in deletes:
            self.delete(key)
        for key, value in puts:
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


class RocksStore:
    """``KVStore`` on RocksDB through rocksdict (raw bytes mode, one database per state partition).

    Options, and why:
    - zstd on the bottommost level (where almost all data sits after compaction), lz4 above it
      (cheaper while data is still being rewritten by compaction);
    - 16 KiB data blocks with a restart interval of 32: our keys share long prefixes (table, block,
      path), so delta-encoded blocks shrink them; a larger restart interval saves ~1 byte per key;
    - no Bloom filter: it would add ~1.25 bytes per key (~9 bytes per document) while our reads are
      prefix scans served by the block index and the in-memory bucket cache;
    - a 64 MiB block cache (rocksdict's default is 8 MiB) for doc-record gets and cache misses;
    - WAL on by default (``wal=False`` when a changelog already makes the state durable, as the
      streaming service does; then writes since the last flush are lost on a crash).
    """

    def __init__(self, path: str, *, wal: bool = True, block_cache_bytes: int = 64 << 20) -> None:
        self.path = path
        self._db = Rdict(path, self._options(block_cache_bytes))
        write_options = WriteOptions()
        # rocksdict exposes this as a property although its stub declares a method.
        write_options.disable_wal = not wal  # type: ignore[method-assign,assignment]
        self._db.set_write_options(write_options)

    @staticmethod
    def _options(block_cache_bytes: int) -> Options:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(DBCompressionType.lz4())
        options.set_bottommost_compression_type(DBCompressionType.zstd())
        table = BlockBasedOptions()
        table.set_block_size(16 * 1024)
        table.set_block_restart_interval(32)
        table.set_block_cache(Cache(block_cache_bytes))
        options.set_block_based_table_factory(table)
        options.set_keep_log_file_num(2)
        options.set_max_log_file_size(1 << 20)
        return options

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        values = self._db.get(list(keys))
        return list(values) if values is not None else [None] * len(keys)

    def put(self, key: bytes, value: bytes) -> None:
        self._db.put(key, value)

    def delete(self, key: bytes) -> None:
        self._db.delete(key)

    def write_batch(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes] = ()) -> None:
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        writes = 0
        for key in deletes:
            delete(key)
            writes += 1
        for key, value in puts:
            put(key, value)
            writes += 1
        if writes:
            self._db.write(batch)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        read_options = ReadOptions()
        end = prefix_end(prefix)
        if end is not None:
            # Lets RocksDB stop at the bound instead of stepping onto the next key.
            read_options.set_iterate_upper_bound(end)
        iterator = self._db.iter(read_options)
        iterator.seek(prefix)
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(prefix):
                break
            yield key, iterator.value()
            iterator.next()

    def flush(self) -> None:
        self._db.flush()

    def compact(self) -> None:
        """Flush and compact everything into the bottommost level (benchmarks measure disk size after it)."""
        self._db.flush()
        options = CompactOptions()
        # Force a rewrite of the bottommost level: a lone flushed file would otherwise be moved down
        # as is, keeping its lz4 blocks instead of zstd (measured: 131 vs 66 bytes per fp at 100k).
        options.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        self._db.compact_range(None, None, options)

    def disk_bytes(self) -> int:
        """Bytes of every file in the database directory."""
        root = Path(self.path)
        return sum(entry.stat().st_size for entry in root.iterdir() if entry.is_file())

    def close(self) -> None:
        self._db.flush()
        self._db.close()
