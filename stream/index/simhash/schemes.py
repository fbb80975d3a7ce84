"""How a document's block keys are computed: the only part of the block table that differs per table kind.

A *scheme* turns a document's key source into
- a top-level block value (the bucket of table t; ``bytes([t]) + top`` is the routing prefix),
- for a split bucket, the sub-keys the entry moves to (``groups`` of them, one per group j),
- a compact per-entry payload from which the fingerprint (and the source, for later splits) comes back.

``SimhashBlocks`` (Manku et al. 2007; "SimHash explained"): the f-bit fingerprint is cut into k + 1
blocks of near-equal width; by the pigeonhole principle two fingerprints within Hamming distance k
agree exactly on at least one block, so looking up the query's block in each of the k + 1 tables
finds every neighbour (lossless). Re-splitting (Wang & Wang 2019, §2.3): a hot bucket's entries are
keyed again by the bits that remain once the bucket's own bits are removed, cut into k + 1
sub-blocks (48 -> 4 x 12 bits for f = 64, k = 3). A neighbour that matches the bucket's bits still
differs in at most k of the remaining bits, so it matches one sub-block exactly: every entry goes to
all k + 1 sub-buckets (one per sub-block) and a query descends into the k + 1 sub-buckets of its own
sub-blocks; the split stays lossless. It recurses while at least k + 1 bits remain (each sub-block
needs one bit).

The LSH band tables are not buckets: they live in memory (bands/memtable.py).
"""

from __future__ import annotations

from functools import cache
from typing import Protocol

import numpy as np

# Descent state below a bucket: (remaining value, remaining bits).
DescentState = tuple[int, int]
# A document's key source in one table: (fingerprint, 0).
BlockSource = tuple[int, int]

U64 = np.uint64


@cache
def near_equal_widths(total: int, parts: int) -> tuple[int, ...]:
    """Widths of ``parts`` contiguous blocks covering ``total`` bits; the first ``total % parts`` get one more."""
    base, extra = divmod(total, parts)
    return tuple(base + 1 if i < extra else base for i in range(parts))


@cache
def _group_layout(total: int, parts: int) -> tuple[tuple[int, int], ...]:
    """(low bit, width) of each block, block 0 being the most significant."""
    layout = []
    high = total
    for width in near_equal_widths(total, parts):
        high -= width
        layout.append((high, width))
    return tuple(layout)


def remove_bits(value: int, low: int, width: int) -> int:
    """``value`` with bits [low, low + width) cut out and the bits above shifted down."""
    return ((value >> (low + width)) << low) | (value & ((1 << low) - 1))


