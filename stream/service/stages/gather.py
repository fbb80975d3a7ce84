"""Stage 3: a document's route -> its probe items; its answers and revisions -> its verdict (or, for a
deletion, a tombstone)."""

from __future__ import annotations

import struct
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

from stream.detect import MAX_MATCHES
from stream.service import metrics
from stream.service.stages.dead_letters import DeadLetters, is_fault
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import (
    Answer,
    GatherEntry,
    Header,
    ProbeItem,
    Revise,
    Revisions,
    Route,
    Source,
    dumps,
    loads,
)
from stream.service.stages.output import Output
from stream.service.stages.stage_values import Topics
from stream.storage import KVStore

# + a document id -> when its held revision is due (8-byte float): what ``release`` publishes. No
# UTF-8 document id starts with 0xFF, nor does the ledger's key (0xFF 0xFE).
HELD_PREFIX = b"\xff\xfdheld:"
REVISION_INTERVAL = 30.0  # seconds: a document's verdict is republished at most once per interval
# while the worker is behind, revisions wait until it has caught up, at most this long after the last publish
BACKLOG_HOLD = 3600.0


class GatherStage:
    """Routes each document to the index partitions of its keys, collects their answers per document in
    the gather table (``store_for(partition)``) and publishes verdicts."""

    def __init__(self, topics: Topics, output: Output, store_for: Callable[[int], KVStore],
                 clock: Callable[[], float] = time.time, max_matches: int = MAX_MATCHES,
                 revision_interval: float = REVISION_INTERVAL, backlog_hold: float = BACKLOG_HOLD,
                 behind: Callable[[], bool] = lambda: False) -> None:
        self.topics, self.output, self.store_for, self.clock = topics, output, store_for, clock
        self.max_matches = max_matches
        self.revision_interval = revision_interval
        # a backlog read unevenly across input partitions brings a document's earlier near copies over
        # minutes, each a revision: while ``behind()`` they are merged and held (docs/service.md)
        self.backlog_hold = max(backlog_hold, revision_interval)
        self.behind = behind
        self.dead = DeadLetters(output, topics.dlq)
        # (partition, id) -> the state ``handle`` just wrote: a later step of the same agent batch (a
        # route's answers, when its hops are local) takes it from here, not decoded again; emptied by
        # ``end_batch``, and before the timer's ``release`` and ``released`` read the table
        self._written: dict[tuple[int, str], GatherState] = {}

    def end_batch(self) -> None:
        """The agent batch is over: the next one reads every state from the table."""
        self._written.clear()

    def handle(self, partition: int, entries: Sequence[GatherEntry]) -> dict[int, list[ProbeItem]]:
        """Entries of one gather partition: apply them per document, publish what is due; the probe items
        of the routes, per index partition. The states are read by one multi-get and written in one
        batch (RocksDB and changelog): a put per document was a third of the stage's time."""
        store = self.store_for(partition)
        probes: dict[int, list[ProbeItem]] = defaultdict(list)
        writes: list[tuple[bytes, bytes | None]] = []  # None deletes
        by_doc: dict[str, list[GatherEntry]] = defaultdict(list)
        for entry in entries:
            if isinstance(entry, Revisions):
                for revise in entry.expand():
                    by_doc[revise.doc].append(revise)
            else:
                by_doc[entry.doc].append(entry)
        # taken out: a document that fails below is read from the table again, not from a half-applied object
        written = {doc: state for doc in by_doc if (state := self._written.pop((partition, doc), None))}
        unread = [doc for doc in by_doc if doc not in written]
        states = dict(zip(unread, store.multi_get([doc.encode() for doc in unread]), strict=True))
        for doc, doc_entries in by_doc.items():
            try:
                state = written.get(doc)
                if state is None:
                    raw = states[doc]
                    # no state: nothing of the id is indexed (a completed deletion drops the state)
                    state = (GatherState.from_json(loads(raw), self.max_matches) if raw
                             else GatherState(doc, self.max_matches, placed=[]))
                was_held = state.held
                items: list[tuple[int, ProbeItem]] = []
                due, revision = self._apply(state, doc_entries, items)
                state.settle()
                if due and state.deleting:
                    self._tombstone(state)
                    _add(probes, items)
                    writes.append((doc.encode(), None))
                    if was_held:
                        writes.append((held_key(doc), None))
                    continue
                # a held state takes further revisions into its hold (it may be being released right now:
                # ``released`` keeps what came meanwhile held an interval after that publish)
                if due and revision and (was_held or self.behind()
                                         or self.clock() < state.published_at + self.revision_interval):
                    state.held = True  # merged; published by ``release`` once the interval (or the backlog) is over
                    if not was_held:
                        writes.append((held_key(doc), _due(state.published_at + self.revision_interval)))
                elif due:
                    self._publish(state)
                if was_held and not state.held:
                    writes.append((held_key(doc), None))
                encoded = dumps(state.to_json())
            except Exception as exc:
                if is_fault(exc):
                    raise
                headers = (e if isinstance(e, Header) else e.header
                           for e in doc_entries if isinstance(e, Header | Answer | Route))
                source = next((h.source for h in headers if h is not None), None)
                self.dead.send(exc, "gather", source or Source("", partition, -1, 0.0), doc.encode(), None)
                continue
            _add(probes, items)  # only once every step of the document succeeded
            writes.append((doc.encode(), encoded))
            self._written[(partition, doc)] = state
        if writes:
            store.write_ops(writes)
        return probes

    def release(self, partition: int, now: float | None = None) -> list[tuple[bytes, bytes]]:
        """Publish the held revisions of ``partition`` that are due; their (held key, state as read),
        for ``released`` once those verdicts are delivered (so a crash before then publishes them again).
        A held key holds the end of the document's interval; while the worker is behind, a revision is
        due only ``backlog_hold`` after the last publish."""
        self.end_batch()
        store = self.store_for(partition)
        now = self.clock() if now is None else now
        if self.behind():
            now -= self.backlog_hold - self.revision_interval
        due = [key for key, when in store.scan_prefix(HELD_PREFIX) if struct.unpack(">d", when)[0] <= now]
        out = []
        for key, raw in zip(due, store.multi_get([key[len(HELD_PREFIX):] for key in due]), strict=True):
            state = None if raw is None else GatherState.from_json(loads(raw), self.max_matches)
            if state is not None and state.held and state.complete and state.published and not state.deleting:
                self._publish(state)
            out.append((key, raw or b""))
        return out

    def released(self, partition: int, released: Sequence[tuple[bytes, bytes]]) -> None:
        """Mark the revisions ``release`` published as published. A state that changed meanwhile (a
        revision merged since) stays held, due a revision interval after this publish."""
        self.end_batch()
        store = self.store_for(partition)
        docs = [key[len(HELD_PREFIX):] for key, _ in released]
        writes: list[tuple[bytes, bytes | None]] = []
        now = self.clock()
        for (key, before), doc, raw in zip(released, docs, store.multi_get(docs), strict=True):
            if raw is None:
                writes.append((key, None))
                continue
            state = GatherState.from_json(loads(raw), self.max_matches)
            state.published_at = now
            if raw == (before or None) or not state.held:
                state.held = False
                writes.append((key, None))
            else:
                writes.append((key, _due(now + self.revision_interval)))
            writes.append((doc, dumps(state.to_json())))
        if writes:
            store.write_ops(writes)

    def _apply(self, state: GatherState, entries: Sequence[GatherEntry], items: list[tuple[int, ProbeItem]]
               ) -> tuple[bool, bool]:
        """Apply a document's entries of one batch, the probe items of its routes to ``items``: (its
        verdict is due (at most once a batch), only for revisions)."""
        due = revised = False
        for entry in entries:
            if isinstance(entry, Route):
                due = self._route(state, entry, items) or due
                continue
            header = entry if isinstance(entry, Header) else entry.header if isinstance(entry, Answer) else None
            if header is not None:
                complete, superseded = state.expect(header.round, header.expected, header.order, header.source,
                                                    header.simhash, header.schema, header.empty, header.delete,
                                                    header.version)
                if superseded:
                    metrics.SUPERSEDED.inc()
                due = due or complete
            if isinstance(entry, Answer):
                due = state.answer(entry.round, entry.part, entry.matches, entry.final) or due
            elif isinstance(entry, Revise):
                revised = state.revise(entry.match, entry.version) or revised
        return (due or revised) and state.complete, not due

    def _route(self, state: GatherState, route: Route, items: list[tuple[int, ProbeItem]]) -> bool:
        """The probe items of a route the state accepts: one per partition owning one of the document's
        keys (the header in the first), one without tables (a deletion: marked so) per partition the
        round drops an earlier version from. True if the round is complete at once (nothing to ask)."""
        drops, complete, superseded = state.route(route.header, route.tables, self.topics.index_partitions)
        if superseded:
            metrics.SUPERSEDED.inc()
        if drops is None:
            return False
        h = route.header
        header = replace(h, expected=len(route.tables) + len(drops))
        carrier = min(route.tables, default=None)  # where the order is settled (``ProbeStage._place``)
        for partition, tables in sorted(route.tables.items()):
            items.append((partition, ProbeItem(h.doc, h.round, route.fp, h.order, tables,
                                               header if partition == carrier else None, version=h.version)))
        for partition in drops:
            items.append((partition, ProbeItem(h.doc, h.round, b"", h.order, [], delete=h.delete, version=h.version)))
        return complete

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
        verdict = state.summary.verdict(state.doc, state.simhash, state.empty, state.order)
        now = self.clock()
        body = verdict.to_json()
        body.update({
            "source": state.source.to_json(),
            "processed_at": round(now, 6),
            "schema": state.schema,
            "order": list(state.order),
            "revised": state.revised,
        })
        if verdict.canonical is not None and verdict.canonical.source:
            # where the canonical's document is on the input topic: a reader fetches the two texts
            body["canonical_source"] = Source.of_round(verdict.canonical.source).position()
        state.published, state.published_at, state.held = True, now, False
        self.output.send(self.topics.verdicts, state.doc.encode(), dumps(body))
        metrics.VERDICTS.labels(verdict.verdict, str(state.revised).lower()).inc()
        if state.revised:
            metrics.REVISED.labels(verdict.verdict).inc()
        else:
            metrics.JUDGED.labels(verdict.verdict).inc()
            metrics.LATENCY.observe(max(0.0, now - state.source.timestamp))


def _add(probes: dict[int, list[ProbeItem]], items: Sequence[tuple[int, ProbeItem]]) -> None:
    for partition, item in items:
        probes[partition].append(item)


def held_key(doc: str) -> bytes:
    return HELD_PREFIX + doc.encode()


def _due(when: float) -> bytes:
    return struct.pack(">d", when)
