"""``Feed``: a thread that reads the verdict and dead-letter topics from their beginning and then
follows them, into a ``ConsoleState``; every few seconds it measures the worker group's lag per
documents partition (high watermark - committed offset)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from stream.console.model import ConsoleState
from stream.service.settings import Settings

LAG_EVERY = 5.0  # seconds between lag measurements
TOPICS_EVERY = 5.0  # seconds between looks for topics that do not exist yet


class Feed:
    def __init__(self, settings: Settings, state: ConsoleState, lock: threading.Lock) -> None:
        self.settings, self.state, self.lock = settings, state, lock
        self.verdicts, self.dlq = settings.verdicts_topic, settings.dlq_topic
        self.documents = settings.documents_topic
        self.assigned: set[str] = set()
        self.caught_up = threading.Event()  # every partition read to its end once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dedup-console-feed", daemon=True)
        self.error: str | None = None

    def start(self) -> Feed:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        from confluent_kafka import Consumer

        conf = self.settings.confluent(**{"group.id": "dedup-console", "enable.auto.commit": False,
                                          "enable.partition.eof": True, "auto.offset.reset": "earliest",
                                          "fetch.max.bytes": 64 << 20, "receive.message.max.bytes": 128 << 20})
        consumer = Consumer(conf)
        # the worker's group: committed offsets only (never subscribes, so it never joins the group)
        group = Consumer(self.settings.confluent(**{"group.id": self.settings.app_id, "enable.auto.commit": False}))
        pending: set[tuple[str, int]] = set()
        looked = measured = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now - looked >= TOPICS_EVERY and len(self.assigned) < 2:
                    pending |= self._assign(consumer)
                    looked = now
                if now - measured >= LAG_EVERY:
                    self._measure_lag(group)
                    measured = now
                if not self.assigned:
                    self._stop.wait(0.5)
                    continue
                for msg in consumer.consume(500, 0.5):
                    self._take(msg, pending)
                if not pending:
                    self.caught_up.set()
        except Exception as exc:  # shown on the page: the console stays up, read-only
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            consumer.close()
            group.close()

    def _assign(self, consumer: Any) -> set[tuple[str, int]]:
        """Start reading the topics that exist now from their beginning; the partitions to read to EOF."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        listed = consumer.list_topics(timeout=self.settings.connect_timeout).topics
        new = [t for t in (self.verdicts, self.dlq) if t not in self.assigned and t in listed
               and listed[t].error is None and listed[t].partitions]
        if not new:
            return set()
        parts = [(t, p) for t in new for p in sorted(listed[t].partitions)]
        self.assigned |= set(new)
        consumer.incremental_assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in parts])
        return set(parts)

    def _take(self, msg: Any, pending: set[tuple[str, int]]) -> None:
        from confluent_kafka import KafkaError

        error = msg.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                pending.discard((msg.topic(), msg.partition()))
            return
        at = msg.timestamp()[1] / 1000.0
        value = msg.value()
        try:
            body = None if value is None else json.loads(value)
        except ValueError:  # not the worker's: counted, shown, never fatal
            with self.lock:
                self.state.totals["unreadable"] += 1
            return
        with self.lock:
            if msg.topic() == self.verdicts:
                if body is None:
                    self.state.tombstone(msg.key().decode("utf-8", "replace"), at)
                else:
                    self.state.verdict(body)
            elif body is not None:
                self.state.dead_letter(body, at)

    def _measure_lag(self, group: Any) -> None:
        from confluent_kafka import TopicPartition

        listed = group.list_topics(self.documents, timeout=self.settings.connect_timeout).topics.get(self.documents)
        if listed is None or listed.error is not None:
            return
        parts = [TopicPartition(self.documents, p) for p in sorted(listed.partitions)]
        committed = group.committed(parts, timeout=self.settings.connect_timeout)
        lag: dict[int, int | None] = {}
        for tp in committed:  # nothing committed yet: everything on the partition is still to read
            low, high = group.get_watermark_offsets(TopicPartition(self.documents, tp.partition), timeout=5)
            lag[tp.partition] = max(0, high - (tp.offset if tp.offset >= 0 else low))
        with self.lock:
            self.state.lag = lag


def read_verdicts(settings: Settings, state: ConsoleState) -> ConsoleState:
    """The verdict topic from its beginning to its end, once, into ``state`` (``dedup show``, ``diff``)."""
    from stream.service.commands.reader import TopicReader

    reader = TopicReader(settings, settings.verdicts_topic)
    try:
        if not reader.partitions:
            from stream.errors import UsageError

            raise UsageError(f"topic {settings.verdicts_topic} does not exist on {settings.bootstrap} (no worker "
                             "has run with these settings)")
        for msg in reader.records():
            value = msg.value()
            if value is None:
                state.tombstone(msg.key().decode("utf-8", "replace"), msg.timestamp()[1] / 1000.0)
                continue
            try:
                state.verdict(json.loads(value))
            except (ValueError, KeyError, TypeError):
                state.totals["unreadable"] += 1
    finally:
        reader.close()
    return state
