"""State re-keyed for other partition counts (stream/service/stages/rekey.py): the index of every new
partition finds what one index of every document finds; gather states move to their id's partition."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from stream.detect import Match
from stream.errors import ConfigError
from stream.fingerprint import Fingerprint, FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex, StoredDocument, rebuild_derived_keys
from stream.service.stages.gather import held_key
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import Source, dumps
from stream.service.stages.probe import SETTINGS_KEY, SOURCE_PREFIX, VERSION_KEY, source_key
from stream.service.stages.rekey import BlockState, Placement, block_partitions, gather_partitions, routed
from stream.service.stages.routing import doc_partition, routes, tables_by_partition
from stream.storage import MemoryStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tang_small.jsonl"
LEDGER = b"\xff\xfeledger:"
HANDLE = b"\xfc"  # a document's record (stream/index/records.py)


def documents(n: int = 120) -> list[StoredDocument]:
    config = FingerprintConfig()
    fingerprinter = Fingerprinter(config)
    docs = [parse_document(json.loads(line)) for line in FIXTURE.read_text(encoding="utf-8").splitlines()[:n]]
    out = []
    for i, doc in enumerate(docs):
        fp = fingerprinter.fingerprint(doc)
        if not fp.empty:
            out.append(StoredDocument(fp.simhash, float(i), frozenset(), tuple((v, 0) for v, _ in fp.bands), doc.id,
                                      fp.to_bytes()))
    return out


def state_of(docs: list[StoredDocument], partitions: int) -> list[dict[bytes, bytes]]:
    """A deployment's block-table partitions as the changelog holds them, built by the re-keying itself
    from one state that names every document's tables."""
    layout_index = BlockIndex(None, k=3, bands=FingerprintConfig().band_tables)
    first = BlockState(skip_prefix=LEDGER, config=layout_index.store.get(b"\xffconfig"), settings=b'{"s": 1}')
    for doc in docs:
        tables = frozenset(t for t, _ in layout_index.routing_keys(doc.fingerprint, doc.bands))
        first.add_document(doc._replace(tables=tables))
        first.sources[source_key((doc.ts, doc.doc_id))] = b"documents:0:%d" % int(doc.ts)
        first.versions[VERSION_KEY + doc.doc_id.encode()] = dumps([doc.ts, doc.ts, 0, int(doc.ts)])
    out = []
    for _, items in block_partitions(first, routed(first, partitions)):
        out.append({**dict(items), LEDGER + b"t-probe": b"\0" * 8})
    return out


def hits_by_doc(partitions: list[dict[bytes, bytes]], docs: list[StoredDocument]) -> dict[str, set[str]]:
    """Every document's hits, over every partition's index opened on its changelog's keys."""
    found: dict[str, set[str]] = {d.doc_id: set() for d in docs}
    for items in partitions:
        store = MemoryStore()
        store.write_ops(sorted(items.items()))
        index = BlockIndex(None, k=3, bands=FingerprintConfig().band_tables, store=store)
        for doc in docs:
            found[doc.doc_id] |= {h.doc_id for h in index.query(doc.fingerprint, doc.bands) if h.doc_id != doc.doc_id}
    return found


def test_new_partitions_find_what_the_old_ones_found() -> None:
    docs = documents()
    old = state_of(docs, 2)
    state = BlockState(skip_prefix=LEDGER)
    for items in old:
        state.add_partition(items)
    assert sorted(state.ids) == sorted(d.doc_id for d in docs) and all(state.masks)
    assert len(state.sources) == len(docs)
    new = [dict(items) for _, items in block_partitions(state, routed(state, 5))]
    reference = hits_by_doc([dict(items) for _, items in block_partitions(state, routed(state, 1))], docs)
    assert any(reference.values())  # the fixture has near copies
    assert hits_by_doc(new, docs) == reference == hits_by_doc(old, docs)
    for items in new:  # every partition: the settings, every id's version, no input position of the old topics
        assert items[SETTINGS_KEY] == b'{"s": 1}'
        assert sum(key.startswith(VERSION_KEY) for key in items) == len(docs)
        assert sum(key.startswith(SOURCE_PREFIX) for key in items) == sum(key.startswith(HANDLE) for key in items)
        assert not any(key.startswith(LEDGER) for key in items)


