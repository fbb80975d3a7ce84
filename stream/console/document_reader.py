"""``DocumentReader``: a document read back from the documents topic at a position a verdict names
(its own ``source`` or its ``canonical_source``), shown as a person reads it: id, title, url, text
(the main text of a web page). The console, ``dedup show`` and ``dedup diff`` share it."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from stream.errors import UsageError
from stream.fingerprint import parse_document
from stream.service.settings import Settings
from stream.text.html import extract, looks_like_html

CACHED = 256  # documents kept by position: a pair is opened, closed and opened again


@dataclass(frozen=True)
class Shown:
    id: str
    title: str
    url: str
    text: str
    position: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "url": self.url, "text": self.text, "position": self.position}


def shown(value: bytes, position: dict[str, Any]) -> Shown:
    """A document's value as a person reads it; a web page reduced to its main text and title."""
    doc = parse_document(value)
    text, title = doc.text, doc.title or ""
    if text and ((doc.content_type or "").startswith("text/html") or (doc.content_type is None
                                                                        and looks_like_html(text))):
        page = extract(text)
        text, title = page.text, title or (page.title or "")
    return Shown(doc.id, title, doc.url or "", text, position)


def where(position: dict[str, Any]) -> str:
    return f"{position['topic']}:{position['partition']}:{position['offset']}"


class DocumentReader:
    """Reads single records by position with a group-less consumer (``assign``; no group join)."""

    def __init__(self, settings: Settings, timeout: float = 10.0) -> None:
        from confluent_kafka import Consumer

        self.timeout = timeout
        self.consumer = Consumer(settings.confluent(**{
            "group.id": "dedup-console", "enable.auto.commit": False, "enable.partition.eof": True,
            "auto.offset.reset": "earliest", "receive.message.max.bytes": 128 << 20}))
        self._lock = threading.Lock()  # one consumer: the web server reads from worker threads
        self._cache: OrderedDict[tuple[str, int, int], Shown] = OrderedDict()

    def read(self, position: dict[str, Any]) -> Shown:
        """The document at ``position`` ({topic, partition, offset}); ``UsageError`` if it is not there
        any more (retention or compaction deleted it) or is not a document."""
        key = (str(position["topic"]), int(position["partition"]), int(position["offset"]))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            value = self._fetch(*key)
            try:
                doc = shown(value, {"topic": key[0], "partition": key[1], "offset": key[2]})
            except Exception as exc:
                raise UsageError(f"{where(position)} does not hold a readable document: {exc}") from None
            self._cache[key] = doc
            if len(self._cache) > CACHED:
                self._cache.popitem(last=False)
            return doc

    def _fetch(self, topic: str, partition: int, offset: int) -> bytes:
        from confluent_kafka import KafkaError, TopicPartition

        self.consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + self.timeout
        gone = UsageError(f"{topic}:{partition}:{offset}: the documents topic no longer holds this record "
                          "(deleted by retention or compaction)")
        while time.monotonic() < deadline:
            msg = self.consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    raise gone
                if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise UsageError(f"{topic}:{partition}: no such topic or partition")
                continue
            value = msg.value()
            if msg.offset() != offset or value is None:
                raise gone
            return bytes(value)
        raise UsageError(f"{topic}:{partition}:{offset}: no answer from the broker within {self.timeout:.0f} s")

    def close(self) -> None:
        self.consumer.close()
