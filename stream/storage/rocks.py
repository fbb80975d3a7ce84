"""``RocksStore``: the ``KVStore`` on RocksDB (rocksdict), one database per index or state partition."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from rocksdict import (
    BlockBasedOptions,
    BottommostLevelCompaction,
    Cache,
    ColumnFamily,
    CompactOptions,
    DBCompactionStyle,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    SliceTransform,
    UniversalCompactOptions,
    WriteBatch,
    WriteOptions,
)

from stream.storage.kv import KVStore, WriteOp, prefix_end

# Level-0 files of the entry family that start a compaction (RocksDB's default: 4); see RocksStore.
ENTRY_L0_COMPACTION = 16
# Largest file a compaction writes in the doc-id and default families (RocksDB's default: 64 MiB); see RocksStore.
SMALL_FAMILY_FILE_BYTES = 2 << 20


def set_level0_compaction(options: Options, files: int) -> None:
    """Compact level 0 once it holds ``files`` files; writes slow down at 3x and stop at 4x as many
    (RocksDB's defaults: 4, 20, 36)."""
    options.set_level_zero_file_num_compaction_trigger(files)
    options.set_level_zero_slowdown_writes_trigger(3 * files)
    options.set_level_zero_stop_writes_trigger(4 * files)


class RocksStore(KVStore):
    """``KVStore`` on RocksDB through rocksdict (raw bytes mode, one database per state partition).

    Options, and why:
    - zstd on the bottommost level (where almost all data sits after compaction), lz4 above it
      (cheaper while data is still being rewritten by compaction);
    - 16 KiB data blocks with a restart interval of 32: our keys share long prefixes (table, block,
      path), so delta-encoded blocks shrink them; a larger restart interval saves ~1 byte per key;
    - no Bloom filter: it would add ~1.25 bytes per key (~9 bytes per document) while our reads are
      prefix scans served by the block index and the in-memory bucket cache;
    - a 64 MiB block cache (rocksdict's default is 8 MiB) for doc-record gets and cache misses;
    - WAL on by default (``wal=False`` when the caller can redo what a crash loses: the streaming
      service from its changelog, ``dedup scan`` by scanning again; writes since the last flush are
      then lost on a crash, and the atomic flush keeps a prefix of them);
    - keys below ``HASHED_BELOW`` (the block index's bucket entries) live in their own column family:
      a skip-list memtable (a hash of linked lists by 3-byte prefix inserts a random key faster, but
      its flush sorts a copy of every entry, which cost the flush thread more than the inserts
      save), and compaction from 16 files in level 0 rather than 4 (an entry key is random, so each
      compaction rewrites every entry of the level it goes to: 4 small files at a time made the
      entries, ~6% of the bytes, half of the compaction CPU). Entries are only scanned, and rarely
      (the bucket cache holds the roots), so more files in level 0 cost little. Scans shorter than
      the 3-byte prefix (table + top block) seek in total order (the index never issues them).
      Figures: docs/decisions/index-rocksdb-background-cpu.md;
    - records (``RECORDS_FROM`` <= key < ``IDS_FROM``) live in a family of their own, uncompressed:
      their keys grow in order, so every flushed file holds a key range of its own and compaction
      moves files down instead of rewriting them (mixed with expiry keys and metadata, every file
      overlapped the others at the top of the key range); their bulk is the caller's payload (a
      sketch), which does not compress;
    - doc-id keys (``IDS_FROM`` <= key < ``IDS_UNTIL``) live in a family with a Bloom filter
      (10 bits per key, ~1.25 bytes per document) and a memtable Bloom: inserting a new document
      looks its id up first, a miss, and without a filter a miss searches every level (measured
      ~18 us per insert at 1M documents, docs/index.md);
    - expiry keys and metadata stay in the default family; ``expire`` scans the expiry keys in order.
      The families are written by one atomic batch and flushed together (``atomic_flush``). A
      database created without the id or the record family keeps those keys in the default one and
      still opens;
    - the doc-id and default families are written in files of at most 2 MiB, not RocksDB's 64 MiB:
      they stay far below the 256 MiB level base, so level 0 compacts straight into the last level,
      and as one file that level was rewritten whole by every compaction (~10 times per key by 7M
      documents). In small files a compaction rewrites only the files its new keys fall in: for the
      expiry keys, which grow with event time, the last one; for doc ids, few when they arrive in
      key order (sequence numbers, one site's URLs), all when they are random;
    - doc ids are compacted in RocksDB's universal style (sorted runs merged by size, each key
      rewritten ~log2(N) times rather than once per compaction): random ids (UUIDs) overlap every
      file of a level, and leveled compaction rewrote the whole family each time.
      Figures: docs/decisions/index-rocksdb-background-cpu.md.
    """

    # The block index's key namespaces (stream/index/records.py; tests/storage/test_store.py checks they agree)
    HASHED_BELOW = b"\xfc"  # its record namespaces start here: below are its bucket entries
    HASH_PREFIX = 3  # table id + 16-bit top block
    ENTRY_FAMILY = "entries"
    RECORDS_FROM = HASHED_BELOW  # its record namespace, up to its doc ids
    RECORD_FAMILY = "records"
    IDS_FROM, IDS_UNTIL = b"\xfd", b"\xfe"  # its doc-id namespace
    ID_FAMILY = "ids"
    ID_BLOOM_BITS = 10

    def __init__(self, path: str, *, wal: bool = True, block_cache_bytes: int = 64 << 20) -> None:
        self.path = path
        cache = Cache(block_cache_bytes)
        options = self._default_options(cache)
        options.create_missing_column_families(True)
        options.set_atomic_flush(True)
        # one writer: no concurrent memtable writes
        options.set_allow_concurrent_memtable_write(False)
        families = {self.ENTRY_FAMILY: self._entry_options(cache)}
        existing = Rdict.list_cf(path) if (Path(path) / "CURRENT").exists() else None
        # a database created without one of these families keeps its keys in the default one (class doc)
        with_ids = existing is None or self.ID_FAMILY in existing
        with_records = existing is None or self.RECORD_FAMILY in existing
        if with_ids:
            families[self.ID_FAMILY] = self._id_options(cache)
        if with_records:
            families[self.RECORD_FAMILY] = self._record_options(cache)
        self._db = Rdict(path, options, column_families=families)
        self._entries = self._db.get_column_family(self.ENTRY_FAMILY)
        self._entry_family = self._db.get_column_family_handle(self.ENTRY_FAMILY)
        self._ids = self._db.get_column_family(self.ID_FAMILY) if with_ids else self._db
        self._id_family = self._db.get_column_family_handle(self.ID_FAMILY) if with_ids else None
        self._records = self._db.get_column_family(self.RECORD_FAMILY) if with_records else self._db
        self._record_family = self._db.get_column_family_handle(self.RECORD_FAMILY) if with_records else None
        # Key ranges in key order, each with its family's view and write-batch argument (None: the
        # default family); scans walk them in turn.
        self._ranges: list[tuple[bytes, bytes | None, Rdict, ColumnFamily | None]] = [
            (b"", self.RECORDS_FROM, self._entries, self._entry_family),
            (self.RECORDS_FROM, self.IDS_FROM, self._records, self._record_family),
            (self.IDS_FROM, self.IDS_UNTIL, self._ids, self._id_family),
            (self.IDS_UNTIL, None, self._db, None),
        ]
        # routing by first byte (our ranges are cut at whole first bytes): cheaper than comparisons
        routes = [next((view, family) for low, high, view, family in self._ranges
                       if low <= bytes([b]) and (high is None or bytes([b]) < high)) for b in range(256)]
        self._view_by_byte = [view for view, _ in routes]  # reads and single writes
        self._family_by_byte = [family for _, family in routes]  # the write-batch argument
        write_options = WriteOptions()
        # rocksdict exposes this as a property although its stub declares a method.
        write_options.disable_wal = not wal  # type: ignore[method-assign,assignment]
        self._db.set_write_options(write_options)
        for view in (self._entries, self._ids, self._records):
            view.set_write_options(write_options)

    @staticmethod
    def _options(cache: Cache, bloom_bits: int | None = None, restart_interval: int = 32) -> Options:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(DBCompressionType.lz4())
        options.set_bottommost_compression_type(DBCompressionType.zstd())
        table = BlockBasedOptions()
        table.set_block_size(16 * 1024)
        table.set_block_restart_interval(restart_interval)
        table.set_block_cache(cache)
        if bloom_bits is not None:
            table.set_bloom_filter(bloom_bits, False)  # a full (not block-based) filter per file
        options.set_block_based_table_factory(table)
        options.set_keep_log_file_num(2)
        options.set_max_log_file_size(1 << 20)
        return options

    @classmethod
    def _default_options(cls, cache: Cache) -> Options:
        options = cls._options(cache)
        options.set_target_file_size_base(SMALL_FAMILY_FILE_BYTES)
        return options

    @classmethod
    def _entry_options(cls, cache: Cache) -> Options:
        # Entries are only scanned, never looked up by key: a longer run of delta-encoded keys between
        # restart points costs a scan nothing and saves ~1 B/fp at 100k skewed (docs/decisions/index-storage-layout.md).
        options = cls._options(cache, restart_interval=128)
        options.set_prefix_extractor(SliceTransform.create_max_len_prefix(cls.HASH_PREFIX))
        set_level0_compaction(options, ENTRY_L0_COMPACTION)
        return options

    @classmethod
    def _record_options(cls, cache: Cache) -> Options:
        options = cls._options(cache)
        options.set_compression_type(DBCompressionType.none())
        options.set_bottommost_compression_type(DBCompressionType.none())
        return options

    @classmethod
    def _id_options(cls, cache: Cache) -> Options:
        options = cls._options(cache, cls.ID_BLOOM_BITS)
        options.set_target_file_size_base(SMALL_FAMILY_FILE_BYTES)
        options.set_compaction_style(DBCompactionStyle.universal())
        options.set_universal_compaction_options(UniversalCompactOptions())  # RocksDB's defaults
        options.set_memtable_whole_key_filtering(True)
        options.set_memtable_prefix_bloom_ratio(0.02)
        return options

    def _view(self, key: bytes) -> Rdict:
        return self._view_by_byte[key[0]] if key else self._entries

    def get(self, key: bytes) -> bytes | None:
        # _view inline: the index gets a doc id per insert
        value: bytes | None = (self._view_by_byte[key[0]] if key else self._entries).get(key)
        return value

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        low, high = min(keys), max(keys)
        if low >= self.RECORDS_FROM and high < self.IDS_FROM:  # records (hits, splits)
            view = self._records
        elif low >= self.IDS_FROM and high < self.IDS_UNTIL:  # doc ids (a batch of new documents)
            view = self._ids
        else:
            return [self.get(key) for key in keys]
        values = view.get(list(keys))
        return list(values) if values is not None else [None] * len(keys)

    def put(self, key: bytes, value: bytes) -> None:
        self._view(key).put(key, value)

    def delete(self, key: bytes) -> None:
        self._view(key).delete(key)

    def write_ops(self, ops: Sequence[WriteOp]) -> None:
        """Puts (value) and deletes (None) in the given order, in one atomic batch."""
        if not ops:
            return
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        by_byte, entries = self._family_by_byte, self._entry_family
        for key, value in ops:
            family = by_byte[key[0]] if key else entries
            if value is None:
                delete(key, family)
            else:
                put(key, value, family)
        self._db.write(batch)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        # Families hold disjoint key ranges (self._ranges, in key order): a scan walks the ranges its
        # prefix overlaps, each in its family.
        end = prefix_end(prefix)
        for low, high, family, _ in self._ranges:
            if (high is not None and high <= prefix) or (end is not None and end <= low):
                continue
            start = max(low, prefix)
            stop = end if high is None else high if end is None else min(end, high)
            # in prefix mode an iterator only promises keys sharing the seek key's 3-byte prefix
            total_order = family is self._entries and len(prefix) < self.HASH_PREFIX
            yield from self._scan(family, prefix, start, stop, total_order)

    @staticmethod
    def _scan(
        db: Rdict, prefix: bytes, start: bytes, stop: bytes | None, total_order: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        read_options = ReadOptions()
        if total_order:
            read_options.set_total_order_seek(True)
        if stop is not None:
            # Lets RocksDB stop at the bound instead of stepping onto the next key.
            read_options.set_iterate_upper_bound(stop)
        iterator = db.iter(read_options)
        iterator.seek(start)
        while iterator.valid():
            key: bytes = iterator.key()
            if not key.startswith(prefix):
                break
            yield key, iterator.value()
            iterator.next()

    def flush(self) -> None:
        self._db.flush()
        self._entries.flush()
        if self._id_family is not None:
            self._ids.flush()
        if self._record_family is not None:
            self._records.flush()

    def compact(self) -> None:
        """Flush and compact everything into the bottommost level (benchmarks measure disk size after it)."""
        self.flush()
        options = CompactOptions()
        # Force a rewrite of the bottommost level: a lone flushed file would otherwise be moved down
        # as is, keeping its lz4 blocks instead of zstd (measured: 131 vs 66 bytes per fp at 100k).
        options.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        self._db.compact_range(None, None, options)
        self._entries.compact_range(None, None, options)
        if self._id_family is not None:
            self._ids.compact_range(None, None, options)

    def disk_bytes(self) -> int:
        """Bytes of every file in the database directory."""
        root = Path(self.path)
        return sum(entry.stat().st_size for entry in root.iterdir() if entry.is_file())

    def close(self) -> None:
        self.flush()
        # The family view and handle keep the database open (and locked) until they are gone.
        del self._entries, self._entry_family, self._ids, self._id_family, self._records, self._record_family
        del self._ranges, self._family_by_byte
        del self._view_by_byte
        self._db.close()
