"""``ConsoleState``: what the console shows, built from the records of the verdict and dead-letter
topics as they are read (pure: no Kafka, no clock of its own; tested on plain dicts).

A document is counted once, by its first verdict (``revised`` false): revisions are counted apart, so
the verdict mix says what a person means by "documents judged". The mix buckets by the worker's
``processed_at``. A tombstone (the id was deleted) removes the id from every list and cluster; its
history keeps the deletion, so a search says what happened.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

UNIQUE, EXACT, NEAR, CONTAINED, EMPTY = "unique", "exact", "near", "contained", "empty"
KINDS = (UNIQUE, EXACT, NEAR, CONTAINED, EMPTY)
RATE_STEP, RATE_SPAN = 10, 600  # documents/s: 10-second buckets over the last 10 minutes
MIX_STEP, MIX_SPAN = 60, 3600  # verdict mix: per minute over the last hour
GROWTH_SPAN = 600  # a cluster's growth: members that joined in the last 10 minutes
LATENCIES_KEPT = 10_000
HISTORY_KEPT = 20  # verdicts (and deletions) kept per id for the search
PAIRS_KEPT = 500


def kind_of(verdict: dict[str, Any]) -> str:
    """unique / exact (a duplicate) / near / contained (a near-duplicate by containment) / empty."""
    name = verdict.get("verdict")
    if name == "duplicate":
        return EXACT
    if name == "near_duplicate":
        return CONTAINED if verdict.get("relation") == "contained" else NEAR
    return EMPTY if name == "empty" else UNIQUE


def compact(verdict: dict[str, Any]) -> dict[str, Any]:
    """What the console keeps of a verdict: no match list, the canonical's containment from it."""
    canonical = verdict.get("canonical")
    containment = next((m.get("containment") for m in verdict.get("matches") or () if m.get("id") == canonical),
                       None)
    keep = ("id", "verdict", "canonical", "similarity", "distance", "relation", "match_count", "revised",
            "processed_at", "source", "canonical_source")
    return {**{k: verdict.get(k) for k in keep}, "kind": kind_of(verdict), "containment": containment}


def percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


