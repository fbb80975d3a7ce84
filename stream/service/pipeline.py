"""The three stages of the worker as plain classes (Kafka I/O through ``Output``; no Faust here).

1. ``DocumentStage``: parse, fingerprint, route: probe items per target partition; each
   document's gather header rides in its first target partition's probe item and returns with
   that partition's answer (a document without targets sends it to gather itself).
2. ``ProbeStage``: partition-local ``Detector.probe`` on a BlockIndex over the partition's table:
   an answer with the document's earlier matches, and a revision for each later one.
3. ``GatherStage``: per-document answers and revisions -> verdict.

Each stage returns what it hands on (``Hops``: probe items and gather entries per partition);
``Pipeline`` delivers them, over Kafka or, for partitions this worker owns, straight to the next
stage. ``stream.service.app`` wires the pipeline to Faust agents; the agent flushes ``Output``
before acknowledging its batch.

Every input record gets exactly one outcome: a verdict, a dead letter (``DeadLetters``: a stable code,
the message, where it came from), or *superseded* (a later record of the same id replaced it before it
had a verdict; counted in ``dedup_superseded_total``). A failure while handling one document dead-letters
that document alone. A fault that is not the document's (``StorageError``, ``OutputError``) is raised
out of the stage: the worker stops without acknowledging the batch (``stream.service.app``).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from stream.detect import MAX_MATCHES, Detector, MatchSettings, Order, differences, verdict_of
from stream.detect.detector import fingerprint_of
from stream.errors import ConfigError, DocumentError, StorageError
from stream.fingerprint import Document, Fingerprint, FingerprintConfig, Fingerprinter, parse_document
from stream.fingerprint.document import DELETE
from stream.fingerprint.schema import schema_changes
from stream.index import BlockIndex, MemoryStore
from stream.index.records import HANDLE_NS
from stream.index.store import BufferedStore, KVStore
from stream.service import metrics
from stream.service.gather import GatherState
from stream.service.messages import (
    Answer,
    GatherEntry,
    Header,
    ProbeItem,
    Revise,
    Source,
    dead_letter,
    dumps,
    loads,
)
from stream.service.output import Output, OutputError
from stream.service.routing import doc_partition, tables_by_partition

# Internal messages stay well below the brokers' default message.max.bytes (1 MiB): a probe batch
# of 64 messages can answer hundreds of documents; a probe item carries a ~0.7 KB fingerprint.
MAX_MESSAGE_BYTES = 256 << 10


def send_list(output: Output, topic: str, partition: int, entries: Sequence[dict[str, Any]],
              limit: int = MAX_MESSAGE_BYTES) -> None:
    """``entries`` to ``partition`` as JSON lists of at most ~``limit`` bytes (a single larger entry
    goes alone). One ``dumps`` in the common case that all fit; else each entry is encoded once more
    and the encodings are packed in order into lists that fit (the same bytes as ``dumps`` of each
    list). Halving the list until it fit encoded a probe agent's answers under a backlog (64
    messages of up to 256 documents, several MB) ~4 times: ~9% of the worker's time in a profile."""
    if not entries:
        return
    key = str(partition).encode()
    value = dumps(entries)
    if len(value) <= limit or len(entries) == 1:
        output.send(topic, key, value, partition=partition)
        return
    chunk: list[bytes] = []
    size = 2  # the brackets
    for part in map(dumps, entries):
        if chunk and size + len(part) + 1 > limit:
            output.send(topic, key, b"[" + b",".join(chunk) + b"]", partition=partition)
            chunk, size = [], 2
        chunk.append(part)
        size += len(part) + 1
    output.send(topic, key, b"[" + b",".join(chunk) + b"]", partition=partition)


@dataclass(frozen=True)
class Record:
    """What a stage needs of one consumed Kafka record."""

    key: bytes | None
    value: bytes | None
    source: Source


@dataclass(frozen=True)
class Topics:
    probe: str
    gather: str
    verdicts: str
    dlq: str
    partitions: int


def _merge(into: defaultdict[int, list[Any]], more: Mapping[int, list[Any]]) -> None:
    for partition, entries in more.items():
        into[partition].extend(entries)


@dataclass
class Hops:
    """What a stage hands on: probe items and gather entries per target partition."""

    probes: defaultdict[int, list[ProbeItem]] = field(default_factory=lambda: defaultdict(list))
    gather: defaultdict[int, list[GatherEntry]] = field(default_factory=lambda: defaultdict(list))


