"""What passes between the stages and how: the consumed record, the topics, the hops of one batch, and
``Pipeline``, which delivers each hop over Kafka or, for a partition this worker owns, straight to
the next stage."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any

from stream.detect import warm_up, warm_up_fingerprints
from stream.index import BlockIndex
from stream.service import metrics
from stream.service.stages.documents import DocumentStage
from stream.service.stages.gather import GatherStage
from stream.service.stages.messages import GatherEntry, ProbeItem, dumps
from stream.service.stages.output import Output
from stream.service.stages.probe import ProbeStage
from stream.service.stages.stage_values import Hops, InputRecord, Topics, merge
from stream.storage import MemoryStore

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


class Pipeline:
    """The three stages and the hops between them.

    A hop to a partition this worker owns right now (``owned()``: the (topic, partition) pairs
    assigned to it, tables recovered) goes straight to the next stage, inside the same agent batch;
    the others go over Kafka. Ownership is what makes this safe: partition p of the probe topic,
    of the block table and of the gather topic belong to one worker, whose event loop runs one
    batch at a time, so a local hop reads and writes exactly the state the Kafka hop would, with its
    changelog records delivered before the batch's input is acknowledged. Measured at 200 docs/s on
    one worker: each Kafka hop cost 60-77 ms at the median (docs/decisions/local-hops.md).
    """

    def __init__(self, documents: DocumentStage, probes: ProbeStage, gather: GatherStage, output: Output,
                 topics: Topics, owned: Callable[[], Container[tuple[str, int]]] = frozenset) -> None:
        self.documents, self.probes, self.gather = documents, probes, gather
        self.output, self.topics, self.owned = output, topics, owned

    def warm_up(self) -> None:
        """Load at start-up what the first batch would otherwise wait for: the segmenter's dictionary
        (measured: the first fingerprint of a fresh process takes 0.6 s, later ones < 1 ms) and the
        compiled kernels of the index and of verification (``stream.detect.warm_up``, on a throwaway
        index). The text is long enough for the compiled normalizer, whose tables take ~50-300 ms to build."""
        index = BlockIndex(None, k=self.probes.matching.k, bands=self.probes.config.band_tables, store=MemoryStore())
        warm_up(self.probes.matching.detector(index), *warm_up_fingerprints(self.documents.fingerprinter))

    def documents_batch(self, records: Sequence[InputRecord]) -> None:
        try:
            self._forward(self.documents.handle(records))
        finally:
            self.gather.end_batch()

    def probe_batch(self, messages: Sequence[tuple[int, Sequence[ProbeItem]]]) -> None:
        hops = Hops()
        try:
            merge(hops.gather, self.probes.handle_batch(messages))
            self._forward(hops)
        finally:
            self.gather.end_batch()

    def gather_batch(self, entries: Mapping[int, Sequence[GatherEntry]]) -> None:
        hops = Hops()
        try:
            for partition, items in entries.items():
                merge(hops.probes, self.gather.handle(partition, items))
            self._forward(hops)
        finally:
            self.gather.end_batch()

    def _forward(self, hops: Hops) -> None:
        """Hand on ``hops`` until nothing is left: a route makes probe items, a probe item an answer
        (at most route -> probe -> answer when every partition is local)."""
        owned = self.owned()
        while hops.probes or hops.gather:
            hops = self._step(hops, owned)

    def _step(self, hops: Hops, owned: Container[tuple[str, int]]) -> Hops:
        """Send what goes over Kafka; run the local hops; what they made, for the next step."""
        made = Hops()
        local: list[tuple[int, Sequence[ProbeItem]]] = []
        for partition, items in hops.probes.items():
            if (self.topics.probe, partition) in owned:
                local.append((partition, items))
            else:
                send_list(self.output, self.topics.probe, partition, [item.to_json() for item in items])
        metrics.HOPS.labels("probe", "local").inc(len(local))
        metrics.HOPS.labels("probe", "kafka").inc(len(hops.probes) - len(local))
        if local:
            merge(made.gather, self.probes.handle_batch(local))
        for partition, entries in hops.gather.items():
            if (self.topics.gather, partition) in owned:
                metrics.HOPS.labels("gather", "local").inc()
                merge(made.probes, self.gather.handle(partition, entries))
            else:
                metrics.HOPS.labels("gather", "kafka").inc()
                send_list(self.output, self.topics.gather, partition, [e.to_json() for e in entries])
        return made
