"""``python -m benchmarks crawl``: accuracy and extraction agreement on the crawl-like HTML tracks.

Per track (built by ``python -m benchmarks crawl-tracks``):
- extraction: per page, the Jaccard of the extracted text to the article text the page was rendered
  from ("fidelity"), and for every two pages of one article that carry the same article text on two
  templates, the Jaccard of their two extractions ("agreement"); shingles as the ground truth's.
  For each extractor of ``--extractors``.
- pairs: precision / recall against "same source article" for our detector with containment off
  (Jaccard only) and on (the default), and for the peers (1e0ng simhash, datasketch MinHashLSH)
  over the text our default extractor gives, in the same run; recall by the pair's article-text
  Jaccard and by the shorter page's length.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchmarks.accuracy import Pair, Track, pair, run_datasketch, run_simhash_peer
from benchmarks.common import DEFAULT_OUT, commit, pyplot, save_json, stamp, versions
from benchmarks.web.tracks import DEFAULT_CACHE, overlap, track_paths, truth_shingles
from stream.detect import Detector
from stream.detect.detector import CONTAINMENT_MIN_SHINGLES, CONTAINMENT_THRESHOLD
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex
from stream.text.html import extract

TRUTH_BANDS = [(0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 1.0), (1.0, 1.01)]


def load_pages(docs_path: Path) -> list[dict[str, Any]]:
    with open(docs_path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def load_truth(pairs_path: Path) -> dict[Pair, dict[str, float]]:
    with open(pairs_path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return {pair(r["a"], r["b"]): {"jaccard": r["jaccard"], "containment": r["containment"]} for r in rows}


def _summary(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}
    return {"n": len(ordered), "share_ge_0.9": round(sum(v >= 0.9 for v in ordered) / len(ordered), 4),
            "min": round(ordered[0], 4), "p05": round(ordered[len(ordered) // 20], 4),
            "median": round(statistics.median(ordered), 4), "mean": round(statistics.fmean(ordered), 4)}


def extraction_figures(pages: list[dict[str, Any]], truth: dict[Pair, dict[str, float]], lang: str,
                       backend: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Fidelity per page (by site), agreement over same-text pairs, methods used, ms per page."""
    started = time.perf_counter()
    extracted = {p["id"]: extract(p["text"], backend=backend) for p in pages}
    elapsed = time.perf_counter() - started
    texts = {k: v.text for k, v in extracted.items()}
    shingles = {k: truth_shingles(v, lang) for k, v in texts.items()}
    fidelity: dict[str, list[float]] = defaultdict(list)
    for p in pages:
        fidelity[p["site"]].append(overlap(shingles[p["id"]], truth_shingles(p["main"], lang))[0])
    agreement = [overlap(shingles[a], shingles[b])[0] for (a, b), t in truth.items() if t["jaccard"] == 1.0]
    methods: dict[str, int] = defaultdict(int)
    for v in extracted.values():
        methods[v.method] += 1
    figures = {"ms_per_page": round(1000 * elapsed / max(1, len(pages)), 3), "methods": dict(methods),
               "agreement_same_text_pairs": _summary(agreement),
               "fidelity": _summary([x for v in fidelity.values() for x in v]),
               "fidelity_by_site": {site: _summary(v) for site, v in sorted(fidelity.items())}}
    return figures, texts


def text_track(track: Track, backend: str = "fast") -> Track:
    """``track`` with each page's HTML replaced by the text our extractor gives: the peers' input."""
    docs = [{"id": d["id"], "text": extract(d["text"], backend=backend).text} for d in track.docs]
    return Track(track.name, docs, track.truth, {d["id"]: len("".join(d["text"].split())) for d in docs})


def run_detector(pages: list[dict[str, Any]], config: FingerprintConfig, containment_threshold: float,
                 min_shingles: int) -> set[Pair]:
    fingerprinter = Fingerprinter(config)
    detector = Detector(BlockIndex(None, k=3, bands=config.band_tables), containment_threshold=containment_threshold,
                        containment_min_shingles=min_shingles)
    found: set[Pair] = set()
    for seq, page in enumerate(pages):
        fp = fingerprinter.fingerprint(parse_document({"id": page["id"], "text": page["text"]}))
        found.update(pair(fp.doc_id, m.id) for m in detector.detect(fp, (float(seq), fp.doc_id)).matches)
    return found


def pair_scores(found: set[Pair], truth: dict[Pair, dict[str, float]], length: dict[str, int]) -> dict[str, Any]:
    tp = len(found & truth.keys())
    precision = tp / len(found) if found else 1.0
    recall = tp / len(truth) if truth else 1.0
    by_jaccard = {}
    for lo, hi in TRUTH_BANDS:
        band = [q for q, t in truth.items() if lo <= t["jaccard"] < hi]
        label = "1.0" if lo == 1.0 else f"[{lo},{hi})"
        by_jaccard[label] = {"pairs": len(band), "recall": round(sum(q in found for q in band) / len(band), 4)
                             if band else None}
    by_length = {}
    for lo, hi in ((0, 200), (200, 500), (500, 2000), (2000, 10**9)):
        band = [q for q in truth if lo <= min(length[q[0]], length[q[1]]) < hi]
        if band:
            by_length[f"{lo}-{hi if hi < 10**9 else 'inf'}"] = {
                "pairs": len(band), "recall": round(sum(q in found for q in band) / len(band), 4)}
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4), "found": len(found),
            "true_pairs": len(truth), "by_jaccard": by_jaccard, "by_length_chars": by_length}


