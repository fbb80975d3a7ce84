"""Deterministic 64-bit hashing: mmh3 for tokens, MurmurHash3's fmix64 finalizer for shingles.

Li & Han ask for a fast 64-bit string hash (CityHash there); we use MurmurHash3 (mmh3, x64 variant)
for word features. Character/word shingles are hashed by a polynomial over the units' hashes, then fmix64
(the MurmurHash3 64-bit finalizer) so every output bit depends on every input bit. Both are pure
integer arithmetic: the same text gives the same hashes in every process and machine.

The array loops are compiled with numba: as ~20 numpy calls of a few microseconds each, a
document's ~1,000 shingles cost more in calls than in arithmetic (docs/decisions/fingerprint-compiled-paths.md).
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


_M1, _M2 = U64(0x87C37B91114253D5), U64(0x4CF5AD432745937F)


@njit(cache=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True)
def utf8_into(codes: np.ndarray, start: int, end: int, out: np.ndarray) -> int:
    """UTF-8 bytes of ``codes[start:end]`` into ``out`` (4 bytes per code point suffice); returns the length."""
    n = 0
    for i in range(start, end):
        c = codes[i]
        if c < 0x80:
            out[n] = c
            n += 1
        elif c < 0x800:
            out[n], out[n + 1] = 0xC0 | (c >> 6), 0x80 | (c & 0x3F)
            n += 2
        elif c < 0x10000:
            out[n], out[n + 1], out[n + 2] = 0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)
            n += 3
        else:
            out[n], out[n + 1] = 0xF0 | (c >> 18), 0x80 | ((c >> 12) & 0x3F)
            out[n + 2], out[n + 3] = 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)
            n += 4
    return n


@njit(cache=True)
def murmur3_128(data: np.ndarray, length: int) -> tuple[np.uint64, np.uint64]:
    """MurmurHash3 x64 128 (seed 0) of ``data[:length]`` (uint8): ``mmh3.hash64(bytes, signed=False)``,
    and ``mmh3.hash_bytes`` as the two halves little-endian."""
    h1, h2 = U64(0), U64(0)
    blocks = length // 16
    for b in range(blocks):
        k1, k2 = U64(0), U64(0)
        for j in range(8):
            k1 |= U64(data[16 * b + j]) << U64(8 * j)
            k2 |= U64(data[16 * b + 8 + j]) << U64(8 * j)
        k1 *= _M1
        k1 = _rotl(k1, 31)
        k1 *= _M2
        h1 ^= k1
        h1 = _rotl(h1, 27)
        h1 += h2
        h1 = h1 * U64(5) + U64(0x52DCE729)
        k2 *= _M2
        k2 = _rotl(k2, 33)
        k2 *= _M1
        h2 ^= k2
        h2 = _rotl(h2, 31)
        h2 += h1
        h2 = h2 * U64(5) + U64(0x38495AB5)
    tail = 16 * blocks
    rest = length - tail
    k1, k2 = U64(0), U64(0)
    for j in range(rest - 1, 7, -1):
        k2 ^= U64(data[tail + j]) << U64(8 * (j - 8))
    if rest > 8:
        k2 *= _M2
        k2 = _rotl(k2, 33)
        k2 *= _M1
        h2 ^= k2
    for j in range(min(rest, 8) - 1, -1, -1):
        k1 ^= U64(data[tail + j]) << U64(8 * j)
    if rest > 0:
        k1 *= _M1
        k1 = _rotl(k1, 31)
        k1 *= _M2
        h1 ^= k1
    h1 ^= U64(length)
    h2 ^= U64(length)
    h1 += h2
    h2 += h1
    h1 = fmix(h1)
    h2 = fmix(h2)
    h1 += h2
    h2 += h1
    return h1, h2
