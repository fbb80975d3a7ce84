"""A query of one document: every indexed document within distance k in the SimHash tables, plus its
band-bucket mates (``BlockIndex.query``; the batch calls' documents that need the loop too).

The common case (no bands, no table restriction, every root of the k + 1 SimHash tables cached and
unsplit) reads the roots from the cache's slot lists and filters them in one compiled call
(``within_tables``); otherwise each table's descent (``BucketTable.leaves``) gives its leaves and
each leaf is filtered (``within``). Candidates pass a filter on the bits their entries keep (a lower
bound of the distance); the records fetched for the hits' doc ids give the exact distance.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from stream.index.layout import TableLayout
from stream.index.records import RECORD_HEAD, IndexHit, first_shared_band, pack_bands, record_tail, shares_band
from stream.index.simhash.buckets import Bucket
from stream.index.simhash.kernels import as_signed, within, within_tables
from stream.index.simhash.table import Leaf
from stream.index.state import IndexState, Probe

BandCandidates = dict[int, list[int]]  # handle -> the band columns where the band map holds it


def query(state: IndexState, fingerprint: int, bands: Sequence[tuple[int, int]] = (),
          tables: Collection[int] | None = None, once: bool = False) -> list[IndexHit]:
    """``BlockIndex.query``: the hits sorted by (distance, doc_id)."""
    layout = state.layout
    if not 0 <= fingerprint < layout.limit:
        layout.check_fingerprint(fingerprint)
    if not bands and tables is None:
        found = cached_roots(state, fingerprint)
        if found is not None:  # the common query: one compiled call filters the k + 1 roots
            return filter_roots(state, fingerprint, found)
        return _query_leaves(state, fingerprint, probe(state, fingerprint, layout.simhash_tables), {}, (), None, None)
    band_pairs = state.band_pairs(bands) if bands else ()
    used = layout.tables_for(tables, band_pairs)
    probed = probe(state, fingerprint, used)
    band = band_candidates(state, band_pairs, used) if band_pairs else {}
    # the tables a query(once=True) answers for; None when they are all the document has
    once_in = used if once and tables is not None and used != layout.tables_for(None, band_pairs) else None
    return _query_leaves(state, fingerprint, probed, band, band_pairs, once_in, simhash_part(layout, used))


def simhash_part(layout: TableLayout, used: frozenset[int]) -> frozenset[int] | None:
    """The SimHash tables of ``used`` when they are not all of them (None: every pair within k is
    reached by one of them, ``SimhashBlocks.reaches``)."""
    return None if layout.simhash_tables <= used else used & layout.simhash_tables


def _query_leaves(state: IndexState, fingerprint: int, probed: Probe, band: BandCandidates,
                  band_pairs: tuple[tuple[int, int], ...], once_in: frozenset[int] | None,
                  simhash_in: frozenset[int] | None) -> list[IndexHit]:
    """Hits of the leaves the SimHash descents reached, and of the band candidates."""
    near: set[int] = set()
    simhash_total = 0
    k = state.layout.k
    for table, leaves, _ in probed:
        root_query = as_signed(fingerprint & table.filter_mask)
        for leaf in leaves:
            bucket = leaf.bucket
            size = len(bucket.handles)
            if not size:
                continue
            simhash_total += size
            out = state.room(size)
            # a sub-bucket's entries keep other bits than the root's (SimhashBlocks.leaf_mask)
            masked = as_signed(fingerprint & table.scheme.leaf_mask(leaf.path)) if leaf.path else root_query
            count = within(bucket.fps, masked, k, out)
            if count:
                stored = bucket.handles
                near.update([stored[i] for i in out[:count].tolist()])
    candidates = state.stats.candidates
    if band_pairs:
        candidates["band"].add(len(band))
    candidates["simhash"].add(simhash_total)
    if not near and not band:
        return []
    return hits(state, fingerprint, near, band, once_in, band_values=pack_bands(band_pairs), simhash_in=simhash_in)


def band_candidates(state: IndexState, band_pairs: tuple[tuple[int, int], ...],
                    used: frozenset[int]) -> BandCandidates:
    """Handle -> band columns under whose tag the band map holds it, for the band tables in ``used``."""
    k = state.layout.k
    columns = [t - k - 1 for t in sorted(used) if t > k]
    if not columns:
        return {}
    values = np.fromiter((band_pairs[c][0] for c in columns), dtype=np.uint64, count=len(columns))
    where, found = state.band_map.find_many(state.layout.band_ids[columns], values)
    band: BandCandidates = {}
    for q, handle in zip(where.tolist(), found.tolist(), strict=True):
        band.setdefault(handle, []).append(columns[q])
    return band


def filter_roots(state: IndexState, fingerprint: int, found: list[Bucket]) -> list[IndexHit]:
    """Hits among the k + 1 cached, unsplit root buckets of ``fingerprint``: one compiled call."""
    columns = tuple([bucket.fps for bucket in found])
    out = state.positions
    signed = as_signed(fingerprint)
    masks, k = state.layout.filter_mask_array, state.layout.k
    packed = within_tables(columns, masks, signed, k, out)
    count = packed & 0xFFFFFFFF
    if count > len(out):  # more matches than room (duplicates): again, with room
        out = state.room(count)
        within_tables(columns, masks, signed, k, out)
    state.stats.candidates["simhash"].add(packed >> 32)
    if not count:
        return []
    return hits(state, fingerprint, {found[p >> 32].handles[p & 0xFFFFFFFF] for p in out[:count].tolist()}, {})


def hits(state: IndexState, fingerprint: int, near: Collection[int], band: BandCandidates,
         once_in: frozenset[int] | None = None, records: dict[int, bytes | None] | None = None,
         band_values: bytes = b"", simhash_in: frozenset[int] | None = None,
         band_decided: bool = False) -> list[IndexHit]:
    """Hits from the handles that passed the SimHash filter (``near``) or that the band map holds under the tag
    of the query's band in some columns (``band``; the record settles whether the value itself is shared,
    ``band_values``: the query's, as ``pack_bands`` packs them); ``once_in``: the query's tables, for
    ``query(once=True)``; ``records``: the records by handle if the caller read them (a batch reads all of
    its hits' records at once); ``simhash_in``: the query's SimHash tables when not all (``simhash_part``).
    A hit within k counts only if a SimHash table both documents use reaches it (``SimhashBlocks.reaches``;
    the record's mask names the stored one's tables): a root holds every entry sharing its block, the root
    arena's sub-chains only those near the next block, so without this the answer would depend on which path
    read the root. ``band_decided``: the batch path checked the band candidates' records already
    (``run_query._band_decisions``): ``band`` holds the ones that share a value, each with the lowest
    column it shares."""
    layout = state.layout
    k = layout.k
    head = state.codec.head
    unpack = RECORD_HEAD.unpack_from
    handles = list(set(near) | band.keys()) if band else list(near)
    wanted = (1 << (k + 1)) - 1 if simhash_in is None else sum(1 << t for t in simhash_in)
    mask_at = RECORD_HEAD.size
    raw = state.records(handles) if records is None else [records[h] for h in handles]
    found = []
    for handle, value in zip(handles, raw, strict=True):
        if value is None:  # an entry left without its record by a crash cut (see BucketTable._entries_of)
            continue
        stored, ts, n = unpack(value)
        distance = (stored ^ fingerprint).bit_count()
        if distance <= k and handle in near and layout.reaches_in(
                stored ^ fingerprint, wanted & int.from_bytes(value[mask_at:head], "little")):
            via = "simhash"
        elif handle in band and (band_decided or shares_band(value, head, n, band[handle], band_values)):
            via = "band"
        else:  # passed the filter only on the bits the entries keep
            continue
        if once_in is not None:
            column = None  # beyond k: the lowest band column the two share (None: cannot tell)
            if distance > k:
                column = band[handle][0] if band_decided else first_shared_band(value, head, n, band_values)
            if not _reports(layout, once_in, distance, stored, fingerprint, column):
                continue
        payload, pos = record_tail(value, head, n)
        found.append(IndexHit(value[pos:].decode("utf-8", "surrogatepass"), distance, ts, stored, via, payload))
    found.sort(key=lambda hit: (hit.distance, hit.doc_id))
    return found


def _reports(layout: TableLayout, once_in: frozenset[int], distance: int, stored: int, fingerprint: int,
             column: int | None) -> bool:
    """Whether a query over the tables ``once_in`` (``query(once=True)``) reports a hit: only when it
    holds the lowest table where the two documents share a key, a function of the two documents, so
    that of the partitions that find a pair exactly one reports it (and verifies its sketches). Within
    k: the lowest SimHash table whose block they share; beyond k: the lowest band table whose value
    they share (``column``: the record keeps every band); unknown (a record without bands): every one
    reports it."""
    if distance <= layout.k:
        return layout.first_shared(stored, fingerprint) in once_in
    return column is None or layout.k + 1 + column in once_in


def probe(state: IndexState, fingerprint: int, used: frozenset[int]) -> Probe:
    """The leaves each used SimHash table reaches; memoized until the next mutation, so the usual
    query-then-insert of one document descends once."""
    memo = state.probe_memo
    if memo is not None and memo[0] == state.version and memo[1] == (fingerprint, used):
        return memo[2]
    probed: Probe = []
    layout = state.layout
    k = layout.k
    cache_get = state.cache.get
    tables = state.tables
    for t in layout.simhash_order if used is layout.simhash_tables else sorted(used):
        if t > k:
            continue
        table = tables[t]
        source = (fingerprint, 0)
        root = table.root_key(source)
        bucket = cache_get(root)
        if bucket is not None and not bucket.split:  # the common case, without the general descent
            probed.append((table, [Leaf(root, bucket, (), None)], source))
        else:
            probed.append((table, table.leaves(source), source))
    state.probe_memo = (state.version, (fingerprint, used), probed)
    return probed


def cached_roots(state: IndexState, fingerprint: int) -> list[Bucket] | None:
    """The k + 1 SimHash root buckets of ``fingerprint`` if every one is cached and unsplit (the
    common case, served without keys, Leaf objects or calls into the tables), else None: the
    general ``probe`` then descends and loads. Memoized until the next mutation."""
    memo = state.roots_memo
    if memo is not None and memo[0] == state.version and memo[1] == fingerprint:
        return memo[2]
    found: list[Bucket] | None = None
    if state.root_slots is not None:
        found = [slots[(fingerprint >> low) & mask] for slots, low, mask in state.root_slots]  # type: ignore[misc]
        for bucket in found:
            if bucket is None or bucket.split:
                found = None
                break
        else:
            cache = state.cache
            cache.clock += 1
            for bucket in found:
                bucket.used = cache.clock
            cache.hits += len(found)
    state.roots_memo = (state.version, fingerprint, found)
    return found
