"""The anchor table: sampled shingle hashes ("anchors") -> the documents that have them.

MinHash bands collide for two texts of similar size; a page 1/50 the size of an archive that holds it
shares no whole-document band with it. Both keep every shingle hash below a fixed bound (the
fingerprint's ``anchors``: ~1/16 of a text's shingles), so they share the anchors of the page's
shingles. The table proposes a pair when the two share at least ``MIN_SHARED`` anchors and at least
half of the anchors the smaller side has under the pair's bound (``proposed``); the detector verifies
it as any other candidate.

Hot anchors: a hash many documents share (a site's template, a license footer) says nothing about a
pair, and its posting list would make every probe long. An anchor held by more than ``cap`` documents
(among those a probe may see) proposes nothing; its list is kept, so the rule depends on the live
documents only and deletes, expiry and a rebuild leave the table exactly as inserting the live
documents in order would.

Derived state, like the band map: the index rebuilds it from its records' payloads on open
(``anchors_of`` reads a payload's anchors), and its writes keep it in step. Posting lists are in
handle order (handles grow with every insert), so "the documents before this one" is a prefix.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable

import numpy as np

# A payload's anchors: (sorted uint32 hashes, the bound they are all of the document's below; 0: none)
AnchorsOf = Callable[[bytes], tuple[np.ndarray, int]]
MIN_SHARED = 2  # one shared hash is chance (1/16 of a shared common phrase)
DEFAULT_CAP = 64  # documents per anchor beyond which it proposes nothing (docs/decisions/anchor-candidates.md)


class AnchorTable:
    """anchor -> handles (ascending), and per handle its anchor count and bound (module doc)."""

    def __init__(self, anchors_of: AnchorsOf, cap: int = DEFAULT_CAP) -> None:
        if cap < 1:
            raise ValueError("the anchor cap must be >= 1")
        self.anchors_of, self.cap = anchors_of, cap
        self.postings: dict[int, list[int]] = {}
        self.documents: dict[int, tuple[int, int]] = {}  # handle -> (anchor count, bound)

    def __len__(self) -> int:
        return len(self.documents)

    def add(self, handle: int, payload: bytes) -> None:
        """Index the document with this handle, newer than every one indexed (handle order)."""
        anchors, bound = self.anchors_of(payload) if payload else (None, 0)
        if anchors is None or not len(anchors) or handle in self.documents:
            return
        postings = self.postings
        for anchor in anchors.tolist():
            posting = postings.get(anchor)
            if posting is None:
                postings[anchor] = [handle]
            elif posting[-1] < handle:
                posting.append(handle)
            else:  # a handle below the newest: only a rebuild out of order would do that
                posting.insert(bisect_left(posting, handle), handle)
        self.documents[handle] = (len(anchors), bound)

    def remove(self, handle: int, payload: bytes) -> None:
        """Remove the document with this handle (``payload``: what it was indexed with)."""
        if self.documents.pop(handle, None) is None:
            return
        anchors, _ = self.anchors_of(payload)
        postings = self.postings
        for anchor in anchors.tolist():
            posting = postings[anchor]
            del posting[bisect_left(posting, handle)]
            if not posting:
                del postings[anchor]

    def proposed(self, anchors: np.ndarray, bound: int, before: int | None = None) -> list[int]:
        """Handles of the documents (below ``before``, if given) a document with these anchors is
        proposed with: ``MIN_SHARED`` anchors in common and half of the smaller side's anchors under
        the lower of the two bounds (a document's anchors above the other's bound cannot be shared;
        their count there is its anchors' share of the lower bound). In ascending order."""
        if not len(anchors):
            return []
        shared: Counter[int] = Counter()
        postings, cap = self.postings, self.cap
        for anchor in anchors.tolist():
            posting = postings.get(anchor)
            if posting is None:
                continue
            end = len(posting) if before is None else bisect_left(posting, before)
            if 0 < end <= cap:
                shared.update(posting[:end])
        out = []
        for handle, count in shared.items():
            if count < MIN_SHARED:
                continue
            size, other = self.documents[handle]
            low = min(bound, other)
            mine = int(np.searchsorted(anchors, low)) if low < bound else len(anchors)
            theirs = size * low / other
            if 2 * count >= min(mine, theirs):
                out.append(handle)
        out.sort()
        return out