def is_fault(exc: BaseException) -> bool:
    """A failure that is not the document's: the store or the producer. It stops the worker."""
    return isinstance(exc, StorageError | OutputError)


class DeadLetters:
    """Dead letters to the DLQ topic, counted by stage and code."""

    def __init__(self, output: Output, topic: str) -> None:
        self.output, self.topic = output, topic

    def send(self, exc: Exception, stage: str, source: Source, key: bytes | None, value: bytes | None) -> None:
        if isinstance(exc, DocumentError):
            code, error = exc.code, str(exc)
        else:  # not the input's fault as far as we know: a bug that this document triggers
            code, error = f"{stage}_failed", f"{type(exc).__name__}: {exc}"
        metrics.DEAD_LETTERS.labels(stage, code).inc()
        headers = [("dedup-code", code.encode()), ("dedup-stage", stage.encode())]
        dlq_key = key if key is None or len(key) <= 1024 else None  # the envelope keeps a long key
        self.output.send(self.topic, dlq_key, dead_letter(code, error, stage, source, key, value), headers=headers)


class DocumentStage:
    def __init__(self, config: FingerprintConfig, matching: MatchSettings, topics: Topics, output: Output) -> None:
        self.fingerprinter = Fingerprinter(config)
        # routing only needs the table layout (k, bands), never any state
        self.router = BlockIndex(None, k=matching.k, bands=config.band_tables, store=MemoryStore())
        self.topics = topics
        self.dead = DeadLetters(output, topics.dlq)

    def handle(self, records: Sequence[Record]) -> Hops:
        hops = Hops()
        metrics.DOCUMENTS.inc(len(records))
        parsed: list[tuple[Record, Any]] = []
        last: dict[str, int] = {}  # doc id -> index in ``parsed`` of its latest record in this batch
        for rec in records:
            try:
                doc = parse_document(rec.value) if rec.value is not None else _tombstone(rec.key)
            except Exception as exc:
                self.dead.send(exc, "parse", rec.source, rec.key, rec.value)
                continue
            last[doc.id] = len(parsed)
            parsed.append((rec, doc))
        superseded = len(parsed) - len(last)
        if superseded:  # only the latest record of an id in a batch is judged
            metrics.SUPERSEDED.inc(superseded)
        for i in sorted(last.values()):
            rec, doc = parsed[i]
            try:
                self._route(rec, doc, hops)
            except Exception as exc:
                if is_fault(exc):
                    raise
                self.dead.send(exc, "fingerprint", rec.source, rec.key, rec.value)
        return hops

    def _route(self, rec: Record, doc: Any, hops: Hops) -> None:
        """Fingerprint ``doc`` and add a probe item per partition to ``hops``, the document's header in the
        first partition that indexes it (partition 0 for a deletion or an empty document). Nothing is
        added unless every step succeeds."""
        n = self.topics.partitions
        if doc.op == DELETE:
            header = Header(doc.id, rec.source.round_id, n, rec.source, (0.0, doc.id), delete=True)
            for partition in range(n):
                hops.probes[partition].append(ProbeItem(doc.id, rec.source.round_id, b"", (0.0, doc.id), [],
                                                        header if partition == 0 else None, delete=True))
            metrics.DELETES.labels("requested").inc()
            return
        fp = self.fingerprinter.fingerprint(doc)
        order = (doc.ts if doc.ts is not None else rec.source.timestamp, doc.id)
        targets = {} if fp.empty else tables_by_partition(self.router.routing_keys(fp.simhash, fp.bands), n)
        round_id = rec.source.round_id
        # Every partition hears of every document: one that holds an earlier version of this id
        # outside the new one's tables removes it (an item without tables), so no stale entry stays.
        header = Header(doc.id, round_id, n, rec.source, order, fp.simhash, fp.schema, fp.empty)
        raw = fp.to_bytes() if targets else b""
        carrier = min(targets, default=0)  # where the order is settled (``ProbeStage._place``)
        for partition in range(n):
            tables = targets.get(partition, [])
            hops.probes[partition].append(ProbeItem(doc.id, round_id, raw if tables else b"", order, tables,
                                                    header if partition == carrier else None))


