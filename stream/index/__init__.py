"""Block index: a lossless, adaptively re-split SimHash block table (+ MinHash LSH bands) on a KV store.

The public API (docs/index.md, "API"); everything else in this package is internal:
``simhash/`` (the block tables), ``bands/`` (the LSH band tables), ``batch/`` (the batch path the product
runs), ``document/`` (one document at a time: deletes, expiry, the reference), and beside them
``BlockIndex`` (block_index.py), its anchor table (anchors.py), its state, layout and records. Storage is
``stream.storage``.
"""

from stream.index.anchors import DEFAULT_CAP as DEFAULT_ANCHOR_CAP
from stream.index.anchors import AnchorOwner
from stream.index.batch.data import BatchBands
from stream.index.block_index import BlockIndex
from stream.index.layout import TableLayout
from stream.index.rare_kernels import compile_rare_kernels
from stream.index.records import (
    CONFIG_KEY,
    DERIVED_NAMESPACES,
    IndexHit,
    StoredDocument,
    key_kind,
    read_records,
    rebuild_derived_keys,
)
from stream.index.simhash.stats import IndexStats

__all__ = [
    "CONFIG_KEY",
    "DEFAULT_ANCHOR_CAP",
    "DERIVED_NAMESPACES",
    "AnchorOwner",
    "BatchBands",
    "BlockIndex",
    "IndexHit",
    "IndexStats",
    "StoredDocument",
    "TableLayout",
    "compile_rare_kernels",
    "key_kind",
    "read_records",
    "rebuild_derived_keys",
]
