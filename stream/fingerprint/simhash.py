"""64-bit SimHash over weighted features (Charikar 2002), the vote compiled with numba.

The five steps of "SimHash explained" (segment, hash, weight, merge, reduce): every feature's 64-bit
hash votes +w on its 1 bits and -w on its 0 bits; the fingerprint keeps the sign of each bit's sum.
Bit i is 1 iff sum_f w_f * (2 h_f[i] - 1) > 0. Sources: docs/references.md.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stream.fingerprint.hashing import U64


def simhash(hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """SimHash of uint64 feature hashes with float weights (binary weights when None)."""
    if len(hashes) == 0:
        return 0
    w = np.ones(len(hashes)) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    return int(_vote(np.ascontiguousarray(hashes, dtype=U64), w))


@njit(cache=True)
def _vote(hashes: np.ndarray, weights: np.ndarray) -> np.uint64:
    # in feature order, one running sum per bit: deterministic on every machine (a BLAS product
    # may sum in another order), and exact for integer weights (tf counts, binary)
    votes = np.zeros(64)
    for i in range(len(hashes)):
        add_vote(votes, hashes[i], weights[i])
    return sign_bits(votes)


@njit(cache=True, inline="always")
def add_vote(votes: np.ndarray, h: np.uint64, w: float) -> None:
    """+w to the bits of ``h`` that are 1, -w to the others."""
    for bit in range(64):
        if (h >> np.uint64(bit)) & np.uint64(1):
            votes[bit] += w
        else:
            votes[bit] -= w


@njit(cache=True, inline="always")
def sign_bits(votes: np.ndarray) -> np.uint64:
    """The fingerprint: bit i is 1 iff votes[i] > 0."""
    out = np.uint64(0)
    for bit in range(64):
        if votes[bit] > 0:
            out |= np.uint64(1) << np.uint64(bit)
    return out


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
