"""The word SimHash of a count weighting (``tf``, ``binary``) in one compiled pass over code points.

What ``Segmenter.token_bag`` -> ``count_simhash`` computes, without a Python string per token: the
normalized text's Han runs are segmented by jieba's route on the dictionary arrays
(``stream.text.dictionary``: the same tokens as jieba and rjieba), the other words are the
segmenter's regex words (``segment.token_spans``); a dictionary word's feature hash is its trie
node's (mmh3, computed when the trie was built), any other token is hashed here (MurmurHash3 x64 of
its UTF-8 bytes: ``mmh3.hash64``'s first half); ``is_feature`` is "not a stop word (by hash) and
has a letter or digit"; the counts and the integer vote are ``count_and_vote``'s. So the
fingerprint is bit for bit the one of ``count_simhash(token_bag(text))``
(tests/fingerprint/test_words.py; tests/fingerprint/test_golden.py).
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np
from numba import njit

from stream.fingerprint.hashing import hash_token, murmur3_128, utf8_into
from stream.fingerprint.simhash import add_vote, sign_bits
from stream.text.dictionary import Trie, child, jieba_trie, route
from stream.text.segment import ALNUM, code_points, token_spans
from stream.text.stopwords import STOPWORDS


class WordTables(NamedTuple):
    trie: Trie
    features: np.ndarray  # uint64 per trie node: its hash if its string is a feature (is_feature), else 0
    stop_hashes: np.ndarray  # sorted mmh3 hashes of the stop words (tokens outside the trie)
    classes: np.ndarray  # segment.char_classes()


@njit(cache=True)
def _stop_nodes(table: np.ndarray, root: np.ndarray, codes: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    # out[node] = False for the node of each word codes[offsets[k]:offsets[k + 1]] that the trie has
    for k in range(len(offsets) - 1):
        node = np.int64(0)
        for i in range(offsets[k], offsets[k + 1]):
            node = child(table, root, node, codes[i])
            if node < 0:
                break
        if node > 0:
            out[node] = False


@cache
def word_tables() -> WordTables:
    from stream.text.segment import char_classes

    trie = jieba_trie()
    words = sorted(STOPWORDS)
    offsets = np.cumsum([0, *map(len, words)])
    feature = trie.alnum.copy()
    _stop_nodes(trie.table, trie.root, code_points("".join(words)), offsets, feature)
    stop = np.array(sorted({hash_token(word) for word in words}), dtype=np.uint64)
    # one array read per token: a hash of 0 is never counted (count_simhash drops it too)
    features = np.where(feature, trie.hashes, np.uint64(0))
    return WordTables(trie, features, stop, char_classes())


@njit(cache=True, inline="always")
def _is_stop(h: np.uint64, stop: np.ndarray) -> bool:
    i = np.searchsorted(stop, h)
    return bool(i < len(stop) and stop[i] == h)


@njit(cache=True)
def _count(table_keys: np.ndarray, table_counts: np.ndarray, h: np.uint64) -> None:
    mask = np.uint64(len(table_keys) - 1)
    s = h & mask
    while True:
        k = table_keys[s]
        if k == h:
            table_counts[s] += 1
            return
        if table_counts[s] == 0:
            table_keys[s] = h
            table_counts[s] = 1
            return
        s = (s + np.uint64(1)) & mask


@njit(cache=True)
def _other_hash(codes: np.ndarray, start: int, end: int, scratch: np.ndarray) -> np.uint64:
    length = utf8_into(codes, start, end, scratch)
    h1, _ = murmur3_128(scratch, length)
    return h1


@njit(cache=True)
def word_simhash(codes: np.ndarray, classes: np.ndarray, table: np.ndarray, root: np.ndarray, log_freqs: np.ndarray,
                 log_total: float, features: np.ndarray, stop: np.ndarray, binary: bool) -> tuple[int, np.uint64]:
    """(distinct features, SimHash) of the text's tokens under ``tf`` (or ``binary``)."""
    starts, ends, han = token_spans(codes, classes)
    size = 16
    while size < 2 * len(codes):
        size *= 2
    table_keys = np.zeros(size, dtype=np.uint64)
    table_counts = np.zeros(size, dtype=np.int64)
    longest = 1
    for k in range(len(starts)):
        longest = max(longest, ends[k] - starts[k])
    score = np.empty(longest + 1)
    best_end = np.empty(longest, dtype=np.int64)
    best_node = np.empty(longest, dtype=np.int64)
    scratch = np.empty(4 * longest, dtype=np.uint8)
    for k in range(len(starts)):
        a, b = starts[k], ends[k]
        if not han[k]:  # a regex word: always has a letter or digit
            h = _other_hash(codes, a, b, scratch)
            if h != 0 and not _is_stop(h, stop):
                _count(table_keys, table_counts, h)
            continue
        route(codes, a, b, table, root, log_freqs, log_total, score, best_end, best_node)
        i = 0
        while i < b - a:
            j = best_end[i]
            node = best_node[i]
            if node >= 0:
                if features[node] != 0:
                    _count(table_keys, table_counts, features[node])
            elif classes[codes[a + i]] & ALNUM:  # one character the dictionary does not know
                h = _other_hash(codes, a + i, a + j, scratch)
                if h != 0 and not _is_stop(h, stop):
                    _count(table_keys, table_counts, h)
            i = j
    votes = np.zeros(64, dtype=np.int64)
    n = 0
    for s in range(size):
        c = table_counts[s]
        if c == 0:
            continue
        n += 1
        add_vote(votes, table_keys[s], 1 if binary else c)  # integer votes: count_and_vote's
    return n, sign_bits(votes)


def compiled_word_simhash(codes: np.ndarray, scheme: str) -> tuple[int, int]:
    """(distinct features, SimHash) of ``count_simhash(token_bag(text), scheme)`` for ``codes`` =
    ``code_points(text)``, ``scheme`` in ``tf``/``binary``."""
    tables = word_tables()
    trie = tables.trie
    n, sim = word_simhash(codes, tables.classes, trie.table, trie.root, trie.log_freqs, trie.log_total,
                          tables.features, tables.stop_hashes, scheme == "binary")
    return int(n), int(sim)
