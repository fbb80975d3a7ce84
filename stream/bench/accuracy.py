"""``dedup bench accuracy``: pair precision / recall / F1 against exact ground truth.

Tracks are JSONL corpora with a pairs file listing EVERY pair with shingle Jaccard >= 0.8
(../shared/corpora, made by ../shared/tools/neardup_truth.py). Documents are judged in file order;
a method's predicted pairs are all (document, earlier match) pairs it reports. Methods, in one run:
- ``default``: our configuration (SimHash tables + LSH bands, every candidate verified);
- ``simhash:<weighting>``: our SimHash alone at Hamming <= k, per weighting (seeds 002/003/004);
- peers ``simhash-1e0ng`` (SimhashIndex, k=3) and ``datasketch`` (MinHashLSH 0.8, 128 perms,
  over the ground truth's own shingles).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from stream.bench.common import DEFAULT_OUT, pyplot, save_json, shared_dir
from stream.detect import Detector
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex

Pair = tuple[str, str]
JACCARD_BANDS = [(0.8, 0.9), (0.9, 1.0), (1.0, 1.01)]
LENGTH_BANDS = [(0, 50), (50, 200), (200, 1000), (1000, 5000), (5000, 10**9)]


def pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass
class Track:
    name: str
    docs: list[dict[str, Any]]
    truth: dict[Pair, float]
    length: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, name: str, docs_path: Path, pairs_path: Path, limit: int | None = None) -> Track:
        docs = []
        with open(docs_path, encoding="utf-8") as fh:
            for line in fh:
                docs.append(json.loads(line))
                if limit and len(docs) >= limit:
                    break
        ids = {d["id"] for d in docs}
        truth = {}
        with open(pairs_path, encoding="utf-8") as fh:
            for line in fh:
                p = json.loads(line)
                if p["a"] in ids and p["b"] in ids:
                    truth[pair(p["a"], p["b"])] = float(p["jaccard"])
        length = {d["id"]: len(re.sub(r"\s+", "", d.get("text", ""))) for d in docs}
        return cls(name, docs, truth, length)


def _as_input(doc: dict[str, Any]) -> dict[str, Any]:
    """Corpus line -> our document: text and id only (metadata like author must not help)."""
    return {"id": doc["id"], "text": doc.get("text", "")}


def run_ours(track: Track, config: FingerprintConfig, k: int, verify: bool) -> set[Pair]:
    fingerprinter = Fingerprinter(config)
    index = BlockIndex(None, k=k, bands=config.band_tables if verify else 0)
    detector = Detector(index)
    found: set[Pair] = set()
    for seq, raw in enumerate(track.docs):
        fp = fingerprinter.fingerprint(parse_document(_as_input(raw)))
        if verify:
            for m in detector.detect(fp, (float(seq), fp.doc_id)).matches:
                found.add(pair(fp.doc_id, m.id))
        elif not fp.empty:
            found.update(pair(fp.doc_id, h.doc_id) for h in index.query(fp.simhash) if h.doc_id != fp.doc_id)
            index.insert(fp.simhash, fp.doc_id, float(seq))
    return found


def _truth_shingles(text: str, unit: str) -> list[str]:
    if unit == "word":
        w = re.findall(r"\w+", text.lower())
        return [" ".join(w[i : i + 3]) for i in range(max(1, len(w) - 2))] if w else []
    t = re.sub(r"\s+", "", text)
    return [t[i : i + 5] for i in range(max(1, len(t) - 4))] if t else []


def run_datasketch(track: Track, unit: str) -> set[Pair]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    found: set[Pair] = set()
    for raw in track.docs:
        sh = _truth_shingles(raw.get("text", ""), unit)
        if not sh:
            continue
        m = MinHash(num_perm=128)
        m.update_batch([s.encode("utf-8") for s in set(sh)])
        found.update(pair(raw["id"], other) for other in lsh.query(m))
        if raw["id"] not in lsh.keys:
            lsh.insert(raw["id"], m)
    return found


def run_simhash_peer(track: Track) -> set[Pair]:
    import logging

    import numpy as np
    import simhash as simhash_module
    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on every big bucket
    # simhash 2.1 multiplies a uint8 bit array by the feature weight; under numpy 2 a weight > 255
    # overflows (OverflowError). Widen the array: the same arithmetic numpy 1 did by promotion.
    original = simhash_module.Simhash._bitarray_from_bytes
    if not getattr(original, "widened", False):
        def widened(b: bytes) -> Any:
            return original(b).astype(np.int64)

        widened.widened = True  # type: ignore[attr-defined]
        simhash_module.Simhash._bitarray_from_bytes = staticmethod(widened)
    index = SimhashIndex([], k=3)
    found: set[Pair] = set()
    for raw in track.docs:
        h = Simhash(raw.get("text", ""))
        found.update(pair(raw["id"], other) for other in index.get_near_dups(h) if other != raw["id"])
        index.add(raw["id"], h)
    return found


def score(track: Track, found: set[Pair]) -> dict[str, Any]:
    truth = track.truth
    tp = len(found & truth.keys())
    p = tp / len(found) if found else 1.0
    r = tp / len(truth) if truth else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    by_j = {}
    for lo, hi in JACCARD_BANDS:
        band = [q for q, j in truth.items() if lo <= j < hi]
        label = "1.0" if lo == 1.0 else f"[{lo},{hi})"
        by_j[label] = {"pairs": len(band), "recall": _ratio(sum(q in found for q in band), len(band))}
    by_len = {}
    for lo, hi in LENGTH_BANDS:
        def in_band(q: Pair, lo: int = lo, hi: int = hi) -> bool:
            return lo <= min(track.length.get(q[0], 0), track.length.get(q[1], 0)) < hi

        t_band = [q for q in truth if in_band(q)]
        f_band = [q for q in found if in_band(q)]
        if not t_band and not f_band:
            continue
        by_len[f"{lo}-{hi if hi < 10**9 else 'inf'}"] = {
            "true_pairs": len(t_band), "found": len(f_band),
            "recall": _ratio(sum(q in found for q in t_band), len(t_band)),
            "precision": _ratio(sum(q in truth for q in f_band), len(f_band))}
    return {"precision": p, "recall": r, "f1": f1, "found": len(found), "true_pairs": len(truth), "tp": tp,
            "by_jaccard": by_j, "by_length": by_len}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def default_tracks(limit: int | None) -> list[Track]:
    root = shared_dir()
    if root is None:
        raise click.ClickException("no ../shared/corpora found: pass --track NAME=DOCS.jsonl:PAIRS.jsonl")
    c = root / "corpora"
    return [Track.load("tang", c / "tang_sample20k_docs.jsonl", c / "tang_sample20k_pairs.jsonl", limit),
            Track.load("peps", c / "peps_dev.jsonl", c / "peps_dev_pairs.jsonl", limit)]


def _simhash_only(cfg: FingerprintConfig, k: int, track: Track, unit: str) -> set[Pair]:
    return run_ours(track, cfg, k, verify=False)


def methods(config: FingerprintConfig, k: int, weightings: Iterable[str], peers: bool
            ) -> list[tuple[str, Callable[[Track, str], set[Pair]]]]:
    out: list[tuple[str, Callable[[Track, str], set[Pair]]]] = [
        ("default", lambda t, u: run_ours(t, config, k, verify=True))]
    for w in weightings:
        if w == "shingles":
            cfg = config.with_(simhash_features="shingles")
        elif w == "seed004+pos":
            cfg = config.with_(simhash_features="words", weighting="seed004", pos_tags=True)
        else:
            cfg = config.with_(simhash_features="words", weighting=w)
        out.append((f"simhash:{w}", functools.partial(_simhash_only, cfg, k)))
    if peers:
        out.append(("simhash-1e0ng", lambda t, u: run_simhash_peer(t)))
        out.append(("datasketch", lambda t, u: run_datasketch(t, u)))
    return out


def chart(results: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    tracks = list(results)
    fig, axes = plt.subplots(1, len(tracks), figsize=(6 * len(tracks), 4), squeeze=False)
    for ax, name in zip(axes[0], tracks, strict=True):
        rows = results[name]
        labels = list(rows)
        x = range(len(labels))
        for i, metric in enumerate(("precision", "recall", "f1")):
            ax.bar([v + i * 0.27 for v in x], [rows[m][metric] for m in labels], width=0.27, label=metric)
        ax.set_xticks([v + 0.27 for v in x], labels, rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.axhline(0.95, color="grey", lw=0.6, ls="--")
        ax.set_title(f"{name}: pair precision / recall / F1")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


@click.command("accuracy")
@click.option("--track", "track_specs", multiple=True, metavar="NAME=DOCS:PAIRS",
              help="A corpus and its ground-truth pairs (default: the two in ../shared/corpora).")
@click.option("--limit", type=int, default=None, help="Only the first N documents of each track.")
@click.option("-k", "k", type=int, default=3, show_default=True)
@click.option("--weightings", default="tf,tfidf,tfidf_len,seed004,seed004+pos,binary,shingles", show_default=True,
              help="SimHash-only variants to compare ('' for none).")
@click.option("--no-peers", is_flag=True, help="Skip the simhash and datasketch peers.")
@click.option("--segmenter", type=click.Choice(["auto", "rjieba", "jieba"]), default="auto", show_default=True)
@click.option("--short-text-chars", type=int, default=FingerprintConfig.short_text_chars, show_default=True,
              help="Texts up to this many characters are also verified on character 3-grams.")
@click.option("--sketch-bytes", type=int, default=FingerprintConfig.sketch_bytes, show_default=True)
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True)
def command(track_specs: tuple[str, ...], limit: int | None, k: int, weightings: str, no_peers: bool,
            segmenter: str, short_text_chars: int, sketch_bytes: int, out_dir: str) -> None:
    """Pair precision/recall/F1 of our default and its variants next to the peers, per track."""
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    tracks = []
    for spec in track_specs:
        name, _, paths = spec.partition("=")
        docs, _, pairs = paths.partition(":")
        tracks.append(Track.load(name, Path(docs), Path(pairs), limit))
    tracks = tracks or default_tracks(limit)
    config = FingerprintConfig(segmenter=segmenter, short_text_chars=short_text_chars, sketch_bytes=sketch_bytes)
    results: dict[str, dict[str, Any]] = {}
    for track in tracks:
        unit = "word" if track.name.startswith("pep") or not _mostly_cjk(track) else "char"
        results[track.name] = {}
        for name, run in methods(config, k, [w for w in weightings.split(",") if w], not no_peers):
            started = time.perf_counter()
            try:
                found = run(track, unit)
            except Exception as exc:  # a broken peer must not cost the other figures
                console.print(f"[red]{track.name} {name} failed: {exc!r}[/red]")
                continue
            res = score(track, found)
            res["seconds"] = round(time.perf_counter() - started, 2)
            results[track.name][name] = res
            console.print(f"{track.name:6} {name:18} P {res['precision']:.3f} R {res['recall']:.3f} "
                          f"F1 {res['f1']:.3f} ({res['seconds']}s)")
    for track_name, rows in results.items():
        table = Table(title=f"accuracy: {track_name}")
        for col in ("method", "P", "R", "F1", "found", "R J[0.8,0.9)", "R J[0.9,1)", "R J=1", "s"):
            table.add_column(col)
        for name, r in rows.items():
            bj = r["by_jaccard"]
            table.add_row(name, *(f"{r[m]:.3f}" for m in ("precision", "recall", "f1")), str(r["found"]),
                          *(_fmt(bj[b]["recall"]) for b in bj), str(r["seconds"]))
        console.print(table)
        lt = Table(title=f"{track_name}: default by length of the shorter document (chars)")
        for col in ("length", "true pairs", "found", "recall", "precision"):
            lt.add_column(col)
        for band, v in rows["default"]["by_length"].items():
            lt.add_row(band, str(v["true_pairs"]), str(v["found"]), _fmt(v["recall"]), _fmt(v["precision"]))
        console.print(lt)
    settings = Fingerprinter(config).segmenter.settings
    target = save_json(out_dir, "accuracy", {"k": k, "config": config.describe(settings), "results": results})
    chart(results, Path(out_dir) / "accuracy.png")
    console.print(f"saved {target} and {Path(out_dir) / 'accuracy.png'}")


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _mostly_cjk(track: Track) -> bool:
    sample = "".join(d.get("text", "")[:200] for d in track.docs[:50])
    return sum("\u4e00" <= ch <= "\u9fff" for ch in sample) > len(sample) * 0.3
