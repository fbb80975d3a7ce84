"""``TableLayout``: the tables of a block index and where a document's keys go in them.

A pure value of (k, bands, bits): no store, no state. The service routes each document with it
(``routing_keys``: which state partition owns each of its buckets), and the index's hot paths take
their per-table arithmetic from it, precomputed once from the schemes (simhash/schemes.py): the keys of a
fingerprint's k + 1 top-level buckets, its entries' payloads there, the block values of many
fingerprints at once. Each of those is a faster form of a ``SimhashBlocks`` method, and a test
checks it against that method.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np

from stream.index.simhash.schemes import SimhashBlocks

MAX_TABLES = 0xFC  # table ids stay below the record namespaces (records.py), the first key byte
MAX_BANDS = 0x7F  # a record's band count shares its byte with the payload flag (records.py)


class TableLayout:
    """Tables 0..k are the SimHash block tables (``simhash[t]``: block t of k + 1, Manku et al.
    2007), tables k+1..k+bands the LSH band tables (one per band of the fingerprint)."""

    __slots__ = (
        "_fp_len",
        "_keys",
        "_payloads",
        "_slices",
        "all_tables",
        "band_ids",
        "bands",
        "bits",
        "blocks",
        "filter_mask_array",
        "filter_masks",
        "k",
        "limit",
        "simhash",
        "simhash_order",
        "simhash_tables",
        "table_count",
    )

    def __init__(self, k: int = 3, bands: int = 0, bits: int = 64) -> None:
        if k + 1 + bands > MAX_TABLES:
            raise ValueError(f"at most {MAX_TABLES} tables (k + 1 + bands)")
        if bands > MAX_BANDS:
            raise ValueError(f"at most {MAX_BANDS} bands")
        self.k, self.bands, self.bits = k, bands, bits
        self.simhash = tuple(SimhashBlocks(bits, k, block) for block in range(k + 1))
        self.table_count = k + 1 + bands
        self.all_tables = frozenset(range(self.table_count))
        self.simhash_tables = frozenset(range(k + 1))
        self.simhash_order = tuple(range(k + 1))
        self.band_ids = np.arange(k + 1, k + 1 + bands, dtype=np.int64)
        self.limit = 1 << bits
        # per SimHash table: the bits its root entries keep (SimhashBlocks.filter_mask), and as uint64
        self.filter_masks = tuple(scheme.filter_mask for scheme in self.simhash)
        self.filter_mask_array = np.array(self.filter_masks, dtype=np.uint64)
        # per SimHash table: (low bit, mask) of its block: the block value is (fp >> low) & mask
        self.blocks = tuple((scheme.low, scheme.block_mask) for scheme in self.simhash)
        self._fp_len = (bits + 7) // 8
        self._keys = tuple((bytes([t]), s.low, s.block_mask, s.top_len) for t, s in enumerate(self.simhash))
        self._payloads = tuple(
            (s.low + s.width, s.low, (1 << s.low) - 1, s.kept_mask, s.kept_low, s.payload_len) for s in self.simhash
        )
        # byte-aligned blocks (64 bits, k = 3): a root key is a slice of the fingerprint's bytes
        aligned = bits % 8 == 0 and all(s.low % 8 == 0 and s.width % 8 == 0 for s in self.simhash)
        self._slices = (
            tuple((prefix, self._fp_len - (low + 8 * top_len) // 8, self._fp_len - low // 8)
                  for prefix, low, _, top_len in self._keys)
            if aligned else None
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableLayout) and (self.k, self.bands, self.bits) == (other.k, other.bands, other.bits)

    def __hash__(self) -> int:
        return hash((self.k, self.bands, self.bits))

    def __repr__(self) -> str:
        return f"TableLayout(k={self.k}, bands={self.bands}, bits={self.bits})"

    # -- validation ---------------------------------------------------------------------------------

    def check_fingerprint(self, fingerprint: int) -> None:
        if not 0 <= fingerprint < self.limit:
            raise ValueError(f"fingerprint must be an unsigned {self.bits}-bit int")

    def tables_for(self, tables: Collection[int] | None, bands: Sequence[object]) -> frozenset[int]:
        """The tables a call uses: ``tables`` (None: all), of those a document with ``bands`` takes
        part in (band tables only when it has bands: an empty document has none)."""
        if bands and len(bands) != self.bands:
            raise ValueError(f"expected {self.bands} bands, got {len(bands)}")
        return self.chosen_tables(tables, bool(bands))

    def chosen_tables(self, tables: Collection[int] | None, has_bands: bool) -> frozenset[int]:
        """``tables_for`` of a document whose bands are known to be complete or absent."""
        available = self.all_tables if has_bands else self.simhash_tables
        if tables is None:
            return available
        chosen = frozenset(tables)
        if not chosen <= self.all_tables:
            raise ValueError(f"unknown table ids {sorted(chosen - self.all_tables)}")
        return chosen & available

    # -- routing ------------------------------------------------------------------------------------

    def routing_keys(self, fingerprint: int, bands: Sequence[tuple[int, int]] = ()) -> list[tuple[int, bytes]]:
        """(table id, key prefix of the document's top-level bucket there) per table it takes part
        in: the unit of state sharding. Every key of that bucket and of its split descendants starts
        with the prefix; a band table's prefix is its id and the band value (8 bytes)."""
        self.check_fingerprint(fingerprint)
        values = [int(value) for value, _ in bands]
        used = self.tables_for(None, values)
        roots, k = self.root_keys(fingerprint), self.k
        return [(t, roots[t] if t <= k else bytes([t]) + values[t - k - 1].to_bytes(8, "big")) for t in sorted(used)]

    # -- the hot paths' arithmetic (tests compare each with SimhashBlocks) -----------------------------

    def root_keys(self, fingerprint: int) -> list[bytes]:
        """Keys of the k + 1 SimHash top-level buckets of ``fingerprint``: table id + ``SimhashBlocks.top``."""
        if self._slices is not None:
            raw = fingerprint.to_bytes(self._fp_len, "big")
            return [prefix + raw[start:stop] for prefix, start, stop in self._slices]
        return [prefix + ((fingerprint >> low) & mask).to_bytes(top_len, "big")
                for prefix, low, mask, top_len in self._keys]

    def root_payloads(self, fingerprint: int) -> list[bytes]:
        """What the entries of ``fingerprint`` keep in its k + 1 unsplit top-level buckets
        (``SimhashBlocks.payload``)."""
        return [(((((fingerprint >> above) << low) | (fingerprint & low_mask)) & kept) >> shift).to_bytes(size, "big")
                for above, low, low_mask, kept, shift, size in self._payloads]

    def first_shared(self, a: int, b: int) -> int | None:
        """The lowest SimHash table that reaches the pair ``a``, ``b`` (``SimhashBlocks.reaches``: the
        same block, at most one bit apart in the next; None if none: distance > k)."""
        differ = a ^ b
        for t, scheme in enumerate(self.simhash):
            if scheme.reaches(differ):
                return t
        return None

    def reaches_any(self, a: int, b: int, tables: Iterable[int]) -> bool:
        """Whether one of the SimHash ``tables`` reaches the pair ``a``, ``b``: a query over those
        tables reports it (at distance <= k)."""
        return self.reaches_in(a ^ b, sum(1 << t for t in tables if t <= self.k))

    def reaches_in(self, differ: int, tables: int) -> bool:
        """``reaches_any`` for tables given as a bit mask (bit t: table t); every SimHash table
        reaches each pair within k, so a full mask needs no look at the blocks."""
        full = (1 << (self.k + 1)) - 1
        if tables & full == full:
            return True
        return any(tables >> t & 1 and scheme.reaches(differ) for t, scheme in enumerate(self.simhash))

    def block_values(self, t: int, fps: np.ndarray) -> np.ndarray:
        """The block values of many fingerprints (uint64) in SimHash table t (``SimhashBlocks.top``)."""
        low, mask = self.blocks[t]
        return (fps >> np.uint64(low)) & np.uint64(mask)
