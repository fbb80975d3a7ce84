"""Deterministic 64-bit hashing: mmh3 for tokens, MurmurHash3's fmix64 finalizer for shingles.

Li & Han ask for a fast 64-bit string hash (CityHash there); we use MurmurHash3 (mmh3, x64 variant)
for word features. Character/word shingles are hashed by a polynomial over the units' hashes, then fmix64
(the MurmurHash3 64-bit finalizer) so every output bit depends on every input bit. Both are pure
integer arithmetic: the same text gives the same hashes in every process and machine.

The array loops are compiled with numba: as ~20 numpy calls of a few microseconds each, a
document's ~1,000 shingles cost more in calls than in arithmetic (docs/fingerprint.md, "Decisions").
"""

from __future__ import annotations

from collections.abc import Callable

import mmh3
import numpy as np
from numba import njit

from stream.text.segment import code_points

U64 = np.uint64
_C1 = U64(0xFF51AFD7ED558CCD)
_C2 = U64(0xC4CEB9FE1A85EC53)
GOLDEN = U64(0x9E3779B97F4A7C15)  # golden-ratio multiplier: shingle and band polynomials, densification
_S33 = U64(33)
_CODE_SALT = U64(0x1F)


@njit(cache=True, inline="always")
def fmix(x: np.uint64) -> np.uint64:
    """MurmurHash3 fmix64 of one uint64 (wrapping arithmetic is intended)."""
    x ^= x >> _S33
    x *= _C1
    x ^= x >> _S33
    x *= _C2
    x ^= x >> _S33
    return x


@njit(cache=True)
def _fmix_array(x: np.ndarray, add: np.uint64) -> np.ndarray:
    out = np.empty(len(x), dtype=np.uint64)
    for i in range(len(x)):
        out[i] = fmix(x[i] + add)
    return out


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3 fmix64 over a uint64 array."""
    return _fmix_array(np.ascontiguousarray(x, dtype=U64), U64(0))


def hash_token(token: str) -> int:
    """64-bit mmh3 of a token (the first half of MurmurHash3 x64 128 of its UTF-8 bytes)."""
    return mmh3.hash64(token, signed=False)[0]


MEMO_LIMIT = 1 << 18  # distinct tokens a memo remembers (the jieba dictionary has ~350k words)


class TokenMemo(dict[str, int]):
    """token -> ``compute(token)``, cached because a vocabulary repeats across documents; cleared
    at ``MEMO_LIMIT`` entries. A dict read by map() instead of an lru_cache'd function called from a
    generator: ~3x less per token (~400 words per 3 KB English/code document)."""

    def __init__(self, compute: Callable[[str], int]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, token: str) -> int:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        value = self[token] = self.compute(token)
        return value


_TOKEN_HASHES = TokenMemo(hash_token)
token_hash = _TOKEN_HASHES.__getitem__


def token_hashes(tokens: list[str]) -> np.ndarray:
    return np.fromiter(map(_TOKEN_HASHES.__getitem__, tokens), dtype=U64, count=len(tokens))


@njit(cache=True)
def _ngrams(unit_hashes: np.ndarray, n: int) -> np.ndarray:
    m = len(unit_hashes)
    if m == 0:
        return np.empty(0, dtype=np.uint64)
    if m < n:
        n = m
    out = np.empty(m - n + 1, dtype=np.uint64)
    salt = np.uint64(n)
    for i in range(m - n + 1):
        acc = np.uint64(0)
        for j in range(n):
            acc = acc * GOLDEN + unit_hashes[i + j]
        out[i] = fmix(acc ^ salt)
    return out


def ngram_hashes(unit_hashes: np.ndarray, n: int) -> np.ndarray:
    """Hashes of every run of ``n`` consecutive units (fewer than n units: one hash of them all)."""
    return _ngrams(np.ascontiguousarray(unit_hashes, dtype=U64), n)


def char_codes(text: str) -> np.ndarray:
    """Code points of ``text`` as uint64."""
    return code_points(text).astype(U64)


def code_ngram_hashes(codes: np.ndarray, n: int) -> np.ndarray:
    """Character n-gram hashes from code points already at hand (``char_codes``)."""
    return _ngrams(_fmix_array(codes, _CODE_SALT), n)


def char_ngram_hashes(text: str, n: int) -> np.ndarray:
    return code_ngram_hashes(char_codes(text), n)
