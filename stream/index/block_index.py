"""``BlockIndex``: a lossless, adaptively re-split SimHash block table, plus MinHash LSH band tables.

Tables 0..k are SimHash block tables (Manku et al. 2007: k + 1 blocks, pigeonhole), tables
k+1..k+bands are LSH band tables (``TableLayout``, layout.py). This module is the API: it opens the
index's parts (``IndexState``, state.py) and hands each call to the module that does it: document/query.py
(one query), document/writes.py (insert, delete, expire), batch/calls.py (the batch calls).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from stream.index.anchors import DEFAULT_CAP as DEFAULT_ANCHOR_CAP
from stream.index.anchors import AnchorOwner, AnchorsOf, AnchorTable
from stream.index.bands.tables import DEFAULT_MEMTABLE_ENTRIES, BandTables
from stream.index.batch import calls as batch
from stream.index.batch.data import BatchBands
from stream.index.document import anchor_query, query, writes
from stream.index.layout import TableLayout
from stream.index.records import BAND_STAMP_KEY, IndexHit, check_config, index_config
from stream.index.simhash.cache import BucketCache, RootFilter
from stream.index.simhash.segments import DEFAULT_LIMIT as DEFAULT_ENTRY_LIMIT
from stream.index.simhash.segments import upgrade_keys_only
from stream.index.simhash.stats import IndexStats
from stream.index.simhash.table import SplitPolicy
from stream.index.state import IndexState
from stream.storage import BufferedStore, KVStore, MemoryStore, RocksStore

# pending writes (store keys) before a batch goes to RocksDB: ~290 documents (docs/decisions/index-storage-layout.md)
DEFAULT_WRITE_BUFFER = 2048
DEFAULT_MIN_SPLIT = 1024  # minimum split size: docs/decisions/index-resplitting.md
BAND_DIR = "bands"  # inside an index's RocksDB directory: the band tables' runs (bands/tables.py)


class BlockIndex:
    """Index of (fingerprint, doc id, event time): query returns every entry within Hamming distance k.

    ``path=None`` keeps the index in memory; ``path="DIR"`` persists it in RocksDB (reopening gives
    the same index). ``split_mu``/``split_cap``/``min_split`` set the re-split rule (Wang & Wang
    2019, §2.3, see ``SplitPolicy``); ``resplit=False`` turns splitting off (the benchmark's
    baseline). ``cache_bytes`` bounds the read cache. ``write_buffer`` (store writes; default: 2048
    for an index that opens its own RocksDB, else 0) collects writes in memory and writes them in one
    batch (``BufferedStore``); queries see them at once, ``flush``/``close`` write them, and a crash
    loses the pending ones (the last few hundred documents; the store keeps a prefix of the commit
    order). ``sole_writer``: the caller's ``store`` is written by nothing but this index while it
    lives, so an empty one counts as fresh, as a store the index opened itself does (cache misses
    skip their scan). ``root_filter`` (with a store of its own or ``sole_writer``): keep a filter of
    the top-level buckets that exist (``RootFilter``; on a store that is not empty, read from its
    records once on open); a cache miss on any other skips its scan, also after the cache evicts. For
    a store restored from a changelog, where new documents mostly meet band buckets that do not exist
    yet. ``band_dir``: where the band tables keep their runs for an index on a caller's store (else
    all in memory); derived state, rebuilt from the records on open unless the store holds the stamp
    ``close`` wrote beside them. ``entry_limit``: the batch path's SimHash entries kept in memory
    before they are written a root at a time (simhash/segments.py); an open after a crash redoes
    them from the records written since.
    """

    def __init__(
        self,
        path: str | None = None,
        k: int = 3,
        *,
        bands: int = 0,
        split_mu: float = 2.0,
        split_cap: int | None = None,
        min_split: int = DEFAULT_MIN_SPLIT,
        store: KVStore | None = None,
        bits: int = 64,
        resplit: bool = True,
        cache_bytes: int = 1 << 30,
        wal: bool = True,
        write_buffer: int | None = None,
        sole_writer: bool = False,
        root_filter: bool = False,
        band_memtable: int = DEFAULT_MEMTABLE_ENTRIES,
        band_dir: str | Path | None = None,
        entry_limit: int = DEFAULT_ENTRY_LIMIT,
    ) -> None:
        self.layout = TableLayout(k, bands, bits)
        self.k, self.bits, self.bands = k, bits, bands
        owns_store = store is None
        if root_filter and not (owns_store or sole_writer):
            raise ValueError("root_filter needs a store nothing else writes (sole_writer=True)")
        self.store: KVStore = (MemoryStore() if path is None else RocksStore(path, wal=wal)) if store is None else store
        self._owns_store = owns_store
        if write_buffer is None:
            # Buffer only a store the index opened on disk: a caller's store (the service's changelog
            # table) may expect each write at once, and a MemoryStore gains nothing.
            write_buffer = DEFAULT_WRITE_BUFFER if owns_store and path is not None else 0
        kv = BufferedStore(self.store, write_buffer) if write_buffer > 0 else self.store
        config = index_config(k, bits, bands)
        upgrade_keys_only(kv, config)
        fresh = check_config(kv, config)
        policy = SplitPolicy(mu=split_mu, cap=split_cap, min_split=min_split, enabled=resplit)
        # the band tables of an index on a RocksDB of its own, or given a directory, keep their older
        # entries in runs on disk
        if band_dir is None and path is not None and owns_store:
            band_dir = Path(path) / BAND_DIR
        runs_dir = Path(band_dir) if band_dir is not None and bands else None
        band_tables = BandTables(runs_dir, kv.get(BAND_STAMP_KEY), band_memtable)
        if band_tables.reused:  # from here on a crash must not find the stamp (bands/tables.py)
            kv.write_ops([(BAND_STAMP_KEY, None)])
        self._state = state = IndexState.open(self.layout, kv, policy, cache_bytes, band_tables, entry_limit)
        if fresh:
            state.checkpoint_entries()  # the watermark: from here on an open redoes what a crash lost
        else:
            state.replay_entries()
        # An empty store of our own: until the cache evicts, every bucket is in it (cache misses on new
        # blocks skip a scan of ~20 us; a 1M build meets 262k new root buckets). Not for a caller's
        # store, which may be filled behind the index, unless the caller says nothing else writes it
        # (the service's probe stage, for a partition that was empty when it opened it).
        state.cache.complete = fresh and (owns_store or sole_writer)
        restore_bands = bool(bands) and not band_tables.reused
        if not fresh and (root_filter or restore_bands):  # derived state from the records that are there
            state.restore(root_filter, restore_bands)
        elif root_filter:  # a fresh store: empty, it keeps the shortcut once the cache evicts
            state.cache.root_filter = RootFilter()

    @property
    def cache(self) -> BucketCache:
        return self._state.cache

    @property
    def band_map(self) -> BandTables:
        return self._state.band_map

    # -- one document ---------------------------------------------------------------------------

    def insert(
        self,
        fingerprint: int,
        doc_id: str,
        ts: float = 0.0,
        bands: Sequence[tuple[int, int]] = (),
        tables: Collection[int] | None = None,
        payload: bytes = b"",
    ) -> None:
        """Index a document. Idempotent for a redelivery; a new fingerprint, ts or bands replaces it.

        Re-inserting the same document with other ``tables`` adds the missing tables; with another
        ``payload`` rewrites the record. Queries return ``payload`` with the document's hits.
        """
        writes.insert(self._state, fingerprint, doc_id, ts, bands, tables, payload)

    def query(
        self,
        fingerprint: int,
        bands: Sequence[tuple[int, int]] = (),
        tables: Collection[int] | None = None,
        once: bool = False,
    ) -> list[IndexHit]:
        """Every indexed document within distance k (SimHash tables), plus band-bucket mates.

        Sorted by (distance, doc_id); one hit per document, ``via="simhash"`` when both kinds found it.
        ``once``: the caller queries a document's tables in disjoint groups (the service's partitions)
        and wants each hit within distance k from one group only: the one holding
        ``TableLayout.first_shared`` of the pair, the lowest SimHash table where the two share a
        block. That group always finds it (pigeonhole, and splits are lossless within distance k),
        so the others drop it; hits beyond k (band mates) come from every group that finds them.
        """
        return query.query(self._state, fingerprint, bands, tables, once)

    def document(self, doc_id: str) -> IndexHit | None:
        """The indexed document with this id (its ts, fingerprint and payload), or None."""
        return writes.document(self._state, doc_id)

    def delete(self, doc_id: str) -> bool:
        """Remove a document from every table; False if it was not indexed."""
        return writes.delete(self._state, doc_id)

    def expire(self, before_ts: float) -> int:
        """Delete every document with ts < ``before_ts``; returns how many."""
        return writes.expire(self._state, before_ts)

    # -- batches (docs/index.md, "Batch path") --------------------------------------------------

    def query_many(
        self, fingerprints: Sequence[int], bands: BatchBands | None = None,
        tables: Sequence[Collection[int] | None] | None = None, once: bool = False,
    ) -> list[list[IndexHit]]:
        """``query(fingerprints[i], bands[i], tables[i], once)`` of each: the same answers."""
        return batch.query_many(self._state, fingerprints, bands, tables, once)

    def insert_many(
        self, fingerprints: Sequence[int], doc_ids: Sequence[str], ts: Sequence[float] | None = None,
        bands: BatchBands | None = None, tables: Sequence[Collection[int] | None] | None = None,
        payloads: Sequence[bytes] | None = None,
    ) -> None:
        """``insert`` of each document in order: the same index."""
        batch.insert_many(self._state, fingerprints, doc_ids, ts, bands, tables, payloads)

    def query_insert_many(
        self, fingerprints: Sequence[int], doc_ids: Sequence[str], ts: Sequence[float] | None = None,
        bands: BatchBands | None = None, tables: Sequence[Collection[int] | None] | None = None,
        payloads: Sequence[bytes] | None = None, once: bool = False,
    ) -> list[list[IndexHit]]:
        """For each document in order, ``query`` and then ``insert`` (the streaming pattern): document
        i's answer includes the documents before it in the batch. Same answers and index as that loop.
        ``tables[i]`` restricts both calls of document i; ``once`` applies to its query."""
        return batch.query_insert_many(self._state, fingerprints, doc_ids, ts, bands, tables, payloads, once)

    # -- anchors (index/anchors.py) -------------------------------------------------------------

    def use_anchors(self, anchors_of: AnchorsOf, cap: int = DEFAULT_ANCHOR_CAP,
                    owns: AnchorOwner | None = None) -> None:
        """Keep an anchor table from here on: built from the records there are (``anchors_of`` reads
        a payload's anchors), then kept in step by every insert, delete and expiry. ``owns``: the
        anchors it proposes pairs by (a service partition's; None: all; index/anchors.py)."""
        self._state.anchors = AnchorTable(anchors_of, cap, owns)
        self._state.restore_anchors()

    def anchor_query_many(self, fingerprints: Sequence[int], payloads: Sequence[bytes], doc_ids: Sequence[str],
                          bands: BatchBands | None = None) -> list[list[IndexHit]]:
        """For each document, the indexed documents the anchor table proposes with it (``via="anchor"``),
        sorted by (distance, doc_id): each one's payload read by ``anchors_of``; a document indexed
        by this call's batch sees the ones before it, as ``query_insert_many`` does. With ``bands``
        (each document's), the pairs the tables find (within k, a band value in common) are left out."""
        return anchor_query.query_many(self._state, fingerprints, payloads, doc_ids, bands)

    # -- the service's routing and recovery -------------------------------------------------------

    def routing_keys(self, fingerprint: int, bands: Sequence[tuple[int, int]] = ()) -> list[tuple[int, bytes]]:
        """``TableLayout.routing_keys`` of this index's layout."""
        return self.layout.routing_keys(fingerprint, bands)

    # -- the whole index ------------------------------------------------------------------------

    def stats(self) -> IndexStats:
        cache = self._state.cache
        return self._state.stats.snapshot(len(cache), cache.hits, cache.misses)

    def flush(self) -> None:
        """Statistics and buffered writes to the store. The batch path's pending SimHash entries stay
        in memory (``write_pending``); an open after a crash redoes them from the records."""
        self._state.checkpoint()
        self._state.kv.flush()

    def write_pending(self) -> None:
        """The batch path's pending SimHash entries into the store now, as ``close`` does
        (simhash/segments.py): a store copied after it holds every entry as it is."""
        self._state.checkpoint_entries()
        self.flush()

    def close(self) -> None:
        """Persist statistics and flush; closes the store if the index opened it."""
        state = self._state
        state.checkpoint_entries()
        state.checkpoint()
        stamp = state.band_map.persist()
        if stamp is not None:
            state.kv.put(BAND_STAMP_KEY, stamp)
        state.band_map.close()
        if self._owns_store:
            state.kv.close()
        else:
            state.kv.flush()
        state.cache.clear()

    def __len__(self) -> int:
        return self._state.stats.documents

    def __enter__(self) -> BlockIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
