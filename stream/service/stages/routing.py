"""Which Kafka partition owns what: block-table buckets and per-document gather state.

Stable hashes only (crc32): every worker, on every machine and after every restart, must route a
bucket to the same partition. Python's ``hash()`` is salted per process and would scatter state.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

# In a probe item's tables: the partition indexes the document for its anchors alone (it owns one of
# them and none of its table keys); an item with no tables at all drops the document there.
ANCHORS_ONLY = -1
NO_ANCHORS = np.empty(0, dtype=np.uint32)  # the anchors routed without an anchor table (anchor_cap 0)
ANCHOR_OWNERS = 8  # index partitions that own anchors, at most (docs/decisions/anchor-table-partitions.md)


def bucket_partition(table: int, prefix: bytes, partitions: int) -> int:
    """Partition owning the top-level bucket ``prefix`` of ``table`` and all its split descendants."""
    return zlib.crc32(prefix, table) % partitions


def doc_partition(doc_id: str, partitions: int) -> int:
    """Gather partition of a document (its answers, revisions and verdict state meet there)."""
    return zlib.crc32(doc_id.encode("utf-8", "surrogatepass")) % partitions


def tables_by_partition(routing_keys: Iterable[tuple[int, bytes]], partitions: int) -> dict[int, list[int]]:
    """Group a document's (table, bucket prefix) routing keys by owning partition."""
    grouped: dict[int, list[int]] = defaultdict(list)
    for table, prefix in routing_keys:
        grouped[bucket_partition(table, prefix, partitions)].append(table)
    return dict(grouped)


def index_tables(tables: list[int]) -> list[int]:
    """A probe item's index tables (none for a document indexed there for its anchors alone)."""
    return [t for t in tables if t != ANCHORS_ONLY]


def anchor_partitions(anchors: np.ndarray, partitions: int) -> np.ndarray:
    """Partition owning each anchor (the anchor table's share, index/anchors.py): one of the first
    ``ANCHOR_OWNERS``, so that a document's anchors reach at most that many partitions besides its
    tables' (a document has ~20-130 anchors). Anchors are shingle hashes below 2^28, uniform in every
    bit: their remainder is as stable and as even as a crc."""
    return anchors.astype(np.int64) % min(partitions, ANCHOR_OWNERS)


def routes(routing_keys: Iterable[tuple[int, bytes]], anchors: np.ndarray, partitions: int) -> dict[int, list[int]]:
    """``tables_by_partition``, and ``[ANCHORS_ONLY]`` for each other partition owning one of ``anchors``:
    a pair that shares a cool anchor meets in its owner (docs/decisions/anchor-table-partitions.md)."""
    grouped = tables_by_partition(routing_keys, partitions)
    for partition in sorted(set(anchor_partitions(anchors, partitions).tolist())):  # a set: np.unique costs ~5 us
        grouped.setdefault(partition, [ANCHORS_ONLY])
    return grouped
