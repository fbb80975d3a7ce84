"""``repartition``: a new deployment's state, with other partition counts, from a stopped one's changelogs.

Reads the old app id's changelog topics to their ends (the latest value of each key), re-keys them for
the new counts (``stages.rekey``: nothing is fingerprinted again), creates the new app id's topics and
writes its changelogs, from which its first worker restores; the documents agent's input positions
carry over (state table and the new consumer group's committed offsets) when the new deployment reads
the same documents topic. docs/usage.md, "Growing past the partition counts", is the procedure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stream.errors import BrokerUnavailable, ConfigError, UsageError
from stream.index import key_kind
from stream.service.commands.reader import TopicReader
from stream.service.runtime.ledger import KEY_PREFIX, decode_position, encode_position, ledger_key
from stream.service.runtime.worker_process import apply_topology
from stream.service.settings import Settings
from stream.service.stages.rekey import BlockState, Placement, block_partitions, gather_partitions, routed

BLOCKS, GATHER, POSITIONS = "blocks-changelog", "gather_state-changelog", "positions-changelog"
HOPS = ("probe", "gather")  # the internal topics between the stages: read to their ends by a stopped deployment
READ_TIMEOUT = 120.0
# millions of records in bursts: large batches; a callback only for a record that failed
PRODUCER = {"linger.ms": 20, "batch.size": 1 << 20, "acks": "all", "enable.idempotence": True,
            "queue.buffering.max.messages": 1_000_000, "allow.auto.create.topics": False,
            "delivery.report.only.error": True}


@dataclass
class Report:
    old_index_partitions: int
    old_partitions: int
    documents: int = 0  # indexed documents carried over
    gather_states: int = 0
    written: dict[str, int] = field(default_factory=dict)  # topic -> records written
    positions: dict[int, int] = field(default_factory=dict)  # documents topic partition -> next offset
    seconds: dict[str, float] = field(default_factory=dict)  # read, rebuild+write of each table


def repartition(old_app_id: str, new: Settings, say: Callable[[str], None] = print) -> Report:
    """Build ``new``'s state (its app id, topics and counts) from the stopped deployment ``old_app_id``."""
    old = new.with_overrides(app_id=old_app_id).topology()
    if old_app_id == new.app_id:
        raise UsageError("the new deployment needs a new app id (--app-id): its internal topics are new ones")
    internal = new.topology().by_role("internal") + new.topology().by_role("changelog")
    counts = _partition_counts(new, [old.internal_name(n) for n in (BLOCKS, GATHER, POSITIONS, *HOPS)]
                               + [t.name for t in internal] + [new.documents_topic])
    missing = [old.internal_name(n) for n in (BLOCKS, GATHER, POSITIONS) if old.internal_name(n) not in counts]
    if missing:
        raise UsageError(f"app id {old_app_id!r} has no {', '.join(missing)} on {new.bootstrap}: not the app id "
                         "of a deployment whose workers ran on this broker")
    report = Report(counts[old.internal_name(BLOCKS)], counts[old.internal_name(POSITIONS)])
    if (report.old_index_partitions, report.old_partitions) == (new.index_partitions, new.partitions):
        raise UsageError(f"{old_app_id!r} has {new.partitions} partitions and {new.index_partitions} index "
                         "partitions already: give other counts (--partitions, --index-partitions)")
    _check_new_topics(new, counts)
    _check_drained(new, old_app_id, {old.internal_name(n): counts.get(old.internal_name(n), 0) for n in HOPS})
    t0 = time.perf_counter()
    blocks = BlockState(skip_prefix=KEY_PREFIX)
    for items in _read_table(new, old.internal_name(BLOCKS), lambda key: key_kind(key) != "entry"):
        blocks.add_partition(items)
    documents = routed(blocks, new.index_partitions, anchors=new.anchor_cap > 0)
    placement = Placement.of(blocks, documents)
    gather = gather_partitions(_read_table(new, old.internal_name(GATHER)), new.index_partitions, KEY_PREFIX,
                               placement.partitions, new.max_matches)
    if gather.unfinished:
        raise ConfigError(f"{len(gather.unfinished)} documents of {old_app_id!r} are still being judged (e.g. "
                          f"{gather.unfinished[0]!r}): let its workers finish, stop them, and run this again")
    report.positions = _positions(new, list(_read_table(new, old.internal_name(POSITIONS))))
    report.documents, report.gather_states = len(blocks.ids), gather.count
    report.seconds["read"] = time.perf_counter() - t0
    say(f"read {old_app_id}: {report.documents} indexed documents, {report.gather_states} gather states "
        f"({report.seconds['read']:.1f} s)")
    apply_topology(new, say)
    topology = new.topology()
    with _Writer(new) as writer:
        t0 = time.perf_counter()
        topic = topology.internal_name(BLOCKS)
        for partition, records in block_partitions(blocks, documents):
            writer.write(topic, partition, records)
        report.seconds["blocks"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for partition, states in enumerate(gather.partitions):
            writer.write(topology.internal_name(GATHER), partition, states)
        for partition, offset in report.positions.items():
            writer.write(topology.internal_name(POSITIONS), partition,
                         [(ledger_key(new.documents_topic), encode_position(offset))])
        report.written = dict(writer.written)
        report.seconds["gather"] = time.perf_counter() - t0
    _commit(new, report.positions)
    return report


def _partition_counts(settings: Settings, names: Iterable[str]) -> dict[str, int]:
    """The partition count of each of ``names`` that exists."""
    from topology.admin import partition_counts

    try:
        return partition_counts(settings.confluent(), names, settings.connect_timeout)
    except Exception as exc:
        raise BrokerUnavailable(f"listing topics on {settings.bootstrap}: {exc}") from exc


def _check_new_topics(new: Settings, counts: dict[str, int]) -> None:
    """The new app id's internal topics must not exist (a worker of it ran, or a repartition did); the
    documents topic, if it exists, must have the new ``partitions``."""
    topology = new.topology()
    taken = [t.name for t in topology.by_role("internal") + topology.by_role("changelog") if t.name in counts]
    if taken:
        raise UsageError(f"app id {new.app_id!r} has topics already ({', '.join(taken)}): give a new one")
    have = counts.get(new.documents_topic)
    if have is not None and have != new.partitions:
        raise UsageError(f"documents topic {new.documents_topic} has {have} partitions, not {new.partitions}: give "
                         "the new deployment a new documents topic (--documents-topic), or add partitions to this "
                         "one first")


def _check_drained(settings: Settings, group: str, topics: dict[str, int]) -> None:
    """The old consumer group has committed the end of its internal topics: no probe or answer is left
    unread (a document read but not yet judged has no gather state to say so)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(settings.confluent(**{"group.id": group, "enable.auto.commit": False}))
    try:
        committed = consumer.committed([TopicPartition(t, p) for t, n in topics.items() for p in range(n)],
                                       timeout=settings.connect_timeout)
        behind = []
        for tp in committed:
            _, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition),
                                                     timeout=settings.connect_timeout)
            if max(tp.offset, 0) < high:  # none committed is OFFSET_INVALID (-1001)
                behind.append(f"{tp.topic}[{tp.partition}] at {max(tp.offset, 0)} of {high}")
    except Exception as exc:
        raise BrokerUnavailable(f"reading {group}'s committed offsets: {exc}") from exc
    finally:
        consumer.close()
    if behind:
        raise ConfigError(f"{group} has not read its internal topics to their ends ({'; '.join(behind[:4])}): "
                          "let its workers finish, stop them, and run this again")


def _read_table(settings: Settings, topic: str, keep: Callable[[bytes], bool] = lambda _key: True
                ) -> Iterable[dict[bytes, bytes]]:
    """Per partition, the latest value of each kept key (a null value deletes it), as a compacted
    changelog holds it."""
    reader = TopicReader(settings, topic)
    try:
        for partition in reader.partitions:
            items: dict[bytes, bytes] = {}
            for msg in reader.records(partitions=[partition], timeout=READ_TIMEOUT):
                key, value = msg.key(), msg.value()
                if key is None or not keep(key):
                    continue
                if value is None:
                    items.pop(key, None)
                else:
                    items[key] = value
            yield items
    finally:
        reader.close()


def _positions(new: Settings, old: list[dict[bytes, bytes]]) -> dict[int, int]:
    """The documents agent's positions in the new documents topic (those of the old deployment when it
    read the same topic), by partition."""
    key = ledger_key(new.documents_topic)
    positions = {p: decode_position(items.get(key)) for p, items in enumerate(old) if p < new.partitions}
    return {p: offset for p, offset in positions.items() if offset is not None}


def _commit(new: Settings, positions: dict[int, int]) -> None:
    """The new consumer group (its app id) starts the documents topic where the old deployment got to."""
    if not positions:
        return
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(new.confluent(**{"group.id": new.app_id, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(new.documents_topic, p, o) for p, o in sorted(positions.items())],
                        asynchronous=False)
    except Exception as exc:
        raise BrokerUnavailable(f"committing {new.app_id}'s offsets on {new.documents_topic}: {exc}") from exc
    finally:
        consumer.close()


class _Writer:
    """One producer for every record written; ``close`` waits for every delivery and raises on a failure."""

    def __init__(self, settings: Settings) -> None:
        from confluent_kafka import Producer

        # one delivery callback for the producer, not one per record: 0.5-0.9 us less per produce,
        # ~28 records per document at 8 index partitions
        self.producer = Producer(settings.confluent(**PRODUCER, on_delivery=self._report))
        self.errors: list[str] = []
        self.written: dict[str, int] = {}

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _report(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    def write(self, topic: str, partition: int, records: Iterable[tuple[bytes, bytes]]) -> None:
        produce, poll = self.producer.produce, self.producer.poll
        i = -1
        for i, (key, value) in enumerate(records):
            while True:
                try:
                    produce(topic, value, key, partition)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    poll(0.1)
            if not i % 1000:  # delivery reports: a poll per record cost as much as the produce
                poll(0)
        self.written[topic] = self.written.get(topic, 0) + i + 1

    def close(self) -> None:
        left = self.producer.flush(READ_TIMEOUT)
        if left or self.errors:
            raise BrokerUnavailable(f"{left} records not delivered; {'; '.join(self.errors[:3])}")
