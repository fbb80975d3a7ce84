"""``python -m benchmarks html``: web pages per second, ``dedup scan`` against the extractors alone.

Whole processes, the same pages, in the same run: each round starts, in turn, a process that only
extracts every page with one extractor (``trafilatura.extract(html)`` with its defaults, the peer
named by issue 21; trafilatura with ``fast=True``; resiliparse's ``extract_plain_text(main_content=
True)``) and ``dedup scan`` over the same JSONL (default settings, verdicts to /dev/null). Rounds
are interleaved and repeated; a method's pages/s is the page count over its median wall time, and
the ratio ``dedup scan`` / ``trafilatura.extract`` is the median of the per-round ratios. Child CPU
time is recorded as well (the machine is shared). The extraction figures of ``python -m benchmarks crawl``
(fidelity, agreement across templates) are added for the extractors compared.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

from benchmarks.common import DEFAULT_OUT, children_cpu_seconds, commit, pyplot, save_json, stamp, versions
from benchmarks.web.evaluate import extraction_figures, load_pages, load_truth
from benchmarks.web.tracks import DEFAULT_CACHE, track_paths

# Each peer reads the same JSONL and extracts every page; nothing else.
_READ = "import json,sys\npages=[json.loads(l)['text'] for l in open(sys.argv[1],encoding='utf-8')]\n"
PEERS = {
    "trafilatura.extract": _READ + "import trafilatura\nfor p in pages: trafilatura.extract(p)\n",
    "trafilatura.extract(fast=True)": _READ + "import trafilatura\nfor p in pages: trafilatura.extract(p, fast=True)\n",
    "resiliparse": _READ + (
        "from resiliparse.extract.html2text import extract_plain_text\n"
        "for p in pages: extract_plain_text(p, main_content=True)\n"),
}
OURS = "dedup scan"
BASELINE = "trafilatura.extract"


def _command(method: str, path: Path) -> list[str]:
    if method == OURS:
        return [sys.executable, "-m", "stream", "scan", str(path), "--out", os.devnull]
    return [sys.executable, "-c", PEERS[method], str(path)]


def run_once(method: str, path: Path) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one whole process."""
    before = children_cpu_seconds()
    started = time.perf_counter()
    done = subprocess.run(_command(method, path), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise click.ClickException(f"{method} failed: {done.stderr.strip()[-500:]}")
    return wall, children_cpu_seconds() - before


def measure(path: Path, pages: int, rounds: int, methods: list[str]) -> dict[str, Any]:
    walls: dict[str, list[float]] = {m: [] for m in methods}
    cpus: dict[str, list[float]] = {m: [] for m in methods}
    for r in range(rounds):
        order = methods if r % 2 == 0 else methods[::-1]  # neither side always runs first
        for method in order:
            wall, cpu = run_once(method, path)
            walls[method].append(wall)
            cpus[method].append(cpu)
    out: dict[str, Any] = {}
    for m in methods:
        out[m] = {"pages_per_s": round(pages / statistics.median(walls[m]), 1),
                  "pages_per_cpu_s": round(pages / statistics.median(cpus[m]), 1),
                  "wall_s": [round(w, 3) for w in walls[m]], "cpu_s": [round(c, 3) for c in cpus[m]]}
    if OURS in methods and BASELINE in methods:
        ratios = [b / o for o, b in zip(walls[OURS], walls[BASELINE], strict=True)]
        cpu_ratios = [b / o for o, b in zip(cpus[OURS], cpus[BASELINE], strict=True)]
        out["ratio_scan_vs_trafilatura"] = {"wall_median": round(statistics.median(ratios), 3),
                                            "wall_min": round(min(ratios), 3), "wall_max": round(max(ratios), 3),
                                            "cpu_median": round(statistics.median(cpu_ratios), 3)}
    return out


def peer_versions() -> dict[str, str]:
    found = {}
    for name in ("trafilatura", "resiliparse", "lxml"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def chart(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items(), strict=True):
        speed = res["speed"]
        labels = [m for m in speed if not m.startswith("ratio")]
        ax.bar(range(len(labels)), [speed[m]["pages_per_s"] for m in labels],
               color=["tab:red" if m == OURS else "tab:blue" for m in labels])
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
        ratio = speed.get("ratio_scan_vs_trafilatura", {}).get("wall_median")
        ax.set_title(f"{name}: pages/s, whole processes (scan / trafilatura = {ratio})", fontsize=9)
        trafilatura = speed.get("trafilatura.extract", {}).get("pages_per_s")
        if trafilatura:
            ax.axhline(trafilatura, color="red", lw=0.6, ls="--", label="target: dedup scan >= trafilatura.extract")
            ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, versions("trafilatura", "resiliparse", "lxml"))
    fig.savefig(path, dpi=110)


@click.command("html")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Where `python -m benchmarks crawl-tracks` wrote the tracks.")
@click.option("--rounds", type=int, default=5, show_default=True, help="Alternating rounds of every variant.")
@click.option("--peers", default=",".join(PEERS), show_default=True, help="Extractors to run alone.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(cache: Path, rounds: int, peers: str, out_dir: str) -> None:
    """Pages/s of `dedup scan` against the extractors alone on the crawl tracks, plus extraction agreement."""
    methods = [OURS, *[p for p in peers.split(",") if p]]
    unknown = [m for m in methods[1:] if m not in PEERS]
    if unknown:
        raise click.ClickException(f"unknown peers {unknown}; choose from {list(PEERS)}")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (docs, pairs) in track_paths(cache / "tracks").items():
            if not docs.exists():
                raise click.ClickException(f"{docs} not found: run `python -m benchmarks crawl-tracks --cache {cache}` "
                                           "first")
            pages = load_pages(docs)
            path = Path(tmp) / f"{name}.jsonl"
            path.write_text("".join(json.dumps({"id": p["id"], "text": p["text"]}, ensure_ascii=False) + "\n"
                                    for p in pages), encoding="utf-8")
            speed = measure(path, len(pages), rounds, methods)
            lang = "zh" if name.startswith("zh") else "en"
            truth = load_truth(pairs)
            extraction = {b: extraction_figures(pages, truth, lang, b)[0] for b in ("fast", "trafilatura")}
            results[name] = {"pages": len(pages), "speed": speed, "extraction": extraction}
            click.echo(f"{name}: {json.dumps(speed.get('ratio_scan_vs_trafilatura'))} "
                       + " ".join(f"{m} {speed[m]['pages_per_s']}/s" for m in methods), err=True)
    payload = {"commit": commit(), "load_average": os.getloadavg(), "peers": peer_versions(),
               "rounds": rounds, "results": results}
    target = save_json(out_dir, "html", payload)
    chart(results, Path(out_dir) / "html.png")
    click.echo(f"saved {target} and {Path(out_dir) / 'html.png'}", err=True)
