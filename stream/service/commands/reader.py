"""``TopicReader``: the commands' group-less reader of a topic (``dedup dlq``, ``verdicts``, the demo)."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from typing import Any

from stream.errors import UsageError
from stream.service.settings import Settings


class TopicReader:
    """Reads a topic without a consumer group (a group join takes ~20 s on tansu): ``records`` to its
    end, or ``follow`` past it."""

    def __init__(self, settings: Settings, topic: str) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.bootstrap = settings.bootstrap
        self.consumer = Consumer(settings.confluent(**{
            "group.id": "dedup-reader", "enable.auto.commit": False, "enable.partition.eof": True,
            "auto.offset.reset": "earliest", "fetch.max.bytes": 64 << 20, "receive.message.max.bytes": 128 << 20,
            # an empty partition's fetch is answered after this wait: with librdkafka's 500 ms, reading a
            # short topic to its end took ~1 s
            "fetch.wait.max.ms": 50}))
        meta = self.consumer.list_topics(topic, timeout=settings.connect_timeout).topics.get(topic)
        exists = meta is not None and meta.error is None and meta.partitions
        self.partitions: list[int] = sorted(meta.partitions) if exists else []

    def watermarks(self, partition: int) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        low, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=10)
        return int(low), int(high)

    def records(self, start: dict[int, int] | None = None, partitions: Collection[int] | None = None,
                timeout: float = 60.0) -> Iterator[Any]:
        """Every record from the beginning (or from ``start[partition]``) to the end, as confluent-kafka
        messages. The end is where each partition reports EOF: the fetch's high watermark, right on
        tansu too, whose listed offsets can stop at the last batch's base offset + 1 (docs/service.md,
        "Broker differences")."""
        from confluent_kafka import KafkaError

        wanted = [p for p in self.partitions if partitions is None or p in partitions]
        self._assign(wanted, start)
        pending = set(wanted)
        deadline = time.monotonic() + timeout
        while pending:
            # returns at 500 messages or at the timeout: a short one, else each call ends waiting it out
            messages = self.consumer.consume(500, 0.05)
            for msg in messages:
                error = msg.error()
                if error is None:
                    yield msg
                elif error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
            if messages:
                deadline = time.monotonic() + timeout
            elif time.monotonic() > deadline:
                raise UsageError(f"reading {self.topic}: no end of partitions {sorted(pending)} after {timeout:.0f} s")

    def follow(self, start: dict[int, int] | None = None) -> Any:
        """The consumer, assigned to every partition from the beginning (or from ``start[partition]``), to
        poll past the end (partition EOFs come as error events). A missing topic is a ``UsageError``."""
        if not self.partitions:
            self.close()
            raise UsageError(f"topic {self.topic} does not exist on {self.bootstrap} (start a worker, or `dedup "
                             "topology apply`, to create it)")
        self._assign(self.partitions, start)
        return self.consumer

    def _assign(self, partitions: list[int], start: dict[int, int] | None = None) -> None:
        """Read ``partitions`` from ``start[partition]``, else from the beginning."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.consumer.assign([TopicPartition(self.topic, p, (start or {}).get(p, OFFSET_BEGINNING))
                              for p in partitions])

    def close(self) -> None:
        self.consumer.close()
