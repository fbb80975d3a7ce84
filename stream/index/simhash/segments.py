"""The batch path's SimHash entries, kept in memory and written a root at a time (``PendingEntries``).

One store key per document and SimHash table would be 4 of an insert's 7 keys, and at 10M documents
RocksDB's writes and compactions of them took a quarter of the time
(docs/decisions/simhash-entry-segments.md). So the batch path appends its entries here, and they
reach the store as *segments*, one key per top-level bucket holding every pending entry of it
(``root + SEGMENT_TAG + seq``: handle(5) + payload rows, in handle order):
- at a checkpoint, once ``limit`` entries are pending, and on ``close``: every root's, then the
  watermark (``WATERMARK_KEY``: every document with a smaller handle has its entries in the store);
- when the cache evicts a root, or before a root splits (``IndexState.write_back``): that root's, so
  an uncached root is whole in the store and a split reads all of it.

What a crash loses is redone on open (``IndexState.replay_entries``): the entries of every record
from the watermark on. A root's segments are read with its entry keys (``root_entries``): an entry
key overrides a segment's row of the same handle, and an entry key with an empty value is a deleted
entry (a tombstone). A root is rewritten as one segment (``BucketTable._compact``) when a load finds
tombstones or more than ``COMPACT_SEGMENTS`` segments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from stream.index.batch import keys as batch_keys
from stream.index.records import CONFIG_KEY, HANDLE_KEY, HANDLE_LEN, HANDLE_NS, META_NS, RECORD_HEAD, handle_bytes
from stream.storage import KVStore, WriteOp

SEGMENT_TAG = b"g"
WATERMARK_KEY = META_NS + b"entries"
DEFAULT_LIMIT = 1 << 21  # pending entries before a checkpoint: ~512k documents of 4 tables, ~50 MB
KEYS_ONLY_VERSION = 8  # the format before segments
COMPACT_SEGMENTS = 32  # a load that finds more segments of one root rewrites them as one


class PendingEntries:
    """Per SimHash table, the entries appended since they were last written: (block, handle, payload)."""

    def __init__(self, top_lens: list[int], payload_lens: list[int], limit: int = DEFAULT_LIMIT) -> None:
        self.top_lens, self.payload_lens, self.limit = top_lens, payload_lens, limit
        empty = np.empty(0, dtype=np.uint64)
        self._parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in top_lens]
        self._flat: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(empty, empty, empty) for _ in top_lens]
        self.count = 0

    def add(self, table: int, blocks: np.ndarray, handles: np.ndarray, payloads: np.ndarray) -> None:
        self._parts[table].append((blocks.astype(np.uint64), handles.astype(np.uint64), payloads.astype(np.uint64)))
        self.count += len(blocks)

    def _table(self, table: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parts = self._parts[table]
        if parts:
            flat = self._flat[table]
            joined = tuple(np.concatenate([flat[c], *(part[c] for part in parts)]) for c in range(3))
            self._flat[table] = joined  # type: ignore[assignment]
            parts.clear()
        return self._flat[table]

    def take_all(self, seq: int) -> list[WriteOp]:
        """The segments of every pending entry (sequence number ``seq``); nothing stays pending."""
        ops: list[WriteOp] = []
        for table in range(len(self.top_lens)):
            blocks, handles, payloads = self._table(table)
            ops += self._segments(table, blocks, handles, payloads, seq)
            self._flat[table] = (blocks[:0], handles[:0], payloads[:0])
        self.count = 0
        return ops

    def take_roots(self, roots: Iterable[tuple[int, int]], seq: int) -> list[WriteOp]:
        """The segments of the pending entries of ``roots`` ((table, block value) pairs), which stop
        being pending."""
        by_table: dict[int, list[int]] = {}
        for table, value in roots:
            by_table.setdefault(table, []).append(value)
        ops: list[WriteOp] = []
        for table, values in by_table.items():
            blocks, handles, payloads = self._table(table)
            if not len(blocks):
                continue
            leaving = np.isin(blocks, np.array(values, dtype=np.uint64))
            if leaving.any():
                ops += self._segments(table, blocks[leaving], handles[leaving], payloads[leaving], seq)
                kept = ~leaving
                self._flat[table] = (blocks[kept], handles[kept], payloads[kept])
                self.count -= int(leaving.sum())
        return ops

    def _segments(self, table: int, blocks: np.ndarray, handles: np.ndarray, payloads: np.ndarray,
                  seq: int) -> list[WriteOp]:
        if not len(blocks):
            return []
        order = np.lexsort((handles, blocks))
        blocks, handles, payloads = blocks[order], handles[order], payloads[order]
        row_len = HANDLE_LEN + self.payload_lens[table]
        rows = batch_keys.concat(batch_keys.big_endian(handles, HANDLE_LEN),
                                 batch_keys.big_endian(payloads, self.payload_lens[table])).tobytes()
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        ends = np.r_[starts[1:], len(blocks)] * row_len
        tops = batch_keys.big_endian(blocks[starts], self.top_lens[table])
        keys = batch_keys.rows(batch_keys.concat(bytes([table]), tops, SEGMENT_TAG + handle_bytes(seq)))
        return [(key, rows[start:end]) for key, start, end in
                zip(keys, (starts * row_len).tolist(), ends.tolist(), strict=True)]


def segment_arrays(values: list[bytes], payload_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of segments as (handles, payload values), uint64, in handle order, one row per handle
    (a crash's redone entries may repeat rows, always with the same payload)."""
    rows = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(-1, HANDLE_LEN + payload_len)
    handles, first = np.unique(_integers(rows[:, :HANDLE_LEN]), return_index=True)
    return handles, _integers(rows[:, HANDLE_LEN:])[first]


