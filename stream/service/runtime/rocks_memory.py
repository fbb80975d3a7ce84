"""One RocksDB memory budget for every table database of a worker.

Faust opens a RocksDB database per table partition, and by itself gives each one its own block cache
and memtables: a worker's RocksDB memory then grows with the partitions it owns, and the index and
filter blocks of every table file stay in memory outside any cache, growing with the data. With a
``RocksMemory`` all of a worker's databases share one block cache, which holds those index and
filter blocks too (level 0's pinned), and one write-buffer manager bounds their memtables together
(the bounded-memory configuration Kafka Streams documents for its RocksDB stores).
"""

from __future__ import annotations

import rocksdict

# the caches a worker with the default partition counts (2 index partitions, 4 document partitions) had
# before, now whatever partitions it owns; the memtable limit lies above those partitions' mutable
# memtables (2 x 32 + 2 x 16 + 4 x 1 MiB), so that with the defaults each still flushes at its own size
CACHE_BYTES = 192 << 20
WRITE_BUFFER_BYTES = 128 << 20
BLOOM_BITS = 3  # bits per key of the tables' Bloom filters: Faust's default (DEFAULT_BLOOM_FILTER_SIZE)


class RocksMemory:
    """A block cache of ``cache_bytes`` and a memtable limit of ``write_buffer_bytes`` shared by every
    database whose options ``apply`` has set up."""

    def __init__(self, cache_bytes: int = CACHE_BYTES, write_buffer_bytes: int = WRITE_BUFFER_BYTES) -> None:
        self.cache_bytes, self.write_buffer_bytes = cache_bytes, write_buffer_bytes
        self.cache = rocksdict.Cache(cache_bytes)
        # no stall: past the limit RocksDB flushes the memtable being written instead of blocking writers
        self.write_buffers = rocksdict.WriteBufferManager(write_buffer_bytes, False)

    def apply(self, options: rocksdict.Options, bloom_bits: int = BLOOM_BITS) -> None:
        """Point ``options`` (one database's) at the shared cache and write-buffer manager."""
        table = rocksdict.BlockBasedOptions()
        table.set_bloom_filter(bloom_bits, True)
        table.set_block_cache(self.cache)
        table.set_index_type(rocksdict.BlockBasedIndexType.binary_search())
        table.set_cache_index_and_filter_blocks(True)
        # the newest files' index and filter blocks are read by almost every lookup: kept, not evicted
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        options.set_block_based_table_factory(table)
        options.set_write_buffer_manager(self.write_buffers)

    def usage(self) -> tuple[int, int]:
        """(bytes in the shared block cache, bytes of memtables) now."""
        return self.cache.get_usage(), self.write_buffers.get_usage()
