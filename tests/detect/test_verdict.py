"""Verdicts are a pure function of the matched pairs: order, revisions, canonical choice, bounds."""

import itertools
import random

import numpy as np

from stream.detect.verdict import (
    DUPLICATE,
    EMPTY,
    NEAR_DUPLICATE,
    UNIQUE,
    Match,
    MatchSummary,
    build_verdict,
    later_matches,
)
from stream.fingerprint import Fingerprint
from stream.fingerprint.sketch import SketchSpec, make_sketch


def fp(doc_id: str, empty: bool = False) -> Fingerprint:
    return Fingerprint(doc_id, 0xABC, bytes(16), make_sketch(np.empty(0, np.uint64), SketchSpec()), [], "s",
                       empty=empty)


def test_only_earlier_matches_count_and_sorting() -> None:
    ms = [Match("b", 5, 0.85, (2.0, "b")), Match("a", 1, 0.95, (1.0, "a")), Match("z", 0, 1.0, (9.0, "z")),
          Match("c", 1, 0.9, (0.5, "c"))]
    v = build_verdict(fp("d"), (3.0, "d"), ms)
    assert [m.id for m in v.matches] == ["c", "a", "b"]  # by distance, then canonical order
    out = v.to_json()
    assert out["canonical"] == "c" and out["distance"] == 1 and out["similarity"] == 0.9
    assert out["verdict"] == NEAR_DUPLICATE and out["match_count"] == 3
    assert out["fingerprint"] == "0000000000000abc"
    assert [m.id for m in later_matches((3.0, "d"), ms)] == ["z"]


def test_kinds() -> None:
    assert build_verdict(fp("d"), (1.0, "d"), []).verdict == UNIQUE
    assert build_verdict(fp("d", empty=True), (1.0, "d"), []).verdict == EMPTY
    exact = Match("a", 0, 1.0, (0.0, "a"), exact=True)
    assert build_verdict(fp("d"), (1.0, "d"), [exact]).verdict == DUPLICATE
    assert build_verdict(fp("d"), (1.0, "d"), [Match("d", 0, 1.0, (0.0, "d"))]).verdict == UNIQUE  # never itself


def test_a_duplicate_names_the_earliest_exact_copy_not_the_earliest_near_match() -> None:
    near = Match("a2", 6, 0.82, (1.0, "a2"))
    copy = Match("a3", 0, 1.0, (2.0, "a3"), exact=True)
    later_copy = Match("a4", 0, 1.0, (3.0, "a4"), exact=True)
    v = build_verdict(fp("h1"), (9.0, "h1"), [later_copy, near, copy]).to_json()
    assert v["verdict"] == DUPLICATE and v["canonical"] == "a3" and v["distance"] == 0 and v["similarity"] == 1.0


def test_revisions_converge_whatever_the_arrival_order() -> None:
    # Three mutually similar documents; every arrival order must end in the same verdicts.
    orders = {"a": (1.0, "a"), "b": (2.0, "b"), "c": (3.0, "c")}
    finals = set()
    for arrival in itertools.permutations("abc"):
        summaries = {d: MatchSummary() for d in orders}
        seen: list[str] = []
        for doc in arrival:
            found = [Match(o, 2, 0.9, orders[o]) for o in seen]
            for m in found:
                if m.order < orders[doc]:
                    summaries[doc].add(m)
            for later in later_matches(orders[doc], found):
                summaries[later.id].add(Match(doc, 2, 0.9, orders[doc]))
            seen.append(doc)
        verdicts = {d: s.verdict(d, 0, False, orders[d]) for d, s in summaries.items()}
        finals.add(tuple((d, tuple(m.id for m in v.matches), v.verdict) for d, v in sorted(verdicts.items())))
    assert finals == {(("a", (), UNIQUE), ("b", ("a",), NEAR_DUPLICATE), ("c", ("a", "b"), NEAR_DUPLICATE))}


def test_a_summary_is_bounded_exact_and_independent_of_arrival_order() -> None:
    rng = random.Random(7)
    matches = [Match(f"m{i}", rng.randrange(0, 20), 0.9, (float(rng.randrange(100)), f"m{i}"),
                     exact=rng.random() < 0.1) for i in range(500)]
    results = set()
    for _ in range(5):
        rng.shuffle(matches)
        summary = MatchSummary.of_earlier((1000.0, "d"), "d", matches + matches[:50], limit=10)  # repeats count once
        v = summary.verdict("d", 0, False, (1000.0, "d"))
        results.add((v.verdict, v.canonical, v.matches, v.match_count))
        assert len(summary.nearest) <= 10
    assert len(results) == 1
    verdict, canonical, listed, count = results.pop()
    assert count == 500 and len(listed) == 10 and canonical in listed
    exact = [m for m in matches if m.exact]
    assert verdict == DUPLICATE and canonical == min(exact, key=lambda m: m.order)
    nearest = sorted((m for m in matches if m != canonical), key=lambda m: (m.distance, m.order))[:9]
    assert set(listed) == {canonical, *nearest}


def test_a_summary_survives_its_json_form() -> None:
    summary = MatchSummary.of_earlier((9.0, "d"), "d", [Match("a", 1, 0.9, (1.0, "a"), simhash=5),
                                                        Match("b", 0, 1.0, (2.0, "b"), exact=True)], limit=3)
    again = MatchSummary.from_json(summary.to_json(), limit=3)
    assert again == summary and not again.add(Match("a", 1, 0.9, (1.0, "a")))


def test_merging_summaries_equals_adding_their_matches_one_by_one() -> None:
    rng = random.Random(11)
    matches = [Match(f"m{i}", rng.randrange(0, 20), 0.9, (float(rng.randrange(100)), f"m{i}"),
                     exact=rng.random() < 0.1) for i in range(300)]
    for _ in range(5):
        rng.shuffle(matches)
        cut = rng.randrange(len(matches))
        left, right = MatchSummary(10), MatchSummary(10)
        for m in matches[:cut]:
            left.add(m)
        for m in matches[cut - 40 :] if cut >= 40 else matches:  # overlapping halves
            right.add(m)
        whole = MatchSummary(10)
        for m in matches:
            whole.add(m)
        assert left.merge(right) == (whole.count > cut) and not left.merge(right)
        assert (left.count, left.canonical, left.listed()) == (whole.count, whole.canonical, whole.listed())
