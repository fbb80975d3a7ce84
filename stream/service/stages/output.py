"""Everything a worker writes to Kafka goes through one librdkafka (confluent-kafka) producer.

Why not Faust's own producer: measured on tansu, a Faust table write through ``send_changelog``
costs ~80 us of Python per changelog record and a Faust ``topic.send`` about as much, while
``confluent_kafka.Producer.produce`` costs ~3 us (docs/decisions/output-through-librdkafka.md).
Faust still owns consumption, group membership, partition assignment and table recovery.

At-least-once: each agent batch waits until every record IT produced is acknowledged before its input
is acknowledged, so a committed input offset always has its outputs (and changelog records)
durably in Kafka. The three agents share the producer; a batch waits only for its own records
(a delivery counter per batch, served by a poll thread), not for the producer's whole queue: with
three agents producing all the time, ``Producer.flush()`` waited for a moment when nobody was
producing (measured at 330 docs/s: 0.3-1.4 s per flush, the largest share of the verdict latency).
A delivery error fails exactly the batch whose record it was.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from stream.errors import EXIT_RESTART, DedupError, DocumentError

PRODUCER_DEFAULTS: dict[str, Any] = {
    "linger.ms": 2,  # a worker batch is produced in a burst; a short linger packs it into few requests
    "batch.num.messages": 10000,
    "batch.size": 1 << 20,
    "compression.type": "none",  # measured: lz4 costs more CPU than it saves on loopback
    "enable.idempotence": True,  # no duplicates or reordering from librdkafka's own retries
    "acks": "all",
    "partitioner": "murmur2_random",  # same key -> partition mapping as the Java clients
    # every topic comes from the topology: a broker that lost its topics must not get them back from a
    # record with the broker's default partition count (tansu: 4, Kafka: num.partitions)
    "allow.auto.create.topics": False,
}


class OutputError(DedupError):
    """A record could not be delivered: the batch is not acknowledged and will be redelivered."""

    exit_code = EXIT_RESTART


def _too_large(exc: KafkaException) -> bool:
    return bool(exc.args) and exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


class Batch:
    """The records one agent batch produced: done when each has its delivery report.

    ``on_delivery``/``on_changelog``: the delivery callbacks of its records, made once per batch
    (a closure per record cost ~1.8 us of the ~4.5 us a changelog record took to produce)."""

    __slots__ = ("errors", "loop", "on_changelog", "on_delivery", "pending", "waiter")

    def __init__(self, output: Output) -> None:
        self.pending = 0
        self.errors: list[str] = []
        self.waiter: asyncio.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.on_delivery = functools.partial(output._delivered, self)
        self.on_changelog = functools.partial(output._changelog_delivered, self)


class Output:
    def __init__(self, conf: dict[str, Any], task_timeout: float = 300.0) -> None:
        # librdkafka retries each record (idempotently) until message.timeout.ms; a batch waits for its
        # records as long: a broker outage shorter than ``task_timeout`` delays the batch, never fails it
        self.task_timeout = task_timeout
        self.producer = Producer({**PRODUCER_DEFAULTS, "message.timeout.ms": int(task_timeout * 1000), **conf})
        # sends happen on the event loop, delivery reports on the poll thread
        self._lock = threading.Lock()
        self._loose = Batch(self)  # records produced outside any agent batch (nobody waits for them)
        self._current = self._loose
        self._failed = False
        # changelog (topic, partition) -> highest delivered offset; applied by the owner after flush
        self.delivered_offsets: dict[tuple[str, int], int] = {}
        self._closed = threading.Event()
        self._poller: threading.Thread | None = None

    # -- delivery reports (poll thread) --------------------------------------------------------

    def _poll_loop(self) -> None:
        while not self._closed.is_set():
            self.producer.poll(0.1)  # returns as soon as reports are in; serves the callbacks below

    def _delivered(self, batch: Batch, err: KafkaError | None, msg: Message) -> None:
        with self._lock:
            if err is not None:
                batch.errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")
                self._failed = True
            self._settle(batch)

    def _changelog_delivered(self, batch: Batch, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._delivered(batch, err, msg)
            return
        tp = (str(msg.topic()), msg.partition() or 0)
        offset = msg.offset() or 0
        with self._lock:  # one lock per report for the offset and the batch
            if offset > self.delivered_offsets.get(tp, -1):
                self.delivered_offsets[tp] = offset
            self._settle(batch)

    @staticmethod
    def _settle(batch: Batch) -> None:
        """One of ``batch``'s records is reported (the lock held): wake its waiter after the last."""
        batch.pending -= 1
        if batch.pending == 0 and batch.waiter is not None and batch.loop is not None:
            batch.loop.call_soon_threadsafe(_resolve, batch.waiter)

    # -- producing (event loop) ----------------------------------------------------------------

    def mark(self) -> Batch:
        """Call before a batch produces anything (its handling is synchronous, so every record
        until the next ``mark`` belongs to it); pass the result to ``flush``."""
        if self._poller is None:
            self._poller = threading.Thread(target=self._poll_loop, name="dedup-output-poll", daemon=True)
            self._poller.start()
        self._current = Batch(self)
        return self._current

    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
        batch = self._current
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": batch.on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = headers
        with self._lock:
            batch.pending += 1
        try:
            self._produce(topic, kwargs)
        except Exception:
            with self._lock:  # never produced: no report will come for it
                batch.pending -= 1
            raise

    def changelog(self, topic: str, partition: int, key: bytes, value: bytes | None) -> None:
        self.changelog_many(topic, partition, ((key, value),))

    def changelog_many(self, topic: str, partition: int, ops: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Changelog records (key, value; None deletes) to one partition, in order. The per-record
        path is librdkafka's ``produce`` with positional arguments and the batch's callback (~1.3 us
        a record; keyword arguments and a closure per record: ~4.5 us, ~25 records per document)."""
        batch = self._current
        report = batch.on_changelog
        n = len(ops)
        with self._lock:  # counted before producing: no report can bring the batch to 0 early
            batch.pending += n
        produce = self.producer.produce
        done = 0
        try:
            for key, value in ops:
                try:
                    produce(topic, value, key, partition, report)
                except BufferError:  # local queue full: drain, then produce this record again
                    self._produce(topic, {"key": key, "value": value, "partition": partition, "on_delivery": report})
                except KafkaException as exc:  # our own state: whatever the cause, not a document's fault
                    raise OutputError(f"cannot produce to {topic}: {exc}") from None
                done += 1
        except DocumentError as exc:
            raise OutputError(str(exc)) from None
        finally:
            if done < n:  # a produce failed: the rest will never be reported
                with self._lock:
                    batch.pending -= n - done

    def _produce(self, topic: str, kwargs: dict[str, Any]) -> None:
        """Produce one record. Too large a record is the message's fault (``DocumentError``: its stage
        dead-letters the document); any other refusal is the producer's (``OutputError``)."""
        while True:
            try:
                self.producer.produce(topic, **kwargs)
                return
            except BufferError:  # local queue full: let librdkafka drain it
                self.producer.poll(0.05)
            except KafkaException as exc:
                if _too_large(exc):
                    raise DocumentError(f"a record for {topic} is {len(kwargs.get('value') or b''):,} bytes, over "
                                        "the producer's message.max.bytes", code="too_large") from None
                raise OutputError(f"cannot produce to {topic}: {exc}") from None

    async def flush(self, batch: Batch, timeout: float | None = None) -> None:
        """Wait until every record of ``batch`` is delivered (at most ``task_timeout`` and a few seconds
        for the last reports: librdkafka times each record out itself after ``task_timeout``).

        Raises ``OutputError`` if any of them failed or timed out: the batch must not be acknowledged.
        """
        timeout = self.task_timeout + 5.0 if timeout is None else timeout
        if self._current is batch:
            self._current = self._loose
        loop = asyncio.get_running_loop()
        with self._lock:
            if batch.pending > 0:
                batch.loop, batch.waiter = loop, loop.create_future()
            waiter = batch.waiter
        if waiter is not None:
            try:
                await asyncio.wait_for(waiter, timeout)
            except TimeoutError:
                raise OutputError(f"{batch.pending} records not delivered within {timeout:.0f}s") from None
        if batch.errors:
            raise OutputError("; ".join(batch.errors[:5]))

    def take_delivered(self, apply: Callable[[str, int, int], None]) -> None:
        """Hand each changelog partition's highest delivered offset to ``apply`` and forget them."""
        with self._lock:
            offsets, self.delivered_offsets = self.delivered_offsets, {}
        for (topic, partition), offset in offsets.items():
            apply(topic, partition, offset)

    def close(self, timeout: float = 30.0) -> bool:
        """Deliver what is left; True if every record this producer was given is in Kafka."""
        self._closed.set()
        if self._poller is not None:
            self._poller.join(timeout)
        return self.producer.flush(timeout) == 0 and not self._failed


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
