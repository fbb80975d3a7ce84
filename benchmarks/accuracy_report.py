"""Scoring and reporting for ``python -m benchmarks accuracy``: P/R/F1 with breakdowns, tables and the chart."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import pyplot, stamp
from stream.fingerprint.shingles import cjk_share

Pair = tuple[str, str]
JACCARD_BANDS = [(0.8, 0.9), (0.9, 1.0), (1.0, 1.01)]
LENGTH_BANDS = [(0, 50), (50, 200), (200, 1000), (1000, 5000), (5000, 10**9)]
CJK_SHARE_BANDS = [(0.0, 0.1), (0.1, 0.3), (0.3, 0.6), (0.6, 1.01)]
TARGET_P, TARGET_R = 0.96, 0.95  # issue 20: the default configuration on every track


def pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass
class Track:
    name: str
    docs: list[dict[str, Any]]
    truth: dict[Pair, float]
    length: dict[str, int] = field(default_factory=dict)  # characters without whitespace, per document
    unit: str = "char"  # the ground truth's shingle unit (the datasketch peer uses the same)
    share: dict[str, float] = field(default_factory=dict)  # CJK share, per document
    # web pages: the peers get the text our default extractor gives (``peer_docs``), and lengths
    # and shares are those of that text
    peer_docs: list[dict[str, Any]] | None = None
    truth_kind: str = "jaccard"  # tracks.TrackSpec.truth

    @classmethod
    def load(cls, name: str, docs_path: Path, pairs_path: Path, limit: int | None = None,
             unit: str | None = None) -> Track:
        """A corpus and its ground-truth pairs; ``unit`` None: guessed (char if mostly CJK)."""
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
        if unit is None:
            unit = "char" if cjk_share("".join(d.get("text", "")[:200] for d in docs[:50])) > 0.3 else "word"
        track = cls(name, docs, truth, unit=unit)
        track.measure(docs)
        return track

    def measure(self, docs: list[dict[str, Any]]) -> None:
        """Lengths and CJK shares of ``docs`` (the documents, or the text of web pages)."""
        self.length = {d["id"]: len("".join(d.get("text", "").split())) for d in docs}
        self.share = {d["id"]: cjk_share(d.get("text", "")) for d in docs}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _bands(track: Track, found: set[Pair], bands: list[tuple[float, float]], value: dict[str, Any],
           label: Any) -> dict[str, dict[str, Any]]:
    """Recall and precision of the pairs whose shorter (less) side's ``value`` falls in each band."""
    out = {}
    for lo, hi in bands:
        def in_band(q: Pair, lo: float = lo, hi: float = hi) -> bool:
            return lo <= min(value.get(q[0], 0), value.get(q[1], 0)) < hi

        t_band = [q for q in track.truth if in_band(q)]
        f_band = [q for q in found if in_band(q)]
        if t_band or f_band:
            out[label(lo, hi)] = {"true_pairs": len(t_band), "found": len(f_band),
                                  "recall": _ratio(sum(q in found for q in t_band), len(t_band)),
                                  "precision": _ratio(sum(q in track.truth for q in f_band), len(f_band))}
    return out


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
    by_len = _bands(track, found, LENGTH_BANDS, track.length,  # type: ignore[arg-type]
                    lambda lo, hi: f"{lo}-{hi if hi < 10**9 else 'inf'}")
    by_share = _bands(track, found, CJK_SHARE_BANDS, track.share, lambda lo, hi: f"[{lo},{min(hi, 1.0)}]")
    return {"precision": p, "recall": r, "f1": f1, "found": len(found), "true_pairs": len(truth), "tp": tp,
            "by_jaccard": by_j, "by_length": by_len, "by_cjk_share": by_share}


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_tables(console: Any, results: dict[str, dict[str, Any]]) -> None:
    from rich.table import Table

    for track_name, rows in results.items():
        table = Table(title=f"accuracy: {track_name} (targets for default: P >= {TARGET_P}, R >= {TARGET_R})")
        for col in ("method", "P", "R", "F1", "found", "R J[0.8,0.9)", "R J[0.9,1)", "R J=1", "s"):
            table.add_column(col)
        for name, r in rows.items():
            bj = r["by_jaccard"]
            table.add_row(name, *(f"{r[m]:.3f}" for m in ("precision", "recall", "f1")), str(r["found"]),
                          *(fmt(bj[b]["recall"]) for b in bj), str(r["seconds"]))
        console.print(table)
        for key, what in (("by_length", "length of the shorter document (chars)"),
                          ("by_cjk_share", "CJK share of the less-CJK document")):
            bt = Table(title=f"{track_name}: by {what}; recall / precision per method")
            bt.add_column("band")
            for name in rows:
                bt.add_column(name)
            bands = list(rows["default"][key]) if "default" in rows else []
            for band in bands:
                cells = [rows[m][key].get(band, {}) for m in rows]
                first = cells[0]
                label = f"{band} ({first.get('true_pairs', 0)} true)"
                bt.add_row(label, *(f"{fmt(c.get('recall'))} / {fmt(c.get('precision'))}" for c in cells))
            console.print(bt)


def chart(results: dict[str, dict[str, Any]], peers: dict[str, str], note: str, path: Path) -> None:
    """Per track: P/R/F1 of every method (top), recall of the default and the peers by CJK share
    band and by length band (below); the target lines are labelled."""
    plt = pyplot()
    tracks = list(results)
    fig, axes = plt.subplots(3, len(tracks), figsize=(4.6 * len(tracks), 11), squeeze=False)
    for col, name in enumerate(tracks):
        rows = results[name]
        labels = [peers.get(m, m) for m in rows]
        ax = axes[0][col]
        for i, metric in enumerate(("precision", "recall", "f1")):
            ax.bar([v + i * 0.27 for v in range(len(rows))], [rows[m][metric] for m in rows], width=0.27,
                   label=metric)
        ax.set_xticks([v + 0.27 for v in range(len(rows))], labels, rotation=30, ha="right", fontsize=7)
        ax.set_ylim(0.0, 1.3)
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.axhline(TARGET_P, color="black", lw=0.7, ls="--", label=f"target P {TARGET_P}")
        ax.axhline(TARGET_R, color="grey", lw=0.7, ls=":", label=f"target R {TARGET_R}")
        ax.set_title(f"{name}: pair P / R / F1", fontsize=9)
        ax.legend(fontsize=6, loc="upper center", ncol=3)
        for row, key, xlabel in ((1, "by_cjk_share", "CJK share of the less-CJK document of a true pair"),
                                 (2, "by_length", "length of the shorter document (characters)")):
            ax = axes[row][col]
            for m, label in zip(rows, labels, strict=True):
                if m.startswith(("simhash:", "default,")):  # our variants: in the bars above
                    continue
                bands = rows[m][key]
                xs = [b for b in bands if bands[b]["recall"] is not None]
                ax.plot(xs, [bands[b]["recall"] for b in xs], marker="o", label=label)
            ax.axhline(TARGET_R, color="grey", lw=0.7, ls=":", label=f"target R {TARGET_R}")
            ax.set_ylim(0.0, 1.05)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_ylabel("recall", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6, loc="lower left")
    fig.suptitle(note, fontsize=8)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    stamp(fig)
    fig.savefig(path, dpi=110)
