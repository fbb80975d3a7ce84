"""Verdicts: the output contract of ``dedup scan`` and of the verdict topic.

A verdict lists every EARLIER document (in canonical order) whose verified similarity reaches the
threshold. Canonical order is an ``Order`` key: ``dedup scan`` uses (arrival number, id); the stream
uses (event time, id). Because a verdict is a pure function of the set of matched pairs, the same
pairs give the same final verdicts whatever the arrival order; a pair found while judging the
canonically earlier document becomes a revision of the later one (``revise``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from stream.fingerprint import Fingerprint

Order = tuple[float, str]

UNIQUE, DUPLICATE, NEAR_DUPLICATE, EMPTY = "unique", "duplicate", "near_duplicate", "empty"


@dataclass(frozen=True)
class Match:
    id: str
    distance: int  # SimHash Hamming distance
    similarity: float  # verified score (see stream.fingerprint.similarity)
    order: Order
    exact: bool = False  # same normalized content

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "distance": self.distance, "similarity": round(self.similarity, 4)}


@dataclass(frozen=True)
class Verdict:
    id: str
    verdict: str
    fingerprint: str
    order: Order
    matches: tuple[Match, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def canonical(self) -> Match | None:
        return min(self.matches, key=lambda m: m.order) if self.matches else None

    def to_json(self) -> dict[str, Any]:
        canon = self.canonical
        return {
            "id": self.id,
            "verdict": self.verdict,
            "fingerprint": self.fingerprint,
            "canonical": canon.id if canon else None,
            "distance": canon.distance if canon else None,
            "matches": [m.to_json() for m in self.matches],
            **self.extra,
        }


def _sorted(matches: Iterable[Match]) -> tuple[Match, ...]:
    unique = {m.id: m for m in sorted(matches, key=lambda m: (m.order, -m.similarity))}
    return tuple(sorted(unique.values(), key=lambda m: (m.distance, m.order)))


def _kind(fp_empty: bool, matches: tuple[Match, ...]) -> str:
    if fp_empty:
        return EMPTY
    if any(m.exact for m in matches):
        return DUPLICATE
    return NEAR_DUPLICATE if matches else UNIQUE


def build_verdict(fp: Fingerprint, order: Order, matches: Iterable[Match]) -> Verdict:
    """The verdict for ``fp``: only canonically earlier matches count; sorted by distance, then order."""
    return make_verdict(fp.doc_id, fp.simhash, fp.empty, order, matches)


def make_verdict(doc_id: str, simhash: int, empty: bool, order: Order, matches: Iterable[Match]) -> Verdict:
    """``build_verdict`` from the only parts of the fingerprint a verdict needs (the service's
    gather stage keeps just these, not the ~0.7 KB fingerprint with its sketch)."""
    earlier = _sorted(m for m in matches if m.order < order and m.id != doc_id)
    return Verdict(doc_id, _kind(empty, earlier), f"{simhash:016x}", order, earlier)


def later_matches(order: Order, matches: Iterable[Match]) -> list[Match]:
    """Matches that come after the document in canonical order: their verdicts need a revision."""
    return [m for m in matches if m.order > order]


def revise(verdict: Verdict, new: Iterable[Match]) -> Verdict:
    """``verdict`` with earlier matches ``new`` merged in (idempotent)."""
    merged = _sorted([*verdict.matches, *(m for m in new if m.order < verdict.order and m.id != verdict.id)])
    kind = EMPTY if verdict.verdict == EMPTY else _kind(False, merged)
    return replace(verdict, matches=merged, verdict=kind)