class ConsoleState:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.latest: dict[str, dict[str, Any]] = {}  # id -> its current verdict (compact)
        self.history: dict[str, deque[dict[str, Any]]] = {}
        self.deleted: set[str] = set()
        self.members: dict[str, set[str]] = {}  # canonical -> the ids whose current verdict names it
        self.joined: dict[str, deque[float]] = {}  # canonical -> when members joined (newest last)
        self.mix: dict[int, Counter[str]] = {}  # minute -> kinds of first verdicts
        self.rate: Counter[int] = Counter()  # RATE_STEP bucket -> first verdicts
        self.latencies: deque[float] = deque(maxlen=LATENCIES_KEPT)
        self.pairs: deque[tuple[str, str]] = deque(maxlen=PAIRS_KEPT)  # (id, canonical), newest first
        self.dead: Counter[str] = Counter()
        self.recent_dead: deque[dict[str, Any]] = deque(maxlen=20)
        self.lag: dict[int, int | None] = {}
        self.totals: Counter[str] = Counter()
        self.current: Counter[str] = Counter()  # kinds of the current verdicts (deleted ids gone)

    # -- input -----------------------------------------------------------------------------------

    def verdict(self, record: dict[str, Any]) -> None:
        doc, v = str(record["id"]), compact(record)
        at = float(v["processed_at"] or self.clock())
        self._leave(doc)
        self.deleted.discard(doc)
        self.latest[doc] = v
        self.current[v["kind"]] += 1
        self.history.setdefault(doc, deque(maxlen=HISTORY_KEPT)).append(v)
        if v["revised"]:
            self.totals["revisions"] += 1
        else:
            self.totals["documents"] += 1
            self.mix.setdefault(int(at // MIX_STEP), Counter())[v["kind"]] += 1
            self.rate[int(at // RATE_STEP)] += 1
            timestamp = (v["source"] or {}).get("timestamp")
            if timestamp is not None:
                self.latencies.append(max(0.0, at - float(timestamp)))
        canonical = v["canonical"]
        if canonical is not None:
            self.members.setdefault(canonical, set()).add(doc)
            self.joined.setdefault(canonical, deque(maxlen=1000)).append(at)
            self.pairs.appendleft((doc, canonical))

    def tombstone(self, doc: str, at: float) -> None:
        self._leave(doc)
        self.latest.pop(doc, None)
        self.deleted.add(doc)
        self.history.setdefault(doc, deque(maxlen=HISTORY_KEPT)).append({"id": doc, "deleted": True, "at": at})
        self.totals["deleted"] += 1

    def dead_letter(self, envelope: dict[str, Any], at: float) -> None:
        code = str(envelope.get("code") or "unknown")
        self.dead[code] += 1
        self.totals["dead_letters"] += 1
        self.recent_dead.appendleft({"code": code, "error": str(envelope.get("error", ""))[:300],
                                     "source": envelope.get("source"), "at": at})

    def _leave(self, doc: str) -> None:
        """``doc``'s current verdict is replaced or deleted: it leaves its canonical's cluster."""
        old = self.latest.get(doc)
        if old is None:
            return
        self.current[old["kind"]] -= 1
        if old["canonical"] is not None:
            self.members.get(old["canonical"], set()).discard(doc)

    # -- views -----------------------------------------------------------------------------------

    def latest_pairs(self, n: int = 20) -> list[dict[str, Any]]:
        """The newest pairs whose later document still names that canonical, neither deleted."""
        out, seen = [], set()
        for doc, canonical in self.pairs:
            v = self.latest.get(doc)
            if doc in seen or v is None or v["canonical"] != canonical or canonical in self.deleted:
                continue
            seen.add(doc)
            out.append({"id": doc, "canonical": canonical, "kind": v["kind"], "similarity": v["similarity"],
                        "containment": v["containment"], "distance": v["distance"], "at": v["processed_at"]})
            if len(out) == n:
                break
        return out

    def clusters(self, n: int = 10) -> list[dict[str, Any]]:
        """The largest clusters (a canonical and the documents naming it), with their recent growth."""
        since = self.clock() - GROWTH_SPAN
        live = ((c, m) for c, m in self.members.items() if m and c not in self.deleted)
        top = heapq.nlargest(n, live, key=lambda cm: (len(cm[1]), cm[0]))
        return [{"canonical": c, "size": len(m) + 1, "grown": sum(1 for t in self.joined.get(c, ()) if t >= since)}
                for c, m in top]

    def cluster_of(self, doc: str) -> dict[str, Any] | None:
        v = self.latest.get(doc)
        root = v["canonical"] if v is not None and v["canonical"] is not None else doc
        members = self.members.get(root)
        if not members or root in self.deleted:
            return None
        return {"canonical": root, "members": sorted(members)}

    def position_of(self, doc: str, other: str | None = None) -> dict[str, Any] | None:
        """Where ``doc``'s current version is on the documents topic; with ``other``: where the version
        of ``other`` that ``doc`` was judged against is, if ``doc`` names it as its canonical, else
        ``other``'s current one. A deleted id has none: its text is not shown again."""
        if other is not None and other in self.deleted:
            return None
        if other is not None:
            v = self.latest.get(doc)
            if v is not None and v["canonical"] == other and v.get("canonical_source"):
                return dict(v["canonical_source"])
            return self.position_of(other)
        v = self.latest.get(doc)
        return None if v is None or not v["source"] else dict(v["source"])

    def document(self, doc: str) -> dict[str, Any]:
        return {"id": doc, "known": doc in self.history, "deleted": doc in self.deleted,
                "latest": self.latest.get(doc), "history": list(self.history.get(doc, ())),
                "cluster": self.cluster_of(doc)}

    def series(self) -> dict[str, Any]:
        """documents/s per RATE_STEP and the verdict mix per minute, ending now."""
        now = self.clock()
        rate_end, mix_end = int(now // RATE_STEP), int(now // MIX_STEP)
        rate_keys = range(rate_end - RATE_SPAN // RATE_STEP + 1, rate_end + 1)
        mix_keys = range(mix_end - MIX_SPAN // MIX_STEP + 1, mix_end + 1)
        return {
            "rate": {"t": [k * RATE_STEP for k in rate_keys],
                     "docs_per_s": [self.rate[k] / RATE_STEP for k in rate_keys]},
            "mix": {"t": [k * MIX_STEP for k in mix_keys],
                    **{kind: [self.mix.get(k, Counter())[kind] for k in mix_keys] for kind in KINDS}},
        }

    def overview(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "now": self.clock(),
            "totals": {**{k: self.totals[k] for k in ("documents", "revisions", "deleted", "dead_letters")},
                       "current": {kind: self.current[kind] for kind in KINDS}, "ids": len(self.latest)},
            "latency_ms": {f"p{q}": None if (p := percentile(ordered, q)) is None else round(p * 1000, 1)
                           for q in (50, 90, 99)},
            "dead_letters": dict(self.dead.most_common()), "recent_dead_letters": list(self.recent_dead),
            "lag": {str(p): lag for p, lag in sorted(self.lag.items())},
            "clusters": self.clusters(), "pairs": self.latest_pairs(), **self.series(),
        }

