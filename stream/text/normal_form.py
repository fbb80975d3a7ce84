"""Text normalization applied before any feature is taken.

Rules, in order:
1. Unicode NFKC (compatibility forms folded: ligatures, circled digits, full-width forms, ...).
2. Full-width ASCII variants (U+FF01..U+FF5E) and the ideographic space (U+3000) -> half-width.
   NFKC already maps every one of them (tests/text/test_normalize.py checks all 95), so this rule
   needs no pass of its own (a separate scan would cost 10 of 60 us per 3 KB document).
3. Invisible format characters that web pages sprinkle into text (soft hyphen, zero-width
   space/joiners, word joiner, BOM) are removed, so they cannot hide a copy.
4. Case folding (``str.casefold``: also folds e.g. German sharp s to "ss").
5. Every whitespace run (``str.isspace``, the same set as regex ``\\s``) -> one space; stripped.

Fast path (``normalize_compiled``: what ``normalize`` uses for non-ASCII texts of 200+ characters;
``normalize_reference`` is the rules written out, one library call each): one compiled pass over
the code points replaces each character by its own NFKC (full-width forms, "…" -> "...") and applies
rules 3-5 with per-character tables (``str.casefold`` maps characters one by one). A character and its
NFKC have the same NFKD, so the mapped text has the NFKC of the input; when CPython's
``unicodedata.is_normalized`` says the mapped text is NFKC, it *is* NFKC(text). Other text (e.g.
composing marks after a base letter) takes the reference path. 3 KB Chinese: ~15 us against ~50 for the
reference path.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import numpy as np
from numba import njit

from stream.text.segment import ALNUM, code_points, decode_code_points, is_space
from stream.text.table_cache import cached_arrays

_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")
TABLE_LIMIT = 0x30000  # above: every character is its own NFKC and casefold (a test checks)
_SHORT = 200  # shorter texts take the reference path (the kernel call costs ~5 us, 26-50 ns per character less)
_POOL = 0x80000000  # table value >= _POOL: several characters, at pool[value - _POOL] (length first)


def collapse_whitespace(text: str) -> str:
    """Every whitespace run -> one space, ends stripped (str.split is the fastest way in CPython)."""
    return " ".join(text.split())


@njit(cache=True)
def exact_form_into(codes: np.ndarray, classes: np.ndarray, out: np.ndarray) -> int:
    """What "the same content" compares, on the code points of a normalized text (classes from
    ``segment.char_classes()``), into ``out``; returns the length. A space stays only between two
    letters or digits of a spaced script (alphanumeric, below the CJK blocks at U+2E80): two texts that
    differ only by line breaks inside Chinese text, or around punctuation, have the same exact form, as
    they have the same shingles. tests/reference/exact_form.py writes the rule out."""
    n, last = 0, len(codes) - 1
    for i in range(len(codes)):
        c = codes[i]
        # the neighbours' classes only for a space (read for every character, they were 2/3 of the time)
        if c == 0x20 and not (0 < i < last and _is_spaced(codes[i - 1], classes) and _is_spaced(codes[i + 1], classes)):
            continue
        out[n] = c
        n += 1
    return n


@njit(cache=True, inline="always")
def _is_spaced(c: int, classes: np.ndarray) -> bool:
    return c < 0x2E80 and (classes[c] & ALNUM) != 0


def normalize_reference(text: str) -> str:
    """The rules above, one library call each (what ``normalize`` computes faster)."""
    text = unicodedata.normalize("NFKC", text)  # also full-width -> half-width (rule 2)
    if _INVISIBLE.search(text):
        text = _INVISIBLE.sub("", text)
    return collapse_whitespace(text.casefold())


@cache
def code_point_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(NFKC, casefold, pool) per code point below TABLE_LIMIT: the one character it maps to, or
    _POOL + where its characters are in ``pool``; built from this Python's unicodedata once (~100 ms),
    then loaded from disk (``stream.text.table_cache``)."""
    nfkc, fold, pool = cached_arrays("normalize-v1", _build_code_point_tables)
    return nfkc, fold, pool


