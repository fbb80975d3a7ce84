"""The anchor table (stream/index/anchors.py) against a brute-force model of its rule, through inserts
(one by one and batched), replacements, deletes, expiry, a reopened index and a crashed one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import BlockIndex
from stream.index.anchors import AnchorTable
from stream.storage import MemoryStore

BOUND = 1 << 28
CAP = 3


def payload_of(anchors: set[int], bound: int = BOUND) -> bytes:
    """A test payload: the bound, then the sorted anchors (the index reads it through ``anchors_of``)."""
    return bound.to_bytes(8, "big") + np.array(sorted(anchors), dtype=">u4").tobytes()


def anchors_of(payload: bytes) -> tuple[np.ndarray, int]:
    return np.frombuffer(payload[8:], dtype=">u4").astype(np.uint32), int.from_bytes(payload[:8], "big")


def model_proposals(live: list[tuple[Any, set[int], int]], mine: set[int], bound: int, cap: int = CAP) -> list[Any]:
    """The rule written out over the live documents (in insert order): anchors held by more than CAP
    documents propose nothing; a pair needs a cool anchor in common, 2 in common (hot ones counted)
    and half of the smaller side's anchors under the lower bound."""
    holders = {a: [doc for doc, anchors, _ in live if a in anchors] for a in mine}
    out = []
    for doc, anchors, other in live:
        cool = any(len(holders[a]) <= cap for a in mine & anchors)
        shared = len(mine & anchors)
        low = min(bound, other)
        mine_under = sum(1 for a in mine if a < low)
        theirs = len(anchors) * low / other
        if cool and shared >= 2 and 2 * shared >= min(mine_under, theirs):
            out.append(doc)
    return sorted(out)


def proposals(index: BlockIndex, mine: set[int], bound: int = BOUND) -> list[str]:
    hits = index.anchor_query_many([0], [payload_of(mine, bound)], ["query"])[0]
    assert all(hit.via == "anchor" for hit in hits)
    return sorted(hit.doc_id for hit in hits)


