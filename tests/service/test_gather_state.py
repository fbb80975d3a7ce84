"""The gather state: rounds, completion, revisions, supersession (stream/service/stages/gather_state.py)."""

from __future__ import annotations

import json

from stream.detect import Match
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import Header, Source

SRC = Source("documents", 1, 42, 1000.0)


def _match(i: str, ts: float, sim: int = 0) -> Match:
    return Match(i, 2, 0.9, (ts, i), simhash=sim)


def test_gather_completes_after_all_partitions_and_redelivery_is_idempotent() -> None:
    st = GatherState("d")
    assert not st.answer("t:0:1", 0, [_match("a", 1.0)])  # answer before its header: kept for its round
    assert st.expect("t:0:1", 2, (5.0, "d"), SRC, 0xABC, "schema-1") == (False, False)
    assert st.answer("t:0:1", 3, [_match("d", 5.0), _match("b", 9.0)])  # never itself, never a later one
    assert st.summary.count == 1 and st.summary.canonical is not None and st.summary.canonical.id == "a"
    st.published = True
    again = GatherState.from_json(json.loads(json.dumps(st.to_json())))
    assert (again.simhash, again.schema, again.empty) == (0xABC, "schema-1", False)
    assert again.answer("t:0:1", 0, [_match("a", 1.0)])  # redelivered round: complete again, same set
    assert again.summary.count == 1 and not again.revised


def test_gather_a_later_record_of_the_id_starts_afresh_and_supersedes_an_unpublished_round() -> None:
    st = GatherState("d")
    st.expect("t:0:5", 2, (5.0, "d"), SRC, 0xABC, "s")
    st.answer("t:0:5", 0, [_match("a", 1.0)])
    complete, superseded = st.expect("t:0:9", 1, (5.0, "d"), SRC, 0xDEF, "s")
    assert superseded and not complete and st.summary.count == 0  # the new version's probe finds all again
    assert not st.answer("t:0:5", 1, [_match("x", 1.0)])  # the old round's late answer is dropped
    assert st.answer("t:0:9", 0, [_match("b", 2.0)]) and [m.id for m in st.summary.listed()] == ["b"]
    assert st.expect("t:0:5", 2, (5.0, "d"), SRC, 0xABC, "s") == (False, False)  # an older replay: ignored
    assert st.round == "t:0:9"


def test_gather_revision_only_republishes_new_matches_after_publication() -> None:
    st = GatherState("d")
    st.expect("t:0:1", 0, (5.0, "d"), SRC, 0xABC, "schema-1")
    assert not st.revise(_match("e", 1.0), 0xABC)  # not yet published: merged, no extra verdict
    st.published = True
    assert st.revise(_match("f", 2.0), 0xABC) and st.revised
    assert not st.revise(_match("f", 2.0), 0xABC)
    assert st.summary.count == 2


def test_gather_a_revision_of_a_version_not_yet_seen_waits_for_its_header() -> None:
    st = GatherState("d")
    st.expect("t:0:1", 0, (5.0, "d"), SRC, 0xAAA, "s")
    assert not st.revise(_match("e", 1.0), 0xBBB)  # matched the next version, whose header is on its way
    assert st.summary.count == 0
    st.expect("t:0:2", 0, (5.0, "d"), SRC, 0xBBB, "s")
    assert [m.id for m in st.summary.listed()] == ["e"]


def test_gather_keeps_every_revision_that_arrives_before_its_versions_header() -> None:
    st = GatherState("d")
    for i in range(1_000):  # a hot document: far more revisions than a verdict lists
        st.revise(_match(f"r{i:04}", float(i), 0xBBB), 0xBBB)
    st.revise(_match("r0000", 0.0, 0xBBB), 0xBBB)  # a redelivered revision counts once
    st = GatherState.from_json(json.loads(json.dumps(st.to_json())))
    assert st.expect("t:0:2", 0, (5_000.0, "d"), SRC, 0xBBB, "s") == (True, False)
    assert st.summary.count == 1_000 and st.summary.canonical is not None
    assert st.summary.canonical.id == "r0000" and len(st.summary.listed()) == 50