def _integers(matrix: np.ndarray) -> np.ndarray:
    """Each row of a uint8 matrix (at most 8 columns) as a big-endian integer."""
    padded = np.zeros((len(matrix), 8), dtype=np.uint8)
    padded[:, 8 - matrix.shape[1] :] = matrix
    return padded.view(">u8").ravel().astype(np.uint64)


def segment_rows(value: bytes, payload_len: int) -> list[tuple[int, bytes]]:
    """(handle, payload) of each row of a segment."""
    row_len = HANDLE_LEN + payload_len
    return [(int.from_bytes(value[at : at + HANDLE_LEN], "big"), value[at + HANDLE_LEN : at + row_len])
            for at in range(0, len(value), row_len)]


def root_entries(scanned: Iterable[tuple[bytes, bytes]], entry_prefix: bytes, segment_prefix: bytes,
                 payload_len: int) -> tuple[list[tuple[int, bytes]], list[bytes], int]:
    """A top-level bucket's live entries (handle, payload) in handle order, from a scan of its keys:
    segments first, then entry keys over them (an empty one deletes). Also the keys of its segments
    and tombstones (what a compaction replaces), and how many of them are tombstones."""
    entries: dict[int, bytes] = {}
    overrides: list[tuple[int, bytes]] = []
    stored: list[bytes] = []
    tombstones = 0
    for key, value in scanned:
        if key.startswith(segment_prefix):
            entries.update(segment_rows(value, payload_len))
            stored.append(key)
        elif key.startswith(entry_prefix):
            overrides.append((int.from_bytes(key[-HANDLE_LEN:], "big"), value))
            if not value:
                tombstones += 1
                stored.append(key)
    for handle, value in overrides:
        if value:
            entries[handle] = value
        else:
            entries.pop(handle, None)
    return sorted(entries.items()), stored, tombstones


def upgrade_keys_only(store: KVStore, config: dict[str, int]) -> None:
    """Open a store of format ``KEYS_ONLY_VERSION`` (every entry a key, no segments) as ``config``'s:
    its config rewritten and the watermark at its next handle (nothing to redo). Anything else is
    left to ``check_config``."""
    raw = store.get(CONFIG_KEY)
    if raw is None:
        return
    stored = json.loads(raw)
    if stored.get("version") == KEYS_ONLY_VERSION and {**stored, "version": config["version"]} == config:
        next_handle = store.get(HANDLE_KEY)
        store.write_ops([watermark_op(int.from_bytes(next_handle, "big") if next_handle else 0),
                         (CONFIG_KEY, json.dumps(config).encode())])


def read_watermark(store: KVStore) -> int:
    raw = store.get(WATERMARK_KEY)
    return int.from_bytes(raw, "big") if raw else 0


def watermark_op(handle: int) -> WriteOp:
    return WATERMARK_KEY, handle.to_bytes(8, "big")


def records_from(store: KVStore, first: int, end: int) -> Iterable[tuple[int, bytes]]:
    """(handle, record) of every record with ``first <= handle < end``, by prefix scans of 2^16
    handles each (the store offers prefix scans only)."""
    step = 1 << 16
    for base in range(first - first % step, end, step):
        for key, value in store.scan_prefix(HANDLE_NS + handle_bytes(base)[:3]):
            handle = int.from_bytes(key[1:], "big")
            if first <= handle < end:
                yield handle, value


def record_fingerprint(value: bytes) -> int:
    fingerprint: int = RECORD_HEAD.unpack_from(value)[0]
    return fingerprint
