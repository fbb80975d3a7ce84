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


# The root arena's chains (simhash/arena.py): per table t, block value b and sub-key c a chain of pool
# entries: ``head[t, b << shift | c]`` its first entry (-1: none), ``nxt[e]`` the next; ``length[t, b]``
# how many entries root (t, b) holds in all its sub-chains. An entry is its packed filter bits over its
# 40-bit handle; the sub-key c is ``sub_n[t]`` of those packed bits from ``sub_low[t]`` on (the top bits
# of the next block, SimhashBlocks.sub_mask).


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


@njit(cache=True, inline="always")
def _sub_key(packed, low, n):  # type: ignore[no-untyped-def]
    """The sub-key of packed filter bits: ``n`` bits from ``low`` on."""
    return np.int64((packed >> np.uint64(low)) & np.uint64((1 << n) - 1))


@njit(cache=True)
def chain_within(head, nxt, entries, blocks, use, queries, k, out, positions, counts, shift, sub_low, sub_n,  # type: ignore[no-untyped-def]
                 walked):
    """Entries within k bits of ``queries[t, i]`` in root ``(t, blocks[t, i])`` for each ``use[t, i]``,
    in the sub-chains whose key is within one bit of the query's (the table reaches no pair further
    apart there, SimhashBlocks.reaches): writes document i to ``out[c]`` and the entry's handle to
    ``out[half + c]`` (half = len(out) // 2) while there is room; returns how many there are. Adds
    the entries compared to ``walked[i]``."""
    tables, n = blocks.shape
    half = len(out) // 2
    count = 0
    for i in range(n):
        for t in range(tables):
            if not use[t, i]:
                continue
            q = pack_filter(queries[t, i], positions[t], counts[t])
            own = _sub_key(q, sub_low[t], sub_n[t])
            base = blocks[t, i] << shift
            for m in range(-1, sub_n[t]):
                e = head[t, base | (own if m < 0 else own ^ (1 << m))]
                while e >= 0:
                    entry = entries[e]
                    walked[i] += 1
                    if _popcount((entry >> _HANDLE_BITS) ^ q) <= k:
                        if count < half:
                            out[count] = i
                            out[half + count] = entry & _HANDLE_MASK
                        count += 1
                    e = nxt[e]
    return count


@njit(cache=True)
def chain_append(head, length, nxt, entries, top, blocks, use, values, handles, positions, counts, shift, sub_low,  # type: ignore[no-untyped-def]
                 sub_n):
    """Entry (``handles[i]``, ``values[t, i]``) onto root ``(t, blocks[t, i])`` for each ``use[t, i]``,
    document by document, from pool slot ``top`` on (the caller made room); returns the new top."""
    tables, n = blocks.shape
    for i in range(n):
        for t in range(tables):
            if use[t, i]:
                packed = pack_filter(values[t, i], positions[t], counts[t])
                key = blocks[t, i] << shift | _sub_key(packed, sub_low[t], sub_n[t])
                nxt[top] = head[t, key]
                entries[top] = packed << _HANDLE_BITS | handles[i]
                head[t, key] = top
                length[t, blocks[t, i]] += 1
                top += 1
    return top


@njit(cache=True)
def chain_push(head, length, nxt, entries, top, t, b, handles, fps, positions, counts, shift, sub_low, sub_n):  # type: ignore[no-untyped-def]
    """Entries (``handles[j]``, ``fps[j]``) onto root (t, b) in order, from pool slot ``top`` on."""
    for j in range(len(handles)):
        packed = pack_filter(fps[j], positions[t], counts[t])
        key = b << shift | _sub_key(packed, sub_low[t], sub_n[t])
        nxt[top] = head[t, key]
        entries[top] = packed << _HANDLE_BITS | handles[j]
        head[t, key] = top
        top += 1
    length[t, b] += len(handles)
    return top


@njit(cache=True)
def chain_collect(head, nxt, entries, t, b, shift, out_handles, out_fps, positions, counts, fixed):  # type: ignore[no-untyped-def]
    """Root (t, b)'s entries into the outputs (its length), sub-chain by sub-chain; each fingerprint
    is its filter bits unpacked plus ``fixed`` (the bits every entry of the root shares: its block)."""
    j = 0
    for c in range(1 << shift):
        e = head[t, b << shift | c]
        while e >= 0:
            entry = entries[e]
            out_handles[j] = entry & _HANDLE_MASK
            out_fps[j] = unpack_filter(entry >> _HANDLE_BITS, positions[t], counts[t]) | fixed
            j += 1
            e = nxt[e]


@njit(cache=True)
def chain_gather(head, length, nxt, entries, shift, new_head, new_entries, new_shift, sub_low, sub_n):  # type: ignore[no-untyped-def]
    """Every root's entries copied into ``new_entries``, root after root, each root's entries in
    order of their sub-key of ``new_shift`` bits (``sub_low``, ``sub_n`` for it): one run of slots per
    sub-chain, named by ``new_head`` (``chain_relink`` then writes the links). Returns the new top."""
    tables, width = length.shape
    top = 0
    most = 0
    for t in range(tables):
        for b in range(width):
            most = max(most, length[t, b])
    scratch = np.empty(most, dtype=np.uint64)
    keys = np.empty(most, dtype=np.int64)
    for t in range(tables):
        for b in range(width):
            n = length[t, b]
            if n == 0:
                continue
            j = 0
            for c in range(1 << shift):
                e = head[t, b << shift | c]
                while e >= 0:
                    scratch[j] = entries[e]
                    keys[j] = _sub_key(entries[e] >> _HANDLE_BITS, sub_low[t], sub_n[t])
                    j += 1
                    e = nxt[e]
            order = np.argsort(keys[:n], kind="mergesort")
            last = -1
            for q in range(n):
                at = order[q]
                if keys[at] != last:
                    last = keys[at]
                    new_head[t, b << new_shift | last] = top + q
                new_entries[top + q] = scratch[at]
            top += n
    return top


@njit(cache=True)
def chain_relink(head, nxt, top):  # type: ignore[no-untyped-def]
    """The links of the runs laid out by ``chain_gather`` (in the order of their heads): each slot to
    the next one of its run."""
    tables, width = head.shape
    start = -1
    for t in range(tables):
        for key in range(width):
            first = head[t, key]
            if first < 0:
                continue
            if start >= 0:
                for j in range(start, first - 1):
                    nxt[j] = j + 1
                nxt[first - 1] = -1
            start = first
    if start >= 0:
        for j in range(start, top - 1):
            nxt[j] = j + 1
        nxt[top - 1] = -1
