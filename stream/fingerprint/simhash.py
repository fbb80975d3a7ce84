"""64-bit SimHash over weighted features, vectorized with numpy.

The five steps of seeds 000/001 (segment, hash, weight, merge, reduce): every feature's 64-bit
hash votes +w on its 1 bits and -w on its 0 bits; the fingerprint keeps the sign of each bit's sum.
Bit i is 1 iff sum_f w_f * (2 h_f[i] - 1) > 0, computed as 2 (w @ bits) - sum(w).
"""

from __future__ import annotations

import numpy as np

from stream.fingerprint.hashing import U64


def simhash(hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """SimHash of uint64 feature hashes with float weights (binary weights when None)."""
    if len(hashes) == 0:
        return 0
    bits = np.unpackbits(hashes.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    if weights is None:
        votes = 2 * bits.sum(axis=0, dtype=np.int64) - len(hashes)
    else:
        w = weights.astype(np.float64)
        votes = 2 * (w @ bits) - w.sum()
    packed = np.packbits(votes > 0, bitorder="little")
    return int(packed.view("<u8")[0])


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def hamming_many(fps: np.ndarray, fp: int) -> np.ndarray:
    """Hamming distances from ``fp`` to every fingerprint of a uint64 array."""
    x = np.bitwise_xor(fps.astype(U64), U64(fp))
    return np.bitwise_count(x).astype(np.int64)
