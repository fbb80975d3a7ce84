"""The query half of a batch run (batch/calls.py): every document against the index as it was before the
run, then the pairs inside the run.

SimHash: one compiled pass compares every document with the entries of its unsplit roots in the
root arena (batch/roots.py); the documents below a split root are descended together, per root
(simhash/split_batch.py).
Bands: one compiled call looks every (document, band) of the batch up in the band map. One multi-get
reads the records of every hit.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from stream.index.batch.roots import Resolved
from stream.index.document.query import hits, simhash_part
from stream.index.records import PAYLOAD_FLAG, RECORD_HEAD, IndexHit
from stream.index.simhash import split_batch
from stream.index.simhash.kernels import pairs_within
from stream.index.state import IndexState

if TYPE_CHECKING:
    from stream.index.batch.data import DocumentBatch

# (documents, band columns, handles): the band map's candidates of a batch, one entry per column
BandTriples = tuple[np.ndarray, np.ndarray, np.ndarray]
_NO_TRIPLES: BandTriples = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64))
_HANDLE_BITS = np.uint64((1 << 40) - 1)

def answer_lists(n: int) -> list[list[IndexHit]]:
    """A batch's n answer lists, made before anything else of the call. Why: Python's cyclic collector
    runs when enough container objects are alive, and a young collection walks every young one.
    Made here, the n lists start the collection before the roots the batch loads from the store exist
    as objects; made later they set one off that walks those thousands of objects (~1.2 ms, ~1.1 us per document
    at 1M; docs/decisions/index-hot-paths.md)."""
    return [[] for _ in range(n)]


def query_run(state: IndexState, batch: DocumentBatch, resolved: Resolved,
              first: int | None = None) -> list[list[IndexHit]]:
    """``query`` of each document of ``batch`` against the index as it is. ``first``: the batch is a
    run being inserted, its documents hold the handles from ``first`` on (``batch_insert.allocate``)
    and enter the band map here: each document's answer also gets the documents before it in the
    run that its query will find once they are inserted (``query_insert_many``).
    ``resolved``: the run's root buckets (batch/roots.py)."""
    answers = answer_lists(len(batch))
    near: dict[int, set[int]] = {}
    band = _NO_TRIPLES
    run_band: set[tuple[int, int]] = set()
    _simhash_candidates(state, batch, near, resolved)
    if state.layout.bands:
        band = _band_candidates(state, batch, first, run_band)
    _index_hits(state, batch, near, band, answers)
    if first is not None:
        add_run_pairs(state, batch, answers, run_band)
    return answers


def _index_hits(state: IndexState, batch: DocumentBatch, near: dict[int, set[int]], band: BandTriples,
                answers: list[list[IndexHit]]) -> None:
    """``answers[i]``: the hits of candidates ``near[i]`` and ``band`` (document, column, handle), by one
    read of their records."""
    docs, _, handles = band
    if not near and not len(docs):
        return
    found = sorted(set(chain.from_iterable(near.values())) | set(handles.tolist()))
    records = dict(zip(found, state.records(found), strict=True))
    shared = _band_decisions(state, batch, band, records)
    for i in sorted(near.keys() | shared.keys()):
        mates = shared.get(i, {})
        simhash_in = None if batch.all_simhash else simhash_part(state.layout, batch.used[i])
        answers[i] = hits(state, batch.fps[i], near.get(i, set()), mates, batch.once[i], records,
                          simhash_in=simhash_in, band_decided=True)


def _band_decisions(state: IndexState, batch: DocumentBatch, band: BandTriples,
                    records: dict[int, bytes | None]) -> dict[int, dict[int, list[int]]]:
    """Per document, handle -> [the lowest band column the record shares with it, over all bands] for
    the band candidates whose record holds the document's value in a column where the band map found
    it (``query.hits``'s check, for the batch at once: one comparison of the records' band values
    with the documents'). A record without the layout's bands (a document without bands that took
    the handle of one with them, or none) shares none."""
    docs, columns, handles = band
    out: dict[int, dict[int, list[int]]] = {}
    if not len(docs):
        return out
    pairs, inverse = np.unique(docs.astype(np.uint64) << np.uint64(40) | handles, return_inverse=True)
    pair_docs, pair_handles = (pairs >> np.uint64(40)).astype(np.int64), (pairs & _HANDLE_BITS).tolist()
    bands, head = state.layout.bands, state.codec.head
    stored = [records[h] for h in pair_handles]
    whole = np.array([r is not None and RECORD_HEAD.unpack_from(r)[2] & ~PAYLOAD_FLAG == bands for r in stored])
    values = np.zeros((len(pairs), bands), dtype=np.uint64)
    if whole.any():
        rows = b"".join(r[head : head + 8 * bands] for r, w in zip(stored, whole.tolist(), strict=True) if w and r)
        values[whole] = np.frombuffer(rows, dtype=">u8").reshape(-1, bands)
    equal = (values == batch.values[pair_docs]) & whole[:, None]
    holds = np.bincount(inverse, weights=equal[inverse, columns], minlength=len(pairs)) > 0
    lowest = equal.argmax(axis=1)
    for i, handle, held, column in zip(pair_docs.tolist(), pair_handles, holds.tolist(), lowest.tolist(),
                                       strict=True):
        if held:
            out.setdefault(i, {})[handle] = [column]
    return out


