"""The worker's three stages and the hops between them, without a broker: what goes over Kafka is
collected and fed to the next stage by hand, as the agents would."""

from __future__ import annotations

import json
import os
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Container
from pathlib import Path
from typing import Any

from stream.detect import DecodedFingerprints, Match, MatchSettings
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.service.runtime.backlog import Backlog
from stream.service.stages import DocumentStage, GatherStage, InputRecord, Pipeline, ProbeStage, Topics
from stream.service.stages.messages import (
    Answer,
    GatherEntry,
    Header,
    ProbeItem,
    Route,
    Source,
    entry_from_json,
    version_of,
)
from stream.service.stages.routing import doc_partition
from stream.service.stages.stage_values import Hops, merge
from stream.storage import MemoryStore

PARTITIONS, INDEX_PARTITIONS = 4, 3  # gather and index partitions: different, so nothing may mix them up
TOPICS = Topics("probe", "gather", "verdicts", "dlq", PARTITIONS, INDEX_PARTITIONS)
EVERYTHING = {("probe", p) for p in range(INDEX_PARTITIONS)} | {("gather", p) for p in range(PARTITIONS)}
CONFIG = FingerprintConfig(segmenter="auto")
MATCHING = MatchSettings()
FIXTURE = Path(__file__).parents[1] / "fixtures" / "tang_small.jsonl"