def _tombstone(key: bytes | None) -> Document:
    """A record with a null value (a Kafka tombstone) deletes the document its key names."""
    if key is None:
        raise DocumentError("a record with neither key nor value", code="tombstone")
    return parse_document({"id": key.decode("utf-8", "surrogateescape"), "op": DELETE})


CHECKPOINT_SECONDS = 5.0
EXPIRE_SECONDS = 10.0  # with retention: how often a partition deletes entries too old to match
# Kept beside the index in each block-table partition (the index uses only b"\xffconfig", "stats",
# "handle" of its b"\xff" namespace): the settings the partition was built with, checked at open.
SETTINGS_KEY = b"\xffdedup-settings"
ANSWER_CHUNK = 1000  # matches per answer entry: ~80 KB, well inside an internal message

# A document's probe goes to every partition owning one of its buckets (usually all of them), and one
# worker often owns several: its fingerprint is decoded once (``fingerprint_of``, the detector's cache
# of decoded payloads: the same bytes come back as later documents' candidates).


class ProbeStage:
    """Runs probes against the partition's block table; ``store_for(partition)`` gives its KVStore."""

    def __init__(self, config: FingerprintConfig, matching: MatchSettings, topics: Topics,
                 store_for: Callable[[int], KVStore], output: Output, verify_once: bool = True,
                 late_allowance: float = 3600.0) -> None:
        self.config, self.matching, self.topics = config, matching, topics
        self.store_for = store_for
        self.verify_once = verify_once
        self.late_allowance = late_allowance
        self.dead = DeadLetters(output, topics.dlq)
        fingerprinter = Fingerprinter(config)
        self.settings = dumps({"schema": fingerprinter.schema, "matching": matching.describe(),
                               "fingerprint": config.describe(fingerprinter.segmenter.settings)})
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
        # reach (root_filter: one scan of its records on open; docs/service.md, "Restored partitions").
        try:
            index = BlockIndex(None, k=self.matching.k, bands=self.config.band_tables, store=buffered,
                               sole_writer=True, root_filter=True)
        except ValueError as exc:
            raise ConfigError(f"block table partition {partition}: {exc}") from None
        self._check_settings(partition, buffered)
        rebuild = getattr(store, "rebuild_unlogged", None)
        if rebuild is not None:
            # The index's doc-id and expiry keys are not in the changelog (they follow from its
            # records): derive them from what recovery restored, before the first probe reads them.
            rebuild(HANDLE_NS, index.lookup_keys)
        detector = self.matching.detector(index, once=self.verify_once)
        opened = self._detectors[partition] = (store, detector, buffered)
        return opened

    def _check_settings(self, partition: int, store: KVStore) -> None:
        """Record this worker's settings in a new partition; refuse one built with others (``ConfigError``:
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
                self._expired[partition] = now
        for buffered in buffers:  # before the agent flushes its output: the changelog records go with it
            buffered.drain()
        return out

    def _probe_items(self, partition: int, detector: Detector, items: Sequence[ProbeItem],
                     out: dict[int, list[GatherEntry]]) -> None:
        """The items of one partition in order: runs of documents go to the index in one batch call
        (``Detector.probe_many``: each sees the ones before it); a deletion, a document with nothing to
        index here, or an id already in the run ends the run, so every item sees the index as the loop
        over them would."""
        run: list[tuple[ProbeItem, Fingerprint, Order]] = []
        ids: set[str] = set()
        for item in items:
            if item.delete or not item.tables or item.doc in ids:
                self._probe_run(partition, detector, run, out)
                run, ids = [], set()
            if item.delete or not item.tables:  # a deletion, or a document with nothing to index here
                found = detector.forget(item.doc)
                if item.delete:
                    metrics.DELETES.labels("removed" if found else "absent").inc()
                out[doc_partition(item.doc, self.topics.partitions)].append(
                    Answer(item.doc, item.round, partition, [], item.header))
                continue
            try:  # what can fail for one document alone: it is dead-lettered, its round never completes
                run.append((item, fingerprint_of(item.fp), self._place(detector, item)))
                ids.add(item.doc)
            except Exception as exc:
                if is_fault(exc):
                    raise
                source = item.header.source if item.header else _source_of_round(item.round)
                self.dead.send(exc, "probe", source, item.doc.encode(), None)
        self._probe_run(partition, detector, run, out)

    def _probe_run(self, partition: int, detector: Detector, run: Sequence[tuple[ProbeItem, Fingerprint, Order]],
                   out: dict[int, list[GatherEntry]]) -> None:
        """Query and index a run of documents in one call; an answer for each one's gather partition and
        a revision for each canonically later match. A failure inside the call is not one document's:
        the index may be half-written, so it stops the worker (``app.fatal``) and a restart rebuilds it."""
        if not run:
            return
        all_matches = detector.probe_many([fp for _, fp, _ in run], [order for _, _, order in run],
                                          [item.tables for item, _, _ in run], fp_bytes=[item.fp for item, _, _ in run])
        n = self.topics.partitions
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
            for m in matches:
                if m.order > order:
                    mine = replace(m, id=item.doc, order=order, simhash=fp.simhash)
                    out[doc_partition(m.id, n)].append(Revise(m.id, mine, m.simhash))
                    metrics.REVISIONS.inc()

    @staticmethod
    def _place(detector: Detector, item: ProbeItem) -> Order:
        """One id is one document: the same document again (an identical fingerprint, already indexed
        here) keeps the order it was judged at, so it gets the verdict it had; anything else is judged at
        the order it came with. Every partition holding it sees the same record, so all agree."""
        old = detector.index.document(item.doc)
        if old is not None and old.payload == item.fp:
            return (old.ts, item.doc)
        return item.order


def _source_of_round(round_id: str) -> Source:
    topic_partition, _, offset = round_id.rpartition(":")
    topic, _, partition = topic_partition.rpartition(":")
    return Source(topic, int(partition), int(offset), 0.0)


class GatherStage:
    """Collects answers per document in the gather table (``store_for(partition)``) and publishes verdicts."""

    def __init__(self, topics: Topics, output: Output, store_for: Callable[[int], KVStore],
                 clock: Callable[[], float] = time.time, max_matches: int = MAX_MATCHES) -> None:
        self.topics, self.output, self.store_for, self.clock = topics, output, store_for, clock
        self.max_matches = max_matches
        self.dead = DeadLetters(output, topics.dlq)

    def handle(self, partition: int, entries: Sequence[GatherEntry]) -> None:
        """Entries of one gather partition: apply them per document, publish what is due."""
        store = self.store_for(partition)
        by_doc: dict[str, list[GatherEntry]] = defaultdict(list)
        for entry in entries:
            by_doc[entry.doc].append(entry)
        for doc, doc_entries in by_doc.items():
            try:
                raw = store.get(doc.encode())
                state = (GatherState.from_json(loads(raw), self.max_matches) if raw
                         else GatherState(doc, self.max_matches))
                due = self._apply(state, doc_entries)
                if due and state.deleting:
                    self._tombstone(state)
                    store.delete(doc.encode())
                    continue
                if due:
                    self._publish(state)
                encoded = dumps(state.to_json())
            except Exception as exc:
                if is_fault(exc):
                    raise
                headers = (e if isinstance(e, Header) else e.header for e in doc_entries if not isinstance(e, Revise))
                source = next((h.source for h in headers if h is not None), None)
                self.dead.send(exc, "gather", source or Source("", partition, -1, 0.0), doc.encode(), None)
                continue
            store.put(doc.encode(), encoded)

    @staticmethod
    def _apply(state: GatherState, entries: Sequence[GatherEntry]) -> bool:
        """Apply a document's entries of one batch; True if its verdict is due (at most once a batch)."""
        due = False
        for entry in entries:
            header = entry if isinstance(entry, Header) else entry.header if isinstance(entry, Answer) else None
            if header is not None:
                complete, superseded = state.expect(header.round, header.expected, header.order, header.source,
                                                    header.simhash, header.schema, header.empty, header.delete)
                if superseded:
                    metrics.SUPERSEDED.inc()
                due = due or complete
            if isinstance(entry, Answer):
                due = state.answer(entry.round, entry.part, entry.matches, entry.final) or due
            elif isinstance(entry, Revise):
                due = state.revise(entry.match, entry.version) or due
        return due and state.complete

    def _tombstone(self, state: GatherState) -> None:
        """A completed deletion: the compacted verdict topic forgets the document (a null value under its
        id; the header names the deletion's input record). An id that never had a verdict: nothing to
        forget, only counted."""
        assert state.source is not None
        if not state.published:
            metrics.DELETES.labels("unknown").inc()
            return
        where = f"{state.source.topic}:{state.source.partition}:{state.source.offset}"
        self.output.send(self.topics.verdicts, state.doc.encode(), None, headers=[("dedup-source", where.encode())])
        metrics.DELETES.labels("published").inc()

    def _publish(self, state: GatherState) -> None:
        assert state.simhash is not None and state.order is not None and state.source is not None
        verdict = verdict_of(state.doc, state.simhash, state.empty, state.order, state.summary)
        now = self.clock()
        body = verdict.to_json()
        body.update({
            "source": state.source.to_json(),
            "processed_at": round(now, 6),
            "schema": state.schema,
            "order": list(state.order),
            "revised": state.revised,
        })
        state.published = True
        self.output.send(self.topics.verdicts, state.doc.encode(), dumps(body))
        metrics.VERDICTS.labels(verdict.verdict, str(state.revised).lower()).inc()
        if not state.revised:
            metrics.LATENCY.observe(max(0.0, now - state.source.timestamp))