def _build_code_point_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nfkc = np.arange(TABLE_LIMIT, dtype=np.uint32)
    fold = np.arange(TABLE_LIMIT, dtype=np.uint32)
    pool: list[int] = []

    def put(table: np.ndarray, c: int, chars: str) -> None:
        if len(chars) == 1:
            table[c] = ord(chars)
        else:
            table[c] = _POOL + len(pool)
            pool.extend([len(chars), *map(ord, chars)])

    for c in range(TABLE_LIMIT):
        ch = chr(c)
        if unicodedata.decomposition(ch):  # no decomposition mapping: its own NFKC
            put(nfkc, c, unicodedata.normalize("NFKC", ch))
        if (f := ch.casefold()) != ch:
            put(fold, c, f)
    return nfkc, fold, np.array(pool, dtype=np.uint32)


@njit(cache=True, inline="always")
def _invisible(c: int) -> bool:
    return c == 0xAD or 0x200B <= c <= 0x200D or c == 0x2060 or c == 0xFEFF  # as _INVISIBLE


@njit(cache=True, inline="always")
def _push(out: np.ndarray, m: int, space: bool, start: int, g: int) -> tuple[int, bool]:
    # rule 5 for one character of the casefolded text: a run of spaces -> one, none at the ends
    if is_space(g):
        return m, m > start
    if space:
        out[m] = 0x20
        m += 1
    out[m] = g
    return m + 1, False


@njit(cache=True)
def _emit(out: np.ndarray, m: int, space: bool, start: int, c: int, fold: np.ndarray, pool: np.ndarray
          ) -> tuple[int, bool]:
    # rules 3-5 for one character of the NFKC text (the general case: not inlined, it is rare)
    if _invisible(c):
        return m, space
    f = fold[c] if c < len(fold) else c
    if f < _POOL:
        return _push(out, m, space, start, f)
    at = f - _POOL
    for i in range(at + 1, at + 1 + pool[at]):
        m, space = _push(out, m, space, start, pool[i])
    return m, space


@njit(cache=True)
def normalize_kernel(codes: np.ndarray, nfkc: np.ndarray, fold: np.ndarray, pool: np.ndarray
          ) -> tuple[np.ndarray, int, int, bool]:
    # -> (buffer, n, m, changed): the text with each character replaced by its NFKC in [0, n) (what
    # NFKC must leave unchanged for the result to hold), the result of rules 3-5 on it in
    # [n, n + m), and whether the first part differs from ``codes``
    start = 0  # the mapped text's length: a first pass, so the buffer is not 18x the text (U+FDFA)
    for c0 in codes:
        c = nfkc[c0] if c0 < len(nfkc) else c0
        start += 1 if c < _POOL else pool[c - _POOL]
    out = np.empty(4 * start, dtype=np.uint32)  # a casefold is at most 3 characters
    n, m, space, changed = 0, start, False, False
    for c0 in codes:
        c = nfkc[c0] if c0 < len(nfkc) else c0
        if c >= _POOL:  # several characters
            changed = True
            at = c - _POOL
            for i in range(at + 1, at + 1 + pool[at]):
                out[n] = pool[i]
                n += 1
                m, space = _emit(out, m, space, start, pool[i], fold, pool)
            continue
        # nearly always: one character, whose casefold is one character (_push is inlined)
        changed |= c != c0
        out[n] = c
        n += 1
        f = fold[c] if c < len(fold) else c
        if f >= _POOL or _invisible(c):
            m, space = _emit(out, m, space, start, c, fold, pool)
        else:
            m, space = _push(out, m, space, start, f)
    return out, n, m - n, changed


def normalize(text: str) -> str:
    """NFKC, full-width -> half-width, invisible characters dropped, casefold, whitespace collapsed."""
    if len(text) < _SHORT or text.isascii():
        # the library calls win here: ~1 us for a title (the kernel call costs ~5), and CPython's
        # NFKC, casefold and split have fast paths for ASCII
        return normalize_reference(text)
    return normalize_compiled(text)


def normalize_compiled(text: str) -> str:
    """``normalize`` by the compiled pass (the reference path when NFKC needs more than it does)."""
    codes = code_points(text)
    buf, n, m, changed = normalize_kernel(codes, *code_point_tables())
    if unicodedata.is_normalized("NFKC", decode_code_points(buf[:n]) if changed else text):
        return decode_code_points(buf[n : n + m])
    return normalize_reference(text)
