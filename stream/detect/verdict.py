"""Verdicts: the output contract of ``dedup scan`` and of the verdict topic.

A verdict judges a document against every EARLIER document (in canonical order) whose verified
similarity reaches the threshold. Canonical order is an ``Order`` key: ``dedup scan`` uses (arrival
number, id); the stream uses (event time, id). A verdict is a pure function of the set of matched
pairs, so the same pairs give the same final verdicts whatever the arrival order; a pair found while
judging the canonically earlier document becomes a revision of the later one.

Bounded: a document may match thousands of earlier copies, so what is kept of its matches is a
``MatchSummary`` of fixed size (the earliest match, the earliest exact copy, the ``limit`` nearest, and
the ids seen, for the count); the verdict lists at most ``limit`` of them and gives ``match_count``.
Every part of the summary merges like a set union, which keeps verdicts independent of arrival order.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import mmh3
import numpy as np

Order = tuple[float, str]

UNIQUE, DUPLICATE, NEAR_DUPLICATE, EMPTY = "unique", "duplicate", "near_duplicate", "empty"
MAX_MATCHES = 50  # default number of matches a verdict lists
# ids remembered for an exact match_count; beyond, matches are counted without checking for repeats
# (only a redelivered revision repeats one), which keeps a summary under ~0.7 MB as JSON
SEEN_LIMIT = 65_536
SIMILAR, CONTAINED = "similar", "contained"  # Match.relation


@dataclass(frozen=True)
class Match:
    id: str
    distance: int  # SimHash Hamming distance
    similarity: float  # verified score (see stream.fingerprint.scores)
    order: Order
    exact: bool = False  # same normalized content (stream.text.normal_form.exact_form_into)
    simhash: int = 0  # the matched document's SimHash: names the version of it that matched
    containment: float = 0.0  # share of the shorter document's shingles found in the longer one
    relation: str = SIMILAR  # SIMILAR: similarity >= threshold; CONTAINED: below it, containment above its own
    # where the matched document came from, as its caller names it (the service: the input record's
    # "topic:partition:offset", so a reader can fetch its text); "" when unknown
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "distance": self.distance, "similarity": round(self.similarity, 4),
                "containment": round(self.containment, 4), "relation": self.relation}

    def to_wire(self) -> list[Any]:
        """Compact form for internal messages and stored state."""
        wire = [self.id, self.distance, self.similarity, self.order[0], self.order[1], self.exact, self.simhash,
                self.containment, self.relation]
        return [*wire, self.source] if self.source else wire

    @classmethod
    def from_wire(cls, w: list[Any]) -> Match:
        """Also reads the shorter forms: six and seven fields (simhash 0; containment 0, relation similar),
        nine (no source)."""
        return cls(str(w[0]), int(w[1]), float(w[2]), (float(w[3]), str(w[4])), bool(w[5]),
                   int(w[6]) if len(w) > 6 else 0, float(w[7]) if len(w) > 8 else 0.0,
                   str(w[8]) if len(w) > 8 else SIMILAR, str(w[9]) if len(w) > 9 else "")


def _nearness(m: Match) -> tuple[int, Order]:
    return (m.distance, m.order)


def id_hash(doc_id: str) -> int:
    """64-bit hash of an id: how a summary remembers which matches it has counted."""
    return int(mmh3.hash64(doc_id.encode("utf-8", "surrogatepass"), signed=False)[0])


@dataclass
class MatchSummary:
    """The earlier matches of one document, in fixed space: enough for its verdict."""

    limit: int = MAX_MATCHES
    earliest: Match | None = None
    earliest_exact: Match | None = None
    nearest: list[Match] = field(default_factory=list)  # sorted by (distance, order), at most ``limit``
    seen: set[int] = field(default_factory=set)  # id hashes of the matches counted, up to SEEN_LIMIT
    unchecked: int = 0  # matches counted beyond SEEN_LIMIT

    @property
    def count(self) -> int:
        return len(self.seen) + self.unchecked

    @property
    def canonical(self) -> Match | None:
        """The earliest exact copy if there is one, else the earliest match."""
        return self.earliest_exact or self.earliest

    def add(self, m: Match) -> bool:
        """Count ``m`` (an earlier document's match); False if its id was already counted."""
        h = id_hash(m.id)
        if h in self.seen:
            return False
        if len(self.seen) < SEEN_LIMIT:
            self.seen.add(h)
        else:
            self.unchecked += 1
        self._keep(m)
        return True

    def merge(self, other: MatchSummary) -> bool:
        """Add every match ``other`` counted (a set union, like ``add`` one by one); True if any was new."""
        before, counted = self.count, set(self.seen)
        new = other.seen - counted
        room = max(0, SEEN_LIMIT - len(counted))
        self.seen.update(sorted(new)[:room])
        self.unchecked += max(0, len(new) - room) + other.unchecked
        placed = {m.id for m in self.nearest}
        for m in (other.earliest, other.earliest_exact, *other.nearest):
            if m is not None and m.id not in placed and id_hash(m.id) not in counted:
                self._keep(m)
                placed.add(m.id)
        return self.count > before

    def _keep(self, m: Match) -> None:
        """Place a newly counted match among the earliest, the earliest exact and the nearest."""
        if self.earliest is None or m.order < self.earliest.order:
            self.earliest = m
        if m.exact and (self.earliest_exact is None or m.order < self.earliest_exact.order):
            self.earliest_exact = m
        if len(self.nearest) < self.limit or _nearness(m) < _nearness(self.nearest[-1]):
            bisect.insort(self.nearest, m, key=_nearness)
            del self.nearest[self.limit:]

    def listed(self) -> tuple[Match, ...]:
        """The canonical and the nearest others, ``limit`` in all, sorted by (distance, order)."""
        canonical = self.canonical
        if canonical is None:
            return ()
        others = [m for m in self.nearest if m.id != canonical.id][: max(0, self.limit - 1)]
        return tuple(sorted([canonical, *others], key=_nearness))

    def to_json(self) -> dict[str, Any]:
        seen = np.array(sorted(self.seen), dtype="<u8").tobytes()
        return {"earliest": None if self.earliest is None else self.earliest.to_wire(),
                "exact": None if self.earliest_exact is None else self.earliest_exact.to_wire(),
                "nearest": [m.to_wire() for m in self.nearest],
                "seen": base64.b64encode(seen).decode("ascii"), "unchecked": self.unchecked}

    @classmethod
    def of_earlier(cls, order: Order, doc_id: str, matches: Iterable[Match], limit: int = MAX_MATCHES) -> MatchSummary:
        """The summary of the canonically earlier ones among ``matches`` (never the document itself)."""
        summary = cls(limit)
        for m in matches:
            if m.order < order and m.id != doc_id:
                summary.add(m)
        return summary

    def verdict(self, doc_id: str, simhash: int, empty: bool, order: Order) -> Verdict:
        """The verdict this summary gives: duplicate if an earlier exact copy exists, else near-duplicate
        if any earlier match does, else unique (or empty: nothing to fingerprint). Takes only the parts
        of a fingerprint a verdict needs (the service's gather stage keeps just these)."""
        if empty:
            kind = EMPTY
        elif self.earliest_exact is not None:
            kind = DUPLICATE
        else:
            kind = NEAR_DUPLICATE if self.earliest is not None else UNIQUE
        return Verdict(doc_id, kind, f"{simhash:016x}", order, self.listed(), self.canonical, self.count)

    @classmethod
    def from_json(cls, d: dict[str, Any], limit: int = MAX_MATCHES) -> MatchSummary:
        seen = np.frombuffer(base64.b64decode(d.get("seen") or ""), dtype="<u8")
        return cls(limit, None if d.get("earliest") is None else Match.from_wire(d["earliest"]),
                   None if d.get("exact") is None else Match.from_wire(d["exact"]),
                   [Match.from_wire(w) for w in d.get("nearest", [])][:limit], set(seen.tolist()),
                   int(d.get("unchecked", 0)))


@dataclass(frozen=True)
class Verdict:
    id: str
    verdict: str
    fingerprint: str
    order: Order
    matches: tuple[Match, ...] = ()  # the listed matches: the canonical and the nearest others
    canonical: Match | None = None
    match_count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        canon = self.canonical
        return {
            "id": self.id,
            "verdict": self.verdict,
            "fingerprint": self.fingerprint,
            "canonical": canon.id if canon else None,
            "distance": canon.distance if canon else None,
            "similarity": round(canon.similarity, 4) if canon else None,
            "relation": canon.relation if canon else None,
            "match_count": self.match_count,
            "matches": [m.to_json() for m in self.matches],
            **self.extra,
        }


def build_verdict(fp: Any, order: Order, matches: Iterable[Match], limit: int = MAX_MATCHES) -> Verdict:
    """The verdict for fingerprint ``fp`` given its matches (only canonically earlier ones count)."""
    return MatchSummary.of_earlier(order, fp.doc_id, matches, limit).verdict(fp.doc_id, fp.simhash, fp.empty, order)


def later_matches(order: Order, matches: Iterable[Match]) -> list[Match]:
    """Matches that come after the document in canonical order: their verdicts need a revision."""
    return [m for m in matches if m.order > order]
