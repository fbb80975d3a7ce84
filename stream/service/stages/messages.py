"""Wire formats of the internal topics (JSON; fingerprints base64) and of dead letters.

gather topic  value = JSON list of gather entries, one message per gather partition per batch:
  ``Route``   {"t": "route", ...}   a document for its home gather partition (from the document stage):
              header, fingerprint, and the tables of each index partition that owns one of its keys
  ``Header``  {"t": "expect", ...}  a document's header (written before routes; still read)
  ``Answer``  {"t": "answer", ...}  one partition's earlier matches of a document (from the probe stage)
  ``Revise``  {"t": "revise", ...}  a canonically earlier document matched this one
  ``Revisions`` {"t": "revisions", ...}  one document matched several later ones of the partition (the
              probe stage sends these; ``Revise`` is what the gather stage expands them into)
probe topic   value = JSON list of ``ProbeItem``, one message per target partition per batch (from the
              gather stage: an item for each partition owning one of the document's keys, and one
              without tables for each partition that may hold an earlier version of the id)

The header rides in the probe item of the document's first target partition and comes back, with the
order that partition settled, in its answer. The gather side keeps only what a verdict needs and
where the current version is indexed, never the fingerprint with its sketch.
"""

from __future__ import annotations

import base64
import hashlib
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

    @classmethod
    def of_round(cls, round_id: str) -> Source:
        """The input record a ``round_id`` names (its timestamp unknown: 0)."""
        topic_partition, _, offset = round_id.rpartition(":")
        topic, _, partition = topic_partition.rpartition(":")
        return cls(topic, int(partition), int(offset), 0.0)

    def position(self) -> dict[str, Any]:
        """Where the record is: enough for a reader to fetch it again."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def _order(w: list[Any]) -> Order:
    return (float(w[0]), str(w[1]))


# Which of two records of one id is the newer version, whatever the order they arrive in: the later
# event time (the document's ``ts``, else the record timestamp), then the later record timestamp, then
# the higher partition and offset (within a partition: the producer's order) (docs/service.md, "One
# truth per id").
Version = tuple[float, float, int, int]


def version_of(event_time: float, source: Source) -> Version:
    return (event_time, source.timestamp, source.partition, source.offset)


def version_from_json(w: list[Any] | None) -> Version | None:
    return None if not w else (float(w[0]), float(w[1]), int(w[2]), int(w[3]))


@dataclass(frozen=True)
class Header:
    """What the verdict of one round of a document needs besides its matches."""

    doc: str
    round: str
    expected: int  # partitions whose answers complete the round
    source: Source
    order: Order = (0.0, "")
    simhash: int = 0
    schema: str = ""
    empty: bool = False
    delete: bool = False  # the round deletes the document: no verdict, a tombstone once complete
    version: Version | None = None  # None: a header from before versions (its round counts as newer)

    def to_json(self) -> dict[str, Any]:
        d = {"t": "expect", "doc": self.doc, "round": self.round, "expected": self.expected,
             "source": self.source.to_json(), "order": list(self.order), "sim": self.simhash,
             "schema": self.schema, "empty": self.empty}
        if self.delete:
            d["delete"] = True
        if self.version is not None:
            d["v"] = list(self.version)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Header:
        return cls(str(d["doc"]), str(d["round"]), int(d["expected"]), Source.from_json(d["source"]),
                   _order(d["order"]), int(d["sim"]), str(d["schema"]), bool(d.get("empty")),
                   bool(d.get("delete")), version_from_json(d.get("v")))


@dataclass(frozen=True)
class Answer:
    """One partition's answer for one round of a document: its canonically earlier matches."""

    doc: str
    round: str
    part: int
    matches: list[Match]
    header: Header | None = None  # the document's header, from its first target partition only
    final: bool = True  # False: more matches of this partition follow (a long answer in pieces)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"t": "answer", "doc": self.doc, "round": self.round, "part": self.part,
                             "matches": [m.to_wire() for m in self.matches]}
        if self.header is not None:
            d["header"] = self.header.to_json()
        if not self.final:
            d["final"] = False
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Answer:
        header = d.get("header")
        return cls(str(d["doc"]), str(d["round"]), int(d["part"]), [Match.from_wire(w) for w in d["matches"]],
                   None if header is None else Header.from_json(header), bool(d.get("final", True)))


@dataclass(frozen=True)
class Revise:
    """``match`` (a canonically earlier document) matched version ``version`` (its SimHash) of ``doc``."""

    doc: str
    match: Match
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"t": "revise", "doc": self.doc, "match": self.match.to_wire(), "version": self.version}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Revise:
        return cls(str(d["doc"]), Match.from_wire(d["match"]), int(d["version"]))


