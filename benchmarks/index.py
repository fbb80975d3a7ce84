"""``python -m benchmarks index``: the block index on disk vs itself without re-splitting vs simhash.SimhashIndex.

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
import shutil
from collections.abc import Callable
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path

import click
import numpy as np

from benchmarks.common import commit, machine, pyplot, stamp
from benchmarks.index_product import ProductRow, product_rows
from benchmarks.index_runs import K, Row, fingerprints, run_ours, run_peer, skew_sweep
from benchmarks.streams import stream


def print_table(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="python -m benchmarks index (k = 3, on disk; peer in RAM)")
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
    if not sweep:
        return

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
@click.option("--product-rounds", default=3, show_default=True, type=click.IntRange(min=1),
              help="Builds per product variant; its row is the median one (every build's figure is kept).")
@click.option("--near", default=0.05, show_default=True, help="Share of near copies in the product stream.")
@click.option("--out", default="bench-results/index", show_default=True, type=click.Path(path_type=Path),
              help="Where the JSON and PNG go.")
def command(
    sizes: str, queries: int, distributions: str, peer_max: int, peer_seconds: float, peer_min_queries: int,
    sweep: str, sweep_size: int, min_split: int | None, variants: str, batch: int, product_sizes: str,
    product_distributions: str, product_variants: str, product_batch: int, product_rounds: int, near: float,
    out: Path,
) -> None:
    """Block index vs no re-splitting vs simhash.SimhashIndex: latency, candidates, disk bytes; and the
    product's path (Detector.probe_many on disk) on a stream with near copies, beside the peer."""
    unknown = set(product_variants.split(",")) - {"probe_many", "probe"} - {""}
    if unknown:
        raise click.BadParameter(f"{', '.join(sorted(unknown))}: the product variants are probe_many and probe "
                                 "(the peer always runs)", param_hint="--product-variants")
    out.mkdir(parents=True, exist_ok=True)
    tmp_root = out / "tmp"
    rows: list[Row] = []

    def log(message: str) -> None:
        click.echo(message, err=True)

    product = run_product_rows(product_sizes, product_distributions, product_variants, product_batch, product_rounds,
                               near, queries, tmp_root, peer_seconds, peer_min_queries, log)

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
    charts = [out / "latency_vs_n.png"] if rows or sweep_rows else []
    charts += [out / "candidates_vs_skew.png"] if sweep_rows else []
    charts += [out / "product.png"] if product else []
    click.echo(f"saved {out / 'results.json'}" + "".join(f", {chart}" for chart in charts))


def run_product_rows(sizes: str, distributions: str, variants: str, batch: int, rounds: int, near: float,
                     queries: int, tmp_root: Path, peer_seconds: float, peer_min_queries: int,
                     log: Callable[[str], None]) -> list[ProductRow]:
    out: list[ProductRow] = []
    for n in _ints(sizes):
        for distribution in distributions.split(","):
            log(f"product stream {distribution} N={n:,}: making fingerprints (~0.5 ms each)")
            fps = stream(distribution, n, near=near)
            rows = product_rows(distribution, fps, fingerprints(distribution, queries, seed=2),
                                variants.split(","), batch, near, tmp_root, peer_seconds, peer_min_queries, rounds)
            for row in rows:
                builds = " / ".join(f"{us:.1f}" for us in row.round_us_per_doc)
                log(f"product {distribution} N={n:,} {row.variant}: {row.us_per_doc:.1f} us/doc "
                    f"(tail {row.tail_us_per_doc:.1f}{', builds ' + builds if builds else ''}), "
                    f"{row.matched_docs} matched")
            out += rows
    return out


def print_product(rows: list[ProductRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="the product's path: Detector on disk, k = 3, 24 band tables, payloads, near copies "
                        "(the median build; peer in RAM)")
    for col in ("dist", "N", "variant", "batch", "q+i us", "builds", "tail", "cpu us", "matched", "candidates",
                "B/doc"):
        table.add_column(col, justify="right")
    for r in rows:
        spread = f"{min(r.round_us_per_doc):.1f}-{max(r.round_us_per_doc):.1f}" if r.round_us_per_doc else "-"
        table.add_row(r.distribution, f"{r.n:,}", r.variant, str(r.batch), f"{r.us_per_doc:.1f}", spread,
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
    built = [i for i, r in enumerate(rows) if r.round_us_per_doc]  # from the fastest build to the slowest
    ax.errorbar([rows[i].us_per_doc for i in built], built, fmt="none", ecolor="black", capsize=4,
                xerr=[[rows[i].us_per_doc - min(rows[i].round_us_per_doc) for i in built],
                      [max(rows[i].round_us_per_doc) - rows[i].us_per_doc for i in built]])
    ax.axvline(25, color="red", ls="--", lw=1, label="target: 25 us per document")
    ax.set_xscale("log")
    ax.set_xlabel("query + insert, us per document (wall clock; ours: on disk, verified, the median build)")
    ax.set_title("the product's path vs simhash.SimhashIndex")
    ax.legend(loc="lower right")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, {"simhash": version("simhash")})
    fig.savefig(out / "product.png", dpi=110)
    plt.close(fig)
