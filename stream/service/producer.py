"""Publishing documents: ``DocumentProducer`` (the Python API for crawlers) and ``dedup publish``.

Idempotent librdkafka producer (no duplicates from retries), key = document id, value = the
document JSON as given, delivery reports counted: ``flush()`` says how many were not delivered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from confluent_kafka import KafkaError, Message, Producer

from stream.service.settings import Settings, load_settings


class DocumentProducer:
    """Send documents to the documents topic.

    >>> with DocumentProducer(broker="kafka://127.0.0.1:9092") as p:  # doctest: +SKIP
    ...     p.send({"id": "a1", "text": "..."})
    """

    def __init__(self, broker: str | None = None, topic: str | None = None,
                 settings: Settings | None = None, **producer_conf: Any) -> None:
        self.settings = settings or load_settings(broker=broker)
        self.topic = topic or self.settings.documents_topic
        self.producer = Producer(self.settings.confluent(**{
            "enable.idempotence": True, "acks": "all", "linger.ms": 20,
            "partitioner": "murmur2_random",  # the Java clients' key -> partition mapping
            **producer_conf,
        }))
        self.delivered = 0
        self.failed = 0
        self.errors: list[str] = []

    def _report(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            if len(self.errors) < 20:
                self.errors.append(f"{msg.key()!r}: {err}")

    def send(self, document: Mapping[str, Any] | bytes | str, key: str | bytes | None = None) -> None:
        """Queue one document. A dict must have an ``id``; raw JSON needs ``key`` or an id inside."""
        if isinstance(document, Mapping):
            if "id" not in document:
                raise ValueError("a document needs an 'id'")
            value = json.dumps(document, ensure_ascii=False).encode()
            key = key if key is not None else str(document["id"])
        else:
            value = document.encode() if isinstance(document, str) else document
            if key is None:
                key = str(json.loads(value)["id"])
        raw_key = key.encode() if isinstance(key, str) else key
        while True:
            try:
                self.producer.produce(self.topic, key=raw_key, value=value, on_delivery=self._report)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)

    def send_many(self, documents: Iterable[Mapping[str, Any]]) -> None:
        for d in documents:
            self.send(d)

    def flush(self, timeout: float = 60.0) -> int:
        """Wait for delivery; returns the number of documents still undelivered."""
        return int(self.producer.flush(timeout))

    def close(self, timeout: float = 60.0) -> int:
        """Wait for delivery and disconnect (librdkafka destroys a client with its last reference;
        a client left alive keeps reconnecting, and logs it, after the broker is gone). Returns
        the number of documents still undelivered."""
        left = self.flush(timeout)
        del self.producer
        return left

    def __enter__(self) -> DocumentProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class PublishResult:
    topic: str
    sent: int = 0
    failed: int = 0
    bad_lines: list[int] = field(default_factory=list)


def publish_lines(settings: Settings, lines: IO[str], topic: str | None = None,
                  progress: bool = False) -> PublishResult:
    """Publish JSONL documents; lines that are not a JSON object with an id are reported, not sent."""
    producer = DocumentProducer(settings=settings, topic=topic)
    result = PublishResult(producer.topic)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=True) as bar:
        task = bar.add_task("publish", total=None)
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                doc = json.loads(line)
                if not isinstance(doc, dict) or "id" not in doc:
                    raise ValueError("no id")
            except ValueError:
                result.bad_lines.append(number)
                continue
            producer.send(line.encode(), key=str(doc["id"]))
            result.sent += 1
            bar.update(task, completed=producer.delivered)
        producer.close()
        bar.update(task, completed=producer.delivered)
    result.failed = producer.failed
    return result