def test_gather_reads_revisions_stored_one_by_one() -> None:
    old = GatherState("d").to_json() | {"pending": [[0xBBB, _match("e", 1.0).to_wire()]] * 2}
    st = GatherState.from_json(json.loads(json.dumps(old)))
    st.expect("t:0:2", 0, (5.0, "d"), SRC, 0xBBB, "s")
    assert [m.id for m in st.summary.listed()] == ["e"] and st.summary.count == 1


def test_gather_the_newest_version_wins_whatever_the_arrival_or_partition() -> None:
    """Versions are ordered by event time, then record timestamp, then partition and offset:
    an older version arriving later (another partition, a higher offset) is refused, counted once."""
    from stream.service.stages.messages import version_of

    newer_src, older_src = Source("documents", 0, 3, 20.0), Source("documents", 1, 900, 10.0)
    newer, older = version_of(20.0, newer_src), version_of(10.0, older_src)
    st = GatherState("d")
    st.expect(newer_src.round_id, 1, (20.0, "d"), newer_src, 0xBBB, "s", version=newer)
    assert st.answer(newer_src.round_id, 0, [])
    st.published = True
    assert st.expect(older_src.round_id, 1, (10.0, "d"), older_src, 0xAAA, "s", version=older) == (False, True)
    assert not st.answer(older_src.round_id, 0, [_match("x", 1.0)])  # its answers are dropped, not kept
    assert (st.round, st.simhash, st.published, st.early) == (newer_src.round_id, 0xBBB, True, {})
    again = GatherState.from_json(json.loads(json.dumps(st.to_json())))
    assert again.expect(older_src.round_id, 1, (10.0, "d"), older_src, 0xAAA, "s", version=older) == (False, False)
    # the same event time: the later record timestamp wins; the other way round it is taken
    st = GatherState("d")
    st.expect(older_src.round_id, 1, (10.0, "d"), older_src, 0xAAA, "s", version=older)
    later = version_of(10.0, Source("documents", 0, 1, 11.0))
    assert st.expect("documents:0:1", 1, (10.0, "d"), SRC, 0x111, "s", version=later) == (False, True)
    assert st.round == "documents:0:1"


def _header(round_id: str, ts: float, sim: int = 0xABC, delete: bool = False) -> Header:
    return Header("d", round_id, 0, SRC, (ts, "d"), sim, "s", delete=delete, version=(ts, ts, 0, 0))


def test_a_route_drops_every_earlier_version_until_its_round_is_complete() -> None:
    """``route``: the partitions of the version before and of any round not yet complete, less the new
    targets; the same again for a redelivered route, nothing for an older version; a deletion drops
    from where the current version is; a state from before routes drops from every partition."""
    st = GatherState("d", placed=[])
    assert st.route(_header("t:0:1", 1.0), [0, 1], 8) == ([], False, False)
    assert (st.expected, st.placed) == (2, [0, 1])
    assert st.route(_header("t:0:2", 2.0), [2], 8) == ([0, 1], False, True)  # round 1 never published
    assert st.route(_header("t:0:3", 3.0), [3, 1], 8) == ([0, 2], False, True)  # 0: round 2's drop may be unsent
    assert st.expected == 4
    assert st.route(_header("t:0:3", 3.0), [1, 3], 8) == ([0, 2], False, False)  # delivered again: the same
    assert st.route(_header("t:0:2", 2.0), [2], 8)[0] is None  # an older version: refused
    for p in (0, 1, 2):
        st.answer("t:0:3", p, [])
    assert st.answer("t:0:3", 3, [])
    st.settle()
    st.published = True
    again = GatherState.from_json(json.loads(json.dumps(st.to_json())))
    assert (again.placed, again.dropping) == ([1, 3], [])  # complete: its drops are done
    assert again.route(_header("t:0:4", 4.0, delete=True), [], 8) == ([1, 3], False, False)
    assert again.deleting and again.expected == 2
    before = st.to_json()
    del before["placed"], before["dropping"]  # written before routes: where it is indexed is unknown
    old = GatherState.from_json(before)
    assert old.route(_header("t:0:5", 5.0), [4], 8)[0] == [0, 1, 2, 3, 5, 6, 7]
    nothing = GatherState("d", placed=[])
    assert nothing.route(_header("t:0:6", 6.0, delete=True), [], 8) == ([], True, False)
