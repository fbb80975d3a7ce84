"""``BlockIndex``'s batch calls (Li & Han: batch processing next to incremental): ``query_many``,
``insert_many`` and ``query_insert_many`` over documents with bands, table restrictions and payloads
give the answers and the index of the one-document loops they replace (docs/index.md, "Batch path").

A batch is cut into *runs* at the documents that need the loop's order to the letter: an id already
indexed or repeated in the batch (a redelivery or replacement changes what later ones see). Each
such document takes the one-document path between the runs. Within a run a document's answer is the
index before the run plus the run's earlier documents, found by one compiled all-pairs pass
(SimHash) and by the band map, which takes the run's band values before its queries: splits of
SimHash buckets are lossless, so their timing changes no answer, and band tables do not split
(bands/memtable.py). Then the run is inserted at once (``batch_insert``): numpy builds every key, one write
stores them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain

import numpy as np

from stream.index.batch import roots as batch_roots
from stream.index.batch import run_insert as batch_insert
from stream.index.batch import run_query as batch_query
from stream.index.batch.data import BatchBands, DocumentBatch
from stream.index.document import query, writes
from stream.index.layout import TableLayout
from stream.index.records import IndexHit, doc_key
from stream.index.state import IndexState


def query_many(state: IndexState, fingerprints: Sequence[int], bands: BatchBands | None = None,
               tables: Sequence[Collection[int] | None] | None = None, once: bool = False) -> list[list[IndexHit]]:
    """``BlockIndex.query_many``."""
    batch = _make_batch(state, fingerprints, None, None, bands, tables, None, once)
    if state.root_slots is None or not len(batch):
        return [query.query(state, fp, batch.band_pairs(i), None if tables is None else tables[i], once)
                for i, fp in enumerate(batch.fps)]
    with _pinned(state):
        return batch_query.query_run(state, batch, batch_roots.resolve(state, batch, create=False))


def insert_many(state: IndexState, fingerprints: Sequence[int], doc_ids: Sequence[str],
                ts: Sequence[float] | None = None, bands: BatchBands | None = None,
                tables: Sequence[Collection[int] | None] | None = None, payloads: Sequence[bytes] | None = None,
                ) -> None:
    """``BlockIndex.insert_many``."""
    batch = _make_batch(state, fingerprints, doc_ids, ts, bands, tables, payloads, False)
    _run_batch(state, batch, with_query=False)


def query_insert_many(state: IndexState, fingerprints: Sequence[int], doc_ids: Sequence[str],
                      ts: Sequence[float] | None = None, bands: BatchBands | None = None,
                      tables: Sequence[Collection[int] | None] | None = None,
                      payloads: Sequence[bytes] | None = None, once: bool = False) -> list[list[IndexHit]]:
    """``BlockIndex.query_insert_many``."""
    batch = _make_batch(state, fingerprints, doc_ids, ts, bands, tables, payloads, once)
    return _run_batch(state, batch, with_query=True)


def _run_batch(state: IndexState, batch: DocumentBatch, with_query: bool) -> list[list[IndexHit]]:
    """The runs of the batch through the batch path, the documents between them one by one."""
    answers: list[list[IndexHit]] = []
    if not len(batch):
        return answers
    # blocks too wide for slot lists: the loop
    slow = list(range(len(batch))) if state.root_slots is None else _loop_documents(state, batch)
    start = 0
    for stop in [*slow, len(batch)]:
        if stop > start:
            run = batch.slice(start, stop)
            first = batch_insert.allocate(state, run, with_query)  # the run's handles
            with _pinned(state):
                resolved = batch_roots.resolve(state, run, create=True)  # what its query reads, its insert appends to
                if with_query:
                    answers += batch_query.query_run(state, run, resolved, first)
                batch_insert.insert_run(state, run, first, resolved)
        if stop < len(batch):
            answers.append(_one_document(state, batch, stop, with_query))
        start = stop + 1
    return answers


@contextmanager
def _pinned(state: IndexState) -> Iterator[None]:
    """The root arena pinned for a run (batch/roots.py), then the cache evicted down to its bound."""
    state.cache.pinned = True
    try:
        yield
    finally:
        state.cache.pinned = False
        state.cache.settle()


def _one_document(state: IndexState, batch: DocumentBatch, i: int, with_query: bool) -> list[IndexHit]:
    bands = batch.band_pairs(i)
    tables = None if batch.used[i] == state.layout.tables_for(None, bands) else batch.used[i]
    hits = query.query(state, batch.fps[i], bands, tables, batch.once[i] is not None) if with_query else []
    writes.insert(state, batch.fps[i], batch.ids[i], batch.times[i], bands, tables, batch.payloads[i])
    return hits


def _loop_documents(state: IndexState, batch: DocumentBatch) -> list[int]:
    """Positions of the documents that take the one-document path (module doc), ascending."""
    slow: set[int] = set()
    seen: set[bytes] = set()
    for i, key in enumerate(batch.id_keys):
        if key in seen:
            slow.add(i)
        seen.add(key)
    known = state.kv.multi_get(batch.id_keys)
    slow.update(i for i, value in enumerate(known) if value is not None)
    return sorted(slow)


def _make_batch(
    state: IndexState, fingerprints: Sequence[int], doc_ids: Sequence[str] | None, ts: Sequence[float] | None,
    bands: BatchBands | None, tables: Sequence[Collection[int] | None] | None,
    payloads: Sequence[bytes] | None, once: bool,
) -> DocumentBatch:
    """Validate everything before anything changes: a bad batch raises and leaves the index as it was."""
    fps = list(map(operator.index, fingerprints))  # ints (numpy ints too); a float is an error
    n = len(fps)
    layout = state.layout
    for fp in fps:
        if not 0 <= fp < layout.limit:
            layout.check_fingerprint(fp)
    ids = [""] * n if doc_ids is None else list(doc_ids)
    times = [0.0] * n if ts is None else [float(t) for t in ts]
    payload_list = [b""] * n if payloads is None else [bytes(p) for p in payloads]
    table_list = None if tables is None else list(tables)
    lengths = (len(ids), len(times), len(payload_list), n if bands is None else len(bands),
               n if table_list is None else len(table_list))
    if any(length != n for length in lengths):
        raise ValueError(f"{n} fingerprints, but doc ids, times, payloads, band lists, table sets: {lengths}")
    if any(math.isnan(t) for t in times):
        raise ValueError("ts is NaN")
    has_bands, values, exts = _band_arrays(layout, bands, n)
    part, used = _participation(layout, has_bands, table_list)
    return DocumentBatch(
        fps=fps, array=np.array(fps, dtype=np.uint64), ids=ids, id_keys=[doc_key(d) for d in ids], times=times,
        has_bands=has_bands, values=values, exts=exts, part=part, used=used, payloads=payload_list,
        once=_once(layout, used, has_bands, table_list) if once else [None] * n,
        all_simhash=bool(part[:, : layout.k + 1].all()),
    )


def _once(layout: TableLayout, used: list[frozenset[int]], has_bands: np.ndarray,
          table_list: list[Collection[int] | None] | None) -> list[frozenset[int] | None]:
    """``Batch.once``: the tables each document's query answers for, None where that is every table it
    has (then nothing is left to another call, and no pair needs the test)."""
    if table_list is None:
        return [None] * len(used)
    every, simhash = layout.all_tables, layout.simhash_tables
    return [u if chosen is not None and u != (every if has else simhash) else None
            for u, chosen, has in zip(used, table_list, has_bands.tolist(), strict=True)]


def _participation(layout: TableLayout, has_bands: np.ndarray, table_list: list[Collection[int] | None] | None,
                   ) -> tuple[np.ndarray, list[frozenset[int]]]:
    """``part`` and ``used`` of a batch (``TableLayout.tables_for`` of each document)."""
    n, k = len(has_bands), layout.k
    part = np.zeros((n, layout.table_count), dtype=np.bool_)
    part[:, : k + 1] = True
    part[:, k + 1 :] = has_bands[:, None]
    every, simhash = layout.all_tables, layout.simhash_tables
    used = [every if has else simhash for has in has_bands.tolist()]
    if table_list is not None:  # one assignment for the batch: a row at a time cost ~2 us a document
        rows: list[int] = []
        cells: tuple[list[int], list[int]] = ([], [])
        for i, (chosen, has) in enumerate(zip(table_list, has_bands.tolist(), strict=True)):
            if chosen is not None:
                used[i] = tables = layout.chosen_tables(chosen, has)
                rows.append(i)
                cells[0].extend([i] * len(tables))
                cells[1].extend(tables)
        part[rows] = False
        part[cells] = True
    return part, used


def _band_arrays(layout: TableLayout, bands: BatchBands | None, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(has bands, values, extensions) of a batch: (n,) bool, (n, bands) uint64 twice."""
    width = layout.bands
    if isinstance(bands, np.ndarray):
        if bands.shape != (n, width, 2) or bands.dtype != np.uint64:
            raise ValueError(f"a band array must be ({n}, {width}, 2) uint64, got {bands.shape} {bands.dtype}")
        return np.ones(n, dtype=np.bool_), np.ascontiguousarray(bands[:, :, 0]), np.ascontiguousarray(bands[:, :, 1])
    has = np.zeros(n, dtype=np.bool_)
    if bands is not None:
        has[:] = [len(b) > 0 for b in bands]
        for b in bands:
            if b and len(b) != width:
                raise ValueError(f"expected {width} bands, got {len(b)}")
    if not width or not has.any():
        zeros = np.zeros((n, width), dtype=np.uint64)
        return has, zeros, zeros
    assert bands is not None
    zero_row = ((0, 0),) * width
    try:
        flat = chain.from_iterable(chain.from_iterable(b if len(b) else zero_row for b in bands))
        pairs = np.fromiter(map(operator.index, flat), dtype=np.uint64, count=n * width * 2).reshape(n, width, 2)
    except (OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"bands must be (value, extension) pairs of unsigned 64-bit ints: {exc}") from None
    return has, np.ascontiguousarray(pairs[:, :, 0]), np.ascontiguousarray(pairs[:, :, 1])