class Pipeline:
    """The three stages and the hops between them.

    A hop to a partition this worker owns right now (``owned()``: the (topic, partition) pairs
    assigned to it, tables recovered) goes straight to the next stage, inside the same agent batch;
    the others go over Kafka. Ownership is what makes this safe: partition p of the probe topic,
    of the block table and of the gather topic belong to one worker, whose event loop runs one
    batch at a time, so a local hop reads and writes exactly the state the Kafka hop would, with its
    changelog records delivered before the batch's input is acknowledged. Measured at 200 docs/s on
    one worker: each Kafka hop cost 60-77 ms at the median (docs/service.md, "Local hops").
    """

    def __init__(self, documents: DocumentStage, probes: ProbeStage, gather: GatherStage, output: Output,
                 topics: Topics, owned: Callable[[], Container[tuple[str, int]]] = frozenset) -> None:
        self.documents, self.probes, self.gather = documents, probes, gather
        self.output, self.topics, self.owned = output, topics, owned

    def warm_up(self) -> None:
        """Load at start-up what the first batch would otherwise wait for: the segmenter's dictionary
        (measured: the first fingerprint of a fresh process takes 0.6 s, later ones < 1 ms) and the
        index's compiled kernels. Twice, so the second probe finds the first (the match path). The
        text is long enough for the compiled normalizer, whose tables take ~50-300 ms to build."""
        fingerprinter = self.documents.fingerprinter
        index = BlockIndex(None, k=self.probes.matching.k, bands=self.probes.config.band_tables, store=MemoryStore())
        detector = self.probes.matching.detector(index)
        for n, doc_id in enumerate(("warm-up-1", "warm-up-2")):
            doc = parse_document({"id": doc_id, "text": "床前明月光，疑是地上霜。举头望明月，低头思故乡。" * 10})
            detector.probe(fingerprinter.fingerprint(doc), (float(n), doc_id))

    def documents_batch(self, records: Sequence[Record]) -> None:
        self._forward(self.documents.handle(records))

    def probe_batch(self, messages: Sequence[tuple[int, Sequence[ProbeItem]]]) -> None:
        hops = Hops()
        _merge(hops.gather, self.probes.handle_batch(messages))
        self._forward(hops)

    def gather_batch(self, entries: Mapping[int, Sequence[GatherEntry]]) -> None:
        for partition, items in entries.items():
            self.gather.handle(partition, items)

    def _forward(self, hops: Hops) -> None:
        owned = self.owned()
        local: list[tuple[int, Sequence[ProbeItem]]] = []
        for partition, items in hops.probes.items():
            if (self.topics.probe, partition) in owned:
                local.append((partition, items))
            else:
                send_list(self.output, self.topics.probe, partition, [item.to_json() for item in items])
        metrics.HOPS.labels("probe", "local").inc(len(local))
        metrics.HOPS.labels("probe", "kafka").inc(len(hops.probes) - len(local))
        gather = hops.gather
        if local:
            _merge(gather, self.probes.handle_batch(local))
        for partition, entries in gather.items():
            if (self.topics.gather, partition) in owned:
                metrics.HOPS.labels("gather", "local").inc()
                self.gather.handle(partition, entries)
            else:
                metrics.HOPS.labels("gather", "kafka").inc()
                send_list(self.output, self.topics.gather, partition, [e.to_json() for e in entries])
