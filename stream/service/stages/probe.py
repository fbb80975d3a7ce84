"""Stage 2: a partition's block index. Each partition judges its documents in runs through
``Detector.probe_many`` and answers the gather stage with each document's earlier matches, and every
later match with a revision; deletions and retention act on the partition's index."""

from __future__ import annotations

import math
import struct
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from stream.detect import DecodedFingerprints, Detector, Match, MatchSettings, Order, differences
from stream.errors import ConfigError
from stream.fingerprint import Fingerprint, FingerprintConfig, Fingerprinter
from stream.fingerprint.schema import schema_changes
from stream.index import BlockIndex, IndexHit
from stream.service import metrics
from stream.service.stages.dead_letters import DeadLetters, is_fault
from stream.service.stages.messages import (
    Answer,
    GatherEntry,
    ProbeItem,
    Revisions,
    Source,
    dumps,
    loads,
    version_from_json,
)
from stream.service.stages.output import Output
from stream.service.stages.routing import anchor_partitions, doc_partition, index_tables
from stream.service.stages.stage_values import Topics
from stream.storage import BufferedStore, KVStore

CHECKPOINT_SECONDS = 5.0
EXPIRE_SECONDS = 10.0  # with retention: how often a partition deletes entries too old to match
# Kept beside the index in each block-table partition (the index uses only b"\xffconfig", "stats",
# "handle" of its b"\xff" namespace): the settings the partition was built with, checked at open.
SETTINGS_KEY = b"\xffdedup-settings"
# ... and where each indexed document's input record is (its round, "topic:partition:offset"), keyed by
# its order so that retention deletes them in key order: a match then names where its text can be read
SOURCE_PREFIX = b"\xffdedup-source:"
# + a document id: the newest version (``messages.Version``) of that id the partition has heard of, so
# an older version arriving later neither replaces it in the index nor removes it
VERSION_KEY = b"\xffdedup-version:"
ANSWER_CHUNK = 1000  # matches per answer entry: ~80 KB, well inside an internal message


@dataclass(frozen=True)
class IndexMemory:
    """What a partition's index keeps in memory. The library's defaults suit one index per process
    (1 GiB of buckets, 4M band entries); a worker holds one per index partition beside Faust's tables.
    256 MiB of buckets holds the roots of ~2.5M documents; 2^18 band entries (~20k documents a
    partition, each indexed in about half of its 24 band tables there; ~10 MB with their log) before
    a run goes to disk, where ~log2(entries / 2^18) runs stay, each probed through a Bloom filter.
    2^19 pending SimHash entries (~12 MB, ~130k documents a partition) before they are written a
    root at a time (stream/index/simhash/segments.py)."""

    bucket_cache_bytes: int = 256 << 20
    band_memtable: int = 1 << 18
    pending_entries: int = 1 << 19

# A document's probe goes to every partition owning one of its buckets (all of them at a few
# partitions), and one worker often owns several: its fingerprint is decoded once (``decoded``, shared by the stage, its
# detectors and the document stage that serialized it).


