"""Wire formats between the stages, and dead-letter envelopes (stream/service/stages/messages.py)."""

from __future__ import annotations

import json
import tracemalloc

from stream.detect import Match
from stream.service.stages.messages import (
    Answer,
    Header,
    ProbeItem,
    Revise,
    Route,
    Source,
    dead_letter,
    dumps,
    entry_from_json,
    loads,
)

SRC = Source("documents", 1, 42, 1000.0)


def test_wire_formats_round_trip() -> None:
    m = Match("x", 3, 0.85, (1.5, "x"), True, 0xF00)
    assert Match.from_wire(m.to_wire()) == m
    contained = Match("y", 9, 0.52, (2.5, "y"), False, 0xF01, containment=0.93, relation="contained")
    assert Match.from_wire(contained.to_wire()) == contained
    placed = Match("w", 1, 0.95, (3.0, "w"), source="documents:2:17")
    assert Match.from_wire(placed.to_wire()) == placed and len(m.to_wire()) == 9  # no source: the old form
    assert Source.of_round("a:b:3:17").position() == {"topic": "a:b", "partition": 3, "offset": 17}
    # the shorter forms written before containment (and before simhash) are still read: similar matches
    assert Match.from_wire(["z", 2, 0.9, 1.0, "z", False, 7]) == Match("z", 2, 0.9, (1.0, "z"), False, 7)
    assert Match.from_wire(["z", 2, 0.9, 1.0, "z", False]) == Match("z", 2, 0.9, (1.0, "z"), False)
    header = Header("d", "t:0:1", 2, SRC, (2.0, "d"), 0xABC, "s1")
    item = ProbeItem("d", "t:0:1", b"\x00\x01", (2.0, "d"), [0, 5], header)
    assert ProbeItem.from_json(item.to_json()) == item
    route = Route(header, b"\x00\x01", {0: [1, 7], 5: [3]})
    for entry in (header, Answer("d", "t:0:1", 3, [m], header, final=False), Revise("d", m, 0xABC), route):
        assert entry_from_json(json.loads(json.dumps(entry.to_json()))) == entry
    letter = json.loads(dead_letter("not_utf8", "bad", "parse", SRC, b"k", b"\xff"))
    assert letter["value_encoding"] == "base64" and letter["key"] == "k" and letter["source"]["offset"] == 42
    assert letter["code"] == "not_utf8"


def test_a_dead_letter_always_fits_and_says_how_to_find_the_original() -> None:
    huge = b"{" + b"x" * 3_000_000
    letter = dead_letter("not_json", "not valid JSON", "parse", SRC, b"k", huge, limit=1_000_000)
    assert len(letter) < 1_000_000
    envelope = json.loads(letter)
    assert envelope["value_truncated"] and envelope["value_length"] == len(huge)
    assert len(envelope["value_sha256"]) == 64 and envelope["source"] == SRC.to_json()


def test_encoded_messages_hold_only_their_own_bytes() -> None:
    # a gather state is ~500 bytes: a million of them held at once (dedup repartition) must not hold
    # orjson's 4 KB write buffer each
    state = {"doc": "doc-00000001", "round": "documents:3:17", "got": list(range(8)), "summary": {"seen": ""}}
    tracemalloc.start()
    try:
        held = [dumps(state) for _ in range(2000)]
        traced, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loads(held[0]) == state and traced < 2000 * 400
