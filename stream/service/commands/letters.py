"""Dead letters as ``dedup dlq`` reads them: the envelope of ``messages.dead_letter`` parsed back,
its original key and value, a one-line preview, read to the topic's end (``TopicReader``).

A letter is named by its own position in the dead-letter topic (``partition:offset``): that is what
the replay ledger keys (stream/service/commands/replay.py) and what ``--since`` selects on.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stream.errors import UsageError
from stream.service.commands.reader import TopicReader
from stream.service.settings import Settings

NOT_AN_ENVELOPE = "not_an_envelope"  # the code shown for a record on the topic that no worker wrote
# the codes a worker writes (docs/usage.md, "Dead letters"), besides "<stage>_failed"; a code outside them is
# still accepted by a selector when some letter on the topic carries it
DOCUMENTED_CODES = frozenset((
    "not_utf8", "not_json", "not_object", "bad_id", "bad_ts", "bad_type", "bad_text", "bad_fields", "bad_side",
    "bad_unicode", "bad_op", "no_text", "too_large", "tombstone", NOT_AN_ENVELOPE))
_FAILED = re.compile(r"[a-z]+_failed")  # an error the code did not expect, in that stage
PREVIEW_CHARS = 60


@dataclass(frozen=True)
class Position:
    topic: str
    partition: int
    offset: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass(frozen=True)
class Original:
    """The key or the value of the input record, as far as the envelope holds it."""

    data: bytes | None  # whole, or only the first bytes when ``length`` says it was longer
    length: int | None = None  # set when the envelope holds a preview only
    sha256: str | None = None

    @property
    def truncated(self) -> bool:
        return self.length is not None

    def matches(self, raw: bytes | None) -> bool:
        """Whether ``raw`` (re-read from the source) is the cut original: same length and SHA-256."""
        return raw is not None and len(raw) == self.length and hashlib.sha256(raw).hexdigest() == self.sha256


@dataclass(frozen=True)
class DeadLetter:
    at: Position  # where the letter itself is, in the dead-letter topic
    code: str
    error: str
    stage: str
    source: Position | None  # the input record it stands for
    key: Original
    value: Original
    digest: str  # SHA-256 of the letter's bytes: tells a letter from another at a reused position
    envelope: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        """``partition:offset`` in the dead-letter topic: the letter's identity for replay."""
        return f"{self.at.partition}:{self.at.offset}"

    def preview(self, chars: int = PREVIEW_CHARS) -> str:
        return preview(self.value, chars)

    @property
    def record(self) -> bytes | None:
        """A digest of the input record this letter stands for (its source and original key and
        value), None without a source. A record processed again (after a crash, a hand-over, a
        re-read) is dead-lettered again: letters with the same ``record`` are copies."""
        if self.source is None:
            return None
        digest = hashlib.blake2b(str(self.source).encode(), digest_size=16)
        for part in (self.key, self.value):
            digest.update(repr((part.length, part.sha256, None if part.data is None else len(part.data))).encode())
            digest.update(part.data or b"")
        return digest.digest()


def _original(envelope: dict[str, Any], name: str) -> Original:
    """The ``name`` part of an envelope (``messages._original``): text, base64, or a cut preview."""
    text = envelope.get(name)
    if text is None:
        return Original(None)
    if envelope.get(name + "_encoding") == "base64":
        data = base64.b64decode(str(text), validate=True)
    else:
        data = str(text).encode("utf-8", "surrogatepass")
    if envelope.get(name + "_truncated"):
        return Original(data, int(envelope[name + "_length"]), str(envelope[name + "_sha256"]))
    return Original(data)