class BlockScheme(Protocol):
    """What the generic bucket/split machinery (simhash/table.py) needs from a table kind."""

    kind: str  # "simhash" or "band": the name used in stats and in IndexHit.via
    top_len: int  # bytes of the top-level block value in keys
    payload_len: int
    # Fingerprint bits that ``decode`` recovers (the others come back as 0); all ones if exact.
    filter_mask: int
    exact: bool  # the payload recovers the whole source (else a split fetches fingerprints)
    whole_len: int  # bytes of ``whole_payload``
    fingerprint_is_source: bool  # the source is (fingerprint, 0): a whole cached fingerprint gives it

    def top(self, source: BlockSource) -> bytes: ...

    def root_state(self, source: BlockSource) -> DescentState: ...

    def groups(self, state: DescentState) -> int:
        """How many sub-key groups a split of a bucket at this state makes (0: cannot split)."""
        ...

    def child(self, state: DescentState, group: int) -> tuple[bytes, DescentState]:
        """Sub-key value bytes of ``group`` and the state below it."""
        ...

    def payload(self, fingerprint: int, source: BlockSource) -> bytes:
        """What an entry of an unsplit top-level bucket keeps (maybe only a filter, see ``exact``)."""
        ...

    def whole_payload(self, fingerprint: int, source: BlockSource) -> bytes:
        """What an entry of a split top-level bucket keeps: enough for the whole source, so that its
        sub-buckets can be dealt from it (simhash/table.py keeps them in memory only)."""
        ...

    def decode(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        """Fingerprints (uint64, masked by ``filter_mask``) of entries stored under top-level value
        ``top``; payloads may be of either kind (a split cut short by a crash leaves both)."""
        ...

    def decode_values(self, top: bytes, values: np.ndarray) -> np.ndarray:
        """``decode`` of (unsplit) payloads given as the integers their bytes encode, uint64."""
        ...

    def decode_whole(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        """Whole fingerprints of entries with whole payloads."""
        ...

    def source_of(self, top: bytes, payload: bytes) -> BlockSource:
        """The source of an entry; whole only from a whole payload (or if ``exact``)."""
        ...

    def root_rests(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        """``root_state(source_of(top, p))[0]`` of whole payloads, as uint64: what a split top-level
        bucket keeps per entry to deal its entries into sub-buckets (simhash/table.py)."""
        ...

    def fingerprint_rests(self, fps: np.ndarray) -> np.ndarray:
        """``root_state((fp, 0))[0]`` of whole fingerprints (uint64 arrays), for a split's entries."""
        ...

    def child_values(self, rests: np.ndarray, aux: int, group: int) -> tuple[np.ndarray, np.ndarray]:
        """``child((rest, aux), group)`` of many states at once: the sub-key values (uint64) and the
        rests below them."""
        ...

    def leaf_mask(self, path: tuple[int, ...]) -> int:
        """Fingerprint bits the cached entries of the leaf at ``path`` hold: ``filter_mask`` at the
        root, everything below a split (those leaves are built from whole payloads)."""
        ...


class SimhashBlocks:
    """Table ``block`` of the k + 1 pigeonhole block tables over ``bits``-bit fingerprints (see module doc).

    An entry of an unsplit bucket stores a *filter*: the low ``FILTER_BITS`` bits of the fingerprint
    minus the table's own block (3 bytes instead of 6 for 64/16; the block is in the key). Distance on
    the known bits is a lower bound of the true distance, so filtering by it drops no neighbour; the
    few survivors that are not neighbours (random data: P(at most k of 24 bits differ) = 1.4e-4 per
    candidate at k = 3) are dropped once the hit's record, fetched anyway for its doc id, gives the
    whole fingerprint. 24 bits rather than 32: ~4.5 bytes per document less on disk
    (docs/decisions/index-storage-layout.md). An entry of a split bucket stores the whole rest
    (``whole_payload``, 6 bytes): its sub-buckets are dealt from it in memory (simhash/table.py).
    """

    kind = "simhash"
    FILTER_BITS = 24
    fingerprint_is_source = True

    def __init__(self, bits: int, k: int, block: int) -> None:
        if not 0 <= k < bits or bits > 64:
            raise ValueError(f"need 0 <= k < bits <= 64, got k={k}, bits={bits}")
        self.bits, self.k, self.block = bits, k, block
        self.low, self.width = _group_layout(bits, k + 1)[block]
        self.top_len = (self.width + 7) // 8
        self.rest_bits = bits - self.width
        self.kept_bits = min(self.rest_bits, self.FILTER_BITS)
        self.exact = self.kept_bits == self.rest_bits
        self.block_mask = (1 << self.width) - 1
        # the table reaches a pair that shares its block and differs in at most one bit of the next
        # block (``reaches``); the kept bits end at the next block's top, so a root's entries carry
        # its high bits (the root arena's sub-chains, simhash/arena.py)
        self.next_block = (block + 1) % (k + 1)
        self.next_low, self.next_width = _group_layout(bits, k + 1)[self.next_block]
        next_top = self.next_low + self.next_width - (self.width if self.next_low > self.low else 0)
        self.kept_low = max(0, next_top - self.kept_bits) if self.next_block != block else 0
        self.kept_mask = ((1 << self.kept_bits) - 1) << self.kept_low  # bits of the rest (root_state)
        self.payload_len = (self.kept_bits + 7) // 8
        self.whole_len = (self.rest_bits + 7) // 8
        self.filter_mask = self._restore(self.kept_mask, self.block_mask)
        self.next_mask = ((1 << self.next_width) - 1) << self.next_low if self.next_block != block else 0
        self._all_mask = (1 << bits) - 1

    def sub_mask(self, most: int) -> int:
        """The fingerprint bits of the root arena's sub-chain key: the top ``most`` (at most) bits of
        the next block, all of them among the kept ones."""
        count = min(most, self.next_width, self.kept_bits) if self.next_mask else 0
        return ((1 << count) - 1) << (self.next_low + self.next_width - count)

    def reaches(self, differ: int) -> bool:
        """Whether this table reports a pair whose fingerprints differ in ``differ``: the same block
        and at most one bit apart in the next one. At distance <= k some table of the k + 1 does:
        were every block equal in the pair followed by one 2+ bits apart, the k + 1 blocks would
        hold at least k + 1 differences."""
        return not (differ >> self.low) & self.block_mask and (differ & self.next_mask).bit_count() <= 1

    def _restore(self, rest: int, block: int) -> int:
        """The fingerprint whose block is ``block`` and whose bits outside it are ``rest``."""
        low = self.low
        return ((rest >> low) << (low + self.width)) | (block << low) | (rest & ((1 << low) - 1))

    def top(self, source: BlockSource) -> bytes:
        return ((source[0] >> self.low) & ((1 << self.width) - 1)).to_bytes(self.top_len, "big")

    def root_state(self, source: BlockSource) -> DescentState:
        return remove_bits(source[0], self.low, self.width), self.rest_bits

    def groups(self, state: DescentState) -> int:
        # Pigeonhole needs k + 1 non-empty sub-blocks.
        return self.k + 1 if state[1] >= self.k + 1 else 0

    def child(self, state: DescentState, group: int) -> tuple[bytes, DescentState]:
        rest, nbits = state
        low, width = _group_layout(nbits, self.k + 1)[group]
        value = (rest >> low) & ((1 << width) - 1)
        return value.to_bytes((width + 7) // 8, "big"), (remove_bits(rest, low, width), nbits - width)

    def payload(self, fingerprint: int, source: BlockSource) -> bytes:
        kept = (remove_bits(fingerprint, self.low, self.width) & self.kept_mask) >> self.kept_low
        return kept.to_bytes(self.payload_len, "big")

    def whole_payload(self, fingerprint: int, source: BlockSource) -> bytes:
        return remove_bits(fingerprint, self.low, self.width).to_bytes(self.whole_len, "big")

    def decode(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        size = self.payload_len
        if size != self.whole_len and any(len(p) != size for p in payloads):
            kept, shift = self.kept_mask, self.kept_low
            payloads = [p if len(p) == size else ((int.from_bytes(p, "big") & kept) >> shift).to_bytes(size, "big")
                        for p in payloads]
        return self._restore_all(top, payloads, size, self.kept_low)

    def decode_whole(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        return self._restore_all(top, payloads, self.whole_len, 0)

    def _restore_all(self, top: bytes, payloads: list[bytes], size: int, shift: int) -> np.ndarray:
        """``_restore`` of each payload (``size`` bytes each, the rest's bits from ``shift`` on), in numpy."""
        if not payloads:
            return np.zeros(0, dtype=U64)
        pad = b"\x00" * (8 - size)
        return self._restore_rests(top, np.frombuffer(b"".join(pad + p for p in payloads), dtype=">u8").astype(U64)
                                   << U64(shift))

    def decode_values(self, top: bytes, values: np.ndarray) -> np.ndarray:
        """``decode`` of payloads given as the integers their bytes encode (``payload_values``)."""
        return self._restore_rests(top, values.astype(U64) << U64(self.kept_low))

    def _restore_rests(self, top: bytes, rest: np.ndarray) -> np.ndarray:
        low, width = self.low, self.width
        block = U64(int.from_bytes(top, "big") << low)
        below = rest & U64((1 << low) - 1)
        if low + width >= 64:  # numpy shifts by >= 64 are undefined; nothing lies above the top block
            return block | below
        return ((rest >> U64(low)) << U64(low + width)) | block | below

    def source_of(self, top: bytes, payload: bytes) -> BlockSource:
        rest = int.from_bytes(payload, "big") << (0 if len(payload) == self.whole_len else self.kept_low)
        return self._restore(rest, int.from_bytes(top, "big")), 0

    def root_rests(self, top: bytes, payloads: list[bytes]) -> np.ndarray:
        # the whole payload is the rest (root_state removes the block, as whole_payload does)
        if not payloads:
            return np.zeros(0, dtype=U64)
        pad = b"\x00" * (8 - self.whole_len)
        return np.frombuffer(b"".join(pad + p for p in payloads), dtype=">u8").astype(U64)

    def payload_values(self, fps: np.ndarray) -> np.ndarray:
        """``payload`` of many fingerprints (uint64 arrays), as the integers its bytes encode."""
        return (self.fingerprint_rests(fps) & U64(self.kept_mask)) >> U64(self.kept_low)

    def fingerprint_rests(self, fps: np.ndarray) -> np.ndarray:
        low, width = self.low, self.width  # remove_bits, on arrays
        below = fps & U64((1 << low) - 1)
        if low + width >= 64:  # numpy shifts by >= 64 are undefined; nothing lies above the top block
            return below
        return ((fps >> U64(low + width)) << U64(low)) | below

    def child_values(self, rests: np.ndarray, aux: int, group: int) -> tuple[np.ndarray, np.ndarray]:
        low, width = _group_layout(aux, self.k + 1)[group]  # as child, on arrays
        values = (rests >> U64(low)) & U64((1 << width) - 1)
        below = ((rests >> U64(low + width)) << U64(low)) | (rests & U64((1 << low) - 1))
        return values, below

    def leaf_mask(self, path: tuple[int, ...]) -> int:
        return self._all_mask if path else self.filter_mask
