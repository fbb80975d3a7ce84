"""Block-table statistics: bucket sizes per level, splits, candidates per query, per table kind.

The counters drive the re-split rule (the average bucket size of a level, Wang & Wang 2019, §2.3)
and are the observable state of the index (``BlockIndex.stats()``). Structure counters
are persisted as one small JSON value every few hundred mutations and on flush/close; after a crash
they may lag by that many mutations, which only nudges split decisions (queries stay exact).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np


def size_bin(size: int) -> int:
    """Histogram bin of a bucket size: bin b holds sizes in [2^(b-1), 2^b) (bin 1 is size 1)."""
    return size.bit_length()


@dataclass
class LevelCounter:
    """Non-empty buckets and entries at one split level, with a log2 size histogram."""

    buckets: int = 0
    entries: int = 0
    histogram: dict[int, int] = field(default_factory=dict)

    def resize(self, old: int, new: int) -> None:
        self.entries += new - old
        old_bin, new_bin = old.bit_length(), new.bit_length()
        if old_bin != new_bin:  # the common +-1 step rarely crosses a power of two
            if old_bin:
                self._bump(old_bin, -1)
            if new_bin:
                self._bump(new_bin, 1)
            self.buckets += (new > 0) - (old > 0)

    def grow(self, entries: int, buckets: int, bins: np.ndarray) -> None:
        """A batch's change at once (``kernels.bucket_growth``): ``entries`` and ``buckets`` more, and
        ``bins[b]`` more buckets in histogram bin b (bin 0, the empty ones, is not kept)."""
        self.entries += entries
        self.buckets += buckets
        for b in np.flatnonzero(bins[1:]).tolist():
            self._bump(b + 1, int(bins[b + 1]))

    def _bump(self, b: int, delta: int) -> None:
        count = self.histogram.get(b, 0) + delta
        if count:
            self.histogram[b] = count
        else:
            self.histogram.pop(b, None)

    def mean(self) -> float:
        return self.entries / self.buckets if self.buckets else 0.0


@dataclass
class RunningCandidates:
    """Candidates examined per query: count of queries, running mean and max (per process)."""

    queries: int = 0
    mean: float = 0.0
    max: int = 0

    def add(self, candidates: int) -> None:
        self.queries += 1
        self.mean += (candidates - self.mean) / self.queries
        self.max = max(self.max, candidates)

    def add_many(self, candidates: list[int]) -> None:
        if candidates:
            self.queries += len(candidates)
            self.mean += (sum(candidates) - len(candidates) * self.mean) / self.queries
            self.max = max(self.max, max(candidates))


@dataclass(frozen=True)
class LevelStats:
    level: int
    buckets: int
    entries: int
    mean_size: float
    # bin upper bound (exclusive) -> number of buckets with size in [bound / 2, bound)
    size_histogram: dict[int, int]


@dataclass(frozen=True)
class KindStats:
    kind: str
    levels: tuple[LevelStats, ...]
    splits: int
    refused_splits: int
    queries: int
    candidates_mean: float
    candidates_max: int


@dataclass(frozen=True)
class IndexStats:
    """Snapshot of the block index: documents, entries, per table kind levels/splits/candidates, cache."""

    documents: int
    entries: int
    splits: int
    kinds: dict[str, KindStats]
    cache_buckets: int
    cache_hits: int
    cache_misses: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class StatsRecorder:
    """Mutable counters behind ``IndexStats``; persisted (structure only) with ``to_json``/``from_json``."""

    KINDS = ("simhash", "band")

    def __init__(self) -> None:
        self.documents = 0
        self.levels: dict[str, list[LevelCounter]] = {kind: [] for kind in self.KINDS}
        self.splits: dict[str, int] = dict.fromkeys(self.KINDS, 0)
        self.refused: dict[str, int] = dict.fromkeys(self.KINDS, 0)
        self.candidates: dict[str, RunningCandidates] = {kind: RunningCandidates() for kind in self.KINDS}

    def level(self, kind: str, level: int) -> LevelCounter:
        levels = self.levels[kind]
        while len(levels) <= level:
            levels.append(LevelCounter())
        return levels[level]

    def resize(self, kind: str, level: int, old: int, new: int) -> None:
        levels = self.levels[kind]
        (levels[level] if level < len(levels) else self.level(kind, level)).resize(old, new)

    def added(self, kind: str, level: int, size: int) -> None:
        """One entry joined a bucket at ``level`` that now holds ``size``: ``resize(kind, level, size - 1,
        size)``, its common case first (a size that is no power of two stays in its histogram bin)."""
        levels = self.levels[kind]
        if level < len(levels) and size & (size - 1):
            levels[level].entries += 1
        else:
            self.resize(kind, level, size - 1, size)

    def level_mean(self, kind: str, level: int) -> float:
        return self.level(kind, level).mean()

    def snapshot(self, cache_buckets: int, cache_hits: int, cache_misses: int) -> IndexStats:
        kinds = {}
        for kind in self.KINDS:
            levels = tuple(
                LevelStats(
                    level=i,
                    buckets=c.buckets,
                    entries=c.entries,
                    mean_size=c.mean(),
                    size_histogram={1 << b: n for b, n in sorted(c.histogram.items())},
                )
                for i, c in enumerate(self.levels[kind])
            )
            cand = self.candidates[kind]
            kinds[kind] = KindStats(
                kind=kind,
                levels=levels,
                splits=self.splits[kind],
                refused_splits=self.refused[kind],
                queries=cand.queries,
                candidates_mean=cand.mean,
                candidates_max=cand.max,
            )
        return IndexStats(
            documents=self.documents,
            entries=sum(c.entries for levels in self.levels.values() for c in levels),
            splits=sum(self.splits.values()),
            kinds=kinds,
            cache_buckets=cache_buckets,
            cache_hits=cache_hits,
            cache_misses=cache_misses,
        )

    def to_json(self) -> bytes:
        state = {
            "documents": self.documents,
            "splits": self.splits,
            "refused": self.refused,
            "levels": {
                kind: [[c.buckets, c.entries, sorted(c.histogram.items())] for c in levels]
                for kind, levels in self.levels.items()
            },
        }
        return json.dumps(state, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> StatsRecorder:
        state = json.loads(raw)
        rec = cls()
        rec.documents = state["documents"]
        rec.splits.update(state["splits"])
        rec.refused.update(state["refused"])
        for kind, levels in state["levels"].items():
            rec.levels[kind] = [
                LevelCounter(buckets=b, entries=e, histogram={int(k): v for k, v in hist}) for b, e, hist in levels
            ]
        return rec
