"""``python -m benchmarks tracks build|list``: the mixed Chinese/English accuracy tracks, built reproducibly.

A build downloads its Debian package (track_sources.py), cuts the text into documents, adds edited
copies (track_edits.py) and computes the exact ground truth with the project's truth tool
(../shared/tools/neardup_truth.py: character 5-grams of the text without whitespace, every pair
with Jaccard >= 0.8). Everything goes to the track cache (tracks.cache_dir()), outside the
repository: ``NAME/docs.jsonl``, ``NAME/pairs.jsonl`` and ``NAME/manifest.json`` (source package,
version, SHA-256, licence, seed, counts). The same package version and seed give the same track.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchmarks.common import shared_dir
from benchmarks.track_edits import edit_variant
from benchmarks.track_sources import Package, fetch_package, man_pages, paragraphs, reference_sections
from benchmarks.tracks import TRACKS, cache_dir, track_paths

Doc = dict[str, Any]
MIN_CHARS = 50  # documents shorter than this (without whitespace) are left out


def _size(text: str) -> int:
    return len(re.sub(r"\s+", "", text))


def _chunks(paras: list[str], rng: random.Random, lo: int = 150, hi: int = 5000) -> list[range]:
    """Consecutive paragraph ranges of a log-uniform target length in [lo, hi] characters each."""
    out, start, size = [], 0, 0
    target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    for i, para in enumerate(paras):
        size += _size(para)
        if size >= target:
            out.append(range(start, i + 1))
            start, size = i + 1, 0
            target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    if start < len(paras):
        out.append(range(start, len(paras)))
    return out


def manpages_bases(cache: Path, rng: random.Random) -> tuple[list[Package], list[Doc]]:
    """Man pages cut into documents; for a sixth of them also the zh_TW page's same paragraphs (the
    real conversion to traditional script and Taiwan vocabulary: 檔案, 字元, 列印 ...)."""
    package = fetch_package("manpages-zh", cache)
    simplified, traditional = man_pages(package, "zh_CN"), man_pages(package, "zh_TW")
    docs: list[Doc] = []
    for page, text in simplified.items():
        paras = paragraphs(text)
        tw = paragraphs(traditional.get(page, ""))
        for k, chunk in enumerate(_chunks(paras, rng)):
            body = "\n\n".join(paras[i] for i in chunk)
            docs.append({"id": f"man:{page}#{k}", "src": "zh_CN", "text": body})
            if len(tw) == len(paras) and rng.random() < 1 / 6:
                docs.append({"id": f"man:{page}#{k}:tw", "src": "zh_TW",
                             "text": "\n\n".join(tw[i] for i in chunk), "edits": ["zh_TW page"]})
    return [package], docs


def debref_bases(cache: Path, rng: random.Random) -> tuple[list[Package], list[Doc]]:
    """Numbered sections of the Debian Reference; long ones cut at paragraphs."""
    package = fetch_package("debian-reference-zh-cn", cache)
    docs: list[Doc] = []
    for number, text in reference_sections(package).items():
        paras = paragraphs(text)
        for k, chunk in enumerate(_chunks(paras, rng, lo=2000, hi=6000)):
            docs.append({"id": f"debref:{number}#{k}", "src": "zh-cn",
                         "text": "\n\n".join(paras[i] for i in chunk)})
    return [package], docs


BUILDERS: dict[str, Callable[[Path, random.Random], tuple[list[Package], list[Doc]]]] = {
    "manpages-zh": manpages_bases,
    "debref-zh": debref_bases,
}


def with_variants(bases: list[Doc], rng: random.Random, share: float = 0.45) -> list[Doc]:
    """The bases plus edited copies of ``share`` of them (1-3 copies each), in a shuffled order."""
    texts = [d["text"] for d in bases]
    out = list(bases)
    for doc in bases:
        if doc.get("edits") or rng.random() >= share:
            continue
        for v in range(rng.choice([1, 1, 1, 2, 2, 3])):
            text, labels = edit_variant(doc["text"], rng, texts)
            out.append({"id": f"{doc['id']}~{v}", "src": "edited", "text": text, "edits": labels})
    out = [d for d in out if _size(d["text"]) >= MIN_CHARS]
    rng.shuffle(out)
    return out


def truth_tool() -> Path:
    shared = shared_dir()
    tool = shared / "tools" / "neardup_truth.py" if shared else None
    if tool is None or not tool.is_file():
        raise click.ClickException("the ground-truth tool ../shared/tools/neardup_truth.py is not here "
                                   "(set DEDUP_SHARED to the folder holding tools/ and corpora/)")
    return tool


def build(name: str, seed: int) -> dict[str, Any]:
    out = cache_dir() / name
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{name}:{seed}")
    packages, bases = BUILDERS[name](cache_dir(), rng)
    docs = with_variants(bases, rng)
    docs_path, pairs_path = out / "docs.jsonl", out / "pairs.jsonl"
    with open(docs_path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    run = subprocess.run([sys.executable, str(truth_tool()), str(docs_path), "--unit", "char", "-k", "5",
                          "--pairs-out", str(pairs_path), "--show", "0"], capture_output=True, text=True, check=True)
    summary = json.loads(run.stdout[: run.stdout.rindex("}") + 1])
    manifest = {
        "track": name, "seed": seed,
        "sources": [{"package": p.name, "version": p.version, "sha256": p.sha256, "licence": p.licence,
                     "origin": "Debian archive (apt-get download)"} for p in packages],
        "docs": len(docs), "edited_copies": sum(d["src"] == "edited" for d in docs),
        "chars": sum(_size(d["text"]) for d in docs), "truth": summary,
        "truth_command": "neardup_truth.py DOCS --unit char -k 5 (Jaccard >= 0.8 of character 5-grams)",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


@click.group("tracks")
def command() -> None:
    """The accuracy tracks: list them, build the mixed Chinese/English ones."""


@command.command("build")
@click.argument("names", nargs=-1)
@click.option("--seed", type=int, default=1, show_default=True,
              help="Random seed of the edits (the build is reproducible).")
def build_command(names: tuple[str, ...], seed: int) -> None:
    """Download the sources and build tracks (default: every buildable one) into the track cache."""
    for name in names or tuple(BUILDERS):
        if name not in BUILDERS:
            raise click.ClickException(f"no builder for {name!r}; buildable: {', '.join(BUILDERS)}")
        m = build(name, seed)
        click.echo(f"{name}: {m['docs']} documents ({m['edited_copies']} edited copies), "
                   f"{m['truth']['pairs_ge_t']} true pairs -> {cache_dir() / name}")


@command.command("list")
def list_command() -> None:
    """Each registered track, where its files are, or how to get them."""
    for spec in TRACKS:
        paths = track_paths(spec)
        click.echo(f"{spec.name:14} {paths[0] if paths else 'missing: ' + spec.how_to_get}")
