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
text at start: the arrays are built once (~7 s) and then loaded from disk (``stream.text.table_cache``).
Each node also carries the 64-bit mmh3 hash of its string and whether it has a letter or digit, so
the features of dictionary words need no hashing per document.

Layout: a node is the slot of its entry in one open-addressing table (8 MB for jieba's 498k nodes), and
the entry holds what a step of the route reads (its key, "word", "leaf", its log frequency's index
into a 5,088-value table): one random read per step, and none after a leaf. The route's table reads
are most of its cost (they miss the cache); separate per-node arrays took three reads per step.
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

_BITS = 21  # a code point fits, and so does a slot number (the table has at most 2**21 slots)
_KEY = np.uint64((1 << 2 * _BITS) - 1)  # an entry's bits 0-41: its key, (parent slot << 21) | code point
_FREQ_SHIFT = np.uint64(2 * _BITS)  # bits 42-61: the index of the word's log frequency in Trie.log_freqs
_FREQ_BITS = 20
_LEAF = np.uint64(1 << 62)  # no entry extends this one: a walk stops here without another lookup
_WORD = np.uint64(1 << 63)  # a dictionary word (frequency > 0); without it, only a prefix of one
ROOT_LIMIT = 0x30000  # the root's children below this code point (every Han character) are looked up directly


class Trie(NamedTuple):
    """A node is a slot of ``table`` (slot 0: the root, empty string); its entry packs its key, flags and
    log frequency, so a step of the route reads one 8-byte entry (one cache line) and nothing else."""

    table: np.ndarray  # uint64 per slot: an open-addressing table of entries, 0 = free
    root: np.ndarray  # uint64 pairs per code point below ROOT_LIMIT: (entry, slot) of the root's child, 0 = none
    log_freqs: np.ndarray  # float64: the distinct math.log(freq) of the words, indexed by an entry's bits 42-61
    hashes: np.ndarray  # uint64 per slot: mmh3 64-bit hash of the node's string (stream.fingerprint.hashing)
    alnum: np.ndarray  # bool per slot: the node's string has a letter or digit
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
    while size < 2 * count:  # load factor <= 1/2: short probe runs, and 8 MB for jieba's 498k nodes
        size *= 2
    if size > 1 << _BITS:
        raise ValueError(f"{count} dictionary entries: more than the trie's {(1 << _BITS) // 2}")
    return size


@njit(cache=True, inline="always")
def _slot(key: np.uint64, mask: np.uint64) -> np.uint64:
    return ((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask


@njit(cache=True, inline="always")
def _find(table: np.ndarray, key: np.uint64) -> np.int64:
    # the slot of the entry with this key, or -1
    mask = np.uint64(len(table) - 1)
    slot = _slot(key, mask)
    while True:
        entry = table[slot]
        if entry == 0:
            return np.int64(-1)
        if entry & _KEY == key:
            return np.int64(slot)
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True)
def _fill(table: np.ndarray, root: np.ndarray, slots: np.ndarray, parents: np.ndarray, chars: np.ndarray,
          flags: np.ndarray) -> None:
    # nodes in id order (a parent before its children): each takes the first free slot from its key's
    mask = np.uint64(len(table) - 1)
    table[0] = _KEY  # the root's slot, with a key no lookup makes (its code point is above 0x10FFFF)
    for node in range(1, len(parents)):
        key = (np.uint64(slots[parents[node]]) << np.uint64(_BITS)) | np.uint64(chars[node])
        slot = _slot(key, mask)
        while table[slot] != 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = key | flags[node]
        slots[node] = slot
        if parents[node] == 0 and chars[node] < ROOT_LIMIT:
            root[2 * chars[node]] = table[slot]
            root[2 * chars[node] + 1] = slot


@njit(cache=True, inline="always")
def child(table: np.ndarray, root: np.ndarray, node: int | np.int64, c: int) -> np.int64:
    """The node (slot) after ``node`` on code point ``c``, or -1."""
    if node == 0 and c < ROOT_LIMIT:
        return np.int64(root[2 * c + 1]) if root[2 * c] != 0 else np.int64(-1)
    return _find(table, (np.uint64(node) << np.uint64(_BITS)) | np.uint64(c))


def _build(path: Path) -> tuple[np.ndarray, ...]:
    freq, total = read_frequencies(path)
    entries = sorted(freq)  # a prefix sorts before its extensions
    ids = {entry: n for n, entry in enumerate(entries, start=1)}  # id 0: the root (empty string)
    count = len(entries) + 1
    parents = np.zeros(count, dtype=np.int64)
    chars = np.zeros(count, dtype=np.int64)
    logs = {value: math.log(value) for value in set(freq.values()) if value > 0}
    log_freqs = np.array(sorted(set(logs.values())))
    if len(log_freqs) >= 1 << _FREQ_BITS:
        raise ValueError(f"{len(log_freqs)} distinct frequencies: more than the trie's {1 << _FREQ_BITS}")
    index = {log: i for i, log in enumerate(log_freqs.tolist())}
    flags = np.zeros(count, dtype=np.uint64)
    hashes = np.zeros(count, dtype=np.uint64)
    alnum = np.zeros(count, dtype=np.bool_)
    for entry, n in ids.items():
        parents[n] = ids.get(entry[:-1], 0)
        chars[n] = ord(entry[-1])
        value = freq[entry]
        if value:
            flags[n] = _WORD | (np.uint64(index[logs[value]]) << _FREQ_SHIFT)
        hashes[n] = mmh3.hash64(entry, signed=False)[0]
        alnum[n] = any(ch.isalnum() for ch in entry)
    flags[np.setdiff1d(np.arange(count), parents)] |= _LEAF
    table = np.zeros(_table_size(count), dtype=np.uint64)
    root = np.zeros(2 * ROOT_LIMIT, dtype=np.uint64)
    slots = np.zeros(count, dtype=np.int64)
    _fill(table, root, slots, parents, chars, flags)
    by_slot = np.zeros(len(table), dtype=np.uint64)
    by_slot[slots] = hashes
    alnum_by_slot = np.zeros(len(table), dtype=np.bool_)
    alnum_by_slot[slots] = alnum
    return table, root, log_freqs, by_slot, alnum_by_slot, np.array([math.log(total)])


@cache
def jieba_trie() -> Trie:
    """jieba's default dictionary as a ``Trie`` (built once per dict.txt, then loaded from disk)."""
    path = dictionary_path()
    stat = path.stat()
    name = f"jieba-trie-v3-{stat.st_size}-{stat.st_mtime_ns}"
    table, root, log_freqs, hashes, alnum, log_total = cached_arrays(name, lambda: _build(path))
    return Trie(table, root, log_freqs, hashes, alnum, float(log_total[0]))


@njit(cache=True)
def route(codes: np.ndarray, start: int, end: int, table: np.ndarray, root: np.ndarray, log_freqs: np.ndarray,
          log_total: float, score: np.ndarray, ends: np.ndarray, nodes: np.ndarray) -> None:
    """jieba's ``calc`` over ``codes[start:end]`` (one Han run): for each position i (relative),
    ``ends[i]`` is where its best word ends (exclusive, relative) and ``nodes[i]`` that word's trie
    node (-1: a single character unknown to the dictionary). ``score`` is scratch of length >= n + 1."""
    n = end - start
    score[n] = 0.0
    for i in range(n - 1, -1, -1):
        best, best_end, best_node = 0.0, -1, np.int64(-1)
        node = np.uint64(0)
        j = i
        while j < n:  # get_DAG: extend while the fragment is a word or a prefix of one
            c = codes[start + j]
            if j == i and c < ROOT_LIMIT:
                entry = root[2 * c]
                if entry == 0:
                    break
                node = root[2 * c + 1]
            else:
                slot = _find(table, (node << np.uint64(_BITS)) | np.uint64(c))
                if slot < 0:
                    break
                entry = table[slot]
                node = np.uint64(slot)
            if entry & _WORD:
                s = log_freqs[(entry >> _FREQ_SHIFT) & np.uint64((1 << _FREQ_BITS) - 1)] - log_total + score[j + 1]
                if best_end < 0 or s >= best:  # ends ascend: ">=" keeps the longer word on a tie
                    best, best_end, best_node = s, j + 1, np.int64(node)
            j += 1
            if entry & _LEAF:
                break
        if best_end < 0:  # no word starts here: the single character, frequency "or 1"
            best = 0.0 - log_total + score[i + 1]
            best_end = i + 1
            best_node = child(table, root, 0, codes[start + i])
        score[i] = best
        ends[i] = best_end
        nodes[i] = best_node


@njit(cache=True)
def _cut_run(codes: np.ndarray, table: np.ndarray, root: np.ndarray, log_freqs: np.ndarray,
             log_total: float) -> np.ndarray:
    # the word ends of one run, in order
    n = len(codes)
    score = np.empty(n + 1)
    ends = np.empty(n, dtype=np.int64)
    nodes = np.empty(n, dtype=np.int64)
    route(codes, 0, n, table, root, log_freqs, log_total, score, ends, nodes)
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
    bounds = _cut_run(code_points(run), trie.table, trie.root, trie.log_freqs, trie.log_total)
    words, start = [], 0
    for stop in bounds.tolist():
        words.append(run[start:stop])
        start = stop
    return words
