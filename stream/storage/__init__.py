"""Key-value storage: the ``KVStore`` protocol the block index and the gather state are written against,
``MemoryStore``, ``BufferedStore`` (one batched write per flush) and ``RocksStore`` (RocksDB); and
``set_level0_compaction``, a RocksDB setting for any database's options."""

from stream.storage.kv import BufferedStore, KVStore, MemoryStore, WriteOp, WritePairs, prefix_end
from stream.storage.rocks import RocksStore, set_level0_compaction

__all__ = ["BufferedStore", "KVStore", "MemoryStore", "RocksStore", "WriteOp", "WritePairs", "prefix_end",
           "set_level0_compaction"]