def test_two_versions_of_a_document_are_refused() -> None:
    docs = documents(8)
    old = state_of(docs, 2)
    other = state_of([docs[0]._replace(fingerprint=docs[0].fingerprint ^ 0xFF), *docs[1:]], 2)
    state = BlockState(skip_prefix=LEDGER)
    state.add_partition(old[0])
    with pytest.raises(ConfigError, match="two versions"):
        state.add_partition(other[1] if any(docs[0].doc_id.encode() in k for k in other[1]) else other[0])


def test_gather_states_move_to_their_ids_partition_and_unfinished_ones_are_named() -> None:
    src = Source("documents", 0, 7, 1.0)
    done = GatherState("done", simhash=1, order=(1.0, "done"), source=src, round=src.round_id, expected=2,
                       got=[1, 0], published=True, placed=[1])
    done.summary.add(Match("x", 1, 0.9, (0.5, "x"), simhash=3))
    waiting = GatherState("waiting", simhash=2, order=(2.0, "waiting"), source=src, round="documents:0:8",
                          expected=2, got=[0])
    empty = GatherState("empty", simhash=0, order=(3.0, "empty"), source=src, round="documents:0:9", empty=True,
                        published=True, placed=[])
    due = struct.pack(">d", 1234.5)  # a revision of "done" held when the old deployment stopped
    old = [{b"done": dumps(done.to_json()), LEDGER + b"t-gather": b"\0" * 8, held_key("done"): due},
           {b"waiting": dumps(waiting.to_json()), b"empty": dumps(empty.to_json())}]
    moved = gather_partitions(old, 7, LEDGER, lambda doc: {"done": [2, 5]}.get(doc, []))
    assert moved.unfinished == ["waiting"] and moved.count == 2
    home = dict(moved.partitions[doc_partition("done", 7)])
    assert home[held_key("done")] == due
    state = GatherState.from_json(json.loads(home[b"done"]))
    # partition 1 of 2 is not partition 1 of 7: the new partitions holding the document, answered by them
    assert (state.placed, state.dropping, state.expected, sorted(state.got)) == ([2, 5], [], 2, [2, 5])
    assert [m.id for m in state.summary.listed()] == ["x"] and state.published and state.complete
    state = GatherState.from_json(json.loads(dict(moved.partitions[doc_partition("empty", 7)])[b"empty"]))
    assert (state.placed, state.expected, state.got) == ([], 0, []) and state.complete


def test_the_placement_is_where_the_new_partitions_hold_each_document() -> None:
    docs = documents()
    state = BlockState(skip_prefix=LEDGER)
    for items in state_of(docs, 2):
        state.add_partition(items)
    layout = state.layout()
    new = routed(state, 16)
    placement = Placement.of(state, new)
    holding: dict[str, list[int]] = {d.doc_id: [] for d in docs}
    for partition, items in block_partitions(state, new):
        store = MemoryStore()
        store.write_ops(sorted(items))
        rebuild_derived_keys(store)  # as the worker does after recovery: the changelog holds records only
        index = BlockIndex(None, k=3, bands=FingerprintConfig().band_tables, store=store)
        for doc in docs:
            if index.document(doc.doc_id) is not None:
                holding[doc.doc_id].append(partition)
                # indexed in the tables it owns there, and in none for its anchors alone
                found = any(hit.doc_id == doc.doc_id for hit in index.query(doc.fingerprint, doc.bands))
                assert found == (partition in tables_by_partition(layout.routing_keys(doc.fingerprint, doc.bands), 16))
    # where a deployment with 16 partitions from the start routes each document: its table keys' and its
    # anchors' partitions
    expected = {d.doc_id: sorted(routes(layout.routing_keys(d.fingerprint, d.bands),
                                        Fingerprint.from_bytes(d.payload).anchors()[0], 16)) for d in docs}
    assert {d.doc_id: placement.partitions(d.doc_id) for d in docs} == holding == expected
    assert any(set(expected[d.doc_id]) - set(tables_by_partition(layout.routing_keys(d.fingerprint, d.bands), 16))
               for d in docs)  # some partitions hold a document for its anchors alone
    assert any(len(p) < 16 for p in holding.values())  # else the placement would say nothing
    assert placement.partitions("never-indexed") == []