class Out:
    """Collects what the stages send (the Output interface they use)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, bytes | None]] = []  # (topic, partition, or the key of a verdict, value)

    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers: object = None) -> None:
        self.sent.append((topic, key if topic == "verdicts" else partition, value))

    def changelog(self, topic: str, partition: int, key: bytes, value: bytes | None) -> None:
        pass

    def changelog_many(self, topic: str, partition: int, ops: object) -> None:
        pass

    def take(self, topic: str) -> list[tuple[int, Any]]:
        mine = [(p, json.loads(v or b"null")) for t, p, v in self.sent if t == topic]
        self.sent = [s for s in self.sent if s[0] != topic]
        return [(p, v) for p, v in mine if p is not None]


def _worker(out: Out, owned: Container[tuple[str, int]], verify_once: bool = True, topics: Topics = TOPICS,
            matching: MatchSettings = MATCHING, **probe_options: Any) -> Pipeline:
    stores: defaultdict[int, MemoryStore] = defaultdict(MemoryStore)
    gather_stores: defaultdict[int, MemoryStore] = defaultdict(MemoryStore)
    decoded = DecodedFingerprints()  # as the worker's app: one, shared by both stages
    return Pipeline(DocumentStage(CONFIG, matching, topics, out, decoded),  # type: ignore[arg-type]
                    ProbeStage(CONFIG, matching, topics, stores.__getitem__, out, verify_once=verify_once,  # type: ignore[arg-type]
                               decoded=decoded, **probe_options),
                    GatherStage(topics, out, gather_stores.__getitem__, clock=lambda: 1.0, revision_interval=0.0),  # type: ignore[arg-type]
                    out, topics, owned=lambda: owned)  # type: ignore[arg-type]


def _run(values: list[bytes | tuple[bytes, None]], owned: Container[tuple[str, int]], batch: int = 7,
         verify_once: bool = True, out: Out | None = None, topics: Topics = TOPICS,
         matching: MatchSettings = MATCHING, **probe_options: Any) -> tuple[dict[str, Any], int]:
    """Documents in batches (a (key, None) pair is a tombstone); the probe and gather messages sent over
    'Kafka' are consumed after each batch, as the agents would. Returns the final verdict per document
    (a tombstone removes one) and the number of internal messages."""
    out = out or Out()
    pipeline = _worker(out, owned, verify_once, topics, matching, **probe_options)
    internal = 0
    for i in range(0, len(values), batch):
        records = []
        for offset, v in enumerate(values[i : i + batch], start=i):
            source = Source("documents", 0, offset, float(offset))  # record timestamps follow the offsets
            records.append(InputRecord(v[0], None, source) if isinstance(v, tuple) else InputRecord(None, v, source))
        pipeline.documents_batch(records)
        while any(t in ("probe", "gather") for t, _, _ in out.sent):
            probes = out.take("probe")
            internal += len(probes)
            assert all(p < topics.index_partitions for p, _ in probes)
            if probes:
                pipeline.probe_batch([(p, [ProbeItem.from_json(d) for d in items]) for p, items in probes])
            gathers = out.take("gather")
            internal += len(gathers)
            assert all(p < topics.gather_partitions for p, _ in gathers)
            by_partition: dict[int, list[GatherEntry]] = defaultdict(list)
            for p, entries in gathers:
                by_partition[p].extend(map(entry_from_json, entries))
            pipeline.gather_batch(by_partition)
    final: dict[str, Any] = {}
    for topic, key, value in out.sent:
        if topic == "verdicts" and value is None:
            final.pop(key.decode(), None)
        elif topic == "verdicts":
            body = json.loads(value)
            final[body["id"]] = {k: v for k, v in body.items() if k not in ("revised", "processed_at", "source")}
    return final, internal


def _fixture(n: int) -> list[bytes]:
    lines = [line for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
    docs = [json.loads(line) for line in lines]
    for i, d in enumerate(docs):
        d["ts"] = float(i)
    random.Random(7).shuffle(docs)  # out of canonical order: later documents arrive first, revisions follow
    return [json.dumps(d, ensure_ascii=False).encode() for d in docs]


def test_local_hops_give_the_same_verdicts_as_kafka_hops() -> None:
    """Hops to owned partitions skip Kafka; the final verdicts (including revisions) do not depend on
    which partitions a worker owns."""
    values = _fixture(120)
    remote, sent_remote = _run(values, frozenset())
    local, sent_local = _run(values, EVERYTHING)
    half, sent_half = _run(values, {(t, p) for t, p in EVERYTHING if p % 2 == 0})
    assert len(remote) == len(values)
    assert sum(v["verdict"] != "unique" for v in remote.values()) > 5  # the fixture has near-duplicates
    assert local == remote and half == remote
    assert sent_local == 0 < sent_half < sent_remote


def test_the_partition_counts_do_not_change_the_verdicts() -> None:
    """The gather and index partition counts decide where work happens, never what is found: one
    partition each, more index partitions than gather partitions, and fewer give the same verdicts."""
    values = _fixture(120)
    baseline, _ = _run(values, frozenset(), topics=Topics("probe", "gather", "verdicts", "dlq", 1, 1))
    assert sum(v["verdict"] != "unique" for v in baseline.values()) > 5
    for gather_partitions, index_partitions in ((2, 5), (6, 2), (3, 3)):
        topics = Topics("probe", "gather", "verdicts", "dlq", gather_partitions, index_partitions)
        assert _run(values, frozenset(), topics=topics)[0] == baseline


def test_band_runs_on_disk_give_the_same_final_verdicts(tmp_path: Path) -> None:
    """Each partition's band tables with a memtable of 64 entries and their runs in a directory (the
    worker's layout, at a size where every few documents make a run): the verdicts of the index that
    keeps them all in memory."""
    from stream.service.stages.probe import IndexMemory

    values = _fixture(120)
    in_memory, _ = _run(values, EVERYTHING)
    on_disk, _ = _run(values, EVERYTHING, band_dir=lambda p: tmp_path / str(p), memory=IndexMemory(1 << 20, 64))
    assert sum(v["verdict"] != "unique" for v in in_memory.values()) > 5
    assert on_disk == in_memory
    assert all(any(d.glob("run-*.dat")) for d in tmp_path.iterdir()), "entries went to runs"


def test_verifying_each_pair_once_gives_the_same_final_verdicts() -> None:
    """``verify_once`` (each near pair verified in one partition) against verifying it in every
    partition where it collides: the same final verdicts, revisions included."""
    values = _fixture(120)
    once, _ = _run(values, frozenset())
    everywhere, _ = _run(values, frozenset(), verify_once=False)
    assert sum(v["verdict"] != "unique" for v in once.values()) > 5
    assert once == everywhere


def test_a_document_is_routed_through_its_home_to_the_partitions_of_its_keys() -> None:
    """The document stage sends each document to its id's gather partition only; that partition sends a
    probe item to each index partition owning one of its keys, the header in the first one's item only,
    and none to the others (an empty document: no item at all, its verdict at once). The header comes
    back with that answer and the gather stage completes the document from the answers it expects."""
    out = Out()
    stores = {p: MemoryStore() for p in range(INDEX_PARTITIONS)}
    gather_stores = {p: MemoryStore() for p in range(PARTITIONS)}
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    docs = [json.dumps({"id": i, "text": text, "ts": float(n)}).encode() for n, i in enumerate(("a", "b"))]
    docs.append(json.dumps({"id": "e", "text": " ", "ts": 3.0}).encode())  # empty: nothing to probe
    decoded = DecodedFingerprints()
    hops: Hops = DocumentStage(CONFIG, MATCHING, TOPICS, out, decoded).handle(  # type: ignore[arg-type]
        [InputRecord(None, v, Source("documents", 0, n, 0.0)) for n, v in enumerate(docs)])
    assert not hops.probes
    assert {p: sorted(r.doc for r in routes) for p, routes in hops.gather.items()} == {
        p: sorted(d for d in ("a", "b", "e") if doc_partition(d, PARTITIONS) == p)
        for p in {doc_partition(d, PARTITIONS) for d in ("a", "b", "e")}}
    # each fingerprint the document stage serialized is in the cache the probe stage decodes through
    assert all(r.fp in decoded for routes in hops.gather.values() for r in routes if r.fp)
    gather = GatherStage(TOPICS, out, gather_stores.__getitem__, clock=lambda: 1.0)  # type: ignore[arg-type]
    items: defaultdict[int, list[ProbeItem]] = defaultdict(list)
    for p, routes in hops.gather.items():
        merge(items, gather.handle(p, routes))
    routed = {r.doc: r.tables for routes in hops.gather.values() for r in routes}
    assert routed["e"] == {} and routed["a"] == routed["b"] and 0 < len(routed["a"]) <= INDEX_PARTITIONS
    for doc in ("a", "b", "e"):
        mine = [(p, it) for p, its in items.items() for it in its if it.doc == doc]
        assert sorted(p for p, _ in mine) == sorted(routed[doc])  # no item to a partition owning none of its keys
        assert [p for p, it in mine if it.header is not None] == ([min(routed[doc])] if routed[doc] else [])
    assert [json.loads(v)["id"] for t, _, v in out.sent if t == "verdicts"] == ["e"]  # nothing to ask
    probes = ProbeStage(CONFIG, MATCHING, TOPICS, stores.__getitem__, out, decoded=decoded)  # type: ignore[arg-type]
    answers = probes.handle_batch(list(items.items()))
    assert all(probes.detector(p).decoded is decoded for p in items)
    for p, entries in answers.items():
        assert not gather.handle(p, entries)  # answers make no probe items
    verdicts = {json.loads(v)["id"]: json.loads(v) for t, _, v in out.sent if t == "verdicts"}
    assert set(verdicts) == {"a", "b", "e"}
    assert [m[0] if isinstance(m, list) else m["id"] for m in verdicts["b"]["matches"]] == ["a"]
    fp = Fingerprinter(CONFIG).fingerprint(parse_document(json.loads(docs[1])))
    assert (verdicts["b"]["fingerprint"], verdicts["b"]["schema"]) == (fp.hex, fp.schema)
    assert verdicts["b"]["verdict"] == "duplicate" and verdicts["e"]["verdict"] == "empty"


def test_a_deleted_document_is_forgotten_and_its_verdict_tombstoned() -> None:
    """A tombstone or {"op": "delete"} removes a document from every partition: a later copy is judged as
    if it had never been seen, the verdict topic forgets it, documents judged before keep their verdicts;
    a deletion of an unknown id publishes nothing."""
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    doc = lambda i, ts: json.dumps({"id": i, "text": text, "ts": ts}).encode()  # noqa: E731
    values: list[bytes | tuple[bytes, None]] = [doc("a", 1.0), doc("b", 2.0), (b"a", None),
                                                 json.dumps({"id": "never", "op": "delete"}).encode(), doc("c", 3.0),
                                                 json.dumps({"id": "b", "op": "delete"}).encode(), doc("d", 4.0)]
    out = Out()
    final, _ = _run(values, frozenset(), batch=1, out=out)
    assert set(final) == {"c", "d"}
    # c came after a was deleted and before b was: it is b's copy, and keeps that verdict after b goes
    assert (final["c"]["canonical"], final["c"]["match_count"]) == ("b", 1)
    assert (final["d"]["canonical"], final["d"]["match_count"]) == ("c", 1)  # a and b are gone
    tombstones = [key for topic, key, value in out.sent if topic == "verdicts" and value is None]
    assert sorted(tombstones) == [b"a", b"b"]  # not b"never": it never had a verdict


def _summary(final: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {k: (v["verdict"], v["canonical"]) for k, v in final.items()}


def test_one_id_is_one_document_as_in_a_scan() -> None:
    """The cases of tests/batch/test_scan_idempotent.py, through the worker's stages, documents without ts (the
    record timestamp is new on every republish): the same document again keeps its verdict; an edited
    one replaces its old version everywhere and is judged as a new arrival."""
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    doc = lambda i, text: json.dumps({"id": i, "text": text}).encode()  # noqa: E731
    final, _ = _run([doc("a1", poem), doc("a2", poem), doc("a1", poem), doc("a2", poem)], frozenset(), batch=1)
    assert _summary(final) == {"a1": ("unique", None), "a2": ("duplicate", "a1")}
    final, _ = _run([doc("a", poem), doc("b", other), doc("a", other), doc("c", poem), doc("b", other)],
                    EVERYTHING, batch=1)
    assert _summary(final) == {"a": ("duplicate", "b"), "b": ("unique", None), "c": ("unique", None)}
    final, _ = _run([doc("a", poem), doc("a", " "), doc("c", poem)], frozenset(), batch=1)
    assert _summary(final) == {"a": ("empty", None), "c": ("unique", None)}


def test_a_batch_judges_as_one_document_at_a_time() -> None:
    """Empty documents (nothing to index in any partition) between the documents of a batch, and an
    edit that empties an id indexed by an earlier batch: the same final verdicts as batches of one."""
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    doc = lambda i, text: json.dumps({"id": i, "text": text}).encode()  # noqa: E731
    values = [doc("e1", " "), doc("a", poem), doc("e2", " "), doc("b", other),  # no id twice in 4
              doc("c", poem), doc("e3", " "), doc("a", " "), doc("d", poem),
              doc("e1", other), doc("e4", " ")]
    one_by_one, _ = _run(values, frozenset(), batch=1)
    assert _summary(one_by_one) == {"e1": ("duplicate", "b"), "a": ("empty", None), "e2": ("empty", None),
                                    "b": ("unique", None), "c": ("duplicate", "a"), "e3": ("empty", None),
                                    "d": ("duplicate", "c"), "e4": ("empty", None)}
    for owned in (frozenset(), EVERYTHING):
        batched, _ = _run(values, owned, batch=4)
        assert batched == one_by_one


def test_a_verdict_names_where_its_canonical_was_read() -> None:
    """``canonical_source``: the input record of the canonical's version that matched, through revisions
    (documents out of canonical order) and whichever partitions the worker owns; an edited canonical
    is named at its new record."""
    values = _fixture(120)
    offsets = {json.loads(v)["id"]: i for i, v in enumerate(values)}
    for owned in (frozenset(), EVERYTHING):
        final, _ = _run(values, owned)
        judged = [v for v in final.values() if v["canonical"]]
        assert len(judged) > 5
        for v in judged:
            assert v["canonical_source"] == {"topic": "documents", "partition": 0, "offset": offsets[v["canonical"]]}
        assert all("canonical_source" not in v for v in final.values() if not v["canonical"])
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    doc = lambda i, text: json.dumps({"id": i, "text": text}).encode()  # noqa: E731
    final, _ = _run([doc("a", poem), doc("a", other), doc("c", other)], frozenset(), batch=1)
    assert (final["c"]["canonical"], final["c"]["canonical_source"]["offset"]) == ("a", 1)


def test_the_source_keys_follow_the_index() -> None:
    """Each block-table partition keeps where its documents' input records are: a new version replaces
    the old one's key, a deletion removes it, retention deletes the keys of what it expired."""
    from stream.service.stages.probe import SOURCE_PREFIX

    matching = MatchSettings(retention=50.0)
    out = Out()
    stores = {p: MemoryStore() for p in range(INDEX_PARTITIONS)}
    documents = DocumentStage(CONFIG, matching, TOPICS, out)  # type: ignore[arg-type]
    probe = ProbeStage(CONFIG, matching, TOPICS, stores.__getitem__, out, late_allowance=0.0)  # type: ignore[arg-type]
    gather = GatherStage(TOPICS, out, defaultdict(MemoryStore).__getitem__, clock=lambda: 1.0)  # type: ignore[arg-type]
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    offset = iter(range(100))

    def feed(*values: bytes | tuple[bytes, None]) -> set[tuple[str, str]]:
        # a tombstone has no event time: its record's timestamp orders it after the versions it deletes
        records = [InputRecord(v[0], None, Source("documents", 0, next(offset), 500.0)) if isinstance(v, tuple)
                   else InputRecord(None, v, Source("documents", 0, next(offset), 0.0)) for v in values]
        items: defaultdict[int, list[ProbeItem]] = defaultdict(list)
        for p, routes in documents.handle(records).gather.items():
            merge(items, gather.handle(p, routes))
        probe.handle_batch(list(items.items()))
        return {(key[len(SOURCE_PREFIX) + 9:].decode(), value.decode()) for store in stores.values()
                for key, value in store.scan_prefix(SOURCE_PREFIX)}

    doc = lambda i, text, ts: json.dumps({"id": i, "text": text, "ts": ts}).encode()  # noqa: E731
    assert feed(doc("a", poem, 100.0), doc("b", other, 110.0)) == {("a", "documents:0:0"), ("b", "documents:0:1")}
    assert feed(doc("a", poem + "又一句。", 120.0)) == {("a", "documents:0:2"), ("b", "documents:0:1")}
    assert feed((b"b", None)) == {("a", "documents:0:2")}
    probe._expired.clear()  # retention runs at most every EXPIRE_SECONDS: now
    assert feed(doc("c", other, 1000.0)) == {("c", "documents:0:4")}  # a at 120 is past 1000 - 50