@dataclass(frozen=True)
class Revisions:
    """One document (``by``: its id, order and SimHash) matched several canonically later documents of
    one gather partition: one entry for them all, not one ``Revise`` each. ``to``: per later document
    its id, the version that matched, and the pair's match fields (distance, similarity, exact,
    containment, relation). 1,000 copies arriving out of order made ~n^2/4 entries one each."""

    by: Match  # id, order and simhash of the earlier document; its pair fields unused
    to: list[tuple[str, int, Match]]

    def to_json(self) -> dict[str, Any]:
        by = [self.by.id, self.by.order[0], self.by.order[1], self.by.simhash]
        return {"t": "revisions", "by": [*by, self.by.source] if self.by.source else by,
                "to": [[doc, version, m.distance, m.similarity, m.exact, m.containment, m.relation]
                       for doc, version, m in self.to]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Revisions:
        """``by`` may carry a fifth field: where the earlier document's record is (``Match.source``)."""
        doc_id, ts, tie, sim, *rest = d["by"]
        by = Match(str(doc_id), 0, 0.0, (float(ts), str(tie)), simhash=int(sim), source=str(rest[0]) if rest else "")
        return cls(by, [(str(w[0]), int(w[1]), Match(by.id, int(w[2]), float(w[3]), by.order, bool(w[4]), by.simhash,
                                                        float(w[5]), str(w[6]), by.source)) for w in d["to"]])

    def expand(self) -> list[Revise]:
        return [Revise(doc, match, version) for doc, version, match in self.to]


@dataclass(frozen=True)
class Route:
    """A document for its home gather partition (``routing.doc_partition`` of its id), which sends its
    probe items: ``tables``, per index partition owning one of its keys or anchors, the tables it owns
    there (``routing.ANCHORS_ONLY`` for anchors alone; none for a deletion or an empty document). The
    header's ``expected`` is the home's to set."""

    header: Header
    fp: bytes
    tables: dict[int, list[int]]

    @property
    def doc(self) -> str:
        return self.header.doc

    def to_json(self) -> dict[str, Any]:
        return {"t": "route", "header": self.header.to_json(), "fp": b64(self.fp),
                "tables": [[p, tables] for p, tables in sorted(self.tables.items())]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Route:
        return cls(Header.from_json(d["header"]), unb64(d["fp"]),
                   {int(p): [int(t) for t in tables] for p, tables in d["tables"]})


GatherEntry = Route | Header | Answer | Revise | Revisions
_ENTRY_TYPES: dict[str, type[Route] | type[Header] | type[Answer] | type[Revise] | type[Revisions]] = {
    "route": Route, "expect": Header, "answer": Answer, "revise": Revise, "revisions": Revisions}


def entry_from_json(d: dict[str, Any]) -> GatherEntry:
    return _ENTRY_TYPES[d["t"]].from_json(d)


@dataclass(frozen=True)
class ProbeItem:
    doc: str
    round: str
    fp: bytes
    order: Order
    tables: list[int]
    header: Header | None = None  # the document's header, in its first target partition only
    delete: bool = False  # remove the document from this partition (sent where a version may be indexed)
    version: Version | None = None  # an older version than the partition has heard of is not indexed

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"doc": self.doc, "round": self.round, "fp": b64(self.fp),
                             "order": list(self.order), "tables": self.tables}
        if self.header is not None:
            d["header"] = self.header.to_json()
        if self.delete:
            d["delete"] = True
        if self.version is not None:
            d["v"] = list(self.version)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProbeItem:
        header = d.get("header")
        return cls(str(d["doc"]), str(d["round"]), unb64(d["fp"]), _order(d["order"]),
                   [int(t) for t in d["tables"]], None if header is None else Header.from_json(header),
                   bool(d.get("delete")), version_from_json(d.get("v")))


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON. orjson: a worker spent 13% of its time in json.dumps (gather states,
    verdicts, internal messages; py-spy, 2 workers), which orjson does ~6x faster (docs/service.md).
    Copied to a bytes object of its own size: orjson 3.12+ returns its whole write buffer (4 KB or
    more for a 500-byte state), so a million states held at once took 4 GB (``dedup repartition``)."""
    return bytes(memoryview(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)))


def loads(raw: bytes) -> Any:
    return orjson.loads(raw)


DEAD_LETTER_LIMIT = 900_000  # below Kafka's default message.max.bytes (1,000,000) with room for headers


def _original(raw: bytes, room: int) -> dict[str, Any]:
    """The original bytes for a dead letter: whole (UTF-8 text or base64) when they fit in ``room``,
    else a preview of the first bytes plus what re-finds them (length, SHA-256)."""
    try:
        text, encoding = raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = b64(raw), "base64"
    if len(text) * 2 <= room:  # JSON escaping at most doubles what is not ASCII-safe, in practice
        return {"": text, "_encoding": encoding}
    preview = raw[:1024]
    return {"": b64(preview), "_encoding": "base64", "_truncated": True, "_length": len(raw),
            "_sha256": hashlib.sha256(raw).hexdigest()}


def dead_letter(code: str, error: str, stage: str, source: Source, key: bytes | None, value: bytes | None,
                limit: int = DEAD_LETTER_LIMIT) -> bytes:
    """A self-contained dead letter: why (a stable ``code`` and a message), where from (the input
    record's topic, partition and offset), and the original key and value. A value too large for one
    message is cut to a preview with its length and SHA-256: the source position re-reads it."""
    envelope: dict[str, Any] = {"code": code, "error": error[:2000], "stage": stage, "source": source.to_json()}
    room = limit - 4096
    for name, raw in (("key", key), ("value", value)):
        if raw is None:
            envelope[name] = None
            continue
        part = _original(raw, room)
        envelope.update({name + suffix: v for suffix, v in part.items()})
        room -= len(str(part[""]))
    return dumps(envelope)
