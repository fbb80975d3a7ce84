"""``python -m benchmarks accuracy``: pair precision / recall / F1 against exact ground truth.

Tracks (tracks.TRACKS: the project's corpora and the tracks ``python -m benchmarks tracks build`` makes) are
JSONL corpora with a pairs file listing EVERY pair with shingle Jaccard >= 0.8 (made by
../shared/tools/neardup_truth.py). Documents are judged in file order;
a method's predicted pairs are all (document, earlier match) pairs it reports. Methods, in one run:
- ``default``: our configuration as ``dedup scan`` runs it (SimHash tables, LSH bands and the anchor
  table, every candidate verified: ``MatchSettings().detector``), scored on
  the matches the track's truth judges: relation ``similar`` on a Jaccard track, every match on a
  same-source track; ``default, all relations`` (Jaccard tracks): every match a verdict lists,
  ``contained`` ones too;
- ``simhash:<weighting>``: our SimHash alone at Hamming <= k, per weighting (seeds 002/003/004);
- peers ``simhash-1e0ng`` (SimhashIndex, k=3) and ``datasketch`` (MinHashLSH 0.8, 128 perms,
  over the ground truth's own shingles).
Every method is scored overall and by Jaccard band, by length and by CJK share (accuracy_report.py).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from benchmarks.accuracy_report import Pair, Track, chart, pair, print_tables, score
from benchmarks.common import DEFAULT_OUT, save_json, versions
from benchmarks.tracks import TRACKS, find_spec, track_paths
from stream.detect import MatchSettings
from stream.detect.verdict import SIMILAR
from stream.fingerprint import FingerprintConfig, Fingerprinter, parse_document
from stream.index import BlockIndex


def _as_input(doc: dict[str, Any]) -> dict[str, Any]:
    """Corpus line -> our document: text and id only (metadata like author must not help)."""
    return {"id": doc["id"], "text": doc.get("text", "")}


def run_ours(track: Track, config: FingerprintConfig, k: int, verify: bool, every_relation: bool = False
             ) -> set[Pair]:
    """Our pairs: the matches whose relation the track's truth judges (``similar`` for a Jaccard
    truth, any for a same-source truth), or ``every_relation``: every match a verdict lists."""
    fingerprinter = Fingerprinter(config)
    index = BlockIndex(None, k=k, bands=config.band_tables if verify else 0)
    detector = MatchSettings().detector(index) if verify else None
    counted = None if every_relation or track.truth_kind == "source" else SIMILAR
    found: set[Pair] = set()
    for seq, raw in enumerate(track.docs):
        fp = fingerprinter.fingerprint(parse_document(_as_input(raw)))
        if detector is not None:
            for m in detector.probe(fp, (float(seq), fp.doc_id)):
                if counted is None or m.relation == counted:
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


def peer_docs(track: Track) -> list[dict[str, Any]]:
    """What the peers read: the documents, or for web pages the text our default extractor gives."""
    return track.docs if track.peer_docs is None else track.peer_docs


def run_datasketch(track: Track, unit: str | None = None) -> set[Pair]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    found: set[Pair] = set()
    for raw in peer_docs(track):
        sh = _truth_shingles(raw.get("text", ""), unit or track.unit)
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
    for raw in peer_docs(track):
        h = Simhash(raw.get("text", ""))
        found.update(pair(raw["id"], other) for other in index.get_near_dups(h) if other != raw["id"])
        index.add(raw["id"], h)
    return found


def load_registered(names: list[str], limit: int | None) -> list[Track]:
    """The registered tracks (tracks.TRACKS) named, or all; a missing one is skipped with the command
    that builds or fetches it (an error if it was asked for by name, or if none is here)."""
    specs = [find_spec(n) for n in names] if names else TRACKS
    if None in specs:
        raise click.ClickException(f"unknown track in {names}; registered: {', '.join(t.name for t in TRACKS)}")
    out = []
    for spec in specs:
        assert spec is not None
        paths = track_paths(spec)
        if paths is None:
            message = f"track {spec.name} is not here: {spec.how_to_get}"
            if names:
                raise click.ClickException(message)
            click.echo(f"skipped {message}", err=True)
            continue
        track = Track.load(spec.name, *paths, limit, unit=spec.unit)
        track.truth_kind = spec.truth
        if spec.html:
            from stream.text.html import extract

            track.peer_docs = [{"id": d["id"], "text": extract(d["text"]).text} for d in track.docs]
            track.measure(track.peer_docs)
        out.append(track)
    if not out:
        raise click.ClickException("no track found: build them (python -m benchmarks tracks list) or pass "
                                   "--track NAME=DOCS.jsonl:PAIRS.jsonl")
    return out


def _simhash_only(cfg: FingerprintConfig, k: int, track: Track) -> set[Pair]:
    return run_ours(track, cfg, k, verify=False)


def methods(config: FingerprintConfig, k: int, weightings: Iterable[str], peers: bool
            ) -> list[tuple[str, Callable[[Track], set[Pair]]]]:
    out: list[tuple[str, Callable[[Track], set[Pair]]]] = [
        ("default", lambda t: run_ours(t, config, k, verify=True)),
        ("default, all relations", lambda t: run_ours(t, config, k, verify=True, every_relation=True))]
    for w in weightings:
        if w == "shingles":
            cfg = config.with_(simhash_features="shingles")
        elif w == "pos_weighted+pos":
            cfg = config.with_(simhash_features="words", weighting="pos_weighted", pos_tags=True)
        else:
            cfg = config.with_(simhash_features="words", weighting=w)
        out.append((f"simhash:{w}", functools.partial(_simhash_only, cfg, k)))
    if peers:
        out.append(("simhash-1e0ng", run_simhash_peer))
        out.append(("datasketch", run_datasketch))
    return out


def peer_labels() -> dict[str, str]:
    """Method name -> the peer it runs, with the installed version."""
    found = versions("simhash", "datasketch")
    return {"simhash-1e0ng": f"simhash {found['simhash']} (1e0ng SimhashIndex, k=3)",
            "datasketch": f"datasketch {found['datasketch']} MinHashLSH (0.8, 128 perm)"}


@click.command("accuracy")
@click.option("--tracks", "names", default="", metavar="NAME,...",
              help="Registered tracks to run (default: every one present; 'python -m benchmarks tracks list').")
@click.option("--track", "track_specs", multiple=True, metavar="NAME=DOCS:PAIRS",
              help="Another corpus and its ground-truth pairs (instead of the registered ones).")
@click.option("--limit", type=int, default=None, help="Only the first N documents of each track.")
@click.option("-k", "k", type=int, default=3, show_default=True, help="SimHash Hamming radius.")
@click.option("--weightings", default="tf,tfidf,tfidf_len,pos_weighted,pos_weighted+pos,binary,shingles",
              show_default=True,
              help="SimHash-only variants to compare ('' for none).")
@click.option("--no-peers", is_flag=True, help="Skip the simhash and datasketch peers.")
@click.option("--segmenter", type=click.Choice(["auto", "rjieba", "jieba"]), default="auto", show_default=True,
              help="Word segmenter (all give the same tokens).")
@click.option("--short-text-chars", type=int, default=FingerprintConfig.short_text_chars, show_default=True,
              help="Texts up to this many characters are also verified on character 3-grams.")
@click.option("--sketch-bytes", type=int, default=FingerprintConfig.sketch_bytes, show_default=True,
              help="Size of the verification sketch.")
@click.option("--out", "out_dir", default=DEFAULT_OUT, show_default=True, help="Where the JSON and PNG go.")
def command(names: str, track_specs: tuple[str, ...], limit: int | None, k: int, weightings: str, no_peers: bool,
            segmenter: str, short_text_chars: int, sketch_bytes: int, out_dir: str) -> None:
    """Pair precision/recall/F1 of our default and its variants next to the peers, per track."""
    from rich.console import Console

    console = Console(stderr=True)
    tracks = []
    for spec in track_specs:
        name, _, paths = spec.partition("=")
        docs, _, pairs = paths.partition(":")
        tracks.append(Track.load(name, Path(docs), Path(pairs), limit))
    tracks = tracks or load_registered([n for n in names.split(",") if n], limit)
    config = FingerprintConfig(segmenter=segmenter, short_text_chars=short_text_chars, sketch_bytes=sketch_bytes)
    results: dict[str, dict[str, Any]] = {}
    for track in tracks:
        results[track.name] = {}
        for name, run in methods(config, k, [w for w in weightings.split(",") if w], not no_peers):
            if name == "default, all relations" and track.truth_kind == "source":
                continue  # the same pairs as the default there
            started = time.perf_counter()
            try:
                found = run(track)
            except Exception as exc:  # a broken peer must not cost the other figures
                console.print(f"[red]{track.name} {name} failed: {exc!r}[/red]")
                continue
            res = score(track, found)
            res["seconds"] = round(time.perf_counter() - started, 2)
            results[track.name][name] = res
            console.print(f"{track.name:12} {name:18} P {res['precision']:.3f} R {res['recall']:.3f} "
                          f"F1 {res['f1']:.3f} ({res['seconds']}s)")
    print_tables(console, results)
    settings = Fingerprinter(config).segmenter.settings
    peers = peer_labels() if not no_peers else {}
    tracks_info = {t.name: {"docs": len(t.docs), "true_pairs": len(t.truth), "truth_unit": t.unit,
                            "truth": t.truth_kind} for t in tracks}
    target = save_json(out_dir, "accuracy", {"k": k, "config": config.describe(settings), "peers": peers,
                                             "tracks": tracks_info, "results": results})
    chart(results, peers, f"fingerprint schema {Fingerprinter(config).schema}", Path(out_dir) / "accuracy.png")
    console.print(f"saved {target} and {Path(out_dir) / 'accuracy.png'}")
