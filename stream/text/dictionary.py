"""jieba's prefix dictionary as arrays, and its precise-mode route (HMM off) compiled with numba.

The same algorithm as ``jieba.Tokenizer.get_DAG`` + ``calc`` + ``__cut_DAG_NO_HMM`` over the same
``dict.txt``, read as ``gen_pfdict`` reads it: every word and every prefix of a word is a trie node;
a node is a word when its frequency is > 0; a position's candidate ends are the words starting there
(the single character when there are none); the route maximizes ``log(freq or 1) - log(total) +
route[end + 1]``, ties to the longer word (Python's ``max`` over ``(score, end)`` tuples). The same
float operations in the same order, with each word's ``log(freq)`` computed by ``math.log`` when the
trie is built: the tokens are jieba's (tests/text/test_dictionary.py; docs/text.md).

Why: a document's Han text is segmented inside the compiled per-document pass
(``stream.fingerprint.words``) without a Python string per token, and no dictionary is loaded from
text at start: the arrays are built once (~2 s) and then loaded from disk (``stream.text.table_cache``).
Each node also carries the 64-bit mmh3 hash of its string and whether it has a letter or digit, so
the features of dictionary words need no hashing per document.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import NamedTuple

import mmh3
import numpy as np
from numba import njit

from stream.text.table_cache import cached_arrays

_BITS = 21  # a code point and a node id each fit: an entry is (parent << 42) | (char << 21) | child
_LOW = np.uint64((1 << _BITS) - 1)
ROOT_LIMIT = 0x30000  # the root's children below this code point are looked up directly


class Trie(NamedTuple):
    table: np.ndarray  # uint64 open-addressing table of packed transitions, 0 = free
    root: np.ndarray  # int32 per code point below ROOT_LIMIT: the root's child, -1 = none
    word: np.ndarray  # bool per node: a dictionary word (frequency > 0)
    log_freq: np.ndarray  # float64 per node: math.log(freq) (0.0 for prefixes: jieba's "or 1")
    hashes: np.ndarray  # uint64 per node: mmh3 64-bit hash of its string (stream.fingerprint.hashing)
    alnum: np.ndarray  # bool per node: its string has a letter or digit
    log_total: float  # math.log of the sum of all frequencies


def dictionary_path() -> Path:
    """jieba's bundled ``dict.txt`` (the dictionary every backend uses: ``segment.SEGMENTATION_SETTINGS``)."""
    import importlib.util

    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise ImportError("the compiled segmenter reads jieba's dict.txt: pip install jieba")
    return Path(spec.origin).parent / "dict.txt"


def read_frequencies(path: Path) -> tuple[dict[str, int], int]:
    """``jieba.Tokenizer.gen_pfdict``: word and prefix -> frequency (0 for prefixes), and the total."""
    freq: dict[str, int] = {}
    total = 0
    with path.open("rb") as handle:
        for line in handle:
            word, count = line.strip().decode("utf-8").split(" ")[:2]
            value = int(count)
            freq[word] = value
            total += value
            for end in range(1, len(word)):
                freq.setdefault(word[:end], 0)
    return freq, total


def _table_size(count: int) -> int:
    size = 1 << 10
    while size < 3 * count:  # load factor <= 1/3: short probe runs
        size *= 2
    return size


