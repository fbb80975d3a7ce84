"""Wire formats of the internal topics (JSON; fingerprints base64) and of verdicts / dead letters.

probe topic   (value = JSON list of ProbeItem dicts, one message per target partition per batch)
gather topic  (value = JSON list of entries, one message per gather partition per batch), entries:
  {"t": "expect", "doc", "round", "expected", "sim", "schema", "order", "source"[, "empty"]}
                                                                          from the document agent
  {"t": "answer", "doc", "round", "part", "matches"[, "expect"]}         from the probe agent
  {"t": "revise", "doc", "match"}                                         from the gather agent
A document with target partitions has no expect entry of its own: its header rides in the probe
item of its first target partition ("expect": {"expected", "source"}) and comes back, with "sim"
(the SimHash), "schema" and "order", in that partition's answer. The gather side keeps only these
(what a verdict needs), never the fingerprint with its sketch. That saves a gather message per document batch and
partition and, at low load, a second write of the gather state (header and answers in one batch).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from stream.detect import Match, Order


@dataclass(frozen=True)
class Source:
    topic: str
    partition: int
    offset: int
    timestamp: float  # Kafka record timestamp, seconds

    @property
    def round_id(self) -> str:
        """Identifies one delivery of one input record: a redelivery has the same id."""
        return f"{self.topic}:{self.partition}:{self.offset}"

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset,
                "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Source:
        return cls(str(d["topic"]), int(d["partition"]), int(d["offset"]), float(d["timestamp"]))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def match_to_wire(m: Match) -> list[Any]:
    return [m.id, m.distance, m.similarity, m.order[0], m.order[1], m.exact]


def match_from_wire(w: list[Any]) -> Match:
    return Match(str(w[0]), int(w[1]), float(w[2]), (float(w[3]), str(w[4])), bool(w[5]))


@dataclass(frozen=True)
class ProbeItem:
    doc: str
    round: str
    fp: bytes
    order: Order
    tables: list[int]
    expect: dict[str, Any] | None = None  # the document's gather header, in its first target partition only

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"doc": self.doc, "round": self.round, "fp": b64(self.fp),
                             "order": list(self.order), "tables": self.tables}
        if self.expect is not None:
            d["expect"] = self.expect
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProbeItem:
        return cls(str(d["doc"]), str(d["round"]), unb64(d["fp"]), (float(d["order"][0]), str(d["order"][1])),
                   [int(t) for t in d["tables"]], d.get("expect"))


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON. orjson: a worker spent 13% of its time in json.dumps (gather states,
    verdicts, internal messages; py-spy, 2 workers), which orjson does ~6x faster (docs/service.md)."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def loads(raw: bytes) -> Any:
    return orjson.loads(raw)


def dead_letter(error: str, stage: str, source: Source, key: bytes | None, value: bytes | None) -> bytes:
    """A self-contained dead letter: why, where from, and the original bytes (UTF-8 or base64)."""
    envelope: dict[str, Any] = {"error": error, "stage": stage, "source": source.to_json()}
    for name, raw in (("key", key), ("value", value)):
        if raw is None:
            envelope[name] = None
            continue
        try:
            envelope[name] = raw.decode("utf-8")
            envelope[name + "_encoding"] = "utf-8"
        except UnicodeDecodeError:
            envelope[name] = b64(raw)
            envelope[name + "_encoding"] = "base64"
    return dumps(envelope)
