"""The batch path's pending SimHash entries (stream/index/simhash/segments.py): written a root at a
time at checkpoints, on eviction and on close; redone from the records after a crash; deleted by
tombstones that a later load folds into one segment. Every answer is compared with brute force."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stream.index import BlockIndex
from stream.index.records import CONFIG_KEY, HANDLE_KEY
from stream.index.simhash.arena import RootArena
from stream.index.simhash.segments import SEGMENT_TAG, WATERMARK_KEY, read_watermark
from stream.index.simhash.table import ENTRY_TAG
from stream.storage import MemoryStore
from tests.index.helpers import FORCED, brute_force, flip, make_set, stored_contents


def _exact(index: BlockIndex, docs: dict[str, int], rng: random.Random, k: int = 3) -> None:
    queries = list(docs.values())[::5] + [flip(fp, rng.randrange(k + 1), rng) for fp in list(docs.values())[:25]]
    for query in queries:
        assert {h.doc_id: h.distance for h in index.query(query)} == brute_force(docs, query, k)
    assert index.query_many(queries) == [index.query(q) for q in queries]


def _batches(index: BlockIndex, docs: dict[str, int], size: int = 37) -> None:
    ids = list(docs)
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        index.query_insert_many([docs[d] for d in chunk], chunk, [float(i) for i in range(start, start + len(chunk))])


@pytest.mark.parametrize("skew", ["uniform", "one_block"])
def test_evictions_deletes_and_a_crash_keep_every_answer_exact(skew: str) -> None:
    """A tiny cache evicts roots with pending entries (written back as segments), deletes leave
    tombstones, checkpoints advance the watermark; a copy of the store taken without a close (a
    crash) opens with the entries of the records after the watermark redone."""
    rng = random.Random(5)
    docs = make_set(5, 3, 400, skew)
    store = MemoryStore()
    index = BlockIndex(None, k=3, store=store, sole_writer=True, cache_bytes=300 * RootArena.ENTRY_BYTES,
                       entry_limit=200, **FORCED)  # type: ignore[arg-type]
    _batches(index, docs)
    gone = rng.sample(sorted(docs), 60)
    for doc_id in gone:
        assert index.delete(doc_id)
        del docs[doc_id]
    assert index.expire(20.0) == sum(1 for i, d in enumerate(make_set(5, 3, 400, skew)) if i < 20 and d in docs)
    docs = {d: fp for i, (d, fp) in enumerate(make_set(5, 3, 400, skew).items()) if i >= 20 and d in docs}
    keys = [key for key, _ in store.scan_prefix(b"") if key[0] <= 3]
    assert any(key[3:4] == SEGMENT_TAG for key in keys), "evictions and checkpoints wrote segments"
    assert any(key[3:4] == ENTRY_TAG and not value for key, value in store.scan_prefix(b"") if key[0] <= 3)
    assert read_watermark(store) > 0, "checkpoints moved the watermark"
    _exact(index, docs, rng)
    crashed = MemoryStore()
    crashed.write_ops(list(store.scan_prefix(b"")))  # no write_pending, no close: what a crash leaves
    recovered = BlockIndex(None, k=3, store=crashed, cache_bytes=300 * RootArena.ENTRY_BYTES, **FORCED)  # type: ignore[arg-type]
    _exact(recovered, docs, rng)
    assert stored_contents(recovered) == stored_contents(index)


def test_a_load_folds_tombstones_and_segments_into_one_segment() -> None:
    """Reopened, a root with tombstones is rewritten as one segment when it is loaded; what it
    answers does not change."""
    rng = random.Random(6)
    docs = make_set(6, 3, 300, "uniform")
    store = MemoryStore()
    with BlockIndex(None, k=3, store=store, entry_limit=100) as index:
        _batches(index, docs)
        for doc_id in rng.sample(sorted(docs), 40):
            assert index.delete(doc_id)
            del docs[doc_id]
    tombstones = [key for key, value in store.scan_prefix(b"") if key[0] <= 3 and key[3:4] == ENTRY_TAG and not value]
    assert len(tombstones) == 4 * 40
    reopened = BlockIndex(None, k=3, store=store)
    _exact(reopened, docs, rng)  # loads roots: those it loads are folded
    left = [key for key, value in store.scan_prefix(b"") if key[0] <= 3 and key[3:4] == ENTRY_TAG and not value]
    assert len(left) < len(tombstones)
    folded = {key[:3] for key in tombstones} - {key[:3] for key in left}
    assert folded
    assert all(sum(1 for key, _ in store.scan_prefix(root) if key[3:4] == SEGMENT_TAG) <= 1 for root in folded)
    _exact(BlockIndex(None, k=3, store=store), docs, rng)


def test_a_store_of_entry_keys_only_opens_without_redoing_anything(tmp_path: Path) -> None:
    """A store of the format before segments (every entry a key) opens as this format: its config
    rewritten, the watermark at its next handle, nothing redone, every answer as before."""
    rng = random.Random(8)
    docs = make_set(8, 3, 200, "uniform")
    store = MemoryStore()
    with BlockIndex(None, k=3, store=store) as index:
        for doc_id, fp in docs.items():  # the one-document path writes entry keys
            index.insert(fp, doc_id)
    config = json.loads(store.get(CONFIG_KEY) or b"{}")
    store.put(CONFIG_KEY, json.dumps({**config, "version": 8}).encode())
    store.delete(WATERMARK_KEY)
    reopened = BlockIndex(None, k=3, store=store)
    assert json.loads(store.get(CONFIG_KEY) or b"{}")["version"] == config["version"]
    assert read_watermark(store) == int.from_bytes(store.get(HANDLE_KEY) or b"", "big")
    assert not any(key[3:4] == SEGMENT_TAG for key, _ in store.scan_prefix(b"") if key[0] <= 3)
    _exact(reopened, docs, rng)


_CHILD = textwrap.dedent("""
    import os, signal, sys
    from stream.index import BlockIndex
    from tests.index.helpers import make_set
    path = sys.argv[1]
    docs = make_set(9, 3, 3000, "one_block")
    index = BlockIndex(path, k=3)
    ids = list(docs)
    for start in range(0, len(ids), 256):
        index.query_insert_many([docs[d] for d in ids[start:start + 256]], ids[start:start + 256])
    index.flush()
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.integration  # starts a process of its own
def test_a_sigkilled_writers_entries_are_redone_on_open(tmp_path: Path) -> None:
    """A process that inserted batches, flushed and was SIGKILLed left its entries in memory only;
    the next open redoes them from the records."""
    path = str(tmp_path / "idx")
    root = str(Path(__file__).parents[2])
    child = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True, text=True, cwd=root,
                           env={**os.environ, "PYTHONPATH": root})
    assert child.returncode == -signal.SIGKILL, child.stderr
    recovered = BlockIndex(path, k=3)
    _exact(recovered, make_set(9, 3, 3000, "one_block"), random.Random(9))
    recovered.close()