def methods(config: FingerprintConfig, threshold: float, min_shingles: int
            ) -> dict[str, Callable[[list[dict[str, Any]], Track, str], set[Pair]]]:
    return {
        "ours: jaccard only": lambda pages, _t, _u: run_detector(pages, config, 0.0, min_shingles),
        "ours: jaccard + containment": lambda pages, _t, _u: run_detector(pages, config, threshold, min_shingles),
        "simhash-1e0ng": lambda _p, text_track, _u: run_simhash_peer(text_track),
        "datasketch": lambda _p, text_track, unit: run_datasketch(text_track, unit),
    }


def evaluate_track(name: str, docs_path: Path, pairs_path: Path, extractors: list[str], config: FingerprintConfig,
                   threshold: float, min_shingles: int) -> dict[str, Any]:
    lang = "zh" if name.startswith("zh") else "en"
    pages, truth = load_pages(docs_path), load_truth(pairs_path)
    result: dict[str, Any] = {"pages": len(pages), "true_pairs": len(truth), "extraction": {}, "pairs": {}}
    default_texts: dict[str, str] = {}
    for backend in extractors:
        figures, texts = extraction_figures(pages, truth, lang, backend)
        result["extraction"][backend] = figures
        if backend == config.html_backend:
            default_texts = texts
        click.echo(f"{name} extraction {backend}: {json.dumps({k: figures[k] for k in ('ms_per_page', 'methods')})} "
                   f"agreement {figures['agreement_same_text_pairs']} fidelity {figures['fidelity']}", err=True)
    if not default_texts:
        default_texts = extraction_figures(pages, truth, lang, config.html_backend)[1]
    length = {k: len("".join(v.split())) for k, v in default_texts.items()}
    text_track = Track(name, [{"id": k, "text": v} for k, v in default_texts.items()], {})
    for method, run in methods(config, threshold, min_shingles).items():
        started = time.perf_counter()
        scores = pair_scores(run(pages, text_track, "char" if lang == "zh" else "word"), truth, length)
        scores["seconds"] = round(time.perf_counter() - started, 2)
        result["pairs"][method] = scores
        click.echo(f"{name} {method:28} P {scores['precision']:.3f} R {scores['recall']:.3f} F1 {scores['f1']:.3f} "
                   f"({scores['seconds']}s)", err=True)
    return result


def chart(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items(), strict=True):
        labels = list(res["pairs"])
        for i, metric in enumerate(("precision", "recall", "f1")):
            ax.bar([x + 0.27 * i for x in range(len(labels))], [res["pairs"][m][metric] for m in labels], width=0.27,
                   label=metric)
        ax.set_xticks([x + 0.27 for x in range(len(labels))], labels, rotation=25, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.axhline(0.95, color="grey", lw=0.6, ls="--", label="target recall 0.95")
        ax.axhline(0.96, color="black", lw=0.6, ls=":", label="target precision 0.96")
        ax.set_title(f"{name}: same-source pairs, P / R / F1", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    stamp(fig, versions("simhash", "datasketch", "trafilatura", "resiliparse"))
    fig.savefig(path, dpi=110)


@click.command("crawl")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Where `python -m benchmarks crawl-tracks` wrote the tracks (CACHE/tracks).")
@click.option("--extractors", default="fast,trafilatura,resiliparse", show_default=True,
              help="HTML extractors whose agreement across templates is measured.")
@click.option("--containment-threshold", type=float, default=CONTAINMENT_THRESHOLD, show_default=True,
              help="Share of the shorter document's shingles in the longer one for 'contained'.")
@click.option("--containment-min-shingles", type=int, default=CONTAINMENT_MIN_SHINGLES, show_default=True,
              help="The shorter document's minimum distinct shingles for 'contained'.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(cache: Path, extractors: str, containment_threshold: float, containment_min_shingles: int,
            out_dir: str) -> None:
    """Extraction agreement and same-source P/R on the crawl tracks: ours (Jaccard only and with
    containment) and the peers."""
    config = FingerprintConfig()
    results = {}
    for name, (docs, pairs) in track_paths(cache / "tracks").items():
        if not docs.exists():
            raise click.ClickException(f"{docs} not found: run `python -m benchmarks crawl-tracks --cache {cache}` "
                                       "first")
        results[name] = evaluate_track(name, docs, pairs, [e for e in extractors.split(",") if e], config,
                                       containment_threshold, containment_min_shingles)
    manifest = json.loads((cache / "tracks" / "manifest.json").read_text())
    target = save_json(out_dir, "crawl", {"commit": commit(), "config": config.describe(),
                                          "containment_threshold": containment_threshold,
                                          "containment_min_shingles": containment_min_shingles,
                                          "tracks_manifest": manifest, "results": results})
    chart(results, Path(out_dir) / "crawl.png")
    click.echo(f"saved {target} and {Path(out_dir) / 'crawl.png'}", err=True)