def _simhash_candidates(state: IndexState, batch: DocumentBatch, near: dict[int, set[int]], resolved: Resolved) -> None:
    """Handles whose stored bits lie within k of each document (``near``), by one compiled pass over
    the unsplit roots in the arena and one descent per split root (simhash/split_batch.py), and the
    candidate statistics as ``query`` keeps them."""
    arena = state.cache.arena
    blocks, use, below = resolved.blocks, resolved.arena, resolved.below
    found, handles, sizes = arena.within(blocks, use, resolved.masked, state.layout.k)
    for i, handle in zip(found.tolist(), handles.tolist(), strict=True):
        near.setdefault(i, set()).add(handle)
    for (t, _), (root_key, root, docs) in below.items():  # below split roots: leaves hold whole fps
        at = np.array(docs, dtype=np.int64)
        visits = split_batch.descend(state.tables[t], root_key, root, at, batch.array[at])
        found, handles, counts = split_batch.candidates(state.tables[t], visits, batch.array, state.layout.k)
        sizes += counts
        for i, handle in zip(found.tolist(), handles.tolist(), strict=True):
            near.setdefault(i, set()).add(handle)
    state.stats.candidates["simhash"].add_many(sizes.tolist())


def _band_candidates(state: IndexState, batch: DocumentBatch, first: int | None,
                     run_band: set[tuple[int, int]]) -> BandTriples:
    """(document, band column, handle) of each handle the band map holds under the tag of a
    document's band (the record settles whether the value is shared, ``_band_decisions``), for the
    band tables each document uses: one compiled call.
    With ``first`` (a run being inserted) the run's values enter the map as they are looked up, its
    documents holding the handles from ``first`` on: (i, j) into ``run_band`` for each earlier
    document j of the run that has document i's value in a band table both use."""
    k = state.layout.k
    rows, cols = np.nonzero(batch.part[:, k + 1 :])
    if first is None:
        where, found = state.band_map.find_many(cols + (k + 1), batch.values[rows, cols])
    else:  # the run's values go into the map as they are looked up, document by document
        where, found = state.band_map.find_add_many(cols + (k + 1), batch.values[rows, cols],
                                                    rows.astype(np.uint64) + np.uint64(first))
    docs, columns = rows[where], cols[where]
    if first is not None:
        own = found >= np.uint64(first)
        i, j, c = docs[own], (found[own] - np.uint64(first)).astype(np.int64), columns[own]
        keep = (j < i) & (batch.values[np.minimum(j, len(batch) - 1), c] == batch.values[i, c])
        run_band.update(zip(i[keep].tolist(), j[keep].tolist(), strict=True))
        docs, columns, found = docs[~own], columns[~own], found[~own]
    totals = np.bincount(docs, minlength=len(batch))
    probed = batch.part[:, k + 1 :].any(axis=1)
    state.stats.candidates["band"].add_many(totals[probed].tolist())
    return docs.astype(np.int64), columns.astype(np.int64), found.astype(np.uint64)


def add_run_pairs(state: IndexState, batch: DocumentBatch, answers: list[list[IndexHit]],
                  shared_band: set[tuple[int, int]]) -> None:
    """Add to ``answers[i]`` the documents j < i of the run that its query finds once they are
    inserted: within k on a SimHash table both use and where they share the block, or sharing a
    band value in a band table both use (``shared_band``); ``once`` as ``query.hits`` applies it."""
    if len(batch) < 2:
        return
    k = state.layout.k
    out = state.positions
    count = pairs_within(batch.array, k, out)
    if count > len(out):  # more pairs than room: again, with room
        out = state.room(count)
        pairs_within(batch.array, k, out)
    close = [(p >> 32, p & 0xFFFFFFFF) for p in out[:count].tolist()]
    beyond = shared_band.difference(close)  # pairs within k are all in close
    columns = _first_shared_columns(batch, beyond)
    changed = set()
    for i, j in chain(close, beyond):
        hit = _run_hit(state, batch, i, j, (i, j) in shared_band, columns.get((i, j)))
        if hit is not None:
            answers[i].append(hit)
            changed.add(i)
    for i in changed:
        answers[i].sort(key=lambda hit: (hit.distance, hit.doc_id))


def _first_shared_columns(batch: DocumentBatch, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """The lowest band column that each pair (i, j) of the run shares, for the pairs whose query answers
    for part of its tables (``once``): one numpy pass for them all."""
    wanted = [(i, j) for i, j in pairs if batch.once[i] is not None]
    if not wanted:
        return {}
    at = np.array(wanted, dtype=np.int64)
    equal = batch.values[at[:, 0]] == batch.values[at[:, 1]]
    return dict(zip(wanted, equal.argmax(axis=1).tolist(), strict=True))


def _run_hit(state: IndexState, batch: DocumentBatch, i: int, j: int, band: bool,
             column: int | None) -> IndexHit | None:
    """The hit of the run's document j for document i, if i's query reports it; ``column``: the lowest
    band column the two share (``_first_shared_columns``), for a pair beyond k."""
    fps = batch.fps
    distance = (fps[i] ^ fps[j]).bit_count()
    k = state.layout.k
    if distance <= k and _reached(state, batch, i, j):
        via = "simhash"
    elif band:
        via = "band"
    else:
        return None
    once_in = batch.once[i]
    if once_in is not None:  # the lowest table where the two share a key reports the pair (query._reports)
        if distance <= k:
            first = state.layout.first_shared(fps[j], fps[i])
        else:
            first = None if column is None else k + 1 + column
        if first is not None and first not in once_in:
            return None
    return IndexHit(batch.ids[j], distance, batch.times[j], fps[j], via, batch.payloads[j])


def _reached(state: IndexState, batch: DocumentBatch, i: int, j: int) -> bool:
    """Whether a SimHash table that both documents use reaches the pair (``SimhashBlocks.reaches``;
    a pair within k is reached by one of the k + 1, so with every table used the answer is yes)."""
    if batch.all_simhash:
        return True
    k = state.layout.k
    both: Iterable[int] = np.flatnonzero(batch.part[i, : k + 1] & batch.part[j, : k + 1]).tolist()
    return state.layout.reaches_any(batch.fps[i], batch.fps[j], both)
