"""Compiled inner loop of a query: which cached fingerprints lie within k bits of the query's.

A query at 1M uniform fingerprints compares ~61 candidates in 4 buckets; a Python loop takes ~13 us
of that (0.2 us per candidate), and numpy's fixed per-call cost makes it no cheaper below ~100
entries. One numba call takes ~1.2 us on small buckets, and ``within_tables`` filters the k + 1
root buckets of the common probe in one call (docs/index.md, "Decisions").
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_SIGN = 1 << 63
_WRAP = 1 << 64


def as_signed(value: int) -> int:
    """A 64-bit unsigned int as the int64 with the same bits (numba types a Python int >= 2^63 as
    int64 and refuses it; the kernel casts it back)."""
    return value - _WRAP if value >= _SIGN else value


@njit(cache=True, inline="always")
def _popcount(x):  # type: ignore[no-untyped-def]
    x = x - ((x >> np.uint64(1)) & _M1)  # SWAR popcount; LLVM emits popcnt where it can
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@njit(cache=True)
def within(fps, query, k, out):  # type: ignore[no-untyped-def]
    """Write the positions i with popcount(fps[i] ^ query) <= k to ``out``; return how many.

    ``fps`` is any uint64 buffer (the cache's ``array('Q')``), ``query`` a signed 64-bit int
    (``as_signed``), ``out`` an int64 array at least as long as ``fps``.
    """
    q = np.uint64(query)
    count = 0
    for i in range(len(fps)):
        if _popcount(fps[i] ^ q) <= k:
            out[count] = i
            count += 1
    return count


@njit(cache=True)
def within_tables(fps, masks, fingerprint, k, out):  # type: ignore[no-untyped-def]
    """``within`` over one bucket per table: ``fps[t]`` is table t's bucket, compared with
    ``fingerprint & masks[t]`` (the bits its entries keep). Writes ``t << 32 | i`` per match to
    ``out`` while it has room and returns ``candidates << 32 | matches`` (one int: a returned tuple
    costs more to box); more matches than ``len(out)``: call again with a bigger ``out``."""
    f = np.uint64(fingerprint)
    count = 0
    total = 0
    for t in range(len(fps)):
        q = f & masks[t]
        column = fps[t]
        total += len(column)
        for i in range(len(column)):
            if _popcount(column[i] ^ q) <= k:
                if count < len(out):
                    out[count] = (t << 32) | i
                count += 1
    return (total << 32) | count


@njit(cache=True)
def pairs_within(fps, k, out):  # type: ignore[no-untyped-def]
    """Pairs of one batch within k bits: writes ``i << 32 | j`` (j < i) for each to ``out`` while it
    has room and returns how many there are (more than ``len(out)``: call again with room).
    ``fps`` is a uint64 array; a batch of 256 is ~33k comparisons, ~0.1 ms."""
    count = 0
    for i in range(len(fps)):
        for j in range(i):
            if _popcount(fps[i] ^ fps[j]) <= k:
                if count < len(out):
                    out[count] = (i << 32) | j
                count += 1
    return count


@njit(cache=True)
def bucket_growth(blocks, before, use, min_split, bins):  # type: ignore[no-untyped-def]
    """The level-0 counters' change when a batch appends one entry per document to each of the root
    buckets it uses. ``blocks[t, i]``: document i's block value in table t; ``use[t, i]``: whether it
    appends there; ``before[i, t]``: that bucket's size before the batch. A bucket taking several
    entries counts once, from its size before to its size after (its first document's ``before``).
    Adds each size bin's change to ``bins[b]`` (bin = ``size.bit_length()``, as ``LevelCounter``);
    returns the number of buckets that were empty and the positions ``t << 32 | i`` (i: the bucket's
    first document) of the buckets reaching ``min_split``. One call per batch: numpy's unique and bin
    counts per table cost ~1.6 us per document at 1M."""
    tables, n = blocks.shape
    big = np.empty(tables * n, dtype=np.int64)
    found = 0
    new_buckets = 0
    for t in range(tables):
        order = np.argsort(blocks[t], kind="mergesort")  # stable: a group starts at its first document
        g = 0
        while g < n:
            end = g + 1
            while end < n and blocks[t, order[end]] == blocks[t, order[g]]:
                end += 1
            first = -1
            added = 0
            for q in range(g, end):
                if use[t, order[q]]:
                    added += 1
                    if first < 0:
                        first = order[q]
            g = end
            if not added:
                continue
            old = before[first, t]
            new = old + added
            if old == 0:
                new_buckets += 1
            old_bin = 0
            while (old >> old_bin) > 0:
                old_bin += 1
            new_bin = 0
            while (new >> new_bin) > 0:
                new_bin += 1
            if old_bin != new_bin:
                bins[old_bin] -= 1  # bin 0 (empty) is counted by the caller's bucket total, not here
                bins[new_bin] += 1
            if new >= min_split:
                big[found] = (t << 32) | first
                found += 1
    return new_buckets, big[:found]