def _records(batches: list[list[tuple[bytes | None, bytes, int, int, float]]], pipeline: Pipeline, out: Out
             ) -> Counter[str]:
    """Batches of (key, value, partition, offset, record timestamp), each run through all three stages.
    Returns the gather entries sent, by type."""
    sent: Counter[str] = Counter()
    for batch in batches:
        pipeline.documents_batch([InputRecord(k, v, Source("documents", p, o, ts)) for k, v, p, o, ts in batch])
        while any(t in ("probe", "gather") for t, _, _ in out.sent):
            probes = out.take("probe")
            if probes:
                pipeline.probe_batch([(p, [ProbeItem.from_json(d) for d in items]) for p, items in probes])
            by_partition: dict[int, list[GatherEntry]] = defaultdict(list)
            for p, entries in out.take("gather"):
                sent.update(e["t"] for e in entries)
                sent["revised_pairs"] += sum(len(e["to"]) for e in entries if e["t"] == "revisions")
                by_partition[p].extend(map(entry_from_json, entries))
            pipeline.gather_batch(by_partition)
    return sent


def test_one_id_under_two_keys_ends_on_its_newest_version_whatever_the_arrival() -> None:
    """The newer version (later record timestamp) sits in another partition and arrives first; the older
    one, later: in another batch, or in the same one. The final verdict, and the index that later
    documents meet, are the newer version's; the mismatched key is counted."""
    from stream.service import metrics

    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    doc = lambda i, text: json.dumps({"id": i, "text": text}).encode()  # noqa: E731
    newer, older = (b"a", doc("a", other), 0, 7, 20.0), (b"wrong-key", doc("a", poem), 1, 900, 10.0)
    mismatched = metrics.KEY_MISMATCH._value.get()
    for batches in ([[newer], [older]], [[newer, older]], [[older, newer]]):
        out = Out()
        pipeline = _worker(out, frozenset())
        _records([*batches, [(b"c", doc("c", other), 0, 8, 30.0), (b"p", doc("p", poem), 0, 9, 31.0)]], pipeline, out)
        final = {json.loads(v)["id"]: json.loads(v) for t, _, v in out.sent if t == "verdicts" and v}
        assert final["a"]["source"]["offset"] == 7, batches  # the newer version's verdict is the last one
        assert (final["c"]["verdict"], final["c"]["canonical"]) == ("duplicate", "a")  # the index holds it
        assert (final["p"]["verdict"], final["p"]["canonical"]) == ("unique", None)  # and not the older one
    assert metrics.KEY_MISMATCH._value.get() == mismatched + 3


