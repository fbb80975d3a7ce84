"""FaustTableStore keeps the index's doc-id and expiry keys out of the changelog and rebuilds them.

A real rocksdict database per "partition" (what Faust opens), a list as the changelog: a worker
that takes a partition over, or restarts after a crash, has exactly the logged keys (a prefix of
them after a crash) and must rebuild the rest before the first probe.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rocksdict import Options, Rdict

from stream.index import DERIVED_NAMESPACES, BlockIndex, rebuild_derived_keys
from stream.service.runtime.tablestore import FaustTableStore
from tests.index.helpers import FORCED, check_every_prefix_plus_redelivery, logical_contents, make_set

K = 3


class LogOutput:
    def __init__(self) -> None:
        self.log: list[tuple[bytes, bytes | None]] = []

    def changelog(self, topic: str, partition: int, key: bytes, value: bytes | None) -> None:
        self.log.append((key, value))

    def changelog_many(self, topic: str, partition: int, ops: list[tuple[bytes, bytes | None]]) -> None:
        self.log.extend(ops)


def open_store(path: Path, output: LogOutput) -> FaustTableStore:
    db = Rdict(str(path), Options(raw_mode=True))
    table = SimpleNamespace(data=SimpleNamespace(_db_for_partition=lambda _p: db),
                            changelog_topic=SimpleNamespace(get_topic_name=lambda: "blocks-changelog"))
    return FaustTableStore(table, 0, output, DERIVED_NAMESPACES)  # type: ignore[arg-type]


def recover(path: Path, log: list[tuple[bytes, bytes | None]]) -> tuple[FaustTableStore, BlockIndex, LogOutput]:
    """What a worker taking the partition over does: replay the log (Faust), rebuild, open the index."""
    out = LogOutput()
    store = open_store(path, out)
    for key, value in log:
        if value is None:
            store.db.delete(key)
        else:
            store.db.put(key, value)
    rebuild_derived_keys(store)
    return store, BlockIndex(None, k=K, store=store, **FORCED), out  # type: ignore[arg-type]


def items(db: Any) -> dict[bytes, bytes]:
    return dict(db.items())


def contents(store: FaustTableStore) -> dict[bytes, bytes]:
    return logical_contents(store, BlockIndex(None, k=K).layout.simhash)


def test_doc_ids_and_expiry_keys_are_not_logged_and_rebuild_to_the_same_state(tmp_path: Path) -> None:
    out = LogOutput()
    store = open_store(tmp_path / "live", out)
    index = BlockIndex(None, k=K, store=store, **FORCED)  # type: ignore[arg-type]
    docs = make_set(3, K, 80, "one_block")
    for i, (doc_id, fp) in enumerate(docs.items()):
        index.insert(fp, doc_id, ts=float(i % 7), payload=doc_id.encode() * (i % 3))
    assert index.delete(next(iter(docs)))
    assert index.stats().splits > 0
    assert not [key for key, _ in out.log if key[0] in DERIVED_NAMESPACES]
    recovered, reopened, _ = recover(tmp_path / "taken-over", out.log)
    # the open redid the entries of the records after the watermark (stream/index/simhash/segments.py): the same
    # entries, maybe in segments
    assert contents(recovered) == contents(store)
    for i, (doc_id, fp) in enumerate(list(docs.items())[1:], start=1):  # payloads come back with the hits
        assert {h.doc_id: h.payload for h in reopened.query(fp)}[doc_id] == doc_id.encode() * (i % 3)
    # derived keys left from an earlier assignment (here: of the deleted document) are dropped
    doc_ns, expiry_ns = DERIVED_NAMESPACES[:1], DERIVED_NAMESPACES[1:]
    recovered.db.put(doc_ns + b"gone", b"\x00\x00\x00\x00\x09")
    recovered.db.put(expiry_ns + bytes(8) + b"\x00\x00\x00\x00\x09", b"")
    rebuild_derived_keys(recovered)
    assert contents(recovered) == contents(store)


def test_every_changelog_prefix_plus_redelivery_is_lossless(tmp_path: Path) -> None:
    def open_live(name: str) -> tuple[BlockIndex, list[tuple[bytes, bytes | None]]]:
        out = LogOutput()
        return BlockIndex(None, k=K, store=open_store(tmp_path / name, out), **FORCED), out.log  # type: ignore[arg-type]

    check_every_prefix_plus_redelivery(open_live, lambda log, name: recover(tmp_path / name, log)[1])


def test_redelivery_after_recovery_writes_nothing(tmp_path: Path) -> None:
    """The rebuilt doc ids make a redelivered insert a no-op, as before the take-over."""
    out = LogOutput()
    index = BlockIndex(None, k=K, store=open_store(tmp_path / "live", out), **FORCED)  # type: ignore[arg-type]
    docs = make_set(5, K, 30, "uniform")
    for doc_id, fp in docs.items():
        index.insert(fp, doc_id)
    _, recovered, log = recover(tmp_path / "next", out.log)
    log.log.clear()  # what the open wrote: the entries redone after the watermark (stream/index/simhash/segments.py)
    for doc_id, fp in docs.items():
        recovered.insert(fp, doc_id)
    assert log.log == []
    for doc_id, fp in docs.items():
        assert doc_id in {hit.doc_id for hit in recovered.query(fp)}


def test_a_buffer_drained_per_batch_logs_the_same_records_in_the_same_order(tmp_path: Path) -> None:
    """The probe stage writes through a BufferedStore drained once per agent batch (write_ops):
    the changelog must be the one an unbuffered store gives, and RocksDB must end up the same."""
    from stream.storage import BufferedStore

    docs = make_set(9, K, 60, "two_blocks")
    logs, dbs = [], []
    for buffered in (False, True):
        out = LogOutput()
        store = open_store(tmp_path / f"b{buffered}", out)
        kv: Any = BufferedStore(store, max_ops=1 << 30) if buffered else store
        index = BlockIndex(None, k=K, store=kv, **FORCED)
        ids = list(docs)
        for i, (doc_id, fp) in enumerate(docs.items()):
            index.insert(fp, doc_id, ts=float(i))
            if i % 9 == 4:
                assert index.delete(ids[i - 2])
            if buffered and i % 7 == 6:
                kv.drain()
        if buffered:
            kv.drain()
        logs.append(out.log)
        dbs.append(items(store.db))
    assert index.stats().splits > 0
    assert logs[0] == logs[1] and dbs[0] == dbs[1]


def test_the_probe_stage_skips_scans_only_on_an_empty_partition(
        tmp_path: Path) -> None:
    """The probe stage's index takes a cache miss for an empty bucket only if the partition was empty
    when it opened it; a recovered partition (its derived keys rebuilt, as the worker does on opening
    it) is read as it is."""
    from stream.detect import MatchSettings
    from stream.fingerprint import FingerprintConfig
    from stream.service.stages import ProbeStage, Topics

    def stage(store: FaustTableStore) -> ProbeStage:
        return ProbeStage(FingerprintConfig(segmenter="auto"), MatchSettings(k=K), Topics("p", "g", "v", "d", 1, 1),
                          lambda _p: store, store.output)

    empty = stage(open_store(tmp_path / "empty", LogOutput()))
    assert empty.detector(0).index.cache.complete
    out = LogOutput()
    index = BlockIndex(None, k=K, bands=FingerprintConfig().band_tables, store=open_store(tmp_path / "live", out))  # type: ignore[arg-type]
    docs = make_set(4, K, 30, "uniform")
    for doc_id, fp in docs.items():
        index.insert(fp, doc_id)
    replayed = open_store(tmp_path / "taken-over", LogOutput())
    for key, value in out.log:
        if value is None:
            replayed.db.delete(key)
        else:
            replayed.db.put(key, value)
    assert rebuild_derived_keys(replayed) == 2 * len(docs)  # a doc-id and an expiry key per document
    recovered = stage(replayed).detector(0).index
    assert not recovered.cache.complete
    for doc_id, fp in docs.items():
        assert doc_id in {hit.doc_id for hit in recovered.query(fp)}
