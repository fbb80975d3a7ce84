"""``python -m benchmarks boilerplate``: what leaving frequent shingles out of the verified scores would do.

An upper bound for any document-frequency weighting (a count-min sketch, IDF): the exact document
frequency of every ground-truth shingle, counted over the documents before the later side of each
pair in file order. Each pair the default detector reports is judged again on its two texts with the
shingles of frequency >= T left out (similar: Jaccard >= 0.8, or contained if the containment still
reaches 0.8; contained: containment >= 0.8) and scored as ``benchmarks edges`` scores (the truth is the
text as written; same source on the crawl tracks). Two counts: over every earlier document, and over
the earlier documents that matched nothing before them (one per near-copy cluster, so that a page
reposted many times does not make its own text frequent).
docs/decisions/boilerplate-weighting.md holds the figures and the choice they decided.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from benchmarks.accuracy_report import Pair
from benchmarks.common import DEFAULT_OUT, pyplot, save_json, stamp
from benchmarks.edges import ExactTruth, _input, _load, detect, score
from benchmarks.tracks import TRACKS
from benchmarks.web.tracks import overlap
from stream.detect.match_settings import CONTAINMENT_MARGIN, CONTAINMENT_MIN_SHINGLES
from stream.detect.verdict import CONTAINED, SIMILAR
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document

THRESHOLD = 0.8
COUNTS = ("every document", "first of each cluster")


def pair_frequencies(docs: list[dict[str, Any]], sets: dict[str, frozenset[str]], pairs: Iterable[Pair],
                     clustered: bool) -> dict[Pair, Counter[str]]:
    """Per pair, the document frequency of its shingles over the documents before its later side
    (``clustered``: only those that matched no earlier document among ``pairs``)."""
    position = {d["id"]: i for i, d in enumerate(docs)}
    by_later: dict[str, list[Pair]] = {}
    for p in pairs:
        by_later.setdefault(max(p, key=position.__getitem__), []).append(p)
    copies = set(by_later)  # documents with an earlier match
    frequency: Counter[str] = Counter()
    out: dict[Pair, Counter[str]] = {}
    for d in docs:
        for p in by_later.get(d["id"], ()):
            out[p] = Counter({s: frequency[s] for s in sets[p[0]] | sets[p[1]]})
        if not clustered or d["id"] not in copies:
            frequency.update(sets[d["id"]])
    return out


def rejudged(found: dict[Pair, str], sets: dict[str, frozenset[str]], frequencies: dict[Pair, Counter[str]],
             at_most: int) -> dict[Pair, str]:
    """The reported pairs that still clear their relation with shingles of frequency >= ``at_most`` left out."""
    out = {}
    for p, relation in found.items():
        kept = [frozenset(s for s in sets[doc] if frequencies[p][s] < at_most) for doc in p]
        jaccard, containment = overlap(kept[0], kept[1])
        if relation == SIMILAR and jaccard >= THRESHOLD:
            out[p] = SIMILAR
        elif containment >= THRESHOLD:  # a similar pair too: what is left of it may still be contained
            out[p] = CONTAINED
    return out


@click.command()
@click.option("--tracks", "names", default="", metavar="NAME,...", help="Registered tracks (default: all present).")
@click.option("--frequencies", default="4,8,16,32,64", show_default=True,
              help="Document frequencies from which a shingle is left out, comma-separated.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(names: str, frequencies: str, out_dir: str) -> None:
    """Scores of the reported pairs with frequent shingles left out, per track and frequency."""
    fingerprinter = Fingerprinter(FingerprintConfig())
    wanted = [n for n in names.split(",") if n]
    limits = [int(f) for f in frequencies.split(",") if f]
    results: dict[str, dict[str, Any]] = {}
    for spec in TRACKS:
        loaded = _load(spec) if not wanted or spec.name in wanted else None
        if loaded is None:
            continue
        docs, truth = loaded
        started = time.perf_counter()
        fps = [fingerprinter.fingerprint(parse_document(_input(d))) for d in docs]
        found, _ = detect(fps, fingerprinter.config, CONTAINMENT_MARGIN, CONTAINMENT_MIN_SHINGLES)
        exact = ExactTruth(docs, spec.unit)
        sets = {d["id"]: exact.shingles(d["id"]) for d in docs}
        results[spec.name] = {"as reported": score(found, spec, truth, exact, docs)}
        for count in COUNTS:
            freq = pair_frequencies(docs, sets, found, clustered=count != COUNTS[0])
            for limit in limits:
                res = score(rejudged(found, sets, freq, limit), spec, truth, exact, docs)
                results[spec.name][f"{count}, frequency < {limit}"] = res
        for setting, res in results[spec.name].items():
            click.echo(f"{spec.name:12} {setting}: {json.dumps(res)}")
        click.echo(f"{spec.name}: {time.perf_counter() - started:.1f}s", err=True)
    target = save_json(out_dir, "boilerplate", {"frequencies": limits, "results": results})
    chart(results, limits, Path(out_dir) / "boilerplate.png")
    click.echo(f"saved {target}")


def chart(results: dict[str, dict[str, Any]], limits: list[int], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    panels = [("similar precision", lambda r: r["similar"]["precision"]),
              ("similar recall", lambda r: r["similar"]["recall"]),
              ("contained: share with exact containment >= 0.8", lambda r: r["contained"]["exact_containment_ge_0.8"])]
    for ax, (title, get) in zip(axes, panels, strict=True):
        for name, rows in results.items():
            for count, style in zip(COUNTS, ("-", ":"), strict=True):
                ax.plot(limits, [get(rows[f"{count}, frequency < {limit}"]) for limit in limits], f"o{style}",
                        label=f"{name} ({count})")
            ax.axhline(get(rows["as reported"]), color="grey", linewidth=0.5)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("shingles left out from this document frequency")
        ax.set_title(title, fontsize=9)
    axes[1].legend(fontsize=6)
    fig.suptitle("python -m benchmarks boilerplate: reported pairs judged without frequent shingles "
                 "(grey: as reported)", fontsize=9)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    stamp(fig)
    fig.savefig(path, dpi=110)
    plt.close(fig)
