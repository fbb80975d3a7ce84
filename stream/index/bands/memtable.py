"""The LSH band tables: an in-memory multimap (band table, band value) -> document handles.

Band values are hashes of distinct shingle sets, so almost every band bucket holds one document and
almost every probe of a band table finds nothing: 16 new buckets per document. As bucket keys in
RocksDB (one entry key per document and band) they would cost a write of ~0.9 us each (random keys
into the hash memtable), a ``Bucket`` object each in the read cache (which overflows after ~30k
documents, and then every probe scans), and 16 of a document's ~29 changelog records in the service
(docs/decisions/index-band-map.md). The records hold every document's band values and tables, so this map
is derived state: built from them when an index opens a store that is not empty.

Layout: open addressing with linear probing over three parallel arrays, per slot a 32-bit tag of
(table, value) (0: empty) and the handle (40 bits: low 32 and high 8). A tag's home slot is its own
low bits, so growing rehashes the arrays alone, and deletion shifts the entries after a hole back
(no tombstones). Tags can collide (~probe length / 2^32 per probe): ``find_many`` returns every
handle under the tag and the caller checks the value in the record. 9 bytes a slot at a load of
0.35-0.7: ~13-26 bytes per (document, band).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TABLE_SALT = np.uint64(0x9E3779B97F4A7C15)
_MAX_LOAD = 0.7


@njit(cache=True, inline="always")
def _tag(table, value):  # type: ignore[no-untyped-def]
    """splitmix64's finalizer of (value, table), high 32 bits; 0 marks an empty slot, so it becomes 1."""
    x = np.uint64(value) ^ (np.uint64(table + 1) * _TABLE_SALT)
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    x = x ^ (x >> np.uint64(31))
    tag = np.uint32(x >> np.uint64(32))
    return tag if tag != 0 else np.uint32(1)


@njit(cache=True)
def _insert(tags, low, high, new_tags, handles):  # type: ignore[no-untyped-def]
    mask = np.uint32(len(tags) - 1)
    for i in range(len(new_tags)):
        j = new_tags[i] & mask
        while tags[j] != 0:
            j = (j + np.uint32(1)) & mask
        tags[j] = new_tags[i]
        low[j] = np.uint32(handles[i] & np.uint64(0xFFFFFFFF))
        high[j] = np.uint8(handles[i] >> np.uint64(32))


@njit(cache=True)
def _rehash(old_tags, old_low, old_high, tags, low, high):  # type: ignore[no-untyped-def]
    """Every entry of the old arrays into the new, larger ones (in slot order: the new homes run
    in step with it, so both sides are read and written nearly in sequence)."""
    mask = np.uint32(len(tags) - 1)
    for k in range(len(old_tags)):
        tag = old_tags[k]
        if tag == 0:
            continue
        j = tag & mask
        while tags[j] != 0:
            j = (j + np.uint32(1)) & mask
        tags[j], low[j], high[j] = tag, old_low[k], old_high[k]


@njit(cache=True)
def _add(tags, low, high, tables, values, handles):  # type: ignore[no-untyped-def]
    new_tags = np.empty(len(values), dtype=np.uint32)
    for i in range(len(values)):
        new_tags[i] = _tag(tables[i], values[i])
    _insert(tags, low, high, new_tags, handles)


@njit(cache=True)
def _remove(tags, low, high, tables, values, handles):  # type: ignore[no-untyped-def]
    """Remove each (table, value, handle) once; returns how many were there."""
    mask = np.uint32(len(tags) - 1)
    removed = 0
    for q in range(len(values)):
        tag = _tag(tables[q], values[q])
        lo, hi = np.uint32(handles[q] & np.uint64(0xFFFFFFFF)), np.uint8(handles[q] >> np.uint64(32))
        i = tag & mask
        while tags[i] != 0 and not (tags[i] == tag and low[i] == lo and high[i] == hi):
            i = (i + np.uint32(1)) & mask
        if tags[i] == 0:
            continue
        removed += 1
        j = i
        while True:  # shift back the entries of the run that may sit at the hole
            j = (j + np.uint32(1)) & mask
            if tags[j] == 0:
                break
            home = tags[j] & mask
            stays = (i < home <= j) if i <= j else (i < home or home <= j)
            if not stays:
                tags[i], low[i], high[i] = tags[j], low[j], high[j]
                i = j
        tags[i] = 0
    return removed


@njit(cache=True, inline="always")
def _probe(tags, low, high, tag, mask, q, where, found, count):  # type: ignore[no-untyped-def]
    """Every handle stored under ``tag``, from its home slot to the next empty one: writes (q, handle)
    to ``where``/``found`` from position ``count`` on while they have room; returns (the empty slot,
    the new count)."""
    i = tag & mask
    while tags[i] != 0:
        if tags[i] == tag:
            if count < len(where):
                where[count] = q
                found[count] = np.uint64(low[i]) | (np.uint64(high[i]) << np.uint64(32))
            count += 1
        i = (i + np.uint32(1)) & mask
    return i, count


