"""Block index: a lossless, adaptively re-split SimHash block table (+ MinHash LSH bands) on a KV store."""

from stream.index.block_index import BlockIndex, IndexHit
from stream.index.stats import IndexStats
from stream.index.store import KVStore, MemoryStore, RocksStore

__all__ = ["BlockIndex", "IndexHit", "IndexStats", "KVStore", "MemoryStore", "RocksStore"]
