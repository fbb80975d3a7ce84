"""Verdicts are a pure function of the matched pairs: order, revisions, canonical choice."""

import itertools

import numpy as np

from stream.detect.verdict import (
    DUPLICATE,
    EMPTY,
    NEAR_DUPLICATE,
    UNIQUE,
    Match,
    build_verdict,
    later_matches,
    revise,
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
    assert out["canonical"] == "c" and out["distance"] == 1 and out["verdict"] == NEAR_DUPLICATE
    assert out["fingerprint"] == "0000000000000abc"
    assert [m.id for m in later_matches((3.0, "d"), ms)] == ["z"]


def test_kinds() -> None:
    assert build_verdict(fp("d"), (1.0, "d"), []).verdict == UNIQUE
    assert build_verdict(fp("d", empty=True), (1.0, "d"), []).verdict == EMPTY
    exact = Match("a", 0, 1.0, (0.0, "a"), exact=True)
    assert build_verdict(fp("d"), (1.0, "d"), [exact]).verdict == DUPLICATE
    assert build_verdict(fp("d"), (1.0, "d"), [Match("d", 0, 1.0, (0.0, "d"))]).verdict == UNIQUE  # never itself


def test_revisions_converge_whatever_the_arrival_order() -> None:
    # Three mutually similar documents; every arrival order must end in the same verdicts.
    orders = {"a": (1.0, "a"), "b": (2.0, "b"), "c": (3.0, "c")}
    finals = set()
    for arrival in itertools.permutations("abc"):
        verdicts = {}
        seen: list[str] = []
        for doc in arrival:
            found = [Match(o, 2, 0.9, orders[o]) for o in seen]
            verdicts[doc] = build_verdict(fp(doc), orders[doc], found)
            for later in later_matches(orders[doc], found):
                verdicts[later.id] = revise(verdicts[later.id], [Match(doc, 2, 0.9, orders[doc])])
            seen.append(doc)
        finals.add(tuple((d, tuple(m.id for m in v.matches), v.verdict) for d, v in sorted(verdicts.items())))
    assert finals == {(("a", (), UNIQUE), ("b", ("a",), NEAR_DUPLICATE), ("c", ("a", "b"), NEAR_DUPLICATE))}


def test_revise_is_idempotent() -> None:
    v = build_verdict(fp("b"), (2.0, "b"), [])
    m = Match("a", 3, 0.82, (1.0, "a"))
    assert revise(revise(v, [m]), [m]) == revise(v, [m])
