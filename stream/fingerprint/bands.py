"""MinHash LSH bands (Indyk & Motwani 1998, as banding): the loose-candidate keys of the block table.

A band is r consecutive MinHash rows; two documents collide in a band with probability J^r, and
in at least one of b bands with 1 - (1 - J^r)^b. With b = 16, r = 5: 0.998 at J = 0.8, 0.95 at
0.7, 0.40 at 0.5 (each collision is verified, so low-J collisions cost time, not precision).
Each band also carries an ``extension``: four more rows (16 bits each) that the block table uses
to re-split a hot band bucket "by adding rows".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stream.fingerprint.hashing import GOLDEN, fmix
from stream.fingerprint.minhash import oph

EXTENSION_ROWS = 4
_SEED = 0x5EED_BA4D


def lsh_bands(shingles: np.ndarray, bands: int, rows: int) -> list[tuple[int, int]]:
    """(band value, extension) per band; empty list for an empty set or bands == 0."""
    if bands == 0 or len(shingles) == 0:
        return []
    need = bands * (rows + EXTENSION_ROWS)
    mins = oph(shingles, 1 << (need - 1).bit_length(), seed=_SEED)
    values, ext = _band_keys(mins, bands, rows)
    return list(zip(values.tolist(), ext.tolist(), strict=True))


@njit(cache=True)
def _band_keys(mins: np.ndarray, bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    # band value: a polynomial over the band's rows, salted with the band number, then fmix64;
    # extension: the low 16 bits of the next EXTENSION_ROWS rows after all bands' rows
    values = np.empty(bands, dtype=np.uint64)
    ext = np.zeros(bands, dtype=np.uint64)
    for b in range(bands):
        acc = np.uint64(0)
        for j in range(rows):
            acc = acc * GOLDEN + mins[b * rows + j]
        values[b] = fmix(acc ^ np.uint64(b))
        for j in range(EXTENSION_ROWS):
            row = mins[bands * rows + b * EXTENSION_ROWS + j] & np.uint64(0xFFFF)
            ext[b] |= row << np.uint64(16 * j)
    return values, ext
