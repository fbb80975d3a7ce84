"""Everything a worker writes to Kafka goes through one librdkafka (confluent-kafka) producer.

Why not Faust's own producer: measured on tansu, a Faust table write through ``send_changelog``
costs ~80 us of Python per changelog record and a Faust ``topic.send`` about as much, while
``confluent_kafka.Producer.produce`` costs ~3 us (docs/service.md, "Why librdkafka for output").
Faust still owns consumption, group membership, partition assignment and table recovery.

At-least-once: each agent flushes this producer before its input batch is acknowledged, so a
committed input offset always has its outputs (and changelog records) durably in Kafka. The three
agents share the producer and may flush at the same time; a delivery error is raised by every flush
whose batch was open when it happened (``mark``), never swallowed by the one that saw it first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

PRODUCER_DEFAULTS: dict[str, Any] = {
    "linger.ms": 2,  # a worker batch is produced in a burst; a short linger packs it into few requests
    "batch.num.messages": 10000,
    "batch.size": 1 << 20,
    "compression.type": "none",  # measured: lz4 costs more CPU than it saves on loopback
    "enable.idempotence": True,  # no duplicates or reordering from librdkafka's own retries
    "acks": "all",
    "partitioner": "murmur2_random",  # same key -> partition mapping as the Java clients
}


class OutputError(RuntimeError):
    """A record could not be delivered: the batch is not acknowledged and will be redelivered."""


class Output:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.producer = Producer({**PRODUCER_DEFAULTS, **conf})
        self._errors: list[str] = []  # append-only: positions are the marks handed to batches
        # changelog (topic, partition) -> highest delivered offset; applied by the owner after flush
        self.delivered_offsets: dict[tuple[str, int], int] = {}

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    def _on_changelog_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")
            return
        tp = (str(msg.topic()), int(msg.partition() or 0))
        offset = int(msg.offset() or 0)
        if offset > self.delivered_offsets.get(tp, -1):
            self.delivered_offsets[tp] = offset

    def mark(self) -> int:
        """Call before a batch produces anything; pass the result to ``flush``."""
        return len(self._errors)

    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": self._on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = headers
        self._produce(topic, kwargs)

    def changelog(self, topic: str, partition: int, key: bytes, value: bytes | None) -> None:
        self._produce(topic, {"key": key, "value": value, "partition": partition,
                              "on_delivery": self._on_changelog_delivery})

    def _produce(self, topic: str, kwargs: dict[str, Any]) -> None:
        while True:
            try:
                self.producer.produce(topic, **kwargs)
                return
            except BufferError:  # local queue full: let librdkafka drain it
                self.producer.poll(0.05)

    def _flush_blocking(self, mark: int, timeout: float) -> None:
        remaining = self.producer.flush(timeout)
        if remaining:
            raise OutputError(f"{remaining} records not delivered within {timeout:.0f}s")
        if len(self._errors) > mark:
            raise OutputError("; ".join(self._errors[mark : mark + 5]))

    async def flush(self, mark: int, timeout: float = 30.0) -> None:
        """Deliver everything produced so far (in a thread: the event loop keeps fetching).

        Raises ``OutputError`` if any record failed since ``mark``: the batch must not be acknowledged.
        """
        await asyncio.get_running_loop().run_in_executor(None, self._flush_blocking, mark, timeout)

    def take_delivered(self, apply: Callable[[str, int, int], None]) -> None:
        """Hand each changelog partition's highest delivered offset to ``apply`` and forget them."""
        offsets, self.delivered_offsets = self.delivered_offsets, {}
        for (topic, partition), offset in offsets.items():
            apply(topic, partition, offset)

    def close(self, timeout: float = 30.0) -> bool:
        """Deliver what is left; True if every record this producer was given is in Kafka."""
        return self.producer.flush(timeout) == 0 and not self._errors
