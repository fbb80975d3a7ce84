"""The band map against a dict model: growth (its compiled rehash), removals, and finds with more
handles than ``find_many``'s first buffer holds."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from stream.index.bands.memtable import BandMap


def _found(band_map: BandMap, tables: np.ndarray, values: np.ndarray) -> set[tuple[int, int]]:
    where, handles = band_map.find_many(tables, values)
    return set(zip(where.tolist(), handles.tolist(), strict=True))


def _expected(model: dict[tuple[int, int], set[int]], tables: np.ndarray, values: np.ndarray) -> set[tuple[int, int]]:
    return {(q, h) for q, key in enumerate(zip(tables.tolist(), values.tolist(), strict=True)) for h in model[key]}


def test_band_map_keeps_every_entry_through_growth_and_removals() -> None:
    rng = np.random.default_rng(7)
    band_map = BandMap(capacity=16)
    model: dict[tuple[int, int], set[int]] = defaultdict(set)
    sizes = []
    for start in range(0, 20_000, 2_500):  # eight adds, each past the load limit of the last size
        tables = rng.integers(4, 28, 2_500)
        values = rng.integers(0, 2**63, 2_500, dtype=np.uint64)
        tables[::50], values[::50] = 4, 12345  # a hot (table, value): many handles
        handles = np.arange(start, start + 2_500, dtype=np.uint64)
        band_map.add_many(tables, values, handles)
        for key in zip(tables.tolist(), values.tolist(), handles.tolist(), strict=True):
            model[key[:2]].add(key[2])
        sizes.append(band_map.nbytes)
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # it grew
    assert len(band_map) == 20_000
    gone = list(model.items())[:300]
    for (table, value), handles_there in gone:
        handle = min(handles_there)
        band_map.remove_many(np.array([table]), np.array([value], dtype=np.uint64), np.array([handle], dtype=np.uint64))
        handles_there.discard(handle)
    assert len(band_map) == 20_000 - 300
    keys = list(model)
    tables = np.array([t for t, _ in keys[:4_000]] + [4, 5, 6])
    values = np.array([v for _, v in keys[:4_000]] + [12345, 12345, 99], dtype=np.uint64)
    assert _found(band_map, tables, values) == _expected(model, tables, values)
    # one query whose hot value holds more handles than the first buffer (2 per query + 64)
    hot = np.array([4]), np.array([12345], dtype=np.uint64)
    assert len(model[(4, 12345)]) > 66
    assert _found(band_map, *hot) == _expected(model, *hot)


def test_find_add_finds_what_came_before_each_query_and_adds_it() -> None:
    """``find_add_many`` equals, query by query, a find of the map so far and then an add of the
    query's own handle, also when a hot value overflows its first buffer mid-call."""
    rng = np.random.default_rng(8)
    band_map = BandMap(capacity=16)
    model: dict[tuple[int, int], set[int]] = defaultdict(set)
    next_handle = 0
    for _ in range(4):  # every pair is checked in Python: the model grows with the square of the handles
        n = 1_500
        tables = rng.integers(4, 8, n)
        values = rng.integers(0, 40, n, dtype=np.uint64)  # few values: most queries find earlier ones
        values[n // 2 :: 7], tables[n // 2 :: 7] = 7, 4  # a hot value late in the call: over the buffer
        handles = np.arange(next_handle, next_handle + n, dtype=np.uint64)
        next_handle += n
        where, found = band_map.find_add_many(tables, values, handles)
        expected = set()
        for q, key in enumerate(zip(tables.tolist(), values.tolist(), strict=True)):
            expected |= {(q, h) for h in model[key]}
            model[key].add(int(handles[q]))
        assert set(zip(where.tolist(), found.tolist(), strict=True)) == expected
        assert len(where) > 2 * n + 64  # the resumed pass ran
    assert len(band_map) == next_handle
    keys = list(model)
    tables = np.array([t for t, _ in keys])
    values = np.array([v for _, v in keys], dtype=np.uint64)
    assert _found(band_map, tables, values) == _expected(model, tables, values)