def test_a_json_object_with_a_key_twice_is_a_dead_letter() -> None:
    out = Out()
    _records([[(b"a", b'{"id": "a", "text": "\xe5\xba\x8a", "id": "b"}', 0, 1, 1.0)]], _worker(out, frozenset()), out)
    letters = [json.loads(v) for t, _, v in out.sent if t == "dlq"]
    assert [(d["code"], d["source"]["offset"]) for d in letters] == [("duplicate_key", 1)]
    assert not [v for t, _, v in out.sent if t == "verdicts"]


def test_copies_arriving_out_of_order_make_revision_entries_linear_in_the_copies() -> None:
    """Copies of one document, their ts a permutation (later ones often arrive first): every earlier
    arrival revises all the later copies indexed before it (~n^2/4 pairs), in one entry per gather
    partition; each copy's final match count is its rank. (150 copies: ~5,600 revised pairs against at
    most 1,500 entries, so linear and quadratic are far apart; the pairs' state updates stay quadratic,
    ~100 s at 1,000 on a shared machine: `python -m benchmarks reliability` runs 1,000.)"""
    n = int(os.environ.get("DEDUP_TEST_COPIES", "150"))
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    ts = [float((i * 7919) % n) for i in range(n)]
    records = [(f"c{i}".encode(), json.dumps({"id": f"c{i}", "text": text, "ts": ts[i]}).encode(), 0, i, 1.0)
               for i in range(n)]
    out = Out()
    sent = _records([records[i : i + 64] for i in range(0, n, 64)], _worker(out, frozenset()), out)
    final = {json.loads(v)["id"]: json.loads(v) for t, _, v in out.sent if t == "verdicts" and v}
    assert all(final[f"c{i}"]["match_count"] == int(ts[i]) for i in range(n))
    assert sent["revise"] == 0 and 0 < sent["revisions"] <= 10 * n < sent["revised_pairs"], sent
    print(f"{n} copies: {sent['revisions']} revision entries for {sent['revised_pairs']} revised pairs")


