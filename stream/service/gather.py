"""Per-document gather state: partial answers from every probed partition -> one verdict.

Pure logic (no Kafka): the gather agent loads a document's state, applies entries, stores it and
publishes what ``apply`` asks for. The final verdict depends only on the set of matched pairs:
- a document is complete when its ``expect`` header and answers from all ``expected`` partitions
  of the same round (one delivery of the input record) are in; a redelivery repeats the round id,
  so it completes again with the same or more matches and republishes an identical verdict;
- a match later in canonical order than the document goes out as a revision of the later one,
  which merges it (idempotently) and republishes with ``revised: true``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stream.detect import Match, Order
from stream.service.messages import Source, match_from_wire, match_to_wire


@dataclass
class GatherState:
    """``simhash``, ``schema`` and ``empty``: all the verdict needs of the fingerprint (from the header)."""

    doc: str
    simhash: int | None = None
    schema: str = ""
    empty: bool = False
    order: Order | None = None
    source: Source | None = None
    round: str | None = None
    expected: int = 0
    got: dict[str, list[int]] = field(default_factory=dict)  # round -> partitions answered
    matches: dict[str, Match] = field(default_factory=dict)
    published: bool = False
    revised: bool = False

    # -- (de)serialization ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.doc, "sim": self.simhash, "schema": self.schema, "empty": self.empty,
            "order": list(self.order) if self.order else None,
            "source": self.source.to_json() if self.source else None,
            "round": self.round, "expected": self.expected, "got": self.got,
            "matches": [match_to_wire(m) for m in self.matches.values()],
            "published": self.published, "revised": self.revised,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GatherState:
        order = d.get("order")
        return cls(
            doc=str(d["doc"]), simhash=None if d.get("sim") is None else int(d["sim"]),
            schema=str(d.get("schema", "")), empty=bool(d.get("empty")),
            order=(float(order[0]), str(order[1])) if order else None,
            source=Source.from_json(d["source"]) if d.get("source") else None,
            round=d.get("round"), expected=int(d.get("expected", 0)),
            got={str(k): [int(p) for p in v] for k, v in (d.get("got") or {}).items()},
            matches={m.id: m for m in (match_from_wire(w) for w in d.get("matches", []))},
            published=bool(d.get("published")), revised=bool(d.get("revised")),
        )

    # -- transitions ---------------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return (self.simhash is not None and self.round is not None
                and len(self.got.get(self.round, ())) >= self.expected)

    def _merge(self, matches: list[Match]) -> bool:
        """Add matches; True if the set of matched ids (or a better score) changed."""
        changed = False
        for m in matches:
            if m.id == self.doc:  # a redelivered document never matches itself
                continue
            old = self.matches.get(m.id)
            if old is None or (m.similarity, -m.distance) > (old.similarity, -old.distance):
                self.matches[m.id] = m
                changed = old is None or changed
        return changed

    def expect(self, round_id: str, expected: int, order: Order, source: Source, simhash: int, schema: str,
               empty: bool = False) -> bool:
        """The document's header; True if this completes the document."""
        if self.round != round_id:
            self.round, self.expected = round_id, expected
        self.order, self.source = order, source
        self.simhash, self.schema, self.empty = simhash, schema, empty
        self.got.setdefault(round_id, [])
        self._forget_old_rounds()
        return self.complete

    def answer(self, round_id: str, partition: int, matches: list[Match]) -> bool:
        """One partition's answer; True if the document is complete after it."""
        parts = self.got.setdefault(round_id, [])
        if partition not in parts:
            parts.append(partition)
        self._merge(matches)
        return self.complete and round_id == self.round

    def revise(self, match: Match) -> bool:
        """A canonically earlier document matched this one; True if a republish is due."""
        new = self._merge([match])
        if new and self.published:
            self.revised = True
            return True
        return False

    def _forget_old_rounds(self) -> None:
        for r in [r for r in self.got if r != self.round]:
            if self.round is not None and self.complete:
                del self.got[r]
