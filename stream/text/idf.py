"""Inverse document frequency tables for the TF-IDF weightings.

Two sources, one protocol (``idf(term) -> float | None``; None = the table knows nothing of the
term, and the TF-IDF weightings then DROP the term: giving unknown terms the median IDF collapses
fingerprints on the shared corpora, since many documents then share one dominant set of filler features):

- ``JiebaIdf``: the IDF table bundled with jieba (``jieba/analyse/idf.txt``, 270k words), fixed, so
  fingerprints do not drift.
- ``StreamingIdf``: document frequencies learned from the stream itself, persisted to a JSON file.
  Fingerprints made with it depend on what the stream has seen: use it where that is acceptable.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Protocol

_FORMAT = "stream-dedup/streaming-idf/v1"


class IdfTable(Protocol):
    def idf(self, term: str) -> float | None: ...


class JiebaIdf:
    """jieba's bundled IDF table (``jieba.analyse``'s idf.txt), keys casefolded like our tokens.

    Loaded from the file directly (about 0.3 s) without importing ``jieba.analyse``, which would
    also build jieba.posseg's tag table.
    """

    name = "jieba-idf"

    def __init__(self) -> None:
        text = resources.files("jieba").joinpath("analyse", "idf.txt").read_text(encoding="utf-8")
        table: dict[str, float] = {}
        for line in text.splitlines():
            word, _, value = line.rpartition(" ")
            if word:
                # casefold may merge "Word"/"word"; keep the first, as the file lists them
                table.setdefault(word.casefold(), float(value))
        self._table = table
        values = sorted(table.values())
        self.median = values[len(values) // 2] if values else 0.0  # informational only, never a fill

    def idf(self, term: str) -> float | None:
        return self._table.get(term)

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, term: object) -> bool:
        return term in self._table


@cache
def jieba_idf() -> JiebaIdf:
    """The process-wide JiebaIdf (loaded once)."""
    return JiebaIdf()


class StreamingIdf:
    """Running document frequencies learned from the stream, persisted as JSON.

    ``update(terms)`` once per document with its terms (duplicates are counted once).
    ``idf(term) = ln((N + 1) / (df + 1)) + 1`` -- scikit-learn's ``smooth_idf`` form: as if one extra
    document contained every term, so no division by zero and no negative IDF, and a term in every
    document still weighs 1. Terms seen in fewer than ``min_df`` documents return None (unknown, so
    TF-IDF drops them); with the default ``min_df=1`` a document's own new terms count once you
    ``update`` with the document before weighing it.

    ``save()`` writes atomically (temporary file in the same directory, fsync, ``os.replace``), so a
    crash leaves either the old or the new file; the constructor reloads an existing file.
    Thread-safe for concurrent ``update``/``idf``/``save``.
    """

    name = "streaming-idf"

    def __init__(self, path: str | os.PathLike[str] | None = None, *, min_df: int = 1) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.min_df = min_df
        self.n_docs = 0
        self._df: Counter[str] = Counter()
        self._lock = threading.Lock()
        if self.path is not None and os.path.exists(self.path):
            self._load(self.path)

    def update(self, terms: Iterable[str]) -> None:
        distinct = set(terms)
        with self._lock:
            self.n_docs += 1
            self._df.update(distinct)

    def df(self, term: str) -> int:
        return self._df.get(term, 0)

    def idf(self, term: str) -> float | None:
        df = self._df.get(term, 0)
        if df < self.min_df:  # min_df=0 gives unseen terms the largest IDF, ln(N + 1) + 1
            return None
        return math.log((self.n_docs + 1) / (df + 1)) + 1.0

    def __len__(self) -> int:
        return len(self._df)

    def save(self, path: str | os.PathLike[str] | None = None) -> str:
        """Write the table atomically to ``path`` (default: the constructor's); returns the path."""
        target = os.fspath(path) if path is not None else self.path
        if target is None:
            raise ValueError("StreamingIdf.save() needs a path (none was given to the constructor)")
        with self._lock:
            payload = {"format": _FORMAT, "n_docs": self.n_docs, "df": dict(self._df)}
        directory = os.path.dirname(os.path.abspath(target))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".idf-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(payload, out, ensure_ascii=False, separators=(",", ":"))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return target

    def _load(self, path: str) -> None:
        with open(path, encoding="utf-8") as src:
            payload = json.load(src)
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a streaming IDF file (expected format {_FORMAT!r})")
        df = payload.get("df")
        n_docs = payload.get("n_docs")
        if not isinstance(df, dict) or not isinstance(n_docs, int):
            raise ValueError(f"{path}: streaming IDF file is missing 'n_docs' or 'df'")
        self.n_docs = n_docs
        self._df = Counter({str(k): int(v) for k, v in df.items()})