def _shuffled_copies(n: int, out: Out, now: list[float], every: float, behind: Callable[[], bool], held_back: int = 0
                     ) -> tuple[GatherStage, list[float], Callable[[], None]]:
    """``n`` copies of one poem in shuffled event-time order, 10 batches ``every`` seconds apart on the
    clock ``now[0]``, but the last ``held_back`` copies: the gather stage, each copy's event time, and
    what sends those last copies."""
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    ts = [float((i * 7919) % n) for i in range(n)]
    records = [(f"c{i}".encode(), json.dumps({"id": f"c{i}", "text": text, "ts": ts[i]}).encode(), 0, i, 1.0)
               for i in range(n)]
    gather_stores: defaultdict[int, MemoryStore] = defaultdict(MemoryStore)
    gather = GatherStage(TOPICS, out, gather_stores.__getitem__, clock=lambda: now[0],  # type: ignore[arg-type]
                         revision_interval=30.0, backlog_hold=600.0, behind=behind)
    pipeline = Pipeline(DocumentStage(CONFIG, MATCHING, TOPICS, out),  # type: ignore[arg-type]
                        ProbeStage(CONFIG, MATCHING, TOPICS, defaultdict(MemoryStore).__getitem__, out),  # type: ignore[arg-type]
                        gather, out, TOPICS, owned=lambda: EVERYTHING)  # type: ignore[arg-type]
    first = n - held_back
    step = max(1, first // 10)
    for i in range(0, first, step):
        _records([records[i : min(first, i + step)]], pipeline, out)
        now[0] += every
    return gather, ts, lambda: _records([records[first:]], pipeline, out) and None


def test_revisions_within_the_interval_are_published_together_once_it_ends() -> None:
    """Copies arriving out of canonical order over 10 batches a second apart revise earlier arrivals in
    almost every batch: with a 30 s revision interval each copy has its first verdict and at most one
    revision, released once the interval has passed, and the final verdicts are those of publishing
    every revision at once. A release whose verdicts were never confirmed (``released``: a crash
    before delivery) publishes them again."""
    n, now, out = 120, [1000.0], Out()
    gather, ts, _ = _shuffled_copies(n, out, now, every=1.0, behind=lambda: False)
    assert all(not gather.release(p) for p in range(PARTITIONS)), "nothing is due within the interval"
    now[0] += 30.0
    released = {p: gather.release(p) for p in range(PARTITIONS)}
    assert sum(map(len, released.values())) > n // 2
    again = {p: gather.release(p) for p in range(PARTITIONS)}  # not confirmed: published again
    assert {p: [k for k, _ in r] for p, r in again.items()} == {p: [k for k, _ in r] for p, r in released.items()}
    for p, done in again.items():
        gather.released(p, done)
    assert all(not gather.release(p) for p in range(PARTITIONS))
    verdicts = [json.loads(v) for t, _, v in out.sent if t == "verdicts" and v]
    per_id = Counter(v["id"] for v in verdicts)
    repeated = sum(map(len, again.values()))  # the unconfirmed release, once more
    assert max(per_id.values()) <= 3 and sum(per_id.values()) <= 2 * n + repeated
    final = {v["id"]: v for v in verdicts}
    assert all(final[f"c{i}"]["match_count"] == int(ts[i]) for i in range(n))


def test_revisions_are_held_while_the_worker_is_behind() -> None:
    """A backlog brings a document's earlier copies over minutes: while the worker is behind, its
    revisions wait past the interval, until it has caught up or ``backlog_hold`` after the last publish,
    and then go out once each with the verdicts of publishing every revision at once."""
    n, now, out, behind = 120, [1000.0], Out(), [True]
    gather, ts, _ = _shuffled_copies(n, out, now, every=30.0, behind=lambda: behind[0])  # over 5 minutes
    firsts = len([v for t, _, v in out.sent if t == "verdicts" and v])
    assert firsts == n
    now[0] += 30.0
    assert all(not gather.release(p) for p in range(PARTITIONS)), "behind: nothing is due within backlog_hold"
    now[0] = 1000.0 + 600.0 + 0.5  # backlog_hold after the first batch's verdicts: those copies are due
    early = {p: gather.release(p) for p in range(PARTITIONS)}
    assert 0 < sum(map(len, early.values())) <= n // 10
    for p, done in early.items():
        gather.released(p, done)
    behind[0] = False  # caught up: everything held is due
    rest = {p: gather.release(p) for p in range(PARTITIONS)}
    for p, done in rest.items():
        gather.released(p, done)
    assert all(not gather.release(p) for p in range(PARTITIONS))
    verdicts = [json.loads(v) for t, _, v in out.sent if t == "verdicts" and v]
    per_id = Counter(v["id"] for v in verdicts)
    assert max(per_id.values()) == 2
    assert sum(per_id.values()) - n == sum(map(len, rest.values())) + sum(map(len, early.values())) > n // 2
    final = {v["id"]: v for v in verdicts}
    assert all(final[f"c{i}"]["match_count"] == int(ts[i]) for i in range(n))


def test_a_revision_merged_while_a_release_is_delivered_waits_an_interval() -> None:
    """``release`` publishes the held revisions; before their delivery is confirmed (``released``),
    earlier copies arrive and revise them again: that new revision stays held a revision interval
    after the release, not published by the next tick."""
    n, now, out = 120, [1000.0], Out()
    gather, ts, rest = _shuffled_copies(n, out, now, every=1.0, behind=lambda: False, held_back=12)
    now[0] += 30.0
    released = {p: gather.release(p) for p in range(PARTITIONS)}
    assert sum(map(len, released.values())) > 10
    rest()  # the last 12 copies: earlier event times for many of the released ones
    assert Counter(json.loads(v)["id"] for t, _, v in out.sent if t == "verdicts" and v).most_common(1)[0][1] <= 2
    for p, done in released.items():
        gather.released(p, done)
    verdicts = lambda: Counter(json.loads(v)["id"] for t, _, v in out.sent if t == "verdicts" and v)  # noqa: E731
    before = verdicts()
    now[0] += 1.0
    assert all(not gather.release(p) for p in range(PARTITIONS)), "held an interval after the release"
    now[0] += 30.0
    again = {p: gather.release(p) for p in range(PARTITIONS)}
    for p, done in again.items():
        gather.released(p, done)
    assert sum(map(len, again.values())) > 0
    assert max(verdicts().values()) <= 3 and max(before.values()) <= 2
    final = {json.loads(v)["id"]: json.loads(v) for t, _, v in out.sent if t == "verdicts" and v}
    assert all(final[f"c{i}"]["match_count"] == int(ts[i]) for i in range(n))

def test_backlog_ends_once_the_lag_stays_low_for_the_settle_time() -> None:
    now = [0.0]
    backlog = Backlog(lag_limit=1000, settle=30.0, clock=lambda: now[0])
    assert backlog(), "nothing measured yet (a start is often a backlog)"
    backlog.measure(500)
    assert not backlog(), "the first measurement is low: there was no backlog"
    backlog.measure(5000)
    assert backlog()
    for t, lag in ((2.0, 900), (20.0, 10), (28.0, 0)):
        now[0] = t
        backlog.measure(lag)
        assert backlog(), f"lag {lag} at {t} s: not yet settled"
    now[0] = 40.0
    backlog.measure(1001)  # above the limit again: the settle time starts over
    now[0] = 60.0
    backlog.measure(0)
    now[0] = 89.0
    backlog.measure(0)
    assert backlog()
    now[0] = 90.0
    backlog.measure(0)
    assert not backlog()


def _drive(pipeline: Pipeline, out: Out, records: list[InputRecord]) -> defaultdict[str, set[int]]:
    """``records`` through the stages, every hop over 'Kafka': the index partitions that got a probe item
    of each document."""
    reached: defaultdict[str, set[int]] = defaultdict(set)
    pipeline.documents_batch(records)
    while any(t in ("probe", "gather") for t, _, _ in out.sent):
        probes = out.take("probe")
        for p, items in probes:
            for item in items:
                reached[item["doc"]].add(p)
        if probes:
            pipeline.probe_batch([(p, [ProbeItem.from_json(d) for d in items]) for p, items in probes])
        by_partition: dict[int, list[GatherEntry]] = defaultdict(list)
        for p, entries in out.take("gather"):
            by_partition[p].extend(map(entry_from_json, entries))
        pipeline.gather_batch(by_partition)
    return reached


def _routed(gather_partitions: int, index_partitions: int) -> tuple[Out, ProbeStage, Pipeline]:
    """A worker whose hops all go over 'Kafka', and its probe stage (to see what each partition holds)."""
    topics = Topics("probe", "gather", "verdicts", "dlq", gather_partitions, index_partitions)
    out, stores = Out(), defaultdict(MemoryStore)
    probes = ProbeStage(CONFIG, MATCHING, topics, stores.__getitem__, out)  # type: ignore[arg-type]
    gather = GatherStage(topics, out, defaultdict(MemoryStore).__getitem__, clock=lambda: 1.0)  # type: ignore[arg-type]
    return out, probes, Pipeline(DocumentStage(CONFIG, MATCHING, topics, out), probes, gather,  # type: ignore[arg-type]
                                 out, topics)  # type: ignore[arg-type]


def _holding(probes: ProbeStage, doc: str, partitions: int) -> set[int]:
    return {p for p in range(partitions) if probes.detector(p).index.document(doc) is not None}


def test_a_new_version_and_a_deletion_reach_the_old_version_s_partitions_and_no_others() -> None:
    """At 64 index partitions a document's items go to the partitions owning its keys; a newer version
    sharing no key with the old one also drops it from the old one's partitions, a deletion from the
    partitions of its current version, and no other partition hears of either."""
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    out, probes, pipeline = _routed(4, 64)
    offset = iter(range(100))

    def send(doc: str, text: str | None, ts: float) -> defaultdict[str, set[int]]:
        value = None if text is None else json.dumps({"id": doc, "text": text, "ts": ts}).encode()
        return _drive(pipeline, out, [InputRecord(doc.encode(), value, Source("documents", 0, next(offset), ts))])

    first = send("a", poem, 1.0)["a"]
    assert first == _holding(probes, "a", 64) and 0 < len(first) < 64
    send("keep", poem, 2.0)
    send("a", other, 3.0)
    second = _holding(probes, "a", 64)
    reached = send("a", other + "又一句。", 4.0)["a"]  # sent to the partitions of the version it replaces
    third = _holding(probes, "a", 64)
    assert first - second and second - third, "the versions' partitions differ"
    assert reached == second | third
    assert (send("a", None, 5.0)["a"], _holding(probes, "a", 64)) == (third, set())
    assert _holding(probes, "keep", 64) == first
    final = {json.loads(v)["id"]: json.loads(v) for t, _, v in out.sent if t == "verdicts" and v}
    assert (final["keep"]["verdict"], final["keep"]["canonical"]) == ("duplicate", "a")  # judged before the edit
    assert not send("a", None, 6.0)["a"], "a deleted id is nowhere: a second deletion asks no partition"


def test_a_route_delivered_again_after_its_state_sends_the_drops_of_every_version_it_replaced() -> None:
    """Two versions routed in one gather batch whose probe messages are lost, the gather states kept, and
    the batch delivered again: the older route is refused, the newer one drops the id from the first
    version's partitions as well as those the lost version would have indexed it in."""
    poem, other = "床前明月光，疑是地上霜。举头望明月，低头思故乡。", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    out, probes, pipeline = _routed(2, 16)
    doc = lambda text, ts: json.dumps({"id": "a", "text": text, "ts": ts}).encode()  # noqa: E731
    _drive(pipeline, out, [InputRecord(b"a", doc(poem, 1.0), Source("documents", 0, 0, 1.0))])
    first = _holding(probes, "a", 16)
    pipeline.documents_batch([InputRecord(b"a", doc(other, 2.0), Source("documents", 0, 1, 2.0))])
    pipeline.documents_batch([InputRecord(b"a", doc(poem + "又一句。", 3.0), Source("documents", 0, 2, 3.0))])
    by_partition: dict[int, list[GatherEntry]] = defaultdict(list)
    for p, entries in out.take("gather"):
        by_partition[p].extend(map(entry_from_json, entries))
    routes = [e for entries in by_partition.values() for e in entries if isinstance(e, Route)]
    assert [r.header.round for r in routes] == ["documents:0:1", "documents:0:2"]
    pipeline.gather_batch(by_partition)
    out.take("probe")  # lost
    pipeline.gather_batch(by_partition)  # delivered again
    reached = {p for t, p, _ in out.sent if t == "probe"}
    _drive(pipeline, out, [])
    last = set(routes[1].tables)
    assert first - last, "the versions' partitions differ"
    assert _holding(probes, "a", 16) == last and reached >= first | last | set(routes[0].tables)
    verdicts = [json.loads(v) for t, _, v in out.sent if t == "verdicts" and v]
    assert [v["source"]["offset"] for v in verdicts] == [0, 2]  # the lost version never had a verdict


def test_the_verdicts_are_the_same_at_every_index_partition_count() -> None:
    """The fixture out of order, then edits (new versions sharing no key with the old ones), deletions,
    and ids deleted and published again: 1, 2, 5 and 16 index partitions give the final verdicts of one."""
    values: list[bytes | tuple[bytes, None]] = list(_fixture(100))
    docs = [json.loads(v) for v in values if isinstance(v, bytes)]
    for i, d in enumerate(docs[:30]):  # each takes the text of another: shares none of its old keys
        values.append(json.dumps({"id": d["id"], "text": docs[-1 - i]["text"], "ts": 200.0 + i}).encode())
    for d in docs[30:40]:
        values.append((d["id"].encode(), None))
    for i, d in enumerate(docs[35:45]):
        values.append(json.dumps({"id": d["id"], "text": d["text"], "ts": 400.0 + i}).encode())
    single, _ = _run(values, frozenset(), topics=Topics("probe", "gather", "verdicts", "dlq", 1, 1))
    assert sum(v["verdict"] != "unique" for v in single.values()) > 20 and len(single) == len(docs) - 5
    for index_partitions in (2, 5, 16):
        topics = Topics("probe", "gather", "verdicts", "dlq", index_partitions, index_partitions)
        assert _run(values, frozenset(), topics=topics)[0] == single, index_partitions
    assert _run(values, {("probe", p) for p in range(8)} | {("gather", p) for p in range(0, 16, 3)},
                topics=Topics("probe", "gather", "verdicts", "dlq", 16, 16))[0] == single


def test_a_document_read_again_after_a_revision_gets_its_revised_verdict_again() -> None:
    """A record delivered again (after a restart, or a repartition's saved positions) republishes the
    verdict its document has, ``revised`` included: a revised verdict stays revised."""
    poem = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    out = Out()
    pipeline = _worker(out, set())

    def record(doc: str, offset: int, ts: float) -> InputRecord:
        value = json.dumps({"id": doc, "text": poem, "ts": ts}).encode()
        return InputRecord(doc.encode(), value, Source("documents", 0, offset, ts))

    for rec in (record("later", 0, 2.0), record("earlier", 1, 1.0), record("later", 0, 2.0)):
        _drive(pipeline, out, [rec])
    later = [json.loads(v) for t, k, v in out.sent if t == "verdicts" and k == b"later"]
    assert [(v["verdict"], v["canonical"], v["revised"]) for v in later] == [
        ("unique", None, False), ("duplicate", "earlier", True), ("duplicate", "earlier", True)]


def _pages(rng: random.Random, n: int) -> str:
    return " ".join(f"p{rng.randrange(4000)}" for _ in range(n))


def test_short_pages_inside_an_archive_are_found_at_every_index_partition_count() -> None:
    """No band collides between a 150-word page and a 1,500-word archive of ten such pages; the anchor
    table proposes them. Each partition proposes by the anchors it owns, and a document goes to every
    partition owning one of its anchors, so 1, 2, 5, 16 and 128 index partitions find the same pairs
    (at 128 a document's 28 table keys reach ~25 of them: without its anchors' partitions most pairs
    would not meet)."""
    rng = random.Random(11)
    pages = [_pages(rng, 150) for _ in range(10)]
    docs = [{"id": "archive", "text": " ".join(pages), "ts": 0.0}]
    docs += [{"id": f"page{i}", "text": page, "ts": 1.0 + i} for i, page in enumerate(pages)]
    docs += [{"id": f"other{i}", "text": _pages(rng, 150), "ts": 20.0 + i} for i in range(5)]
    rng.shuffle(docs)  # pages before the archive too: they are revised when it arrives
    values: list[bytes | tuple[bytes, None]] = [json.dumps(d).encode() for d in docs]
    single, _ = _run(values, frozenset(), topics=Topics("probe", "gather", "verdicts", "dlq", 1, 1))
    for i in range(10):
        assert [m["id"] for m in single[f"page{i}"]["matches"]] == ["archive"], single[f"page{i}"]
    assert all(single[f"other{i}"]["verdict"] == "unique" for i in range(5))
    for index_partitions in (2, 5, 16, 128):
        topics = Topics("probe", "gather", "verdicts", "dlq", 3, index_partitions)
        assert _run(values, frozenset(), topics=topics)[0] == single, index_partitions
    # anchor_cap 0: no anchor table; only the first page, which the archive begins with, shares a
    # (prefix) band with it
    without, _ = _run(values, frozenset(), topics=Topics("probe", "gather", "verdicts", "dlq", 3, 2),
                      matching=MatchSettings(anchor_cap=0))
    assert [i for i in range(10) if without[f"page{i}"]["verdict"] != "unique"] == [0]


def test_a_state_whose_entries_failed_is_read_again_from_the_table() -> None:
    """The gather stage keeps the states it wrote for the rest of the agent batch (a route's answers
    come in the same batch when its hops are local). A document whose entries fail is dead-lettered
    and its state read from the table again, not taken half-applied: the failing answer counted its
    partition before its match broke, and with that count the other partition's answer would complete
    the round. The same verdicts and letters as with a batch per step."""
    source = Source("documents", 0, 7, 5.0)
    header = Header("d", source.round_id, 0, source, (5.0, "d"), 0xD, "s", version=version_of(5.0, source))
    broken = Match("e", 3, 0.9, (None, "e"))  # type: ignore[arg-type]  # an order that does not compare
    steps: list[list[GatherEntry]] = [[Route(header, b"fp", {0: [0], 1: [1]})],
                                      [Answer("d", source.round_id, 0, [broken], header)],
                                      [Answer("d", source.round_id, 1, [Match("c", 2, 0.95, (1.0, "c"))])]]

    def run(batch_per_step: bool) -> list[tuple[str, Any]]:
        out, store = Out(), MemoryStore()
        gather = GatherStage(TOPICS, out, lambda _: store)  # type: ignore[arg-type]
        for entries in steps:
            gather.handle(doc_partition("d", TOPICS.gather_partitions), entries)
            if batch_per_step:
                gather.end_batch()
        return [(topic, json.loads(value or b"null")) for topic, _, value in out.sent if topic in ("verdicts", "dlq")]

    together = run(False)
    assert [topic for topic, _ in together] == ["dlq"]  # partition 0 has not answered: no verdict yet
    assert together == run(True)
