"""``dedup bench index``: the block index on disk vs itself without re-splitting vs simhash.SimhashIndex.

For each distribution (uniform; skewed: 20% of fingerprints share one 16-bit block value; zipf: every
16-bit block drawn from a Zipf law, exponent 1, over its 2^16 values) and size N it builds an on-disk
index the streaming way (query, then insert, per document), then runs ``--queries`` fresh queries
from the same distribution. Reported per document: insert and query time, candidates per query,
disk bytes per fingerprint (RocksDB directory after flush + full compaction). The peer (1e0ng's
SimhashIndex, k = 3, in RAM) is built by ``add`` alone (its queries degrade to scans under skew) up to
``--peer-max`` documents, and its answers are checked against ours. Its queries degrade to scans under
skew (~0.1-0.3 s each at 1M), so it answers queries until ``--peer-seconds`` of query time are spent
(at least ``--peer-min-queries``); each row records how many queries it ran. A skew sweep (fraction
of fingerprints sharing one block) shows candidates per query for the three variants.

Variants of ours: ``split`` (one query and one insert call per document), ``batch`` (the same index
fed by ``query_insert_many`` in chunks of ``--batch``; its calls query and insert at once, so its
q+i is the build's time per document over the last 10%, i.e. at 0.9N..N, its query time is
``query_many`` on the fresh queries, and insert = q+i - query), ``nosplit`` (re-splitting off).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np

from stream.bench.common import commit, machine, pyplot, stamp
from stream.index import BlockIndex, RocksStore

if TYPE_CHECKING:
    from stream.bench.index_product import ProductRow

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


def run_ours(
    distribution: str, fps: list[int], queries: list[int], variant: str, tmp_root: Path, min_split: int | None,
    batch: int = 1024,
) -> tuple[Row, list[set[str]]]:
    n = len(fps)
    kwargs: dict[str, object] = {"resplit": variant != "nosplit"}
    if min_split is not None:
        kwargs["min_split"] = min_split
    with scratch_dir(tmp_root) as path:
        index = BlockIndex(str(path / "db"), k=K, **kwargs)  # type: ignore[arg-type]
        ids = [f"doc-{i}" for i in range(n)]
        times = [float(i) for i in range(n)]
        tail_from = n - max(1, n // 10)
        t_query = t_insert = t_tail = 0.0
        tail_docs = 0
        clock = time.perf_counter
        start = clock()
        if variant == "batch":
            # one query_insert_many call per chunk; its query and insert parts are not timed apart:
            # q+i is taken over the last 10% of the build (the index at 0.9N..N), see the row
            for i in range(0, n, batch):
                chunk = slice(i, i + batch)
                t0 = clock()
                index.query_insert_many(fps[chunk], ids[chunk], times[chunk])
                t2 = clock()
                t_insert += t2 - t0
                if i >= tail_from:
                    t_tail += t2 - t0
                    tail_docs += len(ids[chunk])
        else:
            for i, fp in enumerate(fps):
                t0 = clock()
                index.query(fp)
                t1 = clock()
                index.insert(fp, ids[i], ts=times[i])
                t2 = clock()
                t_query += t1 - t0
                t_insert += t2 - t1
                if i >= tail_from:
                    t_tail += t2 - t0
                    tail_docs += 1
        build_s = clock() - start
        before = index.stats().kinds["simhash"]
        answers: list[set[str]] = []
        t0 = clock()
        if variant == "batch":
            for i in range(0, len(queries), batch):
                answers += [{hit.doc_id for hit in hits} for hits in index.query_many(queries[i : i + batch])]
        else:
            for fp in queries:
                answers.append({hit.doc_id for hit in index.query(fp)})
        query_s = clock() - t0
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
        stats = index.stats()
        index.close()
    query_us = query_s / max(len(queries), 1) * 1e6
    tail_us = t_tail / max(tail_docs, 1) * 1e6
    # batch: the build's calls query and insert at once; insert = q+i at N (the tail) - a fresh query
    insert_us = tail_us - query_us if variant == "batch" else t_insert / n * 1e6
    row = Row(
        distribution=distribution,
        n=n,
        variant=variant,
        insert_us=insert_us,
        build_query_us=float("nan") if variant == "batch" else t_query / n * 1e6,
        query_us=query_us,
        query_plus_insert_us=query_us + insert_us,
        tail_query_plus_insert_us=tail_us,
        candidates_mean=candidates,
        candidates_max=after.candidates_max,
        hits_per_query=sum(map(len, answers)) / max(len(answers), 1),
        disk_bytes_per_fp=disk_per_fp,
        splits=stats.splits,
        build_s=build_s,
        queries=len(queries),
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


def print_table(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="dedup bench index (k = 3, on disk; peer in RAM)")
    for col in ("dist", "N", "variant", "insert us", "query us", "q+i us", "tail q+i", "cand/q", "max", "B/fp",
                "splits", "queries", "agree"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r.distribution, f"{r.n:,}", r.variant, f"{r.insert_us:.1f}", f"{r.query_us:.1f}",
            f"{r.query_plus_insert_us:.1f}",
            "-" if np.isnan(r.tail_query_plus_insert_us) else f"{r.tail_query_plus_insert_us:.1f}",
            f"{r.candidates_mean:.0f}", f"{r.candidates_max:,}",
            "-" if r.disk_bytes_per_fp is None else f"{r.disk_bytes_per_fp:.1f}", str(r.splits), str(r.queries),
            "-" if r.agrees_with_peer is None else str(r.agrees_with_peer),
        )
    Console(width=200).print(table)


def plot(rows: list[Row], sweep: list[dict[str, object]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
    for ax, distribution in zip(axes, ("uniform", "skewed", "zipf"), strict=True):
        for variant, style in (("split", "o-"), ("batch", "D-"), ("nosplit", "s--"), ("peer", "^:")):
            pts = sorted((r.n, r.query_plus_insert_us) for r in rows if r.distribution == distribution
                         and r.variant == variant)
            if pts:
                ax.plot(*zip(*pts, strict=True), style, label=variant)
        ax.axhline(25, color="grey", lw=0.8, ls="--", label="target 25 us")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(distribution)
        ax.set_xlabel("indexed fingerprints N")
    axes[0].set_ylabel("query + insert, us per document")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "latency_vs_n.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant, style in (("split", "o-"), ("nosplit", "s--"), ("peer", "^:")):
        sweep_pts = [
            (float(str(s["fraction"])), float(str(s["candidates_mean"]))) for s in sweep if s["variant"] == variant
        ]
        if sweep_pts:
            ax.plot(*zip(*sweep_pts, strict=True), style, label=variant)
    ax.set_yscale("log")
    ax.set_xlabel("fraction of fingerprints sharing one 16-bit block")
    ax.set_ylabel("candidates per query")
    ax.set_title("candidates vs skew")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "candidates_vs_skew.png", dpi=110)
    plt.close(fig)


# -- command --------------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


@click.command("index")
@click.option("--sizes", default="100000,1000000", show_default=True, help="Index sizes N, comma separated.")
@click.option("--queries", default=2000, show_default=True, help="Fresh queries after each build.")
@click.option("--distributions", default="uniform,skewed,zipf", show_default=True,
              help="Fingerprint distributions of the build runs.")
@click.option("--peer-max", default=1_000_000, show_default=True, help="Largest N for simhash.SimhashIndex.")
@click.option("--peer-seconds", default=60.0, show_default=True, help="Query time budget of the peer per run.")
@click.option("--peer-min-queries", default=100, show_default=True,
              help="Queries the peer answers at least (it is slow under skew).")
@click.option("--sweep", default="0,0.05,0.1,0.2,0.4", show_default=True, help="Skew fractions ('' to skip).")
@click.option("--sweep-size", default=100_000, show_default=True, help="Documents of each skew-sweep run.")
@click.option("--min-split", type=int, default=None, help="Override BlockIndex min_split.")
@click.option("--variants", default="split,batch,nosplit", show_default=True,
              help="Our variants: split (one call per document), batch (query_many/insert_many), nosplit.")
@click.option("--batch", default=1024, show_default=True, help="Documents per call of the batch variant.")
@click.option("--product-sizes", default="120000", show_default=True,
              help="Stream sizes of the product rows (Detector, fingerprints with bands and payloads; '' to skip).")
@click.option("--product-distributions", default="skewed", show_default=True,
              help="Distributions of the product-path runs.")
@click.option("--product-variants", default="probe_many,probe", show_default=True,
              help="probe_many (batches: the product's path) and/or probe (one call per document).")
@click.option("--product-batch", default=512, show_default=True, help="Documents per probe_many call.")
@click.option("--near", default=0.05, show_default=True, help="Share of near copies in the product stream.")
@click.option("--out", default="bench-results/index", show_default=True, type=click.Path(path_type=Path),
              help="Where the JSON and PNG go.")
def command(
    sizes: str, queries: int, distributions: str, peer_max: int, peer_seconds: float, peer_min_queries: int,
    sweep: str, sweep_size: int, min_split: int | None, variants: str, batch: int, product_sizes: str,
    product_distributions: str, product_variants: str, product_batch: int, near: float, out: Path,
) -> None:
    """Block index vs no re-splitting vs simhash.SimhashIndex: latency, candidates, disk bytes; and the
    product's path (Detector.probe_many on disk) on a stream with near copies, beside the peer."""
    out.mkdir(parents=True, exist_ok=True)
    tmp_root = out / "tmp"
    rows: list[Row] = []

    def log(message: str) -> None:
        click.echo(message, err=True)

    product = run_product_rows(product_sizes, product_distributions, product_variants, product_batch, near, queries,
                               tmp_root, peer_seconds, peer_min_queries, log)

    for n in _ints(sizes):
        for distribution in distributions.split(","):
            fps = fingerprints(distribution, n, seed=1)
            qs = fingerprints(distribution, queries, seed=2)
            peer_answers = None
            if n <= peer_max:
                peer_row, peer_answers = run_peer(distribution, fps, qs, peer_seconds, peer_min_queries)
                rows.append(peer_row)
                log(f"{distribution} N={n:,} peer: {peer_row.query_plus_insert_us:.1f} us/doc "
                    f"({peer_row.queries} queries)")
            for variant in variants.split(","):
                row, answers = run_ours(distribution, fps, qs, variant, tmp_root, min_split, batch)
                if peer_answers is not None:
                    row.agrees_with_peer = answers[: len(peer_answers)] == peer_answers
                rows.append(row)
                log(f"{distribution} N={n:,} {variant}: {row.query_plus_insert_us:.1f} us/doc, "
                    f"{row.candidates_mean:.0f} cand/q, {row.disk_bytes_per_fp} B/fp ({row.build_s:.0f} s build)")
    fractions = [float(x) for x in sweep.split(",") if x]
    sweep_rows = skew_sweep(fractions, sweep_size, queries, tmp_root, peer=sweep_size <= peer_max, log=log)
    shutil.rmtree(tmp_root, ignore_errors=True)
    print_table(rows)
    print_product(product)
    (out / "results.json").write_text(json.dumps({
        "k": K, "machine": machine(), "commit": commit(), "peer": f"simhash {version('simhash')} (SimhashIndex)",
        "rows": [asdict(r) for r in rows], "skew_sweep": sweep_rows, "product": [asdict(r) for r in product],
    }, indent=2))
    if rows or sweep_rows:
        plot(rows, sweep_rows, out)
    if product:
        plot_product(product, out)
    charts = ([out / "latency_vs_n.png", out / "candidates_vs_skew.png"] if rows or sweep_rows else [])
    charts += [out / "product.png"] if product else []
    click.echo(f"saved {out / 'results.json'}" + "".join(f", {chart}" for chart in charts))