def parse_letter(at: Position, raw: bytes | None) -> DeadLetter:
    """The letter at ``at``; a record that is not a worker's envelope keeps code ``not_an_envelope``
    (listed, never replayed)."""
    digest = hashlib.sha256(raw or b"").hexdigest()
    try:
        envelope = json.loads(raw or b"")
        if not isinstance(envelope, dict) or not isinstance(envelope.get("code"), str):
            raise ValueError("no code")
        src = envelope.get("source") or {}
        source = Position(str(src["topic"]), int(src["partition"]), int(src["offset"])) if src else None
        return DeadLetter(at, envelope["code"], str(envelope.get("error", "")), str(envelope.get("stage", "")),
                          source, _original(envelope, "key"), _original(envelope, "value"), digest, envelope)
    except (ValueError, KeyError, TypeError, binascii.Error):
        return DeadLetter(at, NOT_AN_ENVELOPE, "a record on the dead-letter topic that is not a dead-letter envelope",
                          "", None, Original(None), Original(raw), digest, {})


def preview(original: Original, chars: int = PREVIEW_CHARS) -> str:
    """One line: the start of the text (whitespace collapsed), ``<null>``, or ``<N bytes, binary>``;
    a cut original says so with its whole length."""
    data = original.data
    if data is None:
        return "<null>"
    text = _text(data, cut=original.truncated)
    text = f"<binary> {data[:12].hex(' ')}" if text is None else " ".join(text.split())
    if len(text) > chars:
        text = text[: chars - 1] + "…"
    if original.truncated:
        return f"<{original.length:,} bytes, cut> {text}"
    return text


def _text(data: bytes, cut: bool) -> str | None:
    """``data`` as UTF-8, or None; a cut preview may end inside a character (up to 3 bytes of it)."""
    for drop in range(4 if cut else 1):
        try:
            return data[: len(data) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def read_topic(settings: Settings, topic: str, start: dict[int, int] | None = None,
               missing_ok: bool = False) -> Iterator[Any]:
    """Every record of ``topic`` (``TopicReader.records``); a missing topic has none if ``missing_ok``."""
    reader = TopicReader(settings, topic)
    try:
        if not reader.partitions and not missing_ok:
            raise UsageError(f"topic {topic} does not exist on {settings.bootstrap}")
        yield from reader.records(start)
    finally:
        reader.close()


def check_selectors(settings: Settings, reasons: Iterable[str], since_partition: int | None) -> None:
    """A ``UsageError`` for a selector that can select nothing by construction: a code no worker writes
    and no letter carries, a partition the dead-letter topic does not have."""
    if since_partition is not None:
        reader = TopicReader(settings, settings.dlq_topic)
        partitions = reader.partitions
        reader.close()
        if partitions and since_partition not in partitions:
            raise UsageError(f"--since {since_partition}:...: {settings.dlq_topic} has partitions 0-{max(partitions)}, "
                             f"no partition {since_partition}")
    unknown = {code for code in reasons if code not in DOCUMENTED_CODES and not _FAILED.fullmatch(code)}
    if unknown:
        unknown -= {letter.code for letter in read_letters(settings)}
    if unknown:
        raise UsageError(f"--reason {', '.join(sorted(unknown))}: not a dead-letter code (codes: "
                         f"{', '.join(sorted(DOCUMENTED_CODES))}, or <stage>_failed; docs/usage.md, Dead letters)")


def read_letters(settings: Settings, start: dict[int, int] | None = None) -> Iterator[DeadLetter]:
    topic = settings.dlq_topic
    for msg in read_topic(settings, topic, start):
        yield parse_letter(Position(topic, msg.partition(), msg.offset()), msg.value())


def read_record(settings: Settings, at: Position) -> Any | None:
    """The record at ``at`` (a confluent-kafka message), or None when it is not there (deleted by
    retention, never written, or the topic is gone).

    Past the listed end, the read starts at the last listed offset: Kafka answers a fetch beyond the
    end with an error (then the consumer starts over at the earliest record), tansu with nothing at
    all, and its listed end can fall inside the last batch; from there, either ends at EOF."""
    reader = TopicReader(settings, at.topic)
    try:
        if at.partition not in reader.partitions:
            return None
        low, high = reader.watermarks(at.partition)
        if at.offset < low:
            return None
        start = min(at.offset, max(low, high - 1))
        for msg in reader.records({at.partition: start}, [at.partition]):
            if msg.offset() >= at.offset:
                return msg if msg.offset() == at.offset else None
        return None
    finally:
        reader.close()
