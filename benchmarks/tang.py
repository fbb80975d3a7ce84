"""Real text for the stream benchmarks: the 20,000 Tang poems of ../shared/corpora (two digitisations
of the Complete Tang Poems, with exact near-duplicate ground truth), given event times, and streams of
any length built from them."""

from __future__ import annotations

import json
import random
from typing import Any

import click

from benchmarks.tracks import find_spec, track_paths

# "appears again": the annotation the Complete Tang Poems puts on a poem printed twice. Appended to a
# poem it changes ~4 of its ~44 character 5-grams (median poem: 48 characters): a near copy, J ~0.9.
REPEAT_NOTE = "（重出）"


def tang_poems() -> list[dict[str, Any]]:
    """The 20,000 poems, in file order; a clear error when ../shared/corpora is not there."""
    spec = find_spec("tang")
    paths = track_paths(spec) if spec else None
    if spec is None or paths is None:
        raise click.ClickException("this benchmark reads the tang track's ../shared/corpora (real text with ground "
                                   "truth), not found next to the checkout: set DEDUP_SHARED to the folder holding "
                                   "corpora/")
    with open(paths[0], encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def poem_stream(poems: list[dict[str, Any]], n: int, step: float = 1.0, start: float = 0.0) -> list[dict[str, Any]]:
    """``n`` documents with event times ``start + i * step``: the poems as they are, then (beyond the
    corpus) round r of new documents, each a poem followed by another one (ids ``<id>~r``), so a stream
    longer than the corpus is still real text, mostly unique, with the corpus's own near-duplicates."""
    out = []
    for i in range(n):
        r, j = divmod(i, len(poems))
        base = poems[j]
        doc = dict(base)
        if r:
            other = poems[(j * 7919 + r * 104_729) % len(poems)]
            doc.update(id=f"{base['id']}~{r}", text=f"{base['text']}\n{other['text']}")
        doc["ts"] = start + i * step
        out.append(doc)
    return out


def cipher_stream(poems: list[dict[str, Any]], n: int, step: float = 1.0, start: float = 0.0
                  ) -> list[dict[str, Any]]:
    """``n`` documents with event times ``start + i * step``: the poems as they are, then (beyond the
    corpus) round r of them again (ids ``<id>~r``) with each character replaced by round r's own
    permutation of the corpus's characters (punctuation and whitespace kept). Each round keeps the
    corpus's lengths, character frequencies and near-duplicate pairs, and shares almost no character
    5-gram with the earlier rounds, so a document's candidates do not grow with the stream. Reused
    real clauses (``poem_stream``'s poems, or shuffled ones) do not do that: one shared 5-gram makes a
    band collision in a short text often enough that candidates grow with every round."""
    alphabet = sorted({c for poem in poems for c in poem["text"] if c.isalnum()})
    out = []
    table: dict[int, str] = {}
    for i in range(n):
        r, j = divmod(i, len(poems))
        doc = dict(poems[j])
        if r:
            if j == 0:
                shuffled = random.Random(r).sample(alphabet, len(alphabet))
                table = str.maketrans(dict(zip(alphabet, shuffled, strict=True)))
            doc.update(id=f"{doc['id']}~{r}", text=doc["text"].translate(table))
        doc["ts"] = start + i * step
        out.append(doc)
    return out


def near_copy(doc: dict[str, Any], new_id: str, ts: float) -> dict[str, Any]:
    """``doc`` reprinted under ``new_id`` at ``ts`` with the repeat note appended: a near-duplicate."""
    return {**doc, "id": new_id, "text": doc["text"] + REPEAT_NOTE, "ts": ts}