def run_product_rows(sizes: str, distributions: str, variants: str, batch: int, near: float, queries: int,
                     tmp_root: Path, peer_seconds: float, peer_min_queries: int,
                     log: Callable[[str], None]) -> list[ProductRow]:
    from stream.bench.index_product import product_rows
    from stream.bench.streams import stream

    out: list[ProductRow] = []
    for n in _ints(sizes):
        for distribution in distributions.split(","):
            log(f"product stream {distribution} N={n:,}: making fingerprints (~0.5 ms each)")
            fps = stream(distribution, n, near=near)
            rows = product_rows(distribution, fps, fingerprints(distribution, queries, seed=2),
                                variants.split(","), batch, near, tmp_root, peer_seconds, peer_min_queries)
            for row in rows:
                log(f"product {distribution} N={n:,} {row.variant}: {row.us_per_doc:.1f} us/doc "
                    f"(tail {row.tail_us_per_doc:.1f}), {row.matched_docs} matched")
            out += rows
    return out


def print_product(rows: list[ProductRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="the product's path: Detector on disk, k = 3, 24 band tables, payloads, near copies "
                        "(peer in RAM)")
    for col in ("dist", "N", "variant", "batch", "q+i us", "tail", "cpu us", "matched", "candidates", "B/doc"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r.distribution, f"{r.n:,}", r.variant, str(r.batch), f"{r.us_per_doc:.1f}",
                      "-" if r.tail_us_per_doc != r.tail_us_per_doc else f"{r.tail_us_per_doc:.1f}",
                      "-" if r.cpu_us_per_doc != r.cpu_us_per_doc else f"{r.cpu_us_per_doc:.1f}",
                      f"{r.matched_docs:,}", f"{r.candidates:,}",
                      "-" if r.disk_bytes_per_doc is None else f"{r.disk_bytes_per_doc:.0f}")
    Console(width=160).print(table)


def plot_product(rows: list[ProductRow], out: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    labels = [f"{r.variant} ({r.distribution} {r.n // 1000}k)" for r in rows]
    ax.barh(labels, [r.us_per_doc for r in rows], color=["grey" if r.variant == "peer" else "tab:blue" for r in rows])
    ax.axvline(25, color="red", ls="--", lw=1, label="target: 25 us per document")
    ax.set_xscale("log")
    ax.set_xlabel("query + insert, us per document (wall clock; ours on disk with verification)")
    ax.set_title("the product's path vs simhash.SimhashIndex")
    ax.legend(loc="lower right")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, {"simhash": version("simhash")})
    fig.savefig(out / "product.png", dpi=110)
    plt.close(fig)
