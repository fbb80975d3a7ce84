"""MinHash LSH bands: the loose-candidate keys of the block table.

A band is r consecutive MinHash rows; two documents collide in a band with probability J^r, and
in at least one of b bands with 1 - (1 - J^r)^b. With b = 16, r = 5: 0.998 at J = 0.8, 0.95 at
0.7, 0.40 at 0.5 (each collision is verified, so low-J collisions cost time, not precision).
Each band also carries an ``extension``: four more rows (16 bits each) that the block table uses
to re-split a hot band bucket "by adding rows".
"""

from __future__ import annotations

import numpy as np

from stream.fingerprint.hashing import U64, fmix64
from stream.fingerprint.minhash import oph

EXTENSION_ROWS = 4
_SEED = 0x5EED_BA4D


def lsh_bands(shingles: np.ndarray, bands: int, rows: int) -> list[tuple[int, int]]:
    """(band value, extension) per band; empty list for an empty set or bands == 0."""
    if bands == 0 or len(shingles) == 0:
        return []
    need = bands * (rows + EXTENSION_ROWS)
    bins = 1 << (need - 1).bit_length()
    mins = oph(shingles, bins, seed=_SEED)
    band_rows = mins[: bands * rows].reshape(bands, rows)
    acc = np.zeros(bands, dtype=U64)
    with np.errstate(over="ignore"):
        for j in range(rows):
            acc = acc * U64(0x9E3779B97F4A7C15) + band_rows[:, j]
    values = fmix64(acc ^ np.arange(bands, dtype=U64))
    ext_rows = mins[bands * rows : need].reshape(bands, EXTENSION_ROWS) & U64(0xFFFF)
    ext = np.zeros(bands, dtype=U64)
    for j in range(EXTENSION_ROWS):
        ext |= ext_rows[:, j] << U64(16 * j)
    return [(int(v), int(e)) for v, e in zip(values, ext, strict=True)]