anchor_sets = st.sets(st.integers(0, 11), max_size=6)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(0, 7), anchor_sets, st.sampled_from([BOUND, BOUND // 2])),
        st.tuples(st.just("batch"), st.integers(0, 7), anchor_sets, st.integers(0, 7)),
        st.tuples(st.just("delete"), st.integers(0, 7), st.just(set()), st.just(0)),
        st.tuples(st.just("expire"), st.integers(0, 20), st.just(set()), st.just(0)),
        st.tuples(st.just("crash"), st.just(0), st.just(set()), st.just(0)),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(operations, anchor_sets, st.sampled_from([BOUND, BOUND // 2]))
def test_the_table_proposes_what_the_rule_says_of_the_live_documents(ops: list, query: set[int], bound: int) -> None:
    store = MemoryStore()
    index = BlockIndex(k=3, store=store)
    index.use_anchors(anchors_of, CAP)
    live: dict[str, tuple[int, set[int], int, float]] = {}  # doc -> (insert order, anchors, bound, ts)
    for clock, (kind, n, anchors, extra) in enumerate(ops, 1):
        doc = f"d{n}"
        if kind == "insert":
            index.insert(n, doc, float(clock), payload=payload_of(anchors, extra))
            live[doc] = (clock, anchors, extra, float(clock))
        elif kind == "batch":  # a second document right after, in one batch call with its query
            docs = [doc, f"d{extra}"] if extra != n else [doc]
            index.query_insert_many([n, extra][: len(docs)], docs, [float(clock)] * len(docs),
                                    payloads=[payload_of(anchors)] * len(docs))
            for i, name in enumerate(docs):
                live[name] = (clock * 10 + i, anchors, BOUND, float(clock))
        elif kind == "delete":
            assert index.delete(doc) == (doc in live)
            live.pop(doc, None)
        elif kind == "expire":
            assert index.expire(float(n)) == sum(1 for v in live.values() if v[3] < n)
            live = {d: v for d, v in live.items() if v[3] >= n}
        else:  # a crash: the index dropped unclosed, another one opened on what the store holds
            index = BlockIndex(k=3, store=store)
            index.use_anchors(anchors_of, CAP)
    ordered = [(d, anchors, b) for d, (_, anchors, b, _) in sorted(live.items(), key=lambda kv: kv[1][0])]
    assert proposals(index, query, bound) == model_proposals(ordered, query, bound)


def test_a_batch_document_sees_only_the_ones_before_it() -> None:
    index = BlockIndex(k=3)
    index.use_anchors(anchors_of, CAP)
    index.insert(1, "old", payload=payload_of({1, 2, 3}))
    payloads = [payload_of({1, 2, 3}), payload_of({1, 2, 3})]
    index.query_insert_many([2, 3], ["a", "b"], payloads=payloads)
    found = index.anchor_query_many([2, 3], payloads, ["a", "b"])
    assert [[hit.doc_id for hit in hits] for hits in found] == [["old"], ["a", "old"]]


def test_a_hot_anchor_proposes_nothing_until_deletes_cool_it() -> None:
    index = BlockIndex(k=3)
    index.use_anchors(anchors_of, CAP)
    for i in range(CAP + 1):  # anchors 1 and 2 in CAP + 1 documents, 10 + i in one each
        index.insert(i, f"d{i}", payload=payload_of({1, 2, 10 + i}))
    assert proposals(index, {1, 2, 99}) == []
    assert proposals(index, {1, 2, 10}) == ["d0"]  # the cool 10 proposes; the hot 1 and 2 count
    assert index.delete("d3")
    assert proposals(index, {1, 2, 99}) == ["d0", "d1", "d2"]


def owner_of(partition: int, partitions: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda anchors: anchors % partitions == partition


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(anchor_sets, st.sampled_from([BOUND, BOUND // 2])), max_size=20), anchor_sets,
       st.sampled_from([BOUND, BOUND // 2]), st.integers(2, 4))
def test_partitions_owning_a_share_of_the_anchors_propose_together_what_one_table_does(
        docs: list, query: set[int], bound: int, partitions: int) -> None:
    """As the service splits it: each partition holds every document with one of its anchors and
    proposes by its anchors only; the union of their proposals is one table's."""
    whole = BlockIndex(k=3)
    whole.use_anchors(anchors_of, CAP)
    parts = [BlockIndex(k=3) for _ in range(partitions)]
    for p, part in enumerate(parts):
        part.use_anchors(anchors_of, CAP, owner_of(p, partitions))
    for n, (anchors, doc_bound) in enumerate(docs):
        whole.insert(n, f"d{n}", payload=payload_of(anchors, doc_bound))
        for p in {a % partitions for a in anchors}:
            parts[p].insert(n, f"d{n}", payload=payload_of(anchors, doc_bound))
    together = sorted({doc for part in parts for doc in proposals(part, query, bound)})
    assert together == proposals(whole, query, bound)
    live = [(f"d{n}", anchors, b) for n, (anchors, b) in enumerate(docs)]
    assert together == model_proposals(live, query, bound)


def test_a_reopened_index_rebuilds_the_table_from_its_records(tmp_path: Path) -> None:
    path = str(tmp_path / "idx")
    index = BlockIndex(path, k=3)
    index.use_anchors(anchors_of, CAP)
    index.insert(1, "a", payload=payload_of({1, 2, 3, 4}))
    index.insert(2, "b", payload=payload_of({5, 6, 7}))
    index.insert(3, "a", payload=payload_of({5, 6, 8}))  # replaced: new anchors
    index.close()
    reopened = BlockIndex(path, k=3)
    with pytest.raises(ValueError, match="anchor"):
        reopened.anchor_query_many([0], [payload_of({5, 6})], ["q"])
    reopened.use_anchors(anchors_of, CAP)
    assert proposals(reopened, {5, 6}) == ["a", "b"]
    assert proposals(reopened, {1, 2, 3}) == []
    reopened.close()


table_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sets(st.integers(0, 15), min_size=1, max_size=6)),
        st.tuples(st.just("remove"), st.integers(0, 40)),
        st.tuples(st.just("replace"), st.integers(0, 40), st.sets(st.integers(0, 15), min_size=1, max_size=6)),
        st.tuples(st.just("query"), st.sets(st.integers(0, 15), max_size=2), st.integers(0, 45), st.integers(0, 45)),
    ),
    max_size=80,
)


@settings(max_examples=80, deadline=None)
@given(table_ops)
def test_runs_merges_and_deleted_entries_keep_the_table_equal_to_its_rule(ops: list) -> None:
    """The table alone, queried between writes (each query seals a run, so runs merge and deleted
    entries sit in them), against the rule over its live documents; ``before`` cuts at a handle."""
    table = AnchorTable(anchors_of, CAP + 2)
    live: dict[int, set[int]] = {}  # handle -> anchors
    for handle, op in enumerate(ops):  # an added document takes the operation's position as its handle
        if op[0] == "add":
            table.add(handle, payload_of(op[1]))
            live[handle] = op[1]
        elif op[0] == "remove" and live:
            handle = sorted(live)[op[1] % len(live)]
            table.remove(handle, payload_of(live.pop(handle)))
        elif op[0] == "replace" and live:
            handle = sorted(live)[op[1] % len(live)]
            table.remove(handle, payload_of(live[handle]))
            table.add(handle, payload_of(op[2]))
            live[handle] = op[2]
        elif op[0] == "query":  # a live document's anchors (most often) and a few more
            handles = sorted(live)
            mine = op[1] | (live[handles[op[2] % len(handles)]] if handles and op[2] < 40 else set())
            before = handles[op[3] % len(handles)] if handles and op[3] < 20 else None
            seen = [(h, anchors, BOUND) for h, anchors in sorted(live.items()) if before is None or h < before]
            proposed = table.proposed(np.array(sorted(mine), dtype=np.uint32), BOUND, before)
            assert proposed == model_proposals(seen, mine, BOUND, CAP + 2)
    assert len(table) == len(live)


def test_with_bands_a_pair_the_tables_find_is_left_out() -> None:
    """A partition's tables find only their own pairs; with the documents' bands the anchor query
    leaves out every pair some table finds (within k, or a band value in common)."""
    index = BlockIndex(k=3, bands=2)
    index.use_anchors(anchors_of, CAP)
    index.insert(0b111, "near", bands=((5, 0), (6, 0)), payload=payload_of({1, 2, 3}))  # within k of the query
    index.insert((1 << 40) - 1, "banded", bands=((7, 0), (8, 0)), payload=payload_of({1, 2, 3}))  # shares band value 8
    index.insert((1 << 60) - 1, "other", bands=((9, 0), (10, 0)), payload=payload_of({1, 2, 3}))  # anchors alone
    query = ([0], [payload_of({1, 2, 3})], ["q"])
    assert sorted(hit.doc_id for hit in index.anchor_query_many(*query)[0]) == ["banded", "near", "other"]
    assert [hit.doc_id for hit in index.anchor_query_many(*query, bands=[((1, 0), (8, 0))])[0]] == ["other"]
