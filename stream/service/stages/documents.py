"""Stage 1: parse, fingerprint, route. Each document goes to its id's home gather partition as a
``Route``: its header, its fingerprint and the tables of each index partition that owns one of its keys
or anchors (``routing.routes``);
the home sends the probe items, to those partitions and to any that may hold an earlier version of the
id (``GatherState.route``). Of the records of an id in a batch only the newest version is judged
(``messages.Version``; the others are superseded); a record that cannot be parsed or fingerprinted is
dead-lettered. A record whose key is not its id is judged under its id, counted and logged
(docs/decisions/key-not-id.md)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from stream.detect import DecodedFingerprints, MatchSettings
from stream.errors import DocumentError
from stream.fingerprint import Document, FingerprintConfig, Fingerprinter, parse_document
from stream.fingerprint.document import DELETE
from stream.index import TableLayout
from stream.service import metrics
from stream.service.stages.dead_letters import DeadLetters, is_fault
from stream.service.stages.messages import Header, Route, Version, version_of
from stream.service.stages.output import Output
from stream.service.stages.routing import NO_ANCHORS, doc_partition, routes
from stream.service.stages.stage_values import Hops, InputRecord, Topics

log = logging.getLogger("dedup.documents")


class DocumentStage:
    def __init__(self, config: FingerprintConfig, matching: MatchSettings, topics: Topics, output: Output,
                 decoded: DecodedFingerprints | None = None) -> None:
        """``decoded``: the probe stage's cache of decoded fingerprints (the worker's app shares one), told
        each fingerprint this stage serializes; None: nothing to tell."""
        self.fingerprinter = Fingerprinter(config)
        self.decoded = decoded
        # routing only needs the table layout (k, bands), never any state
        self.router = TableLayout(k=matching.k, bands=config.band_tables)
        self.anchors = matching.anchor_cap > 0  # route to the anchors' partitions too (the anchor table)
        self.topics = topics
        self.dead = DeadLetters(output, topics.dlq)

    def handle(self, records: Sequence[InputRecord]) -> Hops:
        hops = Hops()
        metrics.DOCUMENTS.inc(len(records))
        newest: dict[str, tuple[Version, int, InputRecord, Any]] = {}  # id -> its newest record in the batch
        for i, rec in enumerate(records):
            try:
                doc = parse_document(rec.value) if rec.value is not None else _tombstone(rec.key)
            except Exception as exc:
                self.dead.send(exc, "parse", rec.source, rec.key, rec.value)
                continue
            _check_key(rec, doc.id)
            version = version_of(_event_time(doc, rec), rec.source)
            seen = newest.get(doc.id)
            if seen is not None:  # only the newest version of an id in a batch is judged
                metrics.SUPERSEDED.inc()
                if version < seen[0]:
                    continue
            newest[doc.id] = (version, i, rec, doc)
        for _, _, rec, doc in sorted(newest.values(), key=lambda entry: entry[1]):
            try:
                self._route(rec, doc, hops)
            except Exception as exc:
                if is_fault(exc):
                    raise
                self.dead.send(exc, "fingerprint", rec.source, rec.key, rec.value)
        return hops

    def _route(self, rec: InputRecord, doc: Any, hops: Hops) -> None:
        """Fingerprint ``doc`` and add its route to its home gather partition to ``hops``. Nothing is added
        unless every step succeeds."""
        round_id, home = rec.source.round_id, doc_partition(doc.id, self.topics.gather_partitions)
        if doc.op == DELETE:
            version = version_of(_event_time(doc, rec), rec.source)
            header = Header(doc.id, round_id, 0, rec.source, (0.0, doc.id), delete=True, version=version)
            hops.gather[home].append(Route(header, b"", {}))
            metrics.DELETES.labels("requested").inc()
            return
        fp = self.fingerprinter.fingerprint(doc)
        order = (_event_time(doc, rec), doc.id)
        version = version_of(order[0], rec.source)
        n = self.topics.index_partitions
        anchors = fp.anchors()[0] if self.anchors else NO_ANCHORS
        targets = {} if fp.empty else routes(self.router.routing_keys(fp.simhash, fp.bands), anchors, n)
        header = Header(doc.id, round_id, 0, rec.source, order, fp.simhash, fp.schema, fp.empty, version=version)
        raw = fp.to_bytes() if targets else b""
        if raw and self.decoded is not None:  # this worker's partitions take it from here without decoding it
            self.decoded.remember(raw, fp)
        hops.gather[home].append(Route(header, raw, targets))


def _event_time(doc: Document, rec: InputRecord) -> float:
    return doc.ts if doc.ts is not None else rec.source.timestamp


def _check_key(rec: InputRecord, doc_id: str) -> None:
    """A key that is not the id sends versions of one document to different partitions: judged under the
    id all the same (versions are ordered by time, not arrival), but counted and logged for the producer."""
    if rec.key is not None and rec.key != doc_id.encode("utf-8", "surrogateescape"):
        metrics.KEY_MISMATCH.inc()
        log.warning("a record's key is not its id (key %r, id %r at %s); publish with key = id",
                    rec.key[:60], doc_id[:60], rec.source.round_id)


def _tombstone(key: bytes | None) -> Document:
    """A record with a null value (a Kafka tombstone) deletes the document its key names."""
    if key is None:
        raise DocumentError("a record with neither key nor value", code="tombstone")
    return parse_document({"id": key.decode("utf-8", "surrogateescape"), "op": DELETE})
