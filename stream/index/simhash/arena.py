"""The cached unsplit top-level buckets of the slot tables, as entry chains in numpy (``RootArena``).

A batch of 512 documents meets ~2,000 root buckets (k + 1 per document), and as ``Bucket`` objects
each cost Python work per (document, table): find it, create it, stamp it, join its arrays for the
candidate filter, append to it, count it: ~10 us per document on the product stream. Here every root
is a chain of entries in three pool arrays (next, masked fingerprint, handle), and one compiled call
filters a batch's candidates or appends its entries (docs/index.md, "Read path").

The cache (``BucketCache``) decides which roots live here (state ``ROOT_ARENA``); anything that needs
a root as a ``Bucket`` (the one-document path, deletes, a split) takes it out first (``release``).
"""

from __future__ import annotations

import numpy as np

from stream.index.simhash.kernels import (
    chain_append,
    chain_collect,
    chain_gather,
    chain_push,
    chain_relink,
    chain_within,
)


class RootArena:
    """Per table and block value a root of entries with its length and the cache clock at its last
    use. An entry is one uint64: the table's filter bits of the fingerprint (at most 24, packed side
    by side) over the 40-bit handle; with a 4-byte link that is 12 bytes.

    A root's entries sit in ``1 << shift`` sub-chains keyed by the top ``shift`` bits of the next
    block (``SimhashBlocks.sub_mask``): a table reports only pairs at most one bit apart in that
    block (``SimhashBlocks.reaches``), so a query walks its own sub-chain and the ``shift`` that differ
    from it in one bit, not the whole root. ``shift`` grows with the entries (each compaction picks
    the smallest one that leaves at most ``SUB_LENGTH`` entries per sub-chain on average, at most
    ``MAX_SHIFT``), so a small index keeps small head arrays: 4 bytes per sub-chain, 64 MiB for
    4 tables of 2^16 roots at the largest shift.

    Appends interleave the chains in the pools, so a chain walk meets a cache miss per entry once
    the pools outgrow the CPU caches (at 2M documents a third of the batch path's time). The pools
    are therefore compacted, every sub-chain into one run of slots, whenever the entries appended since
    the last compaction reach a quarter of the entries it laid out (and when garbage, left by roots
    that leave, outgrows the live entries)."""

    ENTRY_BYTES = 12  # a packed entry and its link per pool slot in use (garbage included)
    MIN_GARBAGE = 1 << 16  # below this, garbage is left in place (compaction copies every live entry)
    SCATTERED = 4  # compact once the entries appended since the last compaction reach 1/4 of it
    MAX_SHIFT = 6  # sub-key bits at most
    SUB_LENGTH = 2  # entries per sub-chain, on average, that a compaction aims at

    def __init__(self, capacity: int = 1024) -> None:
        # pools are allocated at ``capacity`` at once: untouched pages cost no memory, and a pool that
        # never grows is never copied
        self.shift = 0
        self.head = np.full((0, 0), -1, dtype=np.int32)
        self.length = np.zeros((0, 0), dtype=np.int64)
        self.used = np.zeros((0, 0), dtype=np.int64)
        self.positions = np.zeros((0, 24), dtype=np.int64)  # per table: where its filter bits are
        self.counts = np.zeros(0, dtype=np.int64)  # per table: how many filter bits
        self.block_shifts = np.zeros(0, dtype=np.int64)  # per table: where its block is
        self.sub_fields = np.zeros((0, 2), dtype=np.int64)  # per table: (packed low bit, bits) of its sub-key field
        self.sub_low = np.zeros(0, dtype=np.int64)  # per table, at ``shift``: the sub-key's packed low bit
        self.sub_n = np.zeros(0, dtype=np.int64)  # and its bits
        self._next = np.empty(capacity, dtype=np.int32)
        self._entries = np.empty(capacity, dtype=np.uint64)
        self.top = 0  # pool slots in use, garbage included
        self.live = 0  # entries in chains
        self.laid_out = 0  # slots the last compaction filled (each chain in one run)
        self.compactions = 0
        self._out = np.empty(1 << 14, dtype=np.int64)  # chain_within's output

    def add_table(self, table_id: int, width: int, filter_bits: int, block_shift: int, sub_bits: int = 0) -> None:
        """Room for table ``table_id``'s roots (``width`` block values) whose entries keep the bits of
        ``filter_bits`` (without the block's, which the root gives), ``sub_bits`` of them (contiguous)
        keying its sub-chains; only while empty."""
        assert self.live == 0, "tables are added before any entry"
        tables = max(self.length.shape[0], table_id + 1)
        width = max(self.length.shape[1], width)
        self.length = np.zeros((tables, width), dtype=np.int64)
        self.used = np.zeros((tables, width), dtype=np.int64)
        bits = [b for b in range(64) if filter_bits >> b & 1]
        assert len(bits) <= 24, "24 filter bits and a 40-bit handle fill an entry"
        assert sub_bits & filter_bits == sub_bits, "the sub-key is made of filter bits"
        self.positions = np.resize(self.positions, (tables, 24))
        self.counts = np.resize(self.counts, tables)
        self.block_shifts = np.resize(self.block_shifts, tables)
        self.sub_fields = np.resize(self.sub_fields, (tables, 2))
        self.positions[table_id, : len(bits)] = bits
        self.counts[table_id] = len(bits)
        self.block_shifts[table_id] = block_shift
        sub = [bits.index(b) for b in range(64) if sub_bits >> b & 1]
        self.sub_fields[table_id] = (sub[0] if sub else 0, len(sub))
        self._set_shift(0)

    def _set_shift(self, shift: int) -> None:
        """Sub-keys of ``shift`` bits (a table's field may hold fewer: its top ones), new empty heads."""
        self.shift = shift
        self.sub_n = np.minimum(self.sub_fields[:, 1], shift)
        self.sub_low = self.sub_fields[:, 0] + self.sub_fields[:, 1] - self.sub_n
        self.head = np.full((self.length.shape[0], self.length.shape[1] << shift), -1, dtype=np.int32)

    @property
    def size_bytes(self) -> int:
        return self.ENTRY_BYTES * self.top

    def lengths(self, blocks: np.ndarray) -> np.ndarray:
        """``[t, i]``: the length of root ``blocks[t, i]`` of table t."""
        return self.length[np.arange(len(blocks))[:, None], blocks]

    def within(self, blocks: np.ndarray, use: np.ndarray, queries: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(documents, handles) of the entries within k bits of their query: document i against the
        root ``blocks[t, i]`` of each table t where ``use[t, i]``, as ``queries[t, i]`` (its masked
        fingerprint), in the sub-chains the table reaches; and per document the entries compared."""
        out = self._out
        walked = np.zeros(blocks.shape[1], dtype=np.int64)
        args = (self.head, self._next, self._entries, blocks, use, queries, k)
        subs = (self.positions, self.counts, self.shift, self.sub_low, self.sub_n)
        count = chain_within(*args, out, *subs, walked)
        if 2 * count > len(out):  # more than its room: again, with room
            out = self._out = np.empty(4 * count, dtype=np.int64)
            walked[:] = 0
            chain_within(*args, out, *subs, walked)
        half = len(out) // 2
        return out[:count].copy(), out[half:half + count].view(np.uint64).copy(), walked

    def append(self, blocks: np.ndarray, use: np.ndarray, values: np.ndarray, handles: np.ndarray) -> None:
        """Append to root ``blocks[t, i]`` of table t the entry (``handles[i]``, ``values[t, i]``)
        for each document i and table t with ``use[t, i]``, document by document."""
        count = int(use.sum())
        self._reserve(count)
        self.top = chain_append(self.head, self.length, self._next, self._entries, self.top, blocks, use, values,
                                handles, self.positions, self.counts, self.shift, self.sub_low, self.sub_n)
        self.live += count

    def push(self, table_id: int, value: int, handles: np.ndarray, fps: np.ndarray) -> None:
        """Append entries to one root, in order."""
        self._reserve(len(handles))
        self.top = chain_push(self.head, self.length, self._next, self._entries, self.top, table_id, value, handles,
                              fps, self.positions, self.counts, self.shift, self.sub_low, self.sub_n)
        self.live += len(handles)

    def release(self, table_id: int, value: int) -> tuple[np.ndarray, np.ndarray]:
        """A root's entries (handles, masked fingerprints) in handle order, the order they came (handles
        are a sequence; a root loaded from the store is in key order, which is handle order); the root
        leaves."""
        n = int(self.length[table_id, value])
        handles = np.empty(n, dtype=np.uint64)
        fps = np.empty(n, dtype=np.uint64)
        fixed = np.uint64(value) << np.uint64(self.block_shifts[table_id])
        chain_collect(self.head, self._next, self._entries, table_id, value, self.shift, handles, fps,
                      self.positions, self.counts, fixed)
        self.drop(table_id, value)
        order = np.argsort(handles, kind="stable")
        return handles[order], fps[order]

    def drop(self, table_id: int, value: int) -> None:
        """The root leaves with its entries (they stay in the store)."""
        self.live -= int(self.length[table_id, value])
        self.head[table_id, value << self.shift:(value + 1) << self.shift] = -1
        self.length[table_id, value] = 0

    def clear(self) -> None:
        self.head[:] = -1
        self.length[:] = 0
        self.top = self.live = self.laid_out = 0

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more entries: compacted if garbage outgrew the live entries or the
        chains got scattered (class doc), else grown."""
        garbage = self.top - self.live
        scattered = self.top - self.laid_out
        if garbage > max(self.live, self.MIN_GARBAGE) or scattered > max(self.laid_out // self.SCATTERED,
                                                                           self.MIN_GARBAGE):
            self._compact(self.live + count)
        if self.top + count > len(self._next):
            self._grow(max(2 * len(self._next), self.top + count))

    def _grow(self, capacity: int) -> None:
        for name in ("_next", "_entries"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[: self.top] = old[: self.top]
            setattr(self, name, new)

    @property
    def capacity(self) -> int:
        return len(self._next)

    def shift_for(self, entries: int) -> int:
        """The smallest sub-key width that leaves at most ``SUB_LENGTH`` of ``entries`` per sub-chain
        on average over the roots (at most ``MAX_SHIFT``)."""
        roots = max(1, self.length.size)
        shift = 0
        while shift < self.MAX_SHIFT and entries > self.SUB_LENGTH * (roots << shift):
            shift += 1
        return shift

    def _compact(self, need: int) -> None:
        """Every sub-chain into one run of slots, keyed again at the width ``need`` entries call for:
        the entries into a new pool, then the links rewritten in place, so the copy held beside the
        pools is 8 bytes per entry, not 12 (at 40M entries the difference is 160 MB of peak memory)."""
        self.compactions += 1
        entries = np.empty(max(len(self._next), 2 * need), dtype=np.uint64)
        old_head, old_shift = self.head, self.shift
        self._set_shift(self.shift_for(need))
        self.top = self.laid_out = chain_gather(old_head, self.length, self._next, self._entries, old_shift, self.head,
                                                entries, self.shift, self.sub_low, self.sub_n)
        del old_head
        self._entries = entries
        if len(self._next) < len(entries):
            self._next = np.resize(self._next, len(entries))
        chain_relink(self.head, self._next, self.top)
