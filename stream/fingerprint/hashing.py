"""Deterministic 64-bit hashing: mmh3 for tokens, MurmurHash3's fmix64 finalizer for shingles.

Seed 003 asks for a fast 64-bit string hash; we use MurmurHash3 (mmh3, x64 variant) for word
features. Character/word shingles are hashed in numpy: a polynomial over the units' hashes, then
fmix64 (the MurmurHash3 64-bit finalizer) so every output bit depends on every input bit. Both are
pure integer arithmetic: the same text gives the same hashes in every process and machine.
"""

from __future__ import annotations

from functools import lru_cache

import mmh3
import numpy as np

U64 = np.uint64
_C1 = U64(0xFF51AFD7ED558CCD)
_C2 = U64(0xC4CEB9FE1A85EC53)
_MUL = U64(0x9E3779B97F4A7C15)  # golden-ratio multiplier for the shingle polynomial


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3 fmix64 over a uint64 array (wrapping arithmetic is intended)."""
    x = x.astype(U64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> U64(33)
        x *= _C1
        x ^= x >> U64(33)
        x *= _C2
        x ^= x >> U64(33)
    return x


@lru_cache(maxsize=1 << 18)
def token_hash(token: str) -> int:
    """64-bit mmh3 of a token; cached because a vocabulary repeats across documents."""
    return mmh3.hash64(token, signed=False)[0]


def token_hashes(tokens: list[str]) -> np.ndarray:
    return np.fromiter((token_hash(t) for t in tokens), dtype=U64, count=len(tokens))


def ngram_hashes(unit_hashes: np.ndarray, n: int) -> np.ndarray:
    """Hashes of every run of ``n`` consecutive units (fewer than n units: one hash of them all)."""
    m = len(unit_hashes)
    if m == 0:
        return np.empty(0, dtype=U64)
    if m < n:
        n = m
    acc = np.zeros(m - n + 1, dtype=U64)
    with np.errstate(over="ignore"):
        for j in range(n):
            acc = acc * _MUL + unit_hashes[j : m - n + 1 + j]
    return fmix64(acc ^ U64(n))


def char_codes(text: str) -> np.ndarray:
    """Code points of ``text`` as uint64 (UTF-32 view: no per-character Python work)."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(U64)


def code_ngram_hashes(codes: np.ndarray, n: int) -> np.ndarray:
    """Character n-gram hashes from code points already at hand (``char_codes``)."""
    return ngram_hashes(fmix64(codes + U64(0x1F)), n)


def char_ngram_hashes(text: str, n: int) -> np.ndarray:
    return code_ngram_hashes(char_codes(text), n)
