"""Shingle sets: the features the verification sketch and the LSH bands are built from.

Shingles and their Jaccard resemblance after Broder 1997. We use exactly the shingling the ground
truth uses, so verified similarity estimates the quantity being judged:
- text of which at least ``cjk_share`` (default 0.05) of the non-space characters are Han, kana or
  Hangul: character 5-grams of the text with all whitespace removed. Chinese technical text with
  commands, options and code is Chinese text, whose ground truth is character 5-grams, even when
  most of its characters are Latin (docs/text.md, "Shingles");
- otherwise: 3-grams of ``\\w+`` words.
"""

from __future__ import annotations

import re

import numpy as np
from numba import njit

from stream.fingerprint.hashing import char_codes, code_ngram_hashes, ngram_hashes, token_hashes
from stream.fingerprint.schema import FingerprintConfig

_WORD = re.compile(r"\w+")
CJK_SHARE = FingerprintConfig.cjk_share  # at least this share of non-space characters are CJK -> characters


@njit(cache=True)
def _cjk_share_of_codes(codes: np.ndarray) -> float:
    if len(codes) == 0:
        return 0.0
    cjk = 0
    for c in codes:  # Han (incl. ext. A, compatibility, ext. B+), kana, Hangul
        if (0x3400 <= c <= 0x9FFF or 0xF900 <= c <= 0xFAFF or 0x20000 <= c <= 0x2FFFF
                or 0x3040 <= c <= 0x30FF or 0xAC00 <= c <= 0xD7AF):
            cjk += 1
    return cjk / len(codes)


def _without_space(text: str) -> str:
    # str.split() and the regex \s agree on what whitespace is (str.isspace); split is ~8x faster
    return "".join(text.split())


def cjk_share(text: str) -> float:
    return _cjk_share_of_codes(char_codes(_without_space(text)))


def shingle_unit(text: str, share: float = CJK_SHARE) -> str:
    """'char' or 'word': how this text is shingled."""
    return "char" if _is_char_text(char_codes(_without_space(text)), share) else "word"


@njit(cache=True)
def _is_char_text(codes: np.ndarray, share: float) -> bool:
    # "some CJK and at least ``share`` of it": an empty or CJK-free text is shingled by words even
    # when ``share`` is 0
    cjk = _cjk_share_of_codes(codes)
    return cjk > 0.0 and cjk >= share


def sorted_unique(hashes: np.ndarray) -> np.ndarray:
    """``np.unique`` of a uint64 array (numpy 2's hash-based unique is 4x slower than this here)."""
    return _dedup_sorted(np.sort(hashes))  # numpy's sort: 12 us for 1,000 values, numba's 20 us


@njit(cache=True)
def _dedup_sorted(s: np.ndarray) -> np.ndarray:
    n = 0
    for i in range(len(s)):
        if i == 0 or s[i] != s[n - 1]:
            s[n] = s[i]
            n += 1
    return s[:n]


def shingle_hashes(text: str, char_n: int = 5, word_n: int = 3, share: float = CJK_SHARE) -> np.ndarray:
    """Sorted unique 64-bit hashes of the text's shingle set (empty for empty text)."""
    compact = _without_space(text)
    codes = char_codes(compact)
    if _is_char_text(codes, share):
        hashes = code_ngram_hashes(codes, char_n)
    else:
        hashes = ngram_hashes(token_hashes(_WORD.findall(text)), word_n)
    return sorted_unique(hashes)
