"""``python -m benchmarks edges``: each relation scored by its own exact truth, per track and per rule setting.

For every registered track present (tracks.TRACKS, the edge tracks of ``python -m benchmarks edge-tracks``
among them) documents are fingerprinted once, then detected in file order under each containment
setting asked for (``--margins``, ``--min-shingles``). Scores:
- ``similar``: precision = share of the reported ``similar`` pairs whose exact Jaccard (the ground
  truth's shingles of the text as written) is >= 0.8; recall over the track's pairs with Jaccard >= 0.8;
- ``contained``: the share of the reported ``contained`` pairs whose exact containment is >= 0.8
  (target: >= 0.95);
- ``source`` (same-source tracks): every match against "the two share a source".
Per shape (edge tracks), the same source figures for the pairs of that shape.

Candidates come from the product's tables: SimHash blocks, MinHash bands and the anchor table
(stream/index/anchors.py) with ``--anchor-cap`` (the cap ``dedup scan`` uses; 0: without anchors).
The ``anchor_candidates`` figure counts the pairs only the anchor table proposed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.accuracy_report import Pair, pair
from benchmarks.common import DEFAULT_OUT, pyplot, save_json, stamp
from benchmarks.edges_missed import missed_pairs
from benchmarks.tracks import TRACKS, TrackSpec, track_paths
from benchmarks.web.tracks import overlap, truth_shingles
from stream.detect import Detector
from stream.detect.detector import CONTAINMENT_MARGIN, CONTAINMENT_MIN_SHINGLES
from stream.detect.verdict import CONTAINED, SIMILAR
from stream.fingerprint import Fingerprint, FingerprintConfig, Fingerprinter, parse_document, without_bands
from stream.index import DEFAULT_ANCHOR_CAP, BlockIndex


def _load(spec: TrackSpec) -> tuple[list[dict[str, Any]], dict[Pair, float]] | None:
    paths = track_paths(spec)
    if paths is None:
        return None
    with open(paths[0], encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    with open(paths[1], encoding="utf-8") as fh:
        truth = {pair(p["a"], p["b"]): float(p["jaccard"]) for p in map(json.loads, fh)}
    return docs, truth


def _input(doc: dict[str, Any]) -> dict[str, Any]:
    out = {"id": doc["id"], "text": doc.get("text", "")}
    if doc.get("content_type"):
        out["content_type"] = doc["content_type"]
    return out


def detect(fps: list[Fingerprint], config: FingerprintConfig, margin: float, min_shingles: int,
           anchor_cap: int = DEFAULT_ANCHOR_CAP, proposed: dict[Pair, str] | None = None
           ) -> tuple[dict[Pair, str], int]:
    """The pairs the detector reports, each document probed after the ones before it (as ``dedup scan``
    judges them), and how many candidates only the anchor table proposed (``anchor_cap`` 0: none).
    ``proposed``, when given, receives each candidate pair (with the anchor table on) and what proposed
    it: "tables" (SimHash blocks, bands), "anchors" or "both"."""
    detector = Detector(BlockIndex(None, k=3, bands=config.band_tables), containment_min_shingles=min_shingles,
                        containment_margin=margin, anchor_cap=anchor_cap or None)
    found: dict[Pair, str] = {}
    index = detector.index
    anchor_only = 0
    for seq, fp in enumerate(fps):
        if anchor_cap and not fp.empty:
            payload = without_bands(fp.to_bytes())
            detector.decoded.remember(payload, fp)
            by_anchor = {hit.doc_id for hit in index.anchor_query_many([fp.simhash], [payload], [fp.doc_id])[0]}
            by_tables = {hit.doc_id for hit in index.query(fp.simhash, tuple(fp.bands))}
            anchor_only += len(by_anchor - by_tables - {fp.doc_id})
            if proposed is not None:
                proposed.update((pair(fp.doc_id, other), "both" if other in by_anchor and other in by_tables
                                 else "anchors" if other in by_anchor else "tables")
                                for other in (by_anchor | by_tables) - {fp.doc_id})
        for m in detector.probe(fp, (float(seq), fp.doc_id)):
            found[pair(fp.doc_id, m.id)] = m.relation
    return found, anchor_only


class ExactTruth:
    """Exact Jaccard and containment of any two documents' texts (the ground truth's shingles)."""

    def __init__(self, docs: list[dict[str, Any]], unit: str) -> None:
        lang = "zh" if unit == "char" else "en"
        self._text = {d["id"]: d.get("main", d.get("text", "")) for d in docs}
        self._lang = lang
        self._sets: dict[str, frozenset[str]] = {}

    def shingles(self, doc_id: str) -> frozenset[str]:
        if doc_id not in self._sets:
            self._sets[doc_id] = truth_shingles(self._text[doc_id], self._lang)
        return self._sets[doc_id]

    def __call__(self, p: Pair) -> tuple[float, float]:
        return overlap(self.shingles(p[0]), self.shingles(p[1]))


def score(found: dict[Pair, str], spec: TrackSpec, truth: dict[Pair, float], exact: ExactTruth,
          docs: list[dict[str, Any]]) -> dict[str, Any]:
    similar = {p for p, r in found.items() if r == SIMILAR}
    contained = {p for p, r in found.items() if r == CONTAINED}
    true_similar = {p for p, j in truth.items() if j >= 0.8}
    similar_right = sum(1 for p in similar if exact(p)[0] >= 0.8 - 1e-9)
    contained_right = sum(1 for p in contained if exact(p)[1] >= 0.8 - 1e-9)
    out: dict[str, Any] = {
        "similar": {"reported": len(similar), "precision": round(similar_right / max(1, len(similar)), 4),
                    "recall": round(len(similar & true_similar) / max(1, len(true_similar)), 4)},
        "contained": {"reported": len(contained),
                      "exact_containment_ge_0.8": round(contained_right / max(1, len(contained)), 4)}}
    if spec.truth == "source":
        shape = {d["id"]: d.get("shape", "") for d in docs}
        out["source"] = _pr(set(found), set(truth))
        for name in sorted({s for s in shape.values() if s}):
            mine = {p for p in truth if shape[p[0]] == name}
            out[f"source:{name}"] = _pr({p for p in found if shape[p[0]] == name or shape[p[1]] == name}, mine)
    return out


def _pr(found: set[Pair], truth: set[Pair]) -> dict[str, Any]:
    hit = len(found & truth)
    return {"precision": round(hit / max(1, len(found)), 4), "recall": round(hit / max(1, len(truth)), 4),
            "reported": len(found), "true": len(truth)}


def chart(results: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    names = list(results)
    settings = list(next(iter(results.values()))) if results else []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, (title, get) in zip(axes, [
            ("similar precision", lambda r: r["similar"]["precision"]),
            ("similar recall", lambda r: r["similar"]["recall"]),
            ("contained: share with exact containment >= 0.8", lambda r: r["contained"]["exact_containment_ge_0.8"])],
            strict=True):
        width = 0.8 / max(1, len(settings))
        for i, setting in enumerate(settings):
            ax.bar([x + i * width for x in range(len(names))], [get(results[n][setting]) for n in names], width,
                   label=setting)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(names))], names, rotation=30, fontsize=8)
        ax.set_ylim(0.5, 1.01)
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("python -m benchmarks edges: per-relation exact scores", fontsize=9)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    stamp(fig)
    fig.savefig(path, dpi=110)


@click.command("edges")
@click.option("--tracks", "names", default="", metavar="NAME,...", help="Registered tracks (default: all present).")
@click.option("--margins", default=str(CONTAINMENT_MARGIN), show_default=True,
              help="Containment margins (standard errors) to compare, comma-separated.")
@click.option("--min-shingles", "mins", default=str(CONTAINMENT_MIN_SHINGLES), show_default=True,
              help="Containment minimum sizes to compare, comma-separated.")
@click.option("--sketch-exact-shingles", "exact", type=int, default=FingerprintConfig.sketch_exact_shingles,
              show_default=True, help="Texts with up to this many shingles keep them all (exact verification).")
@click.option("--sketch-sample-from", "sample_from", type=int, default=FingerprintConfig.sketch_sample_from,
              show_default=True, help="Texts with at least this many shingles keep a hash sample (0: none).")
@click.option("--anchor-cap", type=int, default=DEFAULT_ANCHOR_CAP, show_default=True,
              help="The anchor table's cap on documents per anchor (0: no anchor table).")
@click.option("--missed", is_flag=True,
              help="Also write edges-missed.json: each same-source pair not reported, and why (first setting).")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(names: str, margins: str, mins: str, exact: int, sample_from: int, anchor_cap: int, missed: bool,
            out_dir: str) -> None:
    """Per-relation exact scores of the default detector on every track, under several containment settings."""
    config = FingerprintConfig(sketch_exact_shingles=exact, sketch_sample_from=sample_from)
    fingerprinter = Fingerprinter(config)
    wanted = [n for n in names.split(",") if n]
    results: dict[str, dict[str, Any]] = {}
    why: dict[str, list[dict[str, Any]]] = {}
    for spec in TRACKS:
        if wanted and spec.name not in wanted:
            continue
        loaded = _load(spec)
        if loaded is None:
            click.echo(f"skipped {spec.name}: {spec.how_to_get}", err=True)
            continue
        docs, truth = loaded
        started = time.perf_counter()
        fps = [fingerprinter.fingerprint(parse_document(_input(d))) for d in docs]
        truth_of = ExactTruth(docs, spec.unit)
        results[spec.name] = {}
        for margin in (float(m) for m in margins.split(",")):
            for least in (int(m) for m in mins.split(",")):
                proposed: dict[Pair, str] = {}
                found, anchor_only = detect(fps, config, margin, least, anchor_cap, proposed)
                if missed and spec.truth == "source" and spec.name not in why:
                    why[spec.name] = missed_pairs(found, truth, fps, docs, proposed, truth_of)
                setting = f"margin {margin:g}, min {least}"
                res = score(found, spec, truth, truth_of, docs)
                res["anchor_candidates"] = anchor_only
                results[spec.name][setting] = res
                click.echo(f"{spec.name:12} {setting}: {json.dumps(res)}")
        click.echo(f"{spec.name}: {time.perf_counter() - started:.1f}s", err=True)
    target = save_json(out_dir, "edges", {"config": config.describe(fingerprinter.segmenter.settings),
                                          "anchor_cap": anchor_cap, "results": results})
    chart(results, Path(out_dir) / "edges.png")
    if missed:
        click.echo(f"saved {save_json(out_dir, 'edges-missed', {'anchor_cap': anchor_cap, 'missed': why})}")
    click.echo(f"saved {target}")
