"""The console's figures from verdict records (stream/console/model.py): plain dicts in, no Kafka."""

from __future__ import annotations

from typing import Any

from stream.console.model import ConsoleState, kind_of

T0 = 1_800_000_000.0  # a minute boundary


def verdict(doc: str, kind: str = "unique", canonical: str | None = None, at: float = T0, revised: bool = False,
            relation: str = "similar", offset: int = 0, canonical_offset: int | None = None,
            latency: float = 0.5) -> dict[str, Any]:
    v: dict[str, Any] = {"id": doc, "verdict": kind, "canonical": canonical,
                         "relation": relation if canonical else None, "similarity": 0.9 if canonical else None,
                         "distance": 3 if canonical else None,
                         "match_count": 1 if canonical else 0,
                         "matches": [{"id": canonical, "containment": 0.95}] if canonical else [],
                         "processed_at": at, "revised": revised,
                         "source": {"topic": "documents", "partition": 0, "offset": offset, "timestamp": at - latency}}
    if canonical_offset is not None:
        v["canonical_source"] = {"topic": "documents", "partition": 1, "offset": canonical_offset}
    return v


def state(now: float = T0 + 30) -> ConsoleState:
    return ConsoleState(lambda: now)


def test_kinds() -> None:
    assert kind_of(verdict("a")) == "unique"
    assert kind_of(verdict("b", "duplicate", "a")) == "exact"
    assert kind_of(verdict("c", "near_duplicate", "a")) == "near"
    assert kind_of(verdict("d", "near_duplicate", "a", relation="contained")) == "contained"
    assert kind_of(verdict("e", "empty")) == "empty"


def test_documents_are_counted_by_first_verdict_and_revisions_apart() -> None:
    s = state()
    s.verdict(verdict("a", at=T0 + 1))
    s.verdict(verdict("b", at=T0 + 2))
    s.verdict(verdict("b", "near_duplicate", "a", at=T0 + 3, revised=True))
    s.verdict(verdict("c", "duplicate", "a", at=T0 + 65))
    o = s.overview()
    assert o["totals"]["documents"] == 3 and o["totals"]["revisions"] == 1
    assert o["totals"]["current"] == {"unique": 1, "exact": 1, "near": 1, "contained": 0, "empty": 0}
    mix = s.series()["mix"]
    first = mix["t"].index(T0)
    assert (mix["unique"][first], mix["near"][first]) == (2, 0)  # the first verdicts, as judged then
    rate = s.series()["rate"]
    assert rate["docs_per_s"][rate["t"].index(T0)] == 0.2  # 2 documents in 10 s


def test_a_tombstone_removes_an_id_from_every_list() -> None:
    s = state()
    s.verdict(verdict("a"))
    for doc in ("b", "c"):
        s.verdict(verdict(doc, "near_duplicate", "a"))
    assert [p["id"] for p in s.latest_pairs()] == ["c", "b"]
    assert s.clusters() == [{"canonical": "a", "size": 3, "grown": 2}]
    s.tombstone("c", T0 + 5)
    assert [p["id"] for p in s.latest_pairs()] == ["b"]
    assert s.clusters()[0]["size"] == 2
    assert s.overview()["totals"]["current"]["near"] == 1 and s.overview()["totals"]["deleted"] == 1
    found = s.document("c")
    assert found["deleted"] and found["latest"] is None and found["history"][-1]["deleted"]
    s.tombstone("a", T0 + 6)  # the canonical goes: its cluster and the pairs naming it go too
    assert s.clusters() == [] and s.latest_pairs() == []
    s.verdict(verdict("c", at=T0 + 7))  # an id published again is back
    assert not s.document("c")["deleted"] and s.overview()["totals"]["current"]["unique"] == 1


def test_a_revision_moves_a_document_to_its_new_canonical() -> None:
    s = state()
    s.verdict(verdict("x"))
    s.verdict(verdict("y"))
    s.verdict(verdict("z", "near_duplicate", "y"))
    s.verdict(verdict("z", "near_duplicate", "x", revised=True))
    assert s.clusters() == [{"canonical": "x", "size": 2, "grown": 1}]
    assert [(p["id"], p["canonical"]) for p in s.latest_pairs()] == [("z", "x")]
    assert s.cluster_of("z") == {"canonical": "x", "members": ["z"]} == s.cluster_of("x")
    assert len(s.document("z")["history"]) == 2


def test_growth_counts_recent_members_only() -> None:
    s = state(now=T0 + 3600)
    s.verdict(verdict("a", at=T0))
    s.verdict(verdict("b", "duplicate", "a", at=T0 + 10))  # an hour ago
    s.verdict(verdict("c", "duplicate", "a", at=T0 + 3500))  # within the last 10 minutes
    assert s.clusters() == [{"canonical": "a", "size": 3, "grown": 1}]


def test_latency_percentiles_and_dead_letters() -> None:
    s = state()
    for i in range(100):
        s.verdict(verdict(f"d{i}", latency=(i + 1) / 1000))
    s.verdict(verdict("d0", "unique", revised=True, latency=60.0))  # a revision is not a slow verdict
    s.dead_letter({"code": "not_json", "error": "bad"}, T0)
    s.dead_letter({"code": "not_json", "error": "bad"}, T0)
    s.dead_letter({"code": "bad_id", "error": "no id"}, T0)
    o = s.overview()
    assert o["latency_ms"] == {"p50": 51.0, "p90": 90.0, "p99": 99.0}
    assert o["dead_letters"] == {"not_json": 2, "bad_id": 1} and o["totals"]["dead_letters"] == 3


def test_positions_prefer_the_version_that_was_compared() -> None:
    s = state()
    s.verdict(verdict("a", offset=5))
    s.verdict(verdict("a", offset=9))  # a new version of a, published later
    s.verdict(verdict("b", "near_duplicate", "a", offset=7, canonical_offset=5))
    assert s.position_of("b") == {"topic": "documents", "partition": 0, "offset": 7, "timestamp": T0 - 0.5}
    assert s.position_of("b", "a") == {"topic": "documents", "partition": 1, "offset": 5}
    assert s.position_of("a", "b")["offset"] == 7  # a does not name b: b's current version
    old = verdict("c", "near_duplicate", "a", offset=8)  # a verdict written before canonical_source
    s.verdict(old)
    assert s.position_of("c", "a")["offset"] == 9
    s.tombstone("a", T0)
    assert s.position_of("a") is None and s.position_of("b", "a") is None  # b still names it: not shown
