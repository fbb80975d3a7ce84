"""Real text for the stream benchmarks: the 20,000 Tang poems of ../shared/corpora (two digitisations
of the Complete Tang Poems, with exact near-duplicate ground truth), given event times, and streams of
any length built from them."""

from __future__ import annotations

import json
import random
import re
from itertools import accumulate
from typing import Any

import click

from benchmarks.tracks import find_spec, track_paths

# "appears again": the annotation the Complete Tang Poems puts on a poem printed twice. Appended to a
# poem it changes ~4 of its ~44 character 5-grams (median poem: 48 characters): a near copy, J ~0.9.
REPEAT_NOTE = "（重出）"
# a clause: text up to and with its closing punctuation (a poem's line holds two or more)
CLAUSE = re.compile(r"[^，。；？！\n]+[，。；？！]*")
SENTENCE_END = ("。", "？", "！")


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


def clause_stream(poems: list[dict[str, Any]], n: int, step: float = 1.0, start: float = 0.0
                  ) -> list[dict[str, Any]]:
    """``n`` documents with event times ``start + i * step``: the poems as they are, then (beyond the
    corpus) round r of new documents (ids ``<id>~r``): the corpus's clauses (half-lines) in an order of
    round r's own, dealt out so document j has as many as poem j. Each clause is in one document per
    round, and two documents share at most a clause or two (~4 of ~40 character 5-grams), so its
    candidates (band collisions) do not grow with the stream, unlike ``poem_stream``'s, whose round-r
    document j starts with poem j in every round."""
    clauses = [CLAUSE.findall(poem["text"]) for poem in poems]
    pool = [c for cs in clauses for c in cs]
    ends = list(accumulate(len(cs) for cs in clauses))
    out, order = [], list(range(len(pool)))
    for i in range(n):
        r, j = divmod(i, len(poems))
        doc = dict(poems[j])
        if r:
            if j == 0:
                random.Random(r).shuffle(order)
            taken = [pool[k] for k in order[ends[j] - len(clauses[j]):ends[j]]]
            text = "".join(c + "\n" if c.endswith(SENTENCE_END) else c for c in taken).rstrip("\n")
            doc.update(id=f"{doc['id']}~{r}", text=text or doc["text"])
        doc["ts"] = start + i * step
        out.append(doc)
    return out


def near_copy(doc: dict[str, Any], new_id: str, ts: float) -> dict[str, Any]:
    """``doc`` reprinted under ``new_id`` at ``ts`` with the repeat note appended: a near-duplicate."""
    return {**doc, "id": new_id, "text": doc["text"] + REPEAT_NOTE, "ts": ts}
