"""The anchor table: sampled shingle hashes ("anchors") -> the documents that have them.

MinHash bands collide for two texts of similar size; a page 1/50 the size of an archive that holds it
shares no whole-document band with it. Both keep every shingle hash below a fixed bound (the
fingerprint's ``anchors``: ~1/16 of a text's shingles), so they share the anchors of the page's
shingles. The table proposes a pair when the two share a *cool* anchor, and at least ``MIN_SHARED``
anchors and at least half of the anchors the smaller side has under the pair's bound
(``proposed_many``); the detector verifies it as any other candidate.

Hot anchors: a hash many documents share (a site's template, a license footer) says nothing about a
pair, and its posting list would make every probe long. An anchor held by more than ``cap`` documents
(among those a probe may see) proposes no pair, but counts among the shared ones of a pair a cool
anchor proposes. Its entries are kept, so the rule depends on the live documents only and deletes,
expiry and a rebuild leave the table exactly as inserting the live documents in order would.

Split over partitions (the service): ``owns`` says which anchors a table proposes by. A partition
holds every document that has one of its anchors (with all of that document's entries), so it counts
its anchors' holders exactly, and a pair's shared anchors by the entries of the pair's stored side;
each pair is proposed where one of its cool shared anchors is owned, so the union over the partitions
is what one table of every document proposes (docs/decisions/anchor-table-partitions.md).

Derived state, like the band map: the index rebuilds it from its records' payloads on open
(``anchors_of`` reads a payload's anchors), and its writes keep it in step.

Layout (8 bytes per (document, anchor)): each entry is one uint64, the anchor in the high 28 bits and
handle + 1 in the low 36, in sorted runs (a log-structured merge: new entries are sorted into a run
of their own, and a run is merged into the one before it while that is at most twice its size, so
there are at most log2 of them). An anchor's entries "below this handle" are a key range, counted by
two binary searches per run however hot the anchor is. A deleted entry becomes (anchor, 0) at the
start of its anchor's range: the runs stay sorted, no range counts it, and merges drop it. Per
document (handle, anchor count, bound) in three sorted arrays: 16 bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# A payload's anchors: (sorted uint32 hashes, the bound they are all of the document's below; 0: none)
AnchorsOf = Callable[[bytes], tuple[np.ndarray, int]]
# A query: (its sorted anchors, their bound, the handle it sees the documents below of; None: all)
AnchorQuery = tuple[np.ndarray, int, int | None]
# Which anchors of an array a table proposes pairs by: a boolean mask (a partition's share of them)
AnchorOwner = Callable[[np.ndarray], np.ndarray]
MIN_SHARED = 2  # one shared hash is chance (1/16 of a shared common phrase)
DEFAULT_CAP = 64  # documents per anchor beyond which it proposes nothing (docs/decisions/anchor-candidates.md)
ANCHOR_BITS = 28  # anchors are below 2^32 / 16 (Fingerprint.anchors' share)
HANDLE_BITS = 64 - ANCHOR_BITS  # handle + 1 (0: a deleted entry): 2^36 - 1 handles per store
_SHIFT = np.uint64(HANDLE_BITS)
_HANDLE_MASK = np.uint64((1 << HANDLE_BITS) - 1)
_SEAL_AT = 1 << 16  # entries added before they are sorted into a run (a query seals them sooner)


class AnchorTable:
    """anchor -> handles in sorted runs, and per handle its anchor count and bound (module doc)."""

    def __init__(self, anchors_of: AnchorsOf, cap: int = DEFAULT_CAP, owns: AnchorOwner | None = None) -> None:
        """``owns``: which of an array of anchors this table proposes pairs by (module doc); None: all."""
        if cap < 1:
            raise ValueError("the anchor cap must be >= 1")
        self.anchors_of, self.cap, self.owns = anchors_of, cap, owns
        self._runs: list[np.ndarray] = []  # sorted uint64 entries, oldest (largest) first
        self._dead: list[int] = []  # per run, its deleted entries
        self._pending: list[np.ndarray] = []  # entries not yet in a run
        self._pending_entries = 0
        self._documents = _Documents()

    def __len__(self) -> int:
        return len(self._documents)

    @property
    def nbytes(self) -> int:
        """Bytes held in arrays: the runs, the pending entries and the documents'."""
        return (sum(run.nbytes for run in self._runs) + sum(p.nbytes for p in self._pending)
                + self._documents.nbytes)

    def add(self, handle: int, payload: bytes) -> None:
        """Index the document with this handle (once: a handle indexed already is left as it is)."""
        anchors, bound = self.anchors_of(payload) if payload else (None, 0)
        if anchors is None or not len(anchors):
            return
        if int(anchors[-1]) >> ANCHOR_BITS or not 0 <= handle + 1 < _HANDLE_MASK or bound >> 31:
            raise ValueError(f"anchor table: anchors must be below 2^{ANCHOR_BITS}, handles below "
                             f"2^{HANDLE_BITS} - 2, bounds below 2^31 (got anchor {int(anchors[-1])}, "
                             f"handle {handle}, bound {bound})")
        if not self._documents.add(handle, len(anchors), bound):
            return
        self._pending.append(_keys(anchors, handle + 1))
        self._pending_entries += len(anchors)
        if self._pending_entries >= _SEAL_AT:
            self._seal()

    def remove(self, handle: int, payload: bytes) -> None:
        """Remove the document with this handle (``payload``: what it was indexed with)."""
        if handle not in self._documents:
            return
        self._seal()
        self._documents.remove(handle)
        anchors, _ = self.anchors_of(payload)
        keys = _keys(anchors, handle + 1)
        dead = keys & ~_HANDLE_MASK
        for r, run in enumerate(self._runs):
            if not len(run):
                continue
            at = np.minimum(np.searchsorted(run, keys), len(run) - 1)
            hit = run[at] == keys
            # the entry leaves its place for (anchor, 0) at the start of the anchor's range: sorted still
            for first, place, key in zip(np.searchsorted(run, dead[hit]), at[hit], dead[hit], strict=True):
                run[first + 1: place + 1] = run[first:place]
                run[first] = key
            self._dead[r] += int(hit.sum())
        if 2 * sum(self._dead) > sum(len(run) for run in self._runs):  # mostly deleted: one run of the rest
            self._runs, self._dead = [_merged(self._runs, True)], [0]

    def proposed(self, anchors: np.ndarray, bound: int, before: int | None = None) -> list[int]:
        """``proposed_many`` of one query."""
        return self.proposed_many([(anchors, bound, before)])[0]

    def proposed_many(self, queries: Sequence[AnchorQuery]) -> list[list[int]]:
        """Per query, the handles of the documents (below its ``before``, if given) it is proposed
        with: a cool anchor in common that this table owns, and ``MIN_SHARED`` anchors in common and
        half of the smaller side's anchors under the lower of the two bounds (a document's anchors
        above the other's bound cannot be shared; their count there is its anchors' share of the
        lower bound), hot anchors counted. In ascending order."""
        self._seal()
        out: list[list[int]] = [[] for _ in queries]
        counts = np.array([len(anchors) for anchors, _, _ in queries], dtype=np.int64)
        if not counts.sum() or not self._runs:
            return out
        owner = np.repeat(np.arange(len(queries), dtype=np.uint64), counts)
        anchors = np.concatenate([a for a, _, _ in queries]).astype(np.uint64)
        if int(anchors.max()) >> ANCHOR_BITS:
            raise ValueError(f"anchor table: anchors must be below 2^{ANCHOR_BITS} (got {int(anchors.max())})")
        last = int(_HANDLE_MASK)  # no stored handle + 1 reaches it (add)
        ends = np.array([last if b is None else min(b + 1, last) for _, _, b in queries], dtype=np.uint64)
        owned = np.ones(len(anchors), dtype=bool) if self.owns is None else self.owns(anchors)
        pairs, shared, hot = self._shared(anchors << _SHIFT, owner, np.repeat(ends, counts), owned)
        query, stored = pairs >> _SHIFT, pairs & _HANDLE_MASK
        sizes, others = self._documents.of(stored)
        bounds = np.array([b for _, b, _ in queries], dtype=np.int64)[query]
        low = np.minimum(bounds, others)
        starts = np.cumsum(counts) - counts
        under = np.searchsorted((owner << np.uint64(32)) | anchors, (query << np.uint64(32)) | low.astype(np.uint64))
        mine = np.where(low < bounds, under - starts[query], counts[query])
        smaller = np.minimum(mine, sizes * low / others)
        proposed = _passes(shared, smaller)
        # the others may pass on the hot anchors they hold too
        rest = np.bincount(owner[hot].astype(np.int64), minlength=len(queries))[query]
        unsure = ~proposed & _passes(shared + rest, smaller)
        if unsure.any():
            total = shared[unsure] + self._held_by(anchors[hot], owner[hot], query[unsure], stored[unsure])
            proposed[unsure] = _passes(total, smaller[unsure])
        for q, handle in zip(query[proposed].tolist(), (stored[proposed] - np.uint64(1)).tolist(), strict=True):
            out[q].append(handle)
        return out

    def _shared(self, firsts: np.ndarray, owner: np.ndarray, ends: np.ndarray, owned: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query << 36 | handle + 1, anchors in common that are not hot) of every pair an owned cool
        anchor of its query reaches, in ascending order, and which of the queries' anchors are hot:
        ``firsts`` are the queries' anchors' keys (handle bits 0), ``ends`` the handles + 1 their
        ranges end before. A table holds every anchor of its documents, so the count is exact."""
        # searched in key order: consecutive searches then walk the same path down a run (cache hits)
        order = np.argsort(firsts)
        starts, stops = firsts[order] | np.uint64(1), firsts[order] | ends[order]
        los, his = [], []
        for run in self._runs:
            first = np.searchsorted(run, starts)
            last = first.copy()  # an anchor with no entry in the run (most) needs no second search
            some = run[np.minimum(first, len(run) - 1)] < stops if len(run) else np.zeros(len(first), dtype=bool)
            some &= first < len(run)
            last[some] = np.searchsorted(run, stops[some])
            lo, hi = np.empty_like(first), np.empty_like(first)
            lo[order], hi[order] = first, last
            los.append(lo)
            his.append(hi)
        held = sum((hi - lo for lo, hi in zip(los, his, strict=True)), np.zeros(len(firsts), dtype=np.int64))
        cool = (held > 0) & (held <= self.cap)
        found, proposing = [], []
        for run, lo, hi in zip(self._runs, los, his, strict=True):
            lo, lengths = lo[cool], (hi - lo)[cool]
            if not lengths.any():
                continue
            positions = _spans(lo, lengths)
            found.append((np.repeat(owner[cool], lengths) << _SHIFT) | (run[positions] & _HANDLE_MASK))
            proposing.append(np.repeat(owned[cool], lengths))
        hot = held > self.cap
        if not found:
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64), hot
        pairs, at, shared = np.unique(np.concatenate(found), return_inverse=True, return_counts=True)
        reached = np.zeros(len(pairs), dtype=bool)
        reached[at[np.concatenate(proposing)]] = True  # an owned cool anchor in common: proposed here
        return pairs[reached], shared[reached], hot

    def _held_by(self, anchors: np.ndarray, owner: np.ndarray, query: np.ndarray, stored: np.ndarray) -> np.ndarray:
        """Per pair (``query``, ``stored``: handle + 1), how many of the query's ``anchors`` (``owner``:
        their queries, ascending) the stored document holds: its entry is in a run."""
        starts = np.searchsorted(owner, query)
        lengths = np.searchsorted(owner, query, side="right") - starts
        pair = np.repeat(np.arange(len(query)), lengths)
        positions = _spans(starts, lengths)
        keys = (anchors[positions] << _SHIFT) | np.repeat(stored, lengths)
        held = np.zeros(len(keys), dtype=bool)
        for run in self._runs:
            if len(run):
                held |= run[np.minimum(np.searchsorted(run, keys), len(run) - 1)] == keys
        return np.bincount(pair, weights=held, minlength=len(query)).astype(np.int64)

    def _seal(self) -> None:
        """The pending entries sorted into a run; then runs merged while the one before the newest is
        at most twice its size (so each is more than twice the next: log2 runs)."""
        if not self._pending:
            return
        run = np.concatenate(self._pending)
        run.sort()
        runs, dead = self._runs, self._dead
        runs.append(run)
        dead.append(0)
        self._pending, self._pending_entries = [], 0
        self._documents.seal()
        while len(runs) > 1 and len(runs[-2]) <= 2 * len(runs[-1]):
            runs[-2:], dead[-2:] = [_merged(runs[-2:], bool(dead[-2] or dead[-1]))], [0]


class _Documents:
    """handle -> (anchor count, bound) of the indexed documents: sorted arrays, and the ones added
    since the last seal in a dict. A removed document keeps its slot with count 0 (a replacement
    takes it again) until the slots of removed ones are half of them."""

    def __init__(self) -> None:
        self.handles = np.empty(0, dtype=np.uint64)
        self.sizes = np.empty(0, dtype=np.int32)  # anchors
        self.bounds = np.empty(0, dtype=np.int32)  # below 2^31 (add checks)
        self.pending: dict[int, tuple[int, int]] = {}
        self.live = self.removed = 0

    def __len__(self) -> int:
        return self.live

    def __contains__(self, handle: int) -> bool:
        if handle in self.pending:
            return True
        at = self._slot(handle)
        return at >= 0 and bool(self.sizes[at])

    @property
    def nbytes(self) -> int:
        return self.handles.nbytes + self.sizes.nbytes + self.bounds.nbytes + 100 * len(self.pending)

    def add(self, handle: int, size: int, bound: int) -> bool:
        """False when the handle is indexed already."""
        if handle in self.pending:
            return False
        at = self._slot(handle)
        if at >= 0 and self.sizes[at]:
            return False
        if at >= 0:  # a replacement's new anchors under the handle it had
            self.sizes[at], self.bounds[at] = size, bound
            self.removed -= 1
        else:
            self.pending[handle] = (size, bound)
        self.live += 1
        return True

    def remove(self, handle: int) -> None:
        """A sealed document's slot emptied."""
        self.sizes[self._slot(handle)] = 0
        self.live -= 1
        self.removed += 1
        if 2 * self.removed > len(self.handles):
            keep = self.sizes > 0
            self.handles, self.sizes, self.bounds = self.handles[keep], self.sizes[keep], self.bounds[keep]
            self.removed = 0

    def of(self, stored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(anchor counts, bounds) of sealed handles + 1."""
        at = np.searchsorted(self.handles, stored - np.uint64(1))
        return self.sizes[at].astype(np.int64), self.bounds[at].astype(np.int64)

    def seal(self) -> None:
        if not self.pending:
            return
        handles = np.fromiter(self.pending, dtype=np.uint64, count=len(self.pending))
        values = np.array(list(self.pending.values()), dtype=np.int64).reshape(-1, 2)
        self.handles = np.concatenate([self.handles, handles])
        self.sizes = np.concatenate([self.sizes, values[:, 0].astype(np.int32)])
        self.bounds = np.concatenate([self.bounds, values[:, 1].astype(np.int32)])
        self.pending = {}
        if np.any(self.handles[1:] <= self.handles[:-1]):  # added out of handle order (a rebuild)
            order = np.argsort(self.handles, kind="stable")
            self.handles, self.sizes, self.bounds = self.handles[order], self.sizes[order], self.bounds[order]

    def _slot(self, handle: int) -> int:
        if not len(self.handles) or handle > int(self.handles[-1]):  # newer than every sealed one: most adds
            return -1
        at = int(np.searchsorted(self.handles, np.uint64(handle)))  # a Python int would cast the array to float
        return at if at < len(self.handles) and int(self.handles[at]) == handle else -1


def _keys(anchors: np.ndarray, stored: int) -> np.ndarray:
    return (anchors.astype(np.uint64) << _SHIFT) | np.uint64(stored)


def _merged(runs: list[np.ndarray], dead: bool) -> np.ndarray:
    """One sorted run of these (timsort merges the sorted pieces in one pass), the deleted entries
    dropped when there are any (else no copy: the merge then holds the runs twice, not three times)."""
    run = np.concatenate(runs)
    run.sort(kind="stable")
    return run[(run & _HANDLE_MASK) != 0] if dead else run


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions of ranges ``[starts[i], starts[i] + lengths[i])``, concatenated."""
    return np.arange(lengths.sum()) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)


def _passes(shared: np.ndarray, smaller: np.ndarray) -> np.ndarray:
    """The rule on a pair's anchors in common and its smaller side's anchors under the lower bound."""
    return (shared >= MIN_SHARED) & (2 * shared >= smaller)
