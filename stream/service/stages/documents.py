"""Stage 1: parse, fingerprint, route. Each document goes to every index partition (its tables where it
has them; an item without tables elsewhere, so a partition holding an earlier version drops it); its
header rides in the first partition that indexes it. Only the latest record of an id in a batch is
judged (the others are superseded); a record that cannot be parsed or fingerprinted is dead-lettered."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stream.detect import MatchSettings, fingerprint_of
from stream.errors import DocumentError
from stream.fingerprint import Document, FingerprintConfig, Fingerprinter, parse_document
from stream.fingerprint.document import DELETE
from stream.index import TableLayout
from stream.service import metrics
from stream.service.stages.dead_letters import DeadLetters, is_fault
from stream.service.stages.messages import Header, ProbeItem
from stream.service.stages.output import Output
from stream.service.stages.records import Hops, InputRecord, Topics
from stream.service.stages.routing import tables_by_partition


class DocumentStage:
    def __init__(self, config: FingerprintConfig, matching: MatchSettings, topics: Topics, output: Output) -> None:
        self.fingerprinter = Fingerprinter(config)
        # routing only needs the table layout (k, bands), never any state
        self.router = TableLayout(k=matching.k, bands=config.band_tables)
        self.topics = topics
        self.dead = DeadLetters(output, topics.dlq)

    def handle(self, records: Sequence[InputRecord]) -> Hops:
        hops = Hops()
        metrics.DOCUMENTS.inc(len(records))
        parsed: list[tuple[InputRecord, Any]] = []
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

    def _route(self, rec: InputRecord, doc: Any, hops: Hops) -> None:
        """Fingerprint ``doc`` and add a probe item per index partition to ``hops``, the document's header in
        the first partition that indexes it (partition 0 for a deletion or an empty document). Nothing is
        added unless every step succeeds."""
        n = self.topics.index_partitions
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
        if raw:  # this worker's partitions take it from here without decoding it
            fingerprint_of.remember(raw, fp)
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