@njit(cache=True, inline="always")
def _slot(key: np.uint64, mask: np.uint64) -> np.uint64:
    return ((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask


@njit(cache=True)
def _fill(table: np.ndarray, root: np.ndarray, parents: np.ndarray, chars: np.ndarray) -> None:
    mask = np.uint64(len(table) - 1)
    for node in range(1, len(parents)):
        key = (np.uint64(parents[node]) << np.uint64(_BITS)) | np.uint64(chars[node])
        slot = _slot(key, mask)
        while table[slot] != 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = (key << np.uint64(_BITS)) | np.uint64(node)
        if parents[node] == 0 and chars[node] < ROOT_LIMIT:
            root[chars[node]] = node


@njit(cache=True, inline="always")
def child(table: np.ndarray, root: np.ndarray, node: int | np.int64, c: int) -> np.int64:
    """The node after ``node`` on code point ``c``, or -1."""
    if node == 0 and c < ROOT_LIMIT:
        return np.int64(root[c])
    key = (np.uint64(node) << np.uint64(_BITS)) | np.uint64(c)
    mask = np.uint64(len(table) - 1)
    slot = _slot(key, mask)
    while True:
        entry = table[slot]
        if entry == 0:
            return np.int64(-1)
        if entry >> np.uint64(_BITS) == key:
            return np.int64(entry & _LOW)
        slot = (slot + np.uint64(1)) & mask


def _build(path: Path) -> tuple[np.ndarray, ...]:
    freq, total = read_frequencies(path)
    entries = sorted(freq)  # a prefix sorts before its extensions
    ids = {entry: n for n, entry in enumerate(entries, start=1)}  # node 0: the root (empty string)
    count = len(entries) + 1
    parents = np.zeros(count, dtype=np.int64)
    chars = np.zeros(count, dtype=np.int64)
    word = np.zeros(count, dtype=np.bool_)
    log_freq = np.zeros(count)
    hashes = np.zeros(count, dtype=np.uint64)
    alnum = np.zeros(count, dtype=np.bool_)
    for entry, n in ids.items():
        parents[n] = ids.get(entry[:-1], 0)
        chars[n] = ord(entry[-1])
        value = freq[entry]
        word[n] = value > 0
        log_freq[n] = math.log(value) if value else 0.0
        hashes[n] = mmh3.hash64(entry, signed=False)[0]
        alnum[n] = any(ch.isalnum() for ch in entry)
    if count >= 1 << _BITS:
        raise ValueError(f"{count} dictionary entries: more than the trie's {1 << _BITS}")
    table = np.zeros(_table_size(count), dtype=np.uint64)
    root = np.full(ROOT_LIMIT, -1, dtype=np.int32)
    _fill(table, root, parents, chars)
    return table, root, word, log_freq, hashes, alnum, np.array([math.log(total)])


@cache
def jieba_trie() -> Trie:
    """jieba's default dictionary as a ``Trie`` (built once per dict.txt, then loaded from disk)."""
    path = dictionary_path()
    stat = path.stat()
    name = f"jieba-trie-v2-{stat.st_size}-{stat.st_mtime_ns}"
    table, root, word, log_freq, hashes, alnum, log_total = cached_arrays(name, lambda: _build(path))
    return Trie(table, root, word, log_freq, hashes, alnum, float(log_total[0]))


@njit(cache=True)
def route(codes: np.ndarray, start: int, end: int, table: np.ndarray, root: np.ndarray, word: np.ndarray,
          log_freq: np.ndarray, log_total: float, score: np.ndarray, ends: np.ndarray, nodes: np.ndarray) -> None:
    """jieba's ``calc`` over ``codes[start:end]`` (one Han run): for each position i (relative),
    ``ends[i]`` is where its best word ends (exclusive, relative) and ``nodes[i]`` that word's trie
    node (-1: a single character unknown to the dictionary). ``score`` is scratch of length >= n + 1."""
    n = end - start
    score[n] = 0.0
    for i in range(n - 1, -1, -1):
        best, best_end, best_node = 0.0, -1, np.int64(-1)
        node = np.int64(0)
        j = i
        while j < n:  # get_DAG: extend while the fragment is a word or a prefix of one
            node = child(table, root, node, codes[start + j])
            if node < 0:
                break
            if word[node]:
                s = log_freq[node] - log_total + score[j + 1]
                if best_end < 0 or s >= best:  # ends ascend: ">=" keeps the longer word on a tie
                    best, best_end, best_node = s, j + 1, node
            j += 1
        if best_end < 0:  # no word starts here: the single character, frequency "or 1"
            best = 0.0 - log_total + score[i + 1]
            best_end = i + 1
            best_node = child(table, root, 0, codes[start + i])
        score[i] = best
        ends[i] = best_end
        nodes[i] = best_node


@njit(cache=True)
def _cut_run(codes: np.ndarray, table: np.ndarray, root: np.ndarray, word: np.ndarray, log_freq: np.ndarray,
             log_total: float) -> np.ndarray:
    # the word ends of one run, in order
    n = len(codes)
    score = np.empty(n + 1)
    ends = np.empty(n, dtype=np.int64)
    nodes = np.empty(n, dtype=np.int64)
    route(codes, 0, n, table, root, word, log_freq, log_total, score, ends, nodes)
    out = np.empty(n, dtype=np.int64)
    k, i = 0, 0
    while i < n:
        i = ends[i]
        out[k] = i
        k += 1
    return out[:k]


def cut_han_run(run: str) -> list[str]:
    """The words of one Han run, as ``jieba.cut(run, HMM=False)`` gives them."""
    from stream.text.segment import code_points

    trie = jieba_trie()
    bounds = _cut_run(code_points(run), trie.table, trie.root, trie.word, trie.log_freq, trie.log_total)
    words, start = [], 0
    for stop in bounds.tolist():
        words.append(run[start:stop])
        start = stop
    return words
