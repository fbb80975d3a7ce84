"""Word features of the SimHash: tokens -> (64-bit feature hashes, weights).

Count weightings (``tf``: w = n(x); ``binary``: w = 1) need no token strings after hashing, so they
take a fast path: each token is looked up once in a memo of token -> mmh3 hash (0 for tokens that are
not features: stop words, punctuation), and the counting is compiled (numba). On 3 KB Chinese
documents this is ~50 us instead of ~170 us for Counter + filter + weights dict + hashing; the
result is the same set of (hash, weight) pairs, in another order (the vote does not depend on it).

TF-IDF weightings (``tfidf``, ``tfidf_len``, ``pos_weighted`` without POS tags) with a fixed table
(``JiebaIdf``) take a like path: a memo maps each token to a row of arrays holding what
``weigh`` would compute from the string (hash, IDF, 1 + length relevance, length, marker word), or
to row 0 when the token is dropped (not a feature, or unknown to the table); a compiled kernel then
counts the rows in first-occurrence order and does ``weigh``'s float operations in ``weigh``'s
order, so the weights and the float vote are bit for bit the same. A streaming IDF changes with
every document, so it stays on ``weigh``.
Every other weighting goes through ``stream.text.weights.weigh``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Sequence

import numpy as np
from numba import njit

from stream.fingerprint.hashing import MEMO_LIMIT, U64, TokenMemo, hash_token, token_hashes
from stream.fingerprint.simhash import _vote
from stream.text.idf import IdfTable, JiebaIdf, jieba_idf
from stream.text.stopwords import STOPWORDS
from stream.text.weights import (
    MARKER_FACTOR,
    MARKER_WORDS,
    STOPWORDS_BUT_MARKERS,
    TITLE_FACTOR,
    is_feature,
    token_relevance,
    weigh,
)

COUNT_WEIGHTINGS = ("tf", "binary")
# token -> mmh3 64-bit hash, or 0 when the token is not a feature (a real hash is 0 with p = 2^-64)
_FEATURE_HASHES = TokenMemo(lambda token: hash_token(token) if is_feature(token) else 0)


@njit(cache=True)
def count_runs(s: np.ndarray, binary: bool) -> tuple[np.ndarray, np.ndarray]:
    # s: sorted hashes (numpy sorts faster than numba); runs of one hash -> (hash, count)
    keys = np.empty(len(s), dtype=np.uint64)
    counts = np.zeros(len(s))
    n = 0
    for h in s:
        if h == 0:
            continue
        if n == 0 or keys[n - 1] != h:
            keys[n] = h
            n += 1
        counts[n - 1] = 1.0 if binary else counts[n - 1] + 1.0
    return keys[:n], counts[:n]


@njit(cache=True)
def count_and_vote(s: np.ndarray, binary: bool) -> tuple[int, np.uint64]:
    # count_runs + simhash's vote in one pass over the sorted hashes: (distinct features, SimHash).
    # Integer votes: simhash()'s float sums of integer weights are exact, so the bits are the same.
    votes = np.zeros(64, dtype=np.int64)
    n, i = 0, 0
    while i < len(s):
        h = s[i]
        j = i + 1
        while j < len(s) and s[j] == h:
            j += 1
        if h != 0:
            n += 1
            w = 1 if binary else j - i
            for bit in range(64):
                if (h >> np.uint64(bit)) & np.uint64(1):
                    votes[bit] += w
                else:
                    votes[bit] -= w
        i = j
    out = np.uint64(0)
    for bit in range(64):
        if votes[bit] > 0:
            out |= np.uint64(1) << np.uint64(bit)
    return n, out


def count_simhash(tokens: Sequence[str], scheme: str) -> tuple[int, int]:
    """(number of features, SimHash) of ``word_features(tokens, scheme)`` for a count weighting,
    without the arrays (one compiled call instead of three)."""
    hashes = np.fromiter(map(_FEATURE_HASHES.__getitem__, tokens), dtype=U64, count=len(tokens))
    hashes.sort()  # in place: np.sort copies, behind a Python-level wrapper
    n, sim = count_and_vote(hashes, scheme == "binary")
    return n, int(sim)


IDF_WEIGHTINGS = ("tfidf", "tfidf_len", "pos_weighted")
_SCHEME_CODE = {"tfidf": 0, "tfidf_len": 1, "pos_weighted": 2}


class _IdfRows(dict[str, int]):
    """token -> row of the arrays below, or 0 when ``weigh`` drops the token (stop word,
    punctuation, unknown to the IDF table). One per (fixed IDF table, stop list)."""

    # per row: feature hash, IDF, 1 + length relevance, length, marker word; the kernel's scratch:
    # slot (-1 or the row's place in the document) and title flags, both cleared after each call
    hashes: np.ndarray
    idf: np.ndarray
    len_factor: np.ndarray
    length: np.ndarray
    marker: np.ndarray
    slot: np.ndarray
    title: np.ndarray
    _NAMES = ("hashes", "idf", "len_factor", "length", "marker", "slot", "title")

    def __init__(self, lookup: IdfTable, stop: Collection[str]) -> None:
        super().__init__()
        self.lookup = lookup.idf
        self.stop = stop
        self.lock = threading.Lock()  # the kernel's scratch is shared
        self.rows = 1
        self._allocate(1 << 12)

    def _allocate(self, size: int) -> None:
        grown = (np.zeros(size, U64), np.zeros(size), np.zeros(size), np.zeros(size, np.int64),
                 np.zeros(size, np.bool_), np.full(size, -1, np.int64), np.zeros(size, np.bool_))
        for name, array in zip(self._NAMES, grown, strict=True):
            if hasattr(self, name):
                old = getattr(self, name)
                array[: len(old)] = old
            setattr(self, name, array)

    def reset(self) -> None:
        # rows are reused: only between documents (a document's rows must stay put until its kernel runs)
        self.clear()
        self.rows = 1

    def __missing__(self, token: str) -> int:
        value = self.lookup(token) if is_feature(token, self.stop) else None
        if value is None:
            self[token] = 0
            return 0
        k = self.rows
        if k == len(self.hashes):
            self._allocate(2 * k)
        # exactly the values weigh() derives from the string
        self.hashes[k] = hash_token(token)
        self.idf[k] = value
        self.len_factor[k] = 1.0 + token_relevance(token)
        self.length[k] = len(token)
        self.marker[k] = token in MARKER_WORDS
        self.rows = k + 1
        self[token] = k
        return k


# per fixed table: (rows for tfidf/tfidf_len, rows for pos_weighted, whose stop list spares marker words)
_IDF_ROWS: weakref.WeakKeyDictionary[JiebaIdf, tuple[_IdfRows, _IdfRows]] = weakref.WeakKeyDictionary()


def _idf_rows(table: JiebaIdf, scheme: str) -> _IdfRows:
    pair = _IDF_ROWS.get(table)
    if pair is None:
        pair = _IDF_ROWS[table] = (_IdfRows(table, STOPWORDS), _IdfRows(table, STOPWORDS_BUT_MARKERS))
    return pair[scheme == "pos_weighted"]


@njit(cache=True)
def _idf_weights(ids: np.ndarray, title_ids: np.ndarray, scheme: int, hashes: np.ndarray, idf: np.ndarray,
                 len_factor: np.ndarray, length: np.ndarray, marker: np.ndarray, slot: np.ndarray,
                 title: np.ndarray, marker_factor: float, title_factor: float) -> tuple[np.ndarray, np.ndarray]:
    # weigh()'s tfidf / tfidf_len / pos_weighted (no POS tags) over rows: same features in the same order
    # (first occurrence, as Counter), same float operations in the same order (see stream.text.weights)
    order = np.empty(len(ids), dtype=np.int64)
    counts = np.zeros(len(ids), dtype=np.int64)
    n = 0
    for k in ids:
        if k == 0:
            continue
        p = slot[k]
        if p < 0:
            slot[k] = n
            order[n] = k
            counts[n] = 1
            n += 1
        else:
            counts[p] += 1
    total = 0
    for j in range(n):
        total += counts[j]
        slot[order[j]] = -1  # scratch back to all -1 for the next document
    if total == 0:
        total = 1
    for k in title_ids:
        title[k] = True
    shortest, longest = 0, 0
    if n:
        shortest, longest = length[order[0]], length[order[0]]
        for j in range(1, n):
            shortest = min(shortest, length[order[j]])
            longest = max(longest, length[order[j]])
    span = longest - shortest
    out_h = np.empty(n, dtype=np.uint64)
    out_w = np.empty(n)
    for j in range(n):
        k = order[j]
        w = counts[j] / total * idf[k]  # _tf_idf: c / total * v
        if scheme == 1:
            w = w * len_factor[k]
        elif scheme == 2:
            factor = 1.0 + ((length[k] - shortest) / span if span else 0.0)
            if marker[k]:
                factor *= marker_factor
            if title[k]:
                factor *= title_factor
            w = w * factor
        out_h[j] = hashes[k]
        out_w[j] = w
    for k in title_ids:
        title[k] = False
    return out_h, out_w


@njit(cache=True)
def _idf_vote(ids: np.ndarray, title_ids: np.ndarray, scheme: int, hashes: np.ndarray, idf: np.ndarray,
              len_factor: np.ndarray, length: np.ndarray, marker: np.ndarray, slot: np.ndarray,
              title: np.ndarray, marker_factor: float, title_factor: float) -> tuple[int, np.uint64]:
    # (features, SimHash): _idf_weights then simhash()'s vote, without returning to Python between them
    h, w = _idf_weights(ids, title_ids, scheme, hashes, idf, len_factor, length, marker, slot, title,
                        marker_factor, title_factor)
    if len(h) == 0:
        return 0, np.uint64(0)
    return len(h), _vote(h, w)


def _idf_call(kernel, tokens: Sequence[str], scheme: str, table: JiebaIdf,  # type: ignore[no-untyped-def]
              title_tokens: Collection[str]):
    rows = _idf_rows(table, scheme)
    with rows.lock:
        if len(rows) + len(tokens) + len(title_tokens) > MEMO_LIMIT:
            rows.reset()
        get = rows.__getitem__
        ids = np.fromiter(map(get, tokens), dtype=np.int64, count=len(tokens))
        if scheme == "pos_weighted" and title_tokens:
            title_ids = np.fromiter(map(get, title_tokens), dtype=np.int64, count=len(title_tokens))
        else:
            title_ids = np.empty(0, dtype=np.int64)
        return kernel(ids, title_ids, _SCHEME_CODE[scheme], rows.hashes, rows.idf, rows.len_factor,
                      rows.length, rows.marker, rows.slot, rows.title, MARKER_FACTOR, TITLE_FACTOR)


def has_idf_path(scheme: str, idf: IdfTable | None, pos: Sequence[str] | None = None) -> bool:
    """Whether ``idf_simhash`` / ``idf_features`` apply: a TF-IDF weighting with a fixed table
    (``JiebaIdf``; a streaming table changes per document) and no POS tags (the opt-in of ``pos_weighted``)."""
    return scheme in IDF_WEIGHTINGS and isinstance(idf, JiebaIdf) and pos is None


def idf_features(tokens: Sequence[str], scheme: str, idf: JiebaIdf,
                 title_tokens: Collection[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``word_features`` of a TF-IDF weighting with a fixed table, through the row memo (see the
    module docstring): the same arrays, in the same order, as hashing ``weigh``'s dict."""
    h, w = _idf_call(_idf_weights, tokens, scheme, idf, title_tokens)
    return h, w


