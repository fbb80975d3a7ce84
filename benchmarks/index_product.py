"""``python -m benchmarks index``'s product rows: the index as ``dedup scan`` and the service's probe stage run it.

A stream of whole fingerprints (streams.py: a SimHash distribution, 5% near copies, 16 LSH bands, the
serialized fingerprint as payload) goes through a ``Detector`` over an on-disk ``BlockIndex`` opened as
``dedup scan --state`` opens it (k = 3, the product's 24 band tables, no write-ahead log): ``probe_many``
in batches of ``--product-batch`` (the product's path), or ``probe`` once per document (the per-call
path, for comparison). Each variant builds ``--product-rounds`` times over the same stream and its row
is the build with the median wall clock (every build's figure is kept): on a shared VM one build can
run 20% slower than the next on the same code. Reported per document: query + insert +
verification over the whole build and over its last 10% (wall clock), CPU of the process (all
threads, RocksDB's included; ``probe_many`` freezes the collector's view after each batch, as
``dedup scan`` does after each chunk), documents with a verified match, candidates, disk bytes after a full
compaction. The peer, 1e0ng's ``simhash.SimhashIndex`` (k = 3, in RAM, SimHash only: no bands, no
payloads, no verification), is built over the same SimHashes (``add``) and then answers fresh queries
of the same distribution within a time budget; its q+i is add + query per document.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.index_runs import WARM_UP, run_peer, scratch_dir
from stream.batch.scan_state import state_index
from stream.detect import Detector, warm_up
from stream.fingerprint import Fingerprint
from stream.fingerprint.schema import FingerprintConfig
from stream.index import BlockIndex
from stream.storage import MemoryStore

K, BANDS = 3, FingerprintConfig().band_tables  # the product's band tables (16 + 8 prefix bands)


@dataclass
class ProductRow:
    distribution: str
    n: int
    variant: str  # "probe_many" (the product's path) | "probe" (one call per document) | "peer"
    near: float
    batch: int
    us_per_doc: float  # query + insert (+ verification for ours), wall clock, whole build
    tail_us_per_doc: float  # the same over the last 10% of the build
    cpu_us_per_doc: float  # process CPU time (all threads) per document, whole build
    matched_docs: int
    candidates: int
    disk_bytes_per_doc: float | None
    build_s: float
    peer_queries: int = 0
    round_us_per_doc: list[float] = field(default_factory=list)  # us_per_doc of every build, in order


def run_product(distribution: str, fps: list[Fingerprint], raws: list[bytes], variant: str, batch: int,
                near: float, tmp_root: Path) -> ProductRow:
    n = len(fps)
    orders = [(float(i), fp.doc_id) for i, fp in enumerate(fps)]
    tail_from = n - max(1, n // 10)
    with scratch_dir(tmp_root) as path:
        detector = Detector(state_index(str(path / "db"), K, BANDS))  # as dedup scan --state opens it
        clock = time.perf_counter
        matched, tail, tail_docs = 0, 0.0, 0
        cpu0, start = time.process_time(), clock()
        step = batch if variant == "probe_many" else 1
        for i in range(0, n, step):
            t0 = clock()
            if variant == "probe_many":
                found = detector.probe_many(fps[i : i + step], orders[i : i + step], fp_bytes=raws[i : i + step])
                gc.freeze()  # as dedup scan does after each chunk (stream/batch/scan.py)
            else:
                found = [detector.probe(fps[i], orders[i], fp_bytes=raws[i])]
            if i >= tail_from:
                tail += clock() - t0
                tail_docs += len(found)
            matched += sum(1 for matches in found if matches)
        build_s, cpu = clock() - start, time.process_time() - cpu0
        index = detector.index
        index.flush()
        index.store.compact()  # type: ignore[attr-defined]
        disk = index.store.disk_bytes() / n  # type: ignore[attr-defined]
        index.close()
    return ProductRow(distribution, n, variant, near, step, build_s / n * 1e6, tail / max(tail_docs, 1) * 1e6,
                      cpu / n * 1e6, matched, detector.candidates, disk, build_s)


def run_product_peer(distribution: str, fps: list[Fingerprint], queries: list[int], near: float,
                     budget_s: float, min_queries: int) -> ProductRow:
    row, _ = run_peer(distribution, [fp.simhash for fp in fps], queries, budget_s, min_queries)
    return ProductRow(distribution, len(fps), "peer", near, 1, row.query_plus_insert_us, float("nan"),
                      float("nan"), 0, 0, None, row.build_s, peer_queries=row.queries)


def product_rows(distribution: str, fps: list[Fingerprint], queries: list[int], variants: list[str], batch: int,
                 near: float, tmp_root: Path, budget_s: float, min_queries: int, rounds: int = 1) -> list[ProductRow]:
    raws = [fp.to_bytes() for fp in fps]
    gc.freeze()  # the benchmark's own stream is not the index's garbage: collections skip it
    rows = []
    for variant in variants:
        # compile the variant's kernels first: a fresh install has no numba cache, and its first
        # build would time the compiler (measured: 57 us/doc cold against 39 warm; the untimed build
        # alone left those of the paths it did not meet: 42.4 us/doc against 24.0 over the last 10%)
        warm_up(Detector(BlockIndex(None, K, bands=BANDS, store=MemoryStore())), fps[0])
        run_product(distribution, fps[:WARM_UP], raws[:WARM_UP], variant, batch, near, tmp_root)
        builds = [run_product(distribution, fps, raws, variant, batch, near, tmp_root) for _ in range(rounds)]
        rows.append(median_build(builds))
    rows.append(run_product_peer(distribution, fps, queries, near, budget_s, min_queries))
    gc.unfreeze()
    return rows


def median_build(builds: list[ProductRow]) -> ProductRow:
    """The build with the median wall clock (the upper one of an even count), with every build's figure."""
    row = sorted(builds, key=lambda build: build.us_per_doc)[len(builds) // 2]
    row.round_us_per_doc = [build.us_per_doc for build in builds]
    return row
