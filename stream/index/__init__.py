"""Block index: a lossless, adaptively re-split SimHash block table (+ MinHash LSH bands) on a KV store.

The public API (docs/index.md, "API"); everything else in this package is internal.
"""

from stream.index.batch_data import BatchBands
from stream.index.block_index import BlockIndex
from stream.index.layout import TableLayout
from stream.index.records import DERIVED_NAMESPACES, IndexHit, rebuild_derived_keys
from stream.index.rocks import RocksStore
from stream.index.stats import IndexStats
from stream.index.store import BufferedStore, KVStore, MemoryStore, WriteOp
from stream.index.warm import compile_rare_kernels

__all__ = [
    "DERIVED_NAMESPACES",
    "BatchBands",
    "BlockIndex",
    "BufferedStore",
    "IndexHit",
    "IndexStats",
    "KVStore",
    "MemoryStore",
    "RocksStore",
    "TableLayout",
    "WriteOp",
    "compile_rare_kernels",
    "rebuild_derived_keys",
]
