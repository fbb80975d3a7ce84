"""Band tables on disk (stream/index/bands/tables.py, stream/index/bands/runs.py): a memtable, sorted
runs, merges, reopening.

Every answer is compared with a dict model of (table, value) -> handles; memtables of a few dozen
entries make every path run: flushes, merges of runs of unequal size, a hot value whose entries span
pages, deletes of entries that sit in runs, a clean reopen and a crash that forces a rebuild."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from stream.index import BlockIndex
from stream.index.bands.runs import PAGE
from stream.index.bands.tables import MANIFEST, RUN_LAYOUT, BandTables


def _found(tables: BandTables, t: np.ndarray, v: np.ndarray) -> set[tuple[int, int]]:
    where, handles = tables.find_many(t, v)
    return set(zip(where.tolist(), handles.tolist(), strict=True))


def _expected(model: dict[tuple[int, int], set[int]], t: np.ndarray, v: np.ndarray) -> set[tuple[int, int]]:
    return {(q, h) for q, (ti, vi) in enumerate(zip(t.tolist(), v.tolist(), strict=True))
            for h in model.get((ti, vi), ())}


def test_runs_answer_as_the_model_through_flushes_merges_and_a_hot_value(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    tables = BandTables(tmp_path / "bands", memtable_entries=97)
    model: dict[tuple[int, int], set[int]] = defaultdict(set)
    hot = 12345
    for batch in range(40):
        n = 50
        t = rng.integers(4, 8, size=n)
        v = rng.integers(0, 2**64, size=n, dtype=np.uint64)
        v[:30] = hot  # one value: 300 entries per table by the end, more than a page (PAGE) holds
        h = np.arange(batch * n, (batch + 1) * n, dtype=np.uint64)
        if batch % 2:
            tables.add_many(t, v, h)
        else:
            where, found = tables.find_add_many(t, v, h)
            got = set(zip(where.tolist(), found.tolist(), strict=True))
            # a query finds what was there before it and the batch's earlier entries, not its own
            before = {(q, x) for q, x in _expected(model, t, v) if x < h[0]}
            earlier = {(q, int(h[j])) for q in range(n) for j in range(q)
                       if (int(t[j]), int(v[j])) == (int(t[q]), int(v[q]))}
            assert got == before | earlier
        for ti, vi, hi in zip(t.tolist(), v.tolist(), h.tolist(), strict=True):
            model[(ti, vi)].add(hi)
    assert len(tables.runs) >= 2, "several runs after merges"
    assert all(older.count > newer.count for older, newer in zip(tables.runs, tables.runs[1:], strict=False))
    keys = list(model)
    t = np.array([k[0] for k in keys[::7]] + [4, 5], dtype=np.int64)
    v = np.array([k[1] for k in keys[::7]] + [1, 2], dtype=np.uint64)
    assert _found(tables, t, v) == _expected(model, t, v)
    hot_rows = (np.arange(4, 8), np.full(4, hot, dtype=np.uint64))
    assert min(len(model[(t, hot)]) for t in range(4, 8)) > PAGE
    assert _found(tables, *hot_rows) == _expected(model, *hot_rows)
    assert len(tables) == sum(len(x) for x in model.values())


def test_a_persisted_run_set_reopens_only_with_its_stamp(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    tables = BandTables(tmp_path / "bands", memtable_entries=64)
    t, v = rng.integers(4, 6, size=300), rng.integers(0, 2**64, size=300, dtype=np.uint64)
    tables.add_many(t, v, np.arange(300, dtype=np.uint64))
    stamp = tables.persist()
    assert stamp is not None
    tables.close()
    again = BandTables(tmp_path / "bands", stamp, memtable_entries=64)
    assert again.reused and len(again) == 300
    assert _found(again, t[:10], v[:10]) >= {(q, q) for q in range(10)}
    again.close()
    stale = BandTables(tmp_path / "bands", b"another stamp", memtable_entries=64)
    assert not stale.reused and len(stale) == 0
    assert [p.name for p in (tmp_path / "bands").iterdir()] == [], "unusable runs are removed"


def test_runs_of_another_filter_layout_are_not_reused(tmp_path: Path) -> None:
    """Runs written before the filter's blocks followed the tag (a manifest without ``layout``) would
    answer from a filter addressed otherwise: the stamp matches, yet they are rebuilt."""
    tables = BandTables(tmp_path / "bands", memtable_entries=64)
    tables.add_many(np.full(100, 4), np.arange(100, dtype=np.uint64), np.arange(100, dtype=np.uint64))
    stamp = tables.persist()
    tables.close()
    manifest = tmp_path / "bands" / MANIFEST
    old = json.loads(manifest.read_text())
    assert old.pop("layout") == RUN_LAYOUT
    manifest.write_text(json.dumps(old))
    again = BandTables(tmp_path / "bands", stamp, memtable_entries=64)
    assert not again.reused and len(again) == 0


def _brute_band_mates(docs: dict[str, list[int]], query: list[int]) -> set[str]:
    return {doc for doc, values in docs.items() if any(a == b for a, b in zip(values, query, strict=True))}


_CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from stream.index import BlockIndex
    path, start = sys.argv[1], int(sys.argv[2])
    idx = BlockIndex(path, k=3, bands=3, band_memtable=50)
    rng = np.random.default_rng(start)
    bands = rng.integers(0, 1000, size=(200, 3, 2), dtype=np.uint64)  # small values: many mates
    fps = rng.integers(0, 2**64, size=200, dtype=np.uint64).tolist()
    idx.insert_many(fps, [f"d{start + i}" for i in range(200)], bands=bands)
    idx.flush()
    np.save(path + f".bands{start}.npy", bands)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.integration  # starts processes of its own
def test_band_mates_survive_a_clean_reopen_and_a_sigkill(tmp_path: Path) -> None:
    """A clean close keeps the runs; a SIGKILLed writer (its stamp gone, its runs of no use) makes the
    next open rebuild them from the records; both answer as brute force."""
    path = str(tmp_path / "idx")
    rng = np.random.default_rng(5)
    docs: dict[str, list[int]] = {}
    idx = BlockIndex(path, k=3, bands=3, band_memtable=50)
    bands = rng.integers(0, 1000, size=(300, 3, 2), dtype=np.uint64)
    idx.insert_many(rng.integers(0, 2**64, size=300, dtype=np.uint64).tolist(), [f"d{i}" for i in range(300)],
                    bands=bands)
    docs.update({f"d{i}": bands[i, :, 0].tolist() for i in range(300)})
    assert idx.delete("d7")
    del docs["d7"]
    idx.close()
    reopened = BlockIndex(path, k=3, bands=3, band_memtable=50)
    assert reopened.band_map.reused and len(reopened.band_map) == 3 * len(docs)
    assert len(reopened.band_map.memtable) == 0, "nothing rebuilt from the records"
    reopened.close()
    child = subprocess.run([sys.executable, "-c", _CHILD, path, "1000"], capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    extra = np.load(path + ".bands1000.npy")
    docs.update({f"d{1000 + i}": extra[i, :, 0].tolist() for i in range(200)})
    recovered = BlockIndex(path, k=3, bands=3, band_memtable=50)
    assert not recovered.band_map.reused, "a killed writer's runs are not trusted"
    for probe in range(0, 1000, 37):
        query = [probe, (probe * 7) % 1000, (probe * 13) % 1000]
        got = {h.doc_id for h in recovered.query(0xDEADBEEF, bands=[(q, 0) for q in query]) if h.via == "band"}
        assert got == _brute_band_mates(docs, query)
    recovered.close()
    assert os.path.isdir(Path(path) / "bands")


def test_runs_beside_a_callers_store_are_rebuilt_from_its_records_when_reopened_without_their_stamp(
        tmp_path: Path) -> None:
    """The service's case: a changelog-backed store and a band directory. Reopened without a close (as
    after a SIGKILL, the store restored with more records than the runs on disk know of), the runs are
    rebuilt from the records and answer as brute force."""
    from stream.storage import MemoryStore

    runs = tmp_path / "runs"
    store = MemoryStore()
    rng = np.random.default_rng(6)
    bands = rng.integers(0, 1000, size=(300, 3, 2), dtype=np.uint64)
    first = BlockIndex(None, k=3, bands=3, store=store, sole_writer=True, band_memtable=50, band_dir=runs)
    first.insert_many(rng.integers(0, 2**64, size=300, dtype=np.uint64).tolist(), [f"d{i}" for i in range(300)],
                      bands=bands)
    assert first.band_map.runs and len(first.band_map.memtable) < 50, "older entries went to disk"
    docs = {f"d{i}": bands[i, :, 0].tolist() for i in range(300)}
    stale_runs = {p.name for p in runs.iterdir()}
    del first  # never closed: no stamp in the store
    second = BlockIndex(None, k=3, bands=3, store=store, sole_writer=True, band_memtable=50, band_dir=runs)
    assert not second.band_map.reused and not stale_runs & {p.name for p in runs.iterdir()}
    more = rng.integers(0, 1000, size=(100, 3, 2), dtype=np.uint64)
    second.insert_many(rng.integers(0, 2**64, size=100, dtype=np.uint64).tolist(),
                       [f"e{i}" for i in range(100)], bands=more)
    docs.update({f"e{i}": more[i, :, 0].tolist() for i in range(100)})
    for probe in range(0, 1000, 37):
        query = [probe, (probe * 7) % 1000, (probe * 13) % 1000]
        got = {h.doc_id for h in second.query(0xDEADBEEF, bands=[(q, 0) for q in query]) if h.via == "band"}
        assert got == _brute_band_mates(docs, query)
