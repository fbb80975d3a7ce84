"""Shingle set -> verification sketch + LSH bands (+ shingle SimHash) in one compiled call.

The same arithmetic as ``shingle_hashes`` -> ``make_sketch`` / ``lsh_bands`` / ``simhash`` (it calls
the same kernels), fused so a document costs one numba dispatch instead of ~12 and no intermediate
arrays cross into Python (146 -> 102 us per document; docs/fingerprint.md). Two things differ in
method, not in result:
- the shingle set is deduplicated with a hash set instead of sorted: the OPH minima, the set size,
  the exact sketch (``np.unique``, sorted) and an integer vote do not depend on the order;
- whitespace is dropped by ``segment.is_space`` on code points: ``str.isspace``, what ``str.split``
  uses (tested on every code point);
- the words of word-shingled text are found on code points by ``segment.char_classes`` (re's ``\\w``:
  ``str.isalnum`` or "_") and hashed here (MurmurHash3 x64 of their UTF-8), so every text, of
  either shingle unit, is one call and a scan loads no other kernel for it.
``tests/fingerprint/test_fused.py`` compares it with the separate functions on random texts.
numba's on-disk cache of ``_document`` does not notice edits to the kernels it calls in other modules:
after changing one, delete ``stream/**/__pycache__/*.nb[ic]``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from stream.fingerprint.bands import _SEED, EXTENSION_ROWS, _band_keys
from stream.fingerprint.hashing import _CODE_SALT, _fmix_array, _ngrams, murmur3_128, utf8_into
from stream.fingerprint.minhash import _oph
from stream.fingerprint.shingles import CJK_SHARE, _is_char_text
from stream.fingerprint.sketch import (
    _KIND_BBIT,
    _KIND_EXACT,
    NO_SAMPLE,
    SampleSpec,
    Sketch,
    SketchSpec,
    _low_bits,
    hash_sample,
)
from stream.fingerprint.words import word_simhash, word_tables
from stream.text.normal_form import exact_form_into
from stream.text.segment import ALNUM, char_classes, code_points, is_space


class ShingleParts(NamedTuple):
    sketch: Sketch
    bands: list[tuple[int, int]]
    size: int  # distinct shingles
    simhash: int  # binary SimHash of the shingle set (0 unless asked for, or for an empty set)


@njit(cache=True)
def _compact(codes: np.ndarray) -> np.ndarray:
    out = np.empty(len(codes), dtype=np.uint64)
    n = 0
    for c in codes:
        if not is_space(c):
            out[n] = c
            n += 1
    return out[:n]


@njit(cache=True)
def unique_hashes(hashes: np.ndarray) -> np.ndarray:
    # open addressing on the hash's low bits (shingle hashes are fmix64 outputs: uniform);
    # slots hold 1 + the index of the value in ``out``, 0 = free
    size = 16
    while size < 2 * len(hashes):
        size *= 2
    mask = size - 1
    umask = np.uint64(mask)  # uint64 & int64 is float64 in numba
    slots = np.zeros(size, dtype=np.int32)
    out = np.empty(len(hashes), dtype=np.uint64)
    n = 0
    for h in hashes:
        s = np.int64(h & umask)
        while True:
            k = slots[s]
            if k == 0:
                out[n] = h
                n += 1
                slots[s] = n
                break
            if out[k - 1] == h:
                break
            s = (s + 1) & mask
    return out[:n]


@njit(cache=True)
def _word_hashes(codes: np.ndarray, classes: np.ndarray) -> np.ndarray:
    # token_hashes(re.findall(r"\w+", text)): re's \w is str.isalnum or "_"; mmh3 of each word's UTF-8
    out = np.empty((len(codes) + 1) // 2, dtype=np.uint64)
    scratch = np.empty(4 * len(codes), dtype=np.uint8)
    n, i = 0, 0
    while i < len(codes):
        if not (classes[codes[i]] & ALNUM or codes[i] == 0x5F):
            i += 1
            continue
        j = i + 1
        while j < len(codes) and (classes[codes[j]] & ALNUM or codes[j] == 0x5F):
            j += 1
        out[n], _ = murmur3_128(scratch, utf8_into(codes, i, j, scratch))
        n += 1
        i = j
    return out[:n]


@njit(cache=True)
def _shingles(codes: np.ndarray, classes: np.ndarray, share: float, char_n: int, word_n: int) -> np.ndarray:
    # shingle_hashes(text) unsorted: character n-grams of the text without whitespace, or word n-grams
    compact = _compact(codes)
    if _is_char_text(compact, share):
        return unique_hashes(_ngrams(_fmix_array(compact, _CODE_SALT), char_n))
    return unique_hashes(_ngrams(_word_hashes(codes, classes), word_n))


@njit(cache=True)
def _parts(codes: np.ndarray, classes: np.ndarray, share: float, char_n: int, word_n: int, budget: int,
           bins: int, bits: int, exact_shingles: int, bands: int, rows: int, band_bins: int, vote: bool,
           sample: tuple[int, int, int]) -> tuple[Any, ...]:
    # -> (set size, sketch kind, exact data, b-bit data, band values, extensions, simhash, hash sample,
    # its bound); sample: SampleSpec's (from_shingles, below, most)
    shingles = _shingles(codes, classes, share, char_n, word_n)
    size = len(shingles)
    h32 = np.empty(size, dtype=np.uint32)
    for i in range(size):
        h32[i] = shingles[i] >> np.uint64(32)
    # make_sketch: exact when the 32-bit hashes fit the budget or there are at most exact_shingles,
    # else b-bit OPH of fmix64(h32)
    exact, bbit = np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.uint8)
    kept, below = np.empty(0, dtype=np.uint32), 0
    if size * 4 <= budget or size <= exact_shingles:
        kind, exact = _KIND_EXACT, np.unique(h32)
    else:
        kind, bbit = _KIND_BBIT, _low_bits(_oph(h32, bins, np.uint64(0), True), bits)
        kept, below = hash_sample(h32, size, sample[0], sample[1], sample[2])
    # lsh_bands: seeded OPH of the 64-bit shingle hashes
    if bands == 0 or size == 0:
        values, ext = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64)
    else:
        values, ext = _band_keys(_oph(shingles, band_bins, np.uint64(_SEED), False), bands, rows)
    sim = np.uint64(0)
    if vote and size:
        ones = np.zeros(64, dtype=np.int64)  # integer votes: the same as simhash()'s float sums of +-1
        for h in shingles:
            for bit in range(64):
                ones[bit] += (h >> np.uint64(bit)) & np.uint64(1)
        for bit in range(64):
            if 2 * ones[bit] > size:
                sim |= np.uint64(1) << np.uint64(bit)
    return size, kind, exact, bbit, values, ext, sim, kept, below


@njit(cache=True)
def _prefix_bands(codes: np.ndarray, classes: np.ndarray, share: float, char_n: int, word_n: int, bins: int,
                  bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    # lsh_bands(shingle_hashes(text[:len(codes)])) as (values, extensions)
    shingles = _shingles(codes, classes, share, char_n, word_n)
    if len(shingles) == 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64)
    return _band_keys(_oph(shingles, bins, np.uint64(_SEED), False), bands, rows)


def _pairs(values: np.ndarray, ext: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(values.tolist(), ext.tolist(), strict=True))


def prefix_bands(codes: np.ndarray, *, char_n: int = 5, word_n: int = 3, share: float = CJK_SHARE,
                 bands: int = 8, rows: int = 5) -> list[tuple[int, int]]:
    """``lsh_bands(shingle_hashes(text), bands, rows)`` for ``codes = code_points(text)``, in one compiled call."""
    bins = 1 << (bands * (rows + EXTENSION_ROWS) - 1).bit_length()
    return _pairs(*_prefix_bands(codes, char_classes(), float(share), char_n, word_n, bins, bands, rows))


@njit(cache=True)
def _content_hash(codes: np.ndarray, classes: np.ndarray) -> tuple[np.uint64, np.uint64]:
    exact = np.empty(len(codes), dtype=np.uint32)
    n = exact_form_into(codes, classes, exact)
    data = np.empty(4 * n, dtype=np.uint8)
    return murmur3_128(data, utf8_into(exact, 0, n, data))


def content_hash(codes: np.ndarray) -> bytes:
    """mmh3 x64 128 of the UTF-8 of the exact form (``exact_form_into``) of a normalized text, given as
    ``codes = code_points(text)``."""
    h1, h2 = _content_hash(codes, char_classes())
    return int(h1).to_bytes(8, "little") + int(h2).to_bytes(8, "little")


def shingle_parts(text: str | np.ndarray, spec: SketchSpec, *, char_n: int = 5, word_n: int = 3,
                  share: float = CJK_SHARE, exact_shingles: int = 0, bands: int = 16, rows: int = 5,
                  vote: bool = False, sample: SampleSpec = NO_SAMPLE) -> ShingleParts:
    """``make_sketch`` (with ``exact_shingles`` and ``sample``), ``lsh_bands`` and (``vote``) ``simhash``
    of ``shingle_hashes(text)``; ``text`` may be given as its ``code_points``."""
    band_bins = 1 << (bands * (rows + EXTENSION_ROWS) - 1).bit_length() if bands else 1
    codes = code_points(text) if isinstance(text, str) else text
    out = _parts(codes, char_classes(), float(share), char_n, word_n, spec.budget, spec.bins, spec.bits, exact_shingles,
                 bands, rows, band_bins, vote, _sample_args(sample))
    return _shingle_parts(*out)


def _sample_args(sample: SampleSpec) -> tuple[int, int, int]:
    return sample.from_shingles, sample.below, sample.most


def _shingle_parts(size: int, kind: int, exact: np.ndarray, bbit: np.ndarray, values: np.ndarray, ext: np.ndarray,
                   sim: np.uint64, kept: np.ndarray, below: int) -> ShingleParts:
    sketch = Sketch(kind, exact if kind == _KIND_EXACT else bbit, size, kept if below else None, int(below))
    return ShingleParts(sketch, _pairs(values, ext), size, int(sim))


class DocumentParts(NamedTuple):
    shingles: ShingleParts
    prefix: list[tuple[int, int]] | None  # None: not computed (no bands, or no shingles)
    content_hash: bytes
    words: tuple[int, int] | None  # (features, SimHash) of the compiled word path, when asked for


@njit(cache=True)
def _document(codes: np.ndarray, classes: np.ndarray, share: float, char_n: int, word_n: int, budget: int,
              bins: int, bits: int, exact_shingles: int, bands: int, rows: int, band_bins: int, vote: bool,
              sample: tuple[int, int, int], prefix_chars: int, prefix_bins: int, prefix_count: int, prefix_rows: int,
              words: bool, table: np.ndarray, root: np.ndarray, log_freqs: np.ndarray, log_total: float,
              features: np.ndarray, stop: np.ndarray, binary: bool) -> tuple[Any, ...]:
    # _parts + _prefix_bands + _content_hash + word_simhash in one call (one dispatch, one cached kernel)
    parts = _parts(codes, classes, share, char_n, word_n, budget, bins, bits, exact_shingles, bands, rows, band_bins,
                   vote, sample)
    prefixed = parts[0] > 0 and bands > 0 and prefix_count > 0
    pv, pe = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64)
    if prefixed:
        pv, pe = _prefix_bands(codes[:prefix_chars], classes, share, char_n, word_n, prefix_bins, prefix_count,
                               prefix_rows)
    h1, h2 = _content_hash(codes, classes)
    n_words, sim_words = 0, np.uint64(0)
    if words:
        n_words, sim_words = word_simhash(codes, classes, table, root, log_freqs, log_total, features, stop, binary)
    return parts, prefixed, pv, pe, h1, h2, n_words, sim_words


def document_parts(codes: np.ndarray, spec: SketchSpec, *, char_n: int = 5, word_n: int = 3, share: float = CJK_SHARE,
                   exact_shingles: int = 0, bands: int = 16, rows: int = 5, vote: bool = False, prefix_chars: int = 400,
                   prefix_count: int = 8, prefix_rows: int = 5, words: str | None = None,
                   sample: SampleSpec = NO_SAMPLE) -> DocumentParts:
    """``shingle_parts`` (with ``exact_shingles`` and ``sample``), ``prefix_bands`` (over ``codes[:prefix_chars]``, when
    there are bands and shingles), ``content_hash`` and (``words``: "tf" or "binary") ``compiled_word_simhash`` of a
    normalized text (``codes = code_points(text)``) in one compiled call."""
    band_bins = 1 << (bands * (rows + EXTENSION_ROWS) - 1).bit_length() if bands else 1
    prefix_bins = 1 << (prefix_count * (prefix_rows + EXTENSION_ROWS) - 1).bit_length() if prefix_count else 1
    tables = word_tables()
    trie = tables.trie
    out = _document(codes, tables.classes, float(share), char_n, word_n, spec.budget, spec.bins, spec.bits,
                    exact_shingles, bands, rows, band_bins, vote, _sample_args(sample), prefix_chars, prefix_bins,
                    prefix_count, prefix_rows, words is not None, trie.table, trie.root, trie.log_freqs,
                    trie.log_total, tables.features, tables.stop_hashes, words == "binary")
    parts, prefixed, pv, pe, h1, h2, n_words, sim_words = out
    return DocumentParts(_shingle_parts(*parts), _pairs(pv, pe) if prefixed else None,
                         int(h1).to_bytes(8, "little") + int(h2).to_bytes(8, "little"),
                         (int(n_words), int(sim_words)) if words is not None else None)
