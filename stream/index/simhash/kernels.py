"""Compiled inner loop of a query: which cached fingerprints lie within k bits of the query's.

A query at 1M uniform fingerprints compares ~61 candidates in 4 buckets; a Python loop takes ~13 us
of that (0.2 us per candidate), and numpy's fixed per-call cost makes it no cheaper below ~100
entries. One numba call takes ~1.2 us on small buckets, and ``within_tables`` filters the k + 1
root buckets of the common probe in one call (docs/decisions/index-hot-paths.md).
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


# The root arena's chains (simhash/arena.py): per table t and block value b a chain of pool entries, newest
# first: ``head[t, b]`` its first entry (-1: none), ``nxt[e]`` the next, ``efp``/``ehandle`` the
# entry's masked fingerprint and handle, ``length[t, b]`` how many.


_HANDLE_BITS = np.uint64(40)
_HANDLE_MASK = np.uint64((1 << 40) - 1)


@njit(cache=True, inline="always")
def pack_filter(value, positions, count):  # type: ignore[no-untyped-def]
    """The ``count`` bits of ``value`` at ``positions`` (a table's filter bits), side by side."""
    out = np.uint64(0)
    for j in range(count):
        out |= ((np.uint64(value) >> np.uint64(positions[j])) & np.uint64(1)) << np.uint64(j)
    return out


@njit(cache=True, inline="always")
def unpack_filter(packed, positions, count):  # type: ignore[no-untyped-def]
    out = np.uint64(0)
    for j in range(count):
        out |= ((packed >> np.uint64(j)) & np.uint64(1)) << np.uint64(positions[j])
    return out


@njit(cache=True)
def chain_within(head, nxt, entries, blocks, use, queries, k, out, positions, counts):  # type: ignore[no-untyped-def]
    """Entries within k bits of ``queries[t, i]`` in chain ``(t, blocks[t, i])`` for each ``use[t, i]``:
    writes document i to ``out[c]`` and the entry's handle to ``out[half + c]`` (half = len(out) // 2)
    while there is room; returns how many there are. An entry is its packed filter bits over its
    40-bit handle; a query is packed the same way (``positions[t]``, ``counts[t]``)."""
    tables, n = blocks.shape
    half = len(out) // 2
    count = 0
    for i in range(n):
        for t in range(tables):
            if not use[t, i]:
                continue
            q = pack_filter(queries[t, i], positions[t], counts[t])
            e = head[t, blocks[t, i]]
            while e >= 0:
                entry = entries[e]
                if _popcount((entry >> _HANDLE_BITS) ^ q) <= k:
                    if count < half:
                        out[count] = i
                        out[half + count] = entry & _HANDLE_MASK
                    count += 1
                e = nxt[e]
    return count


@njit(cache=True)
def chain_append(head, length, nxt, entries, top, blocks, use, values, handles, positions, counts):  # type: ignore[no-untyped-def]
    """Entry (``handles[i]``, ``values[t, i]``) onto chain ``(t, blocks[t, i])`` for each ``use[t, i]``,
    document by document, from pool slot ``top`` on (the caller made room); returns the new top."""
    tables, n = blocks.shape
    for i in range(n):
        for t in range(tables):
            if use[t, i]:
                b = blocks[t, i]
                nxt[top] = head[t, b]
                entries[top] = pack_filter(values[t, i], positions[t], counts[t]) << _HANDLE_BITS | handles[i]
                head[t, b] = top
                length[t, b] += 1
                top += 1
    return top


@njit(cache=True)
def chain_push(head, length, nxt, entries, top, t, b, handles, fps, positions, counts):  # type: ignore[no-untyped-def]
    """Entries (``handles[j]``, ``fps[j]``) onto chain (t, b) in order, from pool slot ``top`` on."""
    for j in range(len(handles)):
        nxt[top] = head[t, b]
        entries[top] = pack_filter(fps[j], positions[t], counts[t]) << _HANDLE_BITS | handles[j]
        head[t, b] = top
        top += 1
    length[t, b] += len(handles)
    return top


@njit(cache=True)
def chain_collect(head, nxt, entries, t, b, out_handles, out_fps, positions, counts, fixed):  # type: ignore[no-untyped-def]
    """Chain (t, b)'s entries into the outputs (its length), oldest first; each fingerprint is its
    filter bits unpacked plus ``fixed`` (the bits every entry of the chain shares: its block)."""
    e = head[t, b]
    j = len(out_handles)
    while e >= 0:
        j -= 1
        entry = entries[e]
        out_handles[j] = entry & _HANDLE_MASK
        out_fps[j] = unpack_filter(entry >> _HANDLE_BITS, positions[t], counts[t]) | fixed
        e = nxt[e]


@njit(cache=True)
def chain_gather(head, length, nxt, entries, new_entries):  # type: ignore[no-untyped-def]
    """Every chain's entries copied into ``new_entries``, each chain in one run of slots, oldest
    first; ``head`` then names each run's last slot (``chain_relink`` writes the links). Returns the
    new top."""
    tables, width = head.shape
    top = 0
    for t in range(tables):
        for b in range(width):
            e = head[t, b]
            if e < 0:
                continue
            n = length[t, b]
            j = top + n - 1  # the newest entry goes last
            while e >= 0:
                new_entries[j] = entries[e]
                j -= 1
                e = nxt[e]
            head[t, b] = top + n - 1
            top += n
    return top


@njit(cache=True)
def chain_relink(head, length, nxt):  # type: ignore[no-untyped-def]
    """The links of chains laid out by ``chain_gather``: each slot to the one before it in its run."""
    tables, width = head.shape
    for t in range(tables):
        for b in range(width):
            last = head[t, b]
            if last < 0:
                continue
            first = last - length[t, b] + 1
            nxt[first] = -1
            for j in range(first + 1, last + 1):
                nxt[j] = j - 1
