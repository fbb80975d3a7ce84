"""The runs of ``python -m benchmarks index``: build our index or the peer on a fingerprint distribution, time it.

``fingerprints`` draws the distributions (uniform; skewed: 20% share one 16-bit block; zipf), ``run_ours``
builds and queries one variant of the block index on disk, ``run_peer`` the peer (simhash.SimhashIndex),
``skew_sweep`` counts candidates per query against skew. The command and its charts are in index.py.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from stream.index import BlockIndex
from stream.storage import RocksStore

K = 3
HOT_BLOCK = 0xBEEF  # the shared top block of the skewed distribution (same for data and queries)
ZIPF_EXPONENT = 1.0


@dataclass
class Row:
    distribution: str
    n: int
    variant: str  # "split" | "batch" (split, batch calls) | "nosplit" | "peer"
    insert_us: float  # per document, over the whole build
    build_query_us: float  # per document, queries during the build (index of size 0..N)
    query_us: float  # per query, after the build (index of size N)
    query_plus_insert_us: float  # query_us + insert_us
    tail_query_plus_insert_us: float  # build query + insert over the last 10% of the build
    candidates_mean: float
    candidates_max: int
    hits_per_query: float
    disk_bytes_per_fp: float | None
    splits: int
    build_s: float
    agrees_with_peer: bool | None = None  # on the queries the peer answered
    queries: int = 0  # fresh queries measured after the build


# -- data -----------------------------------------------------------------------------------------


def fingerprints(distribution: str, n: int, seed: int, hot_fraction: float = 0.2) -> list[int]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
    if distribution == "skewed":
        hot = rng.random(n) < hot_fraction
        fps[hot] = (fps[hot] & np.uint64((1 << 48) - 1)) | np.uint64(HOT_BLOCK << 48)
    elif distribution == "zipf":
        weights = 1.0 / np.arange(1, (1 << 16) + 1) ** ZIPF_EXPONENT
        weights /= weights.sum()
        # A fixed permutation per block maps ranks to values, shared by data and queries.
        perms = np.random.default_rng(12345).permuted(np.tile(np.arange(1 << 16, dtype=np.uint64), (4, 1)), axis=1)
        fps = np.zeros(n, dtype=np.uint64)
        for block in range(4):
            ranks = rng.choice(1 << 16, size=n, p=weights)
            fps |= perms[block][ranks] << np.uint64(16 * block)
    elif distribution != "uniform":
        raise click.BadParameter(f"unknown distribution {distribution}")
    return [int(x) for x in fps]


# -- measurements ---------------------------------------------------------------------------------


@contextmanager
def scratch_dir(root: Path) -> Iterator[Path]:
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="index-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class BuildTimes:
    """Seconds spent building an index: querying, inserting, and both over the last 10% of the build."""

    query: float = 0.0
    insert: float = 0.0
    tail: float = 0.0
    tail_docs: int = 0
    total: float = 0.0


WARM_UP = 3_000  # documents of the untimed build before each timed one


def build(index: BlockIndex, fps: list[int], variant: str, batch: int) -> BuildTimes:
    """Index ``fps`` the streaming way (query, then insert, per document; ``batch``: one
    ``query_insert_many`` call per chunk, whose query and insert parts are not timed apart, so q+i is
    taken over the last 10% of the build, the index at 0.9N..N)."""
    n, clock, times = len(fps), time.perf_counter, BuildTimes()
    ids, ts = [f"doc-{i}" for i in range(n)], [float(i) for i in range(n)]
    tail_from = n - max(1, n // 10)
    start = clock()
    step = batch if variant == "batch" else 1
    for i in range(0, n, step):
        t0 = clock()
        if variant == "batch":
            index.query_insert_many(fps[i : i + step], ids[i : i + step], ts[i : i + step])
            t1 = t0
        else:
            index.query(fps[i])
            t1 = clock()
            index.insert(fps[i], ids[i], ts=ts[i])
        t2 = clock()
        times.query, times.insert = times.query + t1 - t0, times.insert + t2 - t1
        if i >= tail_from:
            times.tail += t2 - t0
            times.tail_docs += len(ids[i : i + step])
    times.total = clock() - start
    return times


def fresh_queries(index: BlockIndex, queries: list[int], variant: str, batch: int) -> tuple[list[set[str]], float]:
    """The ids each query finds, and the seconds all took."""
    answers: list[set[str]] = []
    t0 = time.perf_counter()
    if variant == "batch":
        for i in range(0, len(queries), batch):
            answers += [{hit.doc_id for hit in hits} for hits in index.query_many(queries[i : i + batch])]
    else:
        answers = [{hit.doc_id for hit in index.query(fp)} for fp in queries]
    return answers, time.perf_counter() - t0


def run_ours(
    distribution: str, fps: list[int], queries: list[int], variant: str, tmp_root: Path, min_split: int | None,
    batch: int = 1024,
) -> tuple[Row, list[set[str]]]:
    n = len(fps)
    kwargs: dict[str, object] = {"resplit": variant != "nosplit"}
    if min_split is not None:
        kwargs["min_split"] = min_split
    with scratch_dir(tmp_root) as path:  # compile the variant's kernels first (a fresh install has no cache)
        warm = BlockIndex(str(path / "warm"), k=K, **kwargs)  # type: ignore[arg-type]
        build(warm, fps[:WARM_UP], variant, batch)
        fresh_queries(warm, queries[:100], variant, batch)
        warm.close()
    with scratch_dir(tmp_root) as path:
        index = BlockIndex(str(path / "db"), k=K, **kwargs)  # type: ignore[arg-type]
        times = build(index, fps, variant, batch)
        before = index.stats().kinds["simhash"]
        answers, query_s = fresh_queries(index, queries, variant, batch)
        after = index.stats().kinds["simhash"]
        phase_queries = after.queries - before.queries
        candidates = (after.candidates_mean * after.queries - before.candidates_mean * before.queries) / max(
            phase_queries, 1
        )
        index.flush()
        store = index.store
        assert isinstance(store, RocksStore)  # the index opened it at path
        store.compact()
        disk_per_fp = store.disk_bytes() / n
        splits = index.stats().splits
        index.close()
    query_us = query_s / max(len(queries), 1) * 1e6
    tail_us = times.tail / max(times.tail_docs, 1) * 1e6
    # batch: the build's calls query and insert at once; insert = q+i at N (the tail) - a fresh query
    insert_us = tail_us - query_us if variant == "batch" else times.insert / n * 1e6
    row = Row(
        distribution=distribution, n=n, variant=variant, insert_us=insert_us,
        build_query_us=float("nan") if variant == "batch" else times.query / n * 1e6,
        query_us=query_us, query_plus_insert_us=query_us + insert_us, tail_query_plus_insert_us=tail_us,
        candidates_mean=candidates, candidates_max=after.candidates_max,
        hits_per_query=sum(map(len, answers)) / max(len(answers), 1), disk_bytes_per_fp=disk_per_fp,
        splits=splits, build_s=times.total, queries=len(queries),
    )
    return row, answers


def run_peer(
    distribution: str, fps: list[int], queries: list[int], budget_s: float = float("inf"), min_queries: int = 100
) -> tuple[Row, list[set[str]]]:
    from simhash import Simhash, SimhashIndex  # the peer is a bench-only dependency

    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on every big bucket
    n = len(fps)
    index = SimhashIndex([], f=64, k=K)
    clock = time.perf_counter
    start = clock()
    for i, fp in enumerate(fps):
        index.add(f"doc-{i}", Simhash(fp, f=64))
    build_s = clock() - start
    answers: list[set[str]] = []
    candidates: list[int] = []
    t_query = 0.0
    for fp in queries:
        if t_query > budget_s and len(answers) >= min_queries:
            break
        sim = Simhash(fp, f=64)
        candidates.append(sum(len(index.bucket.get(key, ())) for key in index.get_keys(sim)))
        t0 = clock()
        answers.append(set(index.get_near_dups(sim)))
        t_query += clock() - t0
    insert_us = build_s / n * 1e6
    query_us = t_query / max(len(answers), 1) * 1e6
    row = Row(
        distribution=distribution,
        n=n,
        variant="peer",
        insert_us=insert_us,
        build_query_us=float("nan"),
        query_us=query_us,
        query_plus_insert_us=query_us + insert_us,
        tail_query_plus_insert_us=float("nan"),
        candidates_mean=float(np.mean(candidates)) if candidates else 0.0,
        candidates_max=max(candidates, default=0),
        hits_per_query=sum(map(len, answers)) / max(len(answers), 1),
        disk_bytes_per_fp=None,  # in RAM only
        splits=0,
        build_s=build_s,
        queries=len(answers),
    )
    return row, answers


def skew_sweep(
    fractions: list[float], n: int, queries: int, tmp_root: Path, peer: bool, log: Callable[[str], None]
) -> list[dict[str, object]]:
    """Candidates per query as the shared-block fraction grows (split vs nosplit vs peer)."""
    out: list[dict[str, object]] = []
    for fraction in fractions:
        fps = fingerprints("skewed", n, seed=1, hot_fraction=fraction)
        qs = fingerprints("skewed", queries, seed=2, hot_fraction=fraction)
        for variant in ("split", "nosplit"):
            index = BlockIndex(k=K, resplit=variant == "split")  # in memory: candidates do not depend on storage
            for i, fp in enumerate(fps):
                index.insert(fp, f"doc-{i}")
            for fp in qs:
                index.query(fp)
            stats = index.stats().kinds["simhash"]
            out.append({"fraction": fraction, "variant": variant, "candidates_mean": stats.candidates_mean})
        if peer:
            row, _ = run_peer("skewed", fps, qs[: min(len(qs), 300)])
            out.append({"fraction": fraction, "variant": "peer", "candidates_mean": row.candidates_mean})
        log(f"sweep {fraction:.2f}: " + ", ".join(f"{r['variant']}={r['candidates_mean']:.0f}" for r in out[-3:]))
    return out


# -- output ---------------------------------------------------------------------------------------