@njit(cache=True)
def _find(tags, low, high, tables, values, where, found):  # type: ignore[no-untyped-def]
    """Every stored handle under the tag of each query: writes (query position, handle) to ``where``
    and ``found`` while they have room; returns how many there are."""
    mask = np.uint32(len(tags) - 1)
    count = 0
    for q in range(len(values)):
        count = _probe(tags, low, high, _tag(tables[q], values[q]), mask, q, where, found, count)[1]
    return count


@njit(cache=True)
def _find_add(tags, low, high, tables, values, handles, start, where, found, count):  # type: ignore[no-untyped-def]
    """``_find`` of each query from ``start`` on, then its own entry added where the probe ended (the
    next empty slot): a later query finds an earlier one's handle. Stops before a query whose handles
    no longer fit; returns (queries done, handles found)."""
    mask = np.uint32(len(tags) - 1)
    for q in range(start, len(values)):
        tag = _tag(tables[q], values[q])
        i, c = _probe(tags, low, high, tag, mask, q, where, found, count)
        if c > len(where):
            return q, count
        tags[i] = tag
        low[i] = np.uint32(handles[q] & np.uint64(0xFFFFFFFF))
        high[i] = np.uint8(handles[q] >> np.uint64(32))
        count = c
    return len(values), count


class BandMap:
    """(band table, band value) -> handles of the documents indexed there (see module doc)."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        size = 1 << max(4, (int(capacity / _MAX_LOAD)).bit_length())
        self._tags = np.zeros(size, dtype=np.uint32)
        self._low = np.zeros(size, dtype=np.uint32)
        self._high = np.zeros(size, dtype=np.uint8)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return self._tags.nbytes + self._low.nbytes + self._high.nbytes

    def add_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray) -> None:
        """Index ``handles[i]`` under (``tables[i]``, ``values[i]``)."""
        if not len(values):
            return
        if self._count + len(values) > _MAX_LOAD * len(self._tags):
            self._grow(self._count + len(values))
        _add(self._tags, self._low, self._high, _int64(tables), _uint64(values), _uint64(handles))
        self._count += len(values)

    def remove_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray) -> None:
        """Remove each (table, value, handle) that is there."""
        if len(values):
            self._count -= _remove(self._tags, self._low, self._high, _int64(tables), _uint64(values),
                                   _uint64(handles))

    def find_many(self, tables: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query positions, handles): every handle stored under the tag of (``tables[q]``,
        ``values[q]``), a superset of those stored under the key itself (tags may collide)."""
        tables, values = _int64(tables), _uint64(values)
        # room for about two handles per query (a run's own documents are in the map already, so
        # most queries find one): one pass over the arrays, a second one only when that was short
        room = 2 * len(values) + 64
        where, found = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64)
        count = _find(self._tags, self._low, self._high, tables, values, where, found)
        if count > room:
            where, found = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.uint64)
            _find(self._tags, self._low, self._high, tables, values, where, found)
        return where[:count], found[:count]

    def find_add_many(self, tables: np.ndarray, values: np.ndarray, handles: np.ndarray,
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``find_many`` and ``add_many`` in one pass, query by query: query q finds the handles
        added by the queries before it, not its own. One probe per (table, value) instead of two
        (each a cache miss in a map of millions of slots)."""
        tables, values, handles = _int64(tables), _uint64(values), _uint64(handles)
        if self._count + len(values) > _MAX_LOAD * len(self._tags):
            self._grow(self._count + len(values))
        room = 2 * len(values) + 64
        where, found = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64)
        done, count = _find_add(self._tags, self._low, self._high, tables, values, handles, 0, where, found, 0)
        while done < len(values):  # out of room before query ``done``: again from there, with room
            room *= 4
            where, found = np.resize(where, room), np.resize(found, room)
            done, count = _find_add(self._tags, self._low, self._high, tables, values, handles, done, where, found,
                                    count)
        self._count += len(values)
        return where[:count], found[:count]

    def _grow(self, needed: int) -> None:
        size = len(self._tags)
        while needed > _MAX_LOAD * size:
            size *= 2
        old = self._tags, self._low, self._high
        self._tags = np.zeros(size, dtype=np.uint32)
        self._low = np.zeros(size, dtype=np.uint32)
        self._high = np.zeros(size, dtype=np.uint8)
        # one compiled pass (measured at 2.9M entries: 26 ms against 135 ms through numpy's masks)
        _rehash(*old, self._tags, self._low, self._high)


def _int64(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _uint64(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.uint64)
