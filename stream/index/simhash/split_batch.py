"""Many documents below one split top-level bucket at once: the batch path's descent (batch_query,
batch_insert) for the skewed case.

``BucketTable.leaves`` descends one document at a time in Python: at each split node it computes
the k + 1 sub-keys, builds their keys and looks each sub-bucket up (dealing it from the node's
entries when it is not cached), then the insert walks the same way again. Here the documents that
reach a split node are taken together: numpy computes their sub-key values, the node's sorted
index (``SplitBucket.matching``) gives the entries of each sub-bucket without dealing it, and the
documents whose sub-bucket is itself split go down to that node as a group. The answers are those
of the descent: a sub-bucket is exactly the node's entries with its sub-key value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stream.index.simhash.buckets import SplitBucket
from stream.index.simhash.kernels import bucket_growth
from stream.index.simhash.schemes import BlockScheme
from stream.index.simhash.stats import StatsRecorder
from stream.index.simhash.table import CHILD_TAG, BucketTable, sub_key

_U64 = np.uint64


@dataclass
class NodeVisit:
    """The documents (positions into the caller's arrays) that reach a split node, with the rest of
    their descent state there, and per group the ones whose sub-bucket there is a leaf."""

    key: bytes
    node: SplitBucket
    depth: int  # levels below the top-level bucket (0: the top-level bucket itself)
    docs: np.ndarray
    rests: np.ndarray
    leaves: list[tuple[int, np.ndarray, np.ndarray]]  # (group, positions into docs, sub-key values)


def descend(table: BucketTable, root_key: bytes, root: SplitBucket, docs: np.ndarray,
            fps: np.ndarray) -> list[NodeVisit]:
    """The split nodes that documents ``docs`` (fingerprints ``fps``, aligned) reach below the cached
    split top-level bucket ``root``, each with the documents reaching it; split sub-buckets that are
    not cached are dealt from their parent, as ``leaves`` deals them."""
    scheme = table.scheme
    rests = scheme.fingerprint_rests(fps)  # each document's root_state there
    visits: list[NodeVisit] = []
    stack = [(root_key, root, 0, docs, rests)]
    while stack:
        key, node, depth, at, node_rests = stack.pop()
        visit = NodeVisit(key, node, depth, at, node_rests, [])
        visits.append(visit)
        for group in range(scheme.groups((0, node.aux))):
            values, below = scheme.child_values(node_rests, node.aux, group)
            split_values = _split_children(root, key, group, scheme.child((0, node.aux), group)[0])
            leaf = np.ones(len(at), dtype=np.bool_)
            for value in split_values:
                going = values == _U64(value)
                if not going.any():
                    continue
                leaf &= ~going
                value_bytes, (_, child_aux) = _child_of(scheme, node.aux, group, value)
                child_key = sub_key(key, group, value_bytes)
                child = table.cache.get(child_key)
                if child is None:
                    child = table.deal(root, node, group, value_bytes, child_key, child_aux)
                assert isinstance(child, SplitBucket)
                stack.append((child_key, child, depth + 1, at[going], below[going]))
            positions = np.flatnonzero(leaf)
            visit.leaves.append((group, positions, values[positions]))
    return visits


def _child_of(scheme: BlockScheme, aux: int, group: int, value: int) -> tuple[bytes, tuple[int, int]]:
    """The sub-key bytes of ``value`` in ``group`` at a node with ``aux`` bits left, and the state
    (rest 0, bits left) below it: ``scheme.child`` of a state whose group value is ``value``."""
    probe, (_, below_aux) = scheme.child((0, aux), group)
    return value.to_bytes(len(probe), "big"), (0, below_aux)


def _split_children(root: SplitBucket, key: bytes, group: int, zero: bytes) -> list[int]:
    """The sub-key values of ``group`` whose sub-bucket under node ``key`` is split (the top-level
    bucket's markers; ``zero``: the sub-key bytes of value 0, for their length)."""
    markers = root.markers
    if not markers or len(markers) == 1:  # only the top-level bucket itself
        return []
    prefix = key + CHILD_TAG + bytes([group])
    size = len(prefix) + len(zero)
    return [int.from_bytes(m[len(prefix) :], "big") for m in markers if len(m) == size and m.startswith(prefix)]


def candidates(table: BucketTable, visits: list[NodeVisit], fps: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(documents, handles) of the entries within ``k`` of each document in the leaves it reaches,
    and the documents' candidate counts (sum of its leaves' sizes, as ``query`` counts them), as
    (positions into ``fps``, uint64 handles, per-position counts)."""
    found_docs, found_handles = [], []
    counts = np.zeros(len(fps), dtype=np.int64)
    for visit in visits:
        node = visit.node
        entry_fps = np.frombuffer(node.fps, dtype=np.uint64)
        entry_handles = np.frombuffer(node.handles, dtype=np.uint64)
        for group, positions, values in visit.leaves:
            queries, entries = node.matching(table.scheme, group, values)
            docs = visit.docs[positions[queries]]
            counts += np.bincount(docs, minlength=len(counts))
            near = np.bitwise_count(entry_fps[entries] ^ fps[docs]) <= k
            found_docs.append(docs[near])
            found_handles.append(entry_handles[entries[near]])
        del entry_fps, entry_handles  # views pin the arrays, which inserts extend
    if not found_docs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64), counts
    return np.concatenate(found_docs), np.concatenate(found_handles), counts


def count_leaf_growth(table: BucketTable, stats: StatsRecorder, min_split: int, visits: list[NodeVisit]) -> list[int]:
    """The level counters of the leaves the visits' documents are about to join, one entry each (as
    ``writes.add`` resizes each leaf by +1, per distinct leaf at once: ``kernels.bucket_growth``); returns
    one document (position) per leaf that reaches ``min_split``. Before the entries are added."""
    big: list[int] = []
    for visit in visits:
        for group, positions, values in visit.leaves:
            if not len(positions):
                continue
            queries, _ = visit.node.matching(table.scheme, group, values)
            before = np.bincount(queries, minlength=len(values)).astype(np.int64)
            bins = np.zeros(66, dtype=np.int64)
            use = np.ones((1, len(values)), dtype=np.bool_)
            blocks = values[None, :].astype(_U64).view(np.int64)  # the root path's dtype: one compiled signature
            new_buckets, reached = bucket_growth(blocks, before[:, None], use, min_split, bins)
            stats.level(table.kind, visit.depth + 1).grow(len(values), new_buckets, bins)
            big += visit.docs[positions[reached & 0xFFFFFFFF]].tolist()
    return big