class ProbeStage:
    """Runs probes against the partition's block table; ``store_for(partition)`` gives its KVStore."""

    def __init__(self, config: FingerprintConfig, matching: MatchSettings, topics: Topics,
                 store_for: Callable[[int], KVStore], output: Output, verify_once: bool = True,
                 late_allowance: float = 3600.0, band_dir: Callable[[int], Path] | None = None,
                 memory: IndexMemory = IndexMemory(), decoded: DecodedFingerprints | None = None) -> None:
        """``decoded``: the cache of decoded fingerprints shared with the document stage (None: this stage's own)."""
        self.config, self.matching, self.topics = config, matching, topics
        self.decoded = decoded if decoded is not None else DecodedFingerprints()
        self.store_for = store_for
        self.band_dir, self.memory = band_dir, memory
        self.verify_once = verify_once
        self.late_allowance = late_allowance
        self.dead = DeadLetters(output, topics.dlq)
        fingerprinter = Fingerprinter(config)
        self.settings = dumps({"schema": fingerprinter.schema, "matching": matching.describe(),
                               "fingerprint": fingerprinter.describe()})
        self._detectors: dict[int, tuple[KVStore, Detector, BufferedStore]] = {}
        self._checkpointed: dict[int, float] = {}  # partition -> when its index statistics were written
        self._newest: dict[int, float] = {}  # partition -> the latest event time it has indexed
        self._expired: dict[int, float] = {}  # partition -> when it last deleted entries past retention

    def detector(self, partition: int) -> Detector:
        return self._open(partition)[1]

    def _open(self, partition: int) -> tuple[KVStore, Detector, BufferedStore]:
        store = self.store_for(partition)
        cached = self._detectors.get(partition)
        if cached is not None and cached[0] is store:
            return cached
        # a new store object means Faust (re)opened the partition: drop the old read cache
        # The index writes through a buffer drained once per agent batch: one RocksDB write per
        # partition and batch instead of one per document.
        buffered = BufferedStore(store, max_ops=1 << 30)
        # Only this worker writes the partition while it owns it (Faust restores a changelog only
        # before the partition is opened here; a reopened partition is a new store object, and a
        # revoked one is forgotten): an empty partition needs no scan for a bucket the cache lacks.
        # Measured at 250 docs/s on the Tang corpus: those scans were 18% of a documents batch.
        # The index is made before anything writes the partition, so that it sees an empty one. A
        # restored partition gets the same shortcut for the top-level buckets its records do not
        # reach (root_filter: one scan of its records on open; docs/decisions/restored-partitions-root-filter.md).
        try:
            # band runs on disk: derived from the partition's records, which every open without the
            # runs' stamp (the service never writes one) rebuilds them from, so a crash cannot leave them stale
            index = BlockIndex(None, k=self.matching.k, bands=self.config.band_tables, store=buffered,
                               sole_writer=True, root_filter=True, cache_bytes=self.memory.bucket_cache_bytes,
                               band_memtable=self.memory.band_memtable, entry_limit=self.memory.pending_entries,
                               band_dir=None if self.band_dir is None else self.band_dir(partition))
        except ValueError as exc:
            raise ConfigError(f"block table partition {partition}: {exc}") from None
        self._check_settings(partition, buffered)
        owner, partitions = np.int64(partition), self.topics.index_partitions
        detector = self.matching.detector(index, once=self.verify_once, decoded=self.decoded,
                                          anchor_owner=lambda anchors: anchor_partitions(anchors, partitions) == owner)
        opened = self._detectors[partition] = (store, detector, buffered)
        return opened

    def _check_settings(self, partition: int, store: KVStore) -> None:
        """InputRecord this worker's settings in a new partition; refuse one built with others (``ConfigError``:
        the worker stops with exit 3 before judging anything there)."""
        raw = store.get(SETTINGS_KEY)
        if raw is None:
            store.put(SETTINGS_KEY, self.settings)
            return
        if raw != self.settings:
            stored, current = loads(raw), loads(self.settings)
            changed = differences(stored.get("matching", {}), current["matching"])
            changed += schema_changes(stored.get("fingerprint", {}), current["fingerprint"])[0]
            raise ConfigError(f"block table partition {partition} was built with other settings ({'; '.join(changed)})"
                              ": run every worker of this app id with the same settings, or use a new app_id "
                              "(new topics) for the new ones")

    def forget(self, partitions: set[int]) -> None:
        for p in partitions:
            for table in (self._detectors, self._checkpointed, self._newest, self._expired):
                table.pop(p, None)

    def handle_batch(self, messages: Sequence[tuple[int, Sequence[ProbeItem]]]) -> dict[int, list[GatherEntry]]:
        """All probe messages of one agent batch -> answers and revisions per gather partition (one
        message per gather partition, not per probe message: at low load a document's probes arrive as
        one message per partition, and per-message answers made the gather agent consume ~4 messages
        per document)."""
        out: dict[int, list[GatherEntry]] = defaultdict(list)
        touched: dict[int, Detector] = {}
        buffers: list[BufferedStore] = []
        for partition, items in messages:
            detector = touched.get(partition)
            if detector is None:
                _, detector, buffered = self._open(partition)
                touched[partition] = detector
                buffers.append(buffered)
            before = detector.candidates
            self._probe_items(partition, detector, items, out)
            # per message, not per probe: a counter's inc takes a lock (~2% of a worker's samples)
            metrics.PROBES.inc(len(items))
            metrics.CANDIDATES.inc(detector.candidates - before)
        # Index statistics at most every CHECKPOINT_SECONDS per partition (the index also writes them
        # every 512 mutations), not per batch: 2 changelog records per partition per batch, ~1 per
        # document at 100 docs/s. They are statistics only (handles are reserved before use), so a
        # crash loses a few seconds of counts, never an entry.
        now = time.monotonic()
        for partition, detector in touched.items():
            if now - self._checkpointed.get(partition, -math.inf) >= CHECKPOINT_SECONDS:
                detector.index.flush()
                self._checkpointed[partition] = now
            if (detector.retention is not None and partition in self._newest
                    and now - self._expired.get(partition, -math.inf) >= EXPIRE_SECONDS):
                metrics.EXPIRED.inc(detector.expire(self._newest[partition], self.late_allowance))
                self._expire_sources(partition, self._newest[partition] - detector.retention - self.late_allowance)
                self._expired[partition] = now
        for buffered in buffers:  # before the agent flushes its output: the changelog records go with it
            buffered.drain()
        return out

    def _probe_items(self, partition: int, detector: Detector, items: Sequence[ProbeItem],
                     out: dict[int, list[GatherEntry]]) -> None:
        """The items of one partition in order: runs of documents go to the index in one batch call
        (``Detector.probe_many``: each sees the ones before it); a deletion, a document with nothing to
        index here whose id the partition holds, or an id already in the run ends the run, so every
        item sees the index as the loop over them would."""
        run: list[tuple[ProbeItem, Fingerprint, Order]] = []
        ids: set[str] = set()
        n = self.topics.gather_partitions
        store = self._open(partition)[2]
        for item in items:
            if self._older_than_known(store, item):  # the gather stage refuses its round too
                out[doc_partition(item.doc, n)].append(Answer(item.doc, item.round, partition, [], item.header))
                continue
            answered = item.delete or not item.tables  # a deletion, or a drop of an earlier version (a route)
            # Such an item removes its id's indexed version, which the run before it must still see.
            # When the partition holds none (a version that was never indexed here: refused, expired), the
            # run goes on: ending it at every item without tables cut 120-document batches into runs of ~30.
            removes = answered and (item.delete or item.doc in ids or detector.index.document(item.doc) is not None)
            if removes or item.doc in ids:
                self._probe_run(partition, detector, run, out)
                run, ids = [], set()
            if answered:
                old = detector.index.document(item.doc) if removes else None
                found = removes and detector.forget(item.doc)
                if old is not None:  # its place goes with it
                    self._open(partition)[2].delete(source_key((old.ts, item.doc)))
                if item.delete:
                    metrics.DELETES.labels("removed" if found else "absent").inc()
                out[doc_partition(item.doc, n)].append(Answer(item.doc, item.round, partition, [], item.header))
                continue
            try:  # what can fail for one document alone: it is dead-lettered, its round never completes
                run.append((item, self.decoded(item.fp), self._place(detector, item)))
                ids.add(item.doc)
            except Exception as exc:
                if is_fault(exc):
                    raise
                source = item.header.source if item.header else Source.of_round(item.round)
                self.dead.send(exc, "probe", source, item.doc.encode(), None)
        self._probe_run(partition, detector, run, out)

    def _probe_run(self, partition: int, detector: Detector, run: Sequence[tuple[ProbeItem, Fingerprint, Order]],
                   out: dict[int, list[GatherEntry]]) -> None:
        """Query and index a run of documents in one call; an answer for each one's gather partition and
        a revision for each canonically later match. A failure inside the call is not one document's:
        the index may be half-written, so it stops the worker (``app.fatal``) and a restart rebuilds it."""
        if not run:
            return
        replaced = [detector.index.document(item.doc) for item, _, _ in run]
        all_matches = detector.probe_many([fp for _, fp, _ in run], [order for _, _, order in run],
                                          [index_tables(item.tables) for item, _, _ in run],
                                          fp_bytes=[item.fp for item, _, _ in run])
        all_matches = self._with_sources(partition, run, replaced, all_matches)
        n = self.topics.gather_partitions
        for (item, fp, order), matches in zip(run, all_matches, strict=True):
            self._newest[partition] = max(self._newest.get(partition, order[0]), order[0])
            header = None if item.header is None else replace(item.header, order=order, simhash=fp.simhash,
                                                              schema=fp.schema)
            earlier = [m for m in matches if m.order < order]
            answers = out[doc_partition(item.doc, n)]
            for start in range(0, max(1, len(earlier)), ANSWER_CHUNK):  # pieces that fit a message
                last = start + ANSWER_CHUNK >= len(earlier)
                answers.append(Answer(item.doc, item.round, partition, earlier[start : start + ANSWER_CHUNK],
                                      header if start == 0 else None, final=last))
            later: dict[int, list[tuple[str, int, Match]]] = defaultdict(list)  # by gather partition
            for m in matches:
                if m.order > order:
                    later[doc_partition(m.id, n)].append((m.id, m.simhash, replace(m, id=item.doc, order=order,
                                                                                    simhash=fp.simhash,
                                                                                    source=item.round)))
            by = Match(item.doc, 0, 0.0, order, simhash=fp.simhash, source=item.round)
            for gather_partition, targets in later.items():
                out[gather_partition].append(Revisions(by, targets))
                metrics.REVISIONS.inc(len(targets))
                metrics.REVISION_ENTRIES.inc()

    @staticmethod
    def _older_than_known(store: BufferedStore, item: ProbeItem) -> bool:
        """Whether a newer version of the item's id has been here; else record the item's version (written
        with the index's own records, so a redelivered item finds its own version and goes on)."""
        if item.version is None:  # an item from before versions
            return False
        key = VERSION_KEY + item.doc.encode("utf-8", "surrogateescape")
        raw = store.get(key)
        known = None if raw is None else version_from_json(loads(raw))
        if known is not None and item.version < known:
            return True
        if known != item.version:
            store.put(key, dumps(list(item.version)))
        return False

    def _with_sources(self, partition: int, run: Sequence[tuple[ProbeItem, Fingerprint, Order]],
                      replaced: Sequence[IndexHit | None], all_matches: list[list[Match]]) -> list[list[Match]]:
        """Record where each newly indexed document's input record is (dropping a replaced version's),
        then name that place in every match: the verdict then says where its canonical's text is."""
        store = self._open(partition)[2]
        ops: list[tuple[bytes, bytes | None]] = []
        for (item, fp, order), old in zip(run, replaced, strict=True):
            if old is not None and old.ts != order[0]:
                ops.append((source_key((old.ts, item.doc)), None))
            if not fp.empty:
                ops.append((source_key(order), item.round.encode()))
        store.write_ops(ops)
        keys = sorted({source_key(m.order) for matches in all_matches for m in matches})
        if not keys:
            return all_matches
        found = {k: v.decode() for k, v in zip(keys, store.multi_get(keys), strict=True) if v is not None}
        return [[replace(m, source=found.get(source_key(m.order), "")) for m in matches] for matches in all_matches]

    def _expire_sources(self, partition: int, before_ts: float) -> None:
        """The places of the documents retention just deleted (``Detector.expire``'s cut): in key order,
        so the scan stops at the first one kept."""
        store = self._open(partition)[2]
        end = SOURCE_PREFIX + _sortable(before_ts)
        for key, _ in store.scan_prefix(SOURCE_PREFIX):
            if key >= end:
                break
            store.delete(key)

    @staticmethod
    def _place(detector: Detector, item: ProbeItem) -> Order:
        """One id is one document: the same document again (an identical fingerprint, already indexed
        here) keeps the order it was judged at, so it gets the verdict it had; anything else is judged at
        the order it came with. Every partition holding it sees the same record, so all agree."""
        return detector.indexed_order(item.doc, item.fp) or item.order


def _sortable(ts: float) -> bytes:
    """8 bytes that sort as the float does (negative event times too)."""
    (bits,) = struct.unpack(">Q", struct.pack(">d", ts))
    return struct.pack(">Q", bits ^ 0xFFFF_FFFF_FFFF_FFFF if bits >> 63 else bits | 1 << 63)


def source_key(order: Order) -> bytes:
    """The key of a document's input position: by order, so that retention deletes a range."""
    return SOURCE_PREFIX + _sortable(order[0]) + b"\x00" + order[1].encode("utf-8", "surrogatepass")
