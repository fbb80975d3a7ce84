"""The accuracy tracks: where each one's documents and ground truth live, and how to get them.

``TRACKS`` is the registry ``python -m benchmarks accuracy`` runs by default; adding a track is one entry.
A track's files sit under one of two roots:
- ``shared``: ../shared/corpora next to the checkout (or $DEDUP_SHARED), the project's corpora;
- ``cache``: the track cache ($DEDUP_TRACKS, default ~/.cache/stream-dedup/tracks), where
  ``python -m benchmarks tracks build`` writes the tracks it builds from sources it downloads;
- ``crawl``: where ``python -m benchmarks crawl-tracks`` writes the crawl-like HTML tracks
  (benchmarks/web/tracks.py) and ``python -m benchmarks edge-tracks`` the edge tracks (web/edges.py).
A missing track is skipped with the command that builds or fetches it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import shared_dir


@dataclass(frozen=True)
class TrackSpec:
    name: str
    root: str  # "shared" | "cache"
    docs: str  # path under the root
    pairs: str
    unit: str  # the ground truth's shingle unit: "char" (5-grams) or "word" (3-grams)
    how_to_get: str  # what to run when the files are missing
    html: bool = False  # web pages: the peers get the text our default extractor gives
    # what a true pair is: "jaccard" (shingle Jaccard >= 0.8: our matches of relation "similar" are
    # scored) or "source" (pages of one source article: every match, "contained" ones too)
    truth: str = "jaccard"


TRACKS: list[TrackSpec] = [
    TrackSpec("tang", "shared", "corpora/tang_sample20k_docs.jsonl", "corpora/tang_sample20k_pairs.jsonl", "char",
              "the project's ../shared/corpora (or set DEDUP_SHARED)"),
    TrackSpec("peps", "shared", "corpora/peps_dev.jsonl", "corpora/peps_dev_pairs.jsonl", "word",
              "the project's ../shared/corpora (or set DEDUP_SHARED)"),
    TrackSpec("manpages-zh", "cache", "manpages-zh/docs.jsonl", "manpages-zh/pairs.jsonl", "char",
              "python -m benchmarks tracks build manpages-zh"),
    TrackSpec("debref-zh", "cache", "debref-zh/docs.jsonl", "debref-zh/pairs.jsonl", "char",
              "python -m benchmarks tracks build debref-zh"),
    TrackSpec("zh-news", "crawl", "tracks/zh-news_docs.jsonl", "tracks/zh-news_pairs.jsonl", "char",
              "python -m benchmarks crawl-tracks", html=True, truth="source"),
    TrackSpec("en-docs", "crawl", "tracks/en-docs_docs.jsonl", "tracks/en-docs_pairs.jsonl", "word",
              "python -m benchmarks crawl-tracks", html=True, truth="source"),
    # short reposts with a cut and an ad, template families, section indexes, archives (web/edges.py)
    TrackSpec("edges-en", "crawl", "tracks/edges-en_docs.jsonl", "tracks/edges-en_pairs.jsonl", "word",
              "python -m benchmarks edge-tracks", truth="source"),
    TrackSpec("edges-zh", "crawl", "tracks/edges-zh_docs.jsonl", "tracks/edges-zh_pairs.jsonl", "char",
              "python -m benchmarks edge-tracks", truth="source"),
]


def cache_dir() -> Path:
    env = os.environ.get("DEDUP_TRACKS")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stream-dedup" / "tracks"


def track_paths(spec: TrackSpec) -> tuple[Path, Path] | None:
    """(docs, pairs) of a registered track, or None when its files are not here."""
    if spec.root == "shared":
        shared = shared_dir()
        if shared is None:
            return None
        root = shared
    elif spec.root == "crawl":
        from benchmarks.web.tracks import DEFAULT_CACHE

        root = DEFAULT_CACHE
    else:
        root = cache_dir()
    docs, pairs = root / spec.docs, root / spec.pairs
    return (docs, pairs) if docs.is_file() and pairs.is_file() else None


def find_spec(name: str) -> TrackSpec | None:
    return next((t for t in TRACKS if t.name == name), None)