def idf_simhash(tokens: Sequence[str], scheme: str, idf: JiebaIdf,
                title_tokens: Collection[str] = ()) -> tuple[int, int]:
    """(number of features, SimHash) of ``idf_features``, in one compiled call."""
    n, sim = _idf_call(_idf_vote, tokens, scheme, idf, title_tokens)
    return int(n), int(sim)


def word_features(
    tokens: Sequence[str],
    scheme: str,
    *,
    title_tokens: Collection[str] = (),
    pos: Sequence[str] | None = None,
    idf: IdfTable | None = None,
    extra: dict[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 feature hashes, float64 weights) of a token sequence under ``scheme``.

    ``extra``: more weighted features (structured-record fields) added to the token weights.
    """
    if scheme in COUNT_WEIGHTINGS and not extra:
        memo = _FEATURE_HASHES
        hashes = np.fromiter(map(memo.__getitem__, tokens), dtype=U64, count=len(tokens))
        return count_runs(np.sort(hashes), scheme == "binary")
    if scheme in IDF_WEIGHTINGS and idf is None:
        idf = jieba_idf()  # weigh()'s default
    if not extra and has_idf_path(scheme, idf, pos):
        assert isinstance(idf, JiebaIdf)
        return idf_features(tokens, scheme, idf, title_tokens)
    weights = weigh(tokens, scheme, title_tokens=title_tokens, pos=pos, idf=idf)
    if extra:
        weights.update(extra)
    feats = list(weights)
    return token_hashes(feats), np.fromiter(weights.values(), dtype=np.float64, count=len(feats))
