"""Detector: probe the block table, verify every candidate against its stored sketch, insert.

``probe_many`` probes a batch of documents in one index call, each seeing the ones before it:
``dedup scan`` probes its input in chunks with all tables, the streaming service each Kafka
partition's run with ``tables`` naming the block keys that partition owns. ``probe`` is the same
for one document; tests/reference/probe_loop.py writes the loop out over the index's one-document
path, and the tests compare the two.
Each indexed document's serialized Fingerprint (with its sketch) is the payload of its index record,
so the query that finds a candidate also returns what verifies it. It is stored without its LSH
bands (``without_bands``): the record holds them already, and they were 40% of the bytes written.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence

import numpy as np

from stream.detect.match_settings import (
    CONTAINMENT_MARGIN,
    CONTAINMENT_MIN_SHINGLES,
    CONTAINMENT_SAMPLE_MARGIN,
    CONTAINMENT_THRESHOLD,
)
from stream.detect.verdict import CONTAINED, SIMILAR, Match, Order, Verdict, build_verdict
from stream.fingerprint import Fingerprint, split_bands, without_bands
from stream.fingerprint.scores import Overlap, overlap
from stream.index import AnchorOwner, BatchBands, BlockIndex, IndexHit


def relation(ov: Overlap, threshold: float, containment_threshold: float, min_shingles: int,
             margin: float = CONTAINMENT_MARGIN) -> str | None:
    """SIMILAR when the score reaches ``threshold``; else CONTAINED when the containment, less
    ``margin`` times its standard error, reaches ``containment_threshold`` (0 turns the rule off) and
    the shorter text is long enough; else None. A containment counted on a hash sample clears it by
    at most ``CONTAINMENT_SAMPLE_MARGIN`` of its error."""
    if ov.score >= threshold:
        return SIMILAR
    if ov.containment_sampled:
        margin = min(margin, CONTAINMENT_SAMPLE_MARGIN)
    if (0 < containment_threshold <= ov.containment - margin * ov.containment_error
            and ov.smaller >= min_shingles):
        return CONTAINED
    return None

class DecodedFingerprints:
    """Fingerprints by their serialized bytes, the ``size`` most recently used.

    Decoding a stored fingerprint costs ~55 us, and near-duplicate clusters make the same earlier
    documents candidates again and again (docs/detect.md, "Design choices"). Keyed by the bytes: a
    replaced document has other bytes, so it is never served stale. The service decodes the
    documents it probes through the same cache (one document's probe reaches several partitions of
    a worker), and the worker that fingerprinted a document ``remember``s it, so its own partitions
    never decode it: the worker's app makes one and hands it to its stages and their detectors.
    (Stored payloads lack the bands, so a probed document is decoded again, once, when it is a later
    batch's candidate: ~55 us per such document, against 384 bytes fewer in every write.)
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._decoded: OrderedDict[bytes, Fingerprint] = OrderedDict()

    def __call__(self, raw: bytes) -> Fingerprint:
        fp = self._decoded.get(raw)
        if fp is None:
            fp = Fingerprint.from_bytes(raw)
            self.remember(raw, fp)
        else:
            self._decoded.move_to_end(raw)
        return fp

    def __contains__(self, raw: bytes) -> bool:
        return raw in self._decoded

    def remember(self, raw: bytes, fp: Fingerprint) -> None:
        """``fp`` is what ``raw`` decodes to (``raw = fp.to_bytes()``)."""
        self._decoded[raw] = fp
        if len(self._decoded) > self.size:
            self._decoded.popitem(last=False)


class Detector:
    """Finds every indexed document whose verified similarity to a new one reaches ``threshold``.

    A document's canonical order is ``(ts, doc id)``: the index stores the ts, so an order's id must
    be the fingerprint's doc id.
    """

    def __init__(self, index: BlockIndex, threshold: float = 0.8, mu: float = 0.9, once: bool = False,
                 containment_threshold: float = CONTAINMENT_THRESHOLD,
                 containment_min_shingles: int = CONTAINMENT_MIN_SHINGLES, retention: float | None = None,
                 containment_margin: float = CONTAINMENT_MARGIN, decoded: DecodedFingerprints | None = None,
                 anchor_cap: int | None = None, anchor_owner: AnchorOwner | None = None) -> None:
        """``decoded``: the cache stored fingerprints are decoded through (a caller that decodes or
        serializes the same fingerprints elsewhere shares its own; None: one of this detector's).
        ``anchor_cap``: also verify the candidates of an anchor table with this cap on its posting
        lists (``BlockIndex.use_anchors``; the index then keeps one); None: bands and SimHash only.
        ``anchor_owner``: the anchors that table proposes pairs by (a service partition's share)."""
        self.index = index
        self.decoded = decoded if decoded is not None else DecodedFingerprints()
        # retention: two documents match only when their event times are at most this far apart
        # (seconds; None: no limit). A rule on the pair, so it holds whatever the arrival order.
        self.retention = retention
        self.threshold = threshold
        self.mu = mu
        self.containment_threshold = containment_threshold
        self.containment_min_shingles = containment_min_shingles
        self.containment_margin = containment_margin
        # once: the caller probes a document's tables in disjoint groups (the service's partitions);
        # a candidate within distance k is verified and reported by one group only (BlockIndex.query):
        # near-duplicate clusters collide in every table, and would be verified in every partition.
        self.once = once
        self.candidates = 0  # running totals, for statistics
        self.verified = 0
        self.anchors = anchor_cap is not None
        self.anchors_split = anchor_owner is not None  # a partition's tables find only their own pairs
        if anchor_cap is not None:
            index.use_anchors(self.anchors_of, anchor_cap, anchor_owner)

    def anchors_of(self, payload: bytes) -> tuple[np.ndarray, int]:
        """A stored fingerprint's anchors (``Fingerprint.anchors``), decoded through the cache."""
        return self.decoded(payload).anchors()

    def probe(self, fp: Fingerprint, order: Order, tables: Collection[int] | None = None,
              insert: bool = True, fp_bytes: bytes | None = None) -> list[Match]:
        """``probe_many`` of one document (one implementation: the batch path the product runs).
        ``fp_bytes``: ``fp.to_bytes()`` when the caller already has it (a probe message carries it)."""
        return self.probe_many([fp], [order], None if tables is None else [tables], insert, [fp_bytes])[0]

    def probe_many(self, fps: Sequence[Fingerprint], orders: Sequence[Order],
                   tables: Sequence[Collection[int] | None] | None = None, insert: bool = True,
                   fp_bytes: Sequence[bytes | None] | None = None) -> list[list[Match]]:
        """Each document's verified matches, in one batch call of the index
        (``BlockIndex.query_insert_many``): what probing them one by one in order gives, each
        document seeing the ones before it in the batch (with ``insert``). ``tables[i]``: the index
        tables document i is probed in (the service's partitions; None: all); ``fp_bytes[i]``:
        ``fps[i].to_bytes()`` when the caller has it. Empty fingerprints get no match and are not indexed."""
        if not len(fps) == len(orders) == (len(fps) if tables is None else len(tables)):
            raise ValueError(f"{len(fps)} fingerprints, {len(orders)} orders"
                             + ("" if tables is None else f", {len(tables)} table sets"))
        for fp, order in zip(fps, orders, strict=True):
            if order[1] != fp.doc_id and not fp.empty:  # an empty one is not indexed: its id is not used
                raise ValueError(f"order {order!r} does not name document {fp.doc_id!r}")
        live = [i for i, fp in enumerate(fps) if not fp.empty]
        docs = [fps[i] for i in live]
        given = [None] * len(fps) if fp_bytes is None else fp_bytes
        serialized = [raw if (raw := given[i]) is not None else fp.to_bytes() for i, fp in zip(live, docs, strict=True)]
        chosen = None if tables is None else [tables[i] for i in live]
        simhashes = [fp.simhash for fp in docs]
        band_array, payloads = split_bands(serialized, self.index.bands)
        if self.anchors:  # the anchor table reads the documents' anchors from these payloads
            for payload, fp in zip(payloads, docs, strict=True):
                self.decoded.remember(payload, fp)
        # documents with no or other bands: the index says which is wrong
        bands: BatchBands = [tuple(fp.bands) for fp in docs] if band_array is None else band_array
        if insert:
            hits = self.index.query_insert_many(simhashes, [fp.doc_id for fp in docs], [orders[i][0] for i in live],
                                                bands, chosen, payloads, once=self.once)
        else:
            hits = self.index.query_many(simhashes, bands, chosen, once=self.once)
        if self.anchors:
            hits = self._with_anchor_hits(hits, docs, simhashes, payloads, bands)
        # candidates from this batch are verified against the fingerprints in hand, not decoded again:
        # their hits carry the very payload objects passed in (alive until the call returns)
        batch_fps = {id(payload): fp for payload, fp in zip(payloads, docs, strict=True)}
        out: list[list[Match]] = [[] for _ in fps]
        for i, fp, found in zip(live, docs, hits, strict=True):
            if found:
                out[i] = self.verify(fp, orders[i], found, batch_fps)
        return out

    def _with_anchor_hits(self, hits: list[list[IndexHit]], docs: list[Fingerprint], simhashes: list[int],
                          payloads: list[bytes], bands: BatchBands) -> list[list[IndexHit]]:
        """Each document's hits plus the anchor table's proposals the tables did not find (a
        partition's tables find only their own pairs: there the index leaves out every pair some
        table finds, which another partition verifies)."""
        extra = self.index.anchor_query_many(simhashes, payloads, [fp.doc_id for fp in docs],
                                             bands if self.anchors_split else None)
        out = []
        for found, more in zip(hits, extra, strict=True):
            if more:
                have = {hit.doc_id for hit in found}
                found = found + [hit for hit in more if hit.doc_id not in have]
            out.append(found)
        return out

    def verify(self, fp: Fingerprint, order: Order, hits: Iterable[IndexHit],
               known: dict[int, Fingerprint] | None = None) -> list[Match]:
        """The index hits of ``fp`` that pass verification (``relation``) and the retention rule, as
        matches; ``known``: fingerprints by the id of their payload object, not decoded again."""
        known = known or {}
        matches = []
        seen = 0
        retention = self.retention
        for hit in hits:
            if hit.doc_id == fp.doc_id or not hit.payload:  # itself (a redelivery); not the detector's
                continue
            if retention is not None and abs(hit.ts - order[0]) > retention:
                continue
            seen += 1
            other = known.get(id(hit.payload)) or self.decoded(hit.payload)
            ov = overlap(fp, other, fp.spec, self.mu, self.containment_threshold or None)
            kind = relation(ov, self.threshold, self.containment_threshold, self.containment_min_shingles,
                            self.containment_margin)
            if kind is not None:
                self.verified += 1
                matches.append(Match(hit.doc_id, (fp.simhash ^ other.simhash).bit_count(), ov.score,
                                     (hit.ts, hit.doc_id), exact=fp.content_hash == other.content_hash,
                                     simhash=other.simhash, containment=ov.containment, relation=kind))
        self.candidates += seen
        return matches

    def insert(self, fp: Fingerprint, order: Order, tables: Collection[int] | None = None,
               fp_bytes: bytes | None = None) -> None:
        """Index ``fp`` (replacing an earlier version of the same id) without querying."""
        if fp.empty:
            return
        payload = without_bands(fp_bytes if fp_bytes is not None else fp.to_bytes())
        self.index.insert(fp.simhash, fp.doc_id, order[0], tuple(fp.bands), tables=tables, payload=payload)

    def indexed_order(self, doc_id: str, fp_bytes: bytes) -> Order | None:
        """The order document ``doc_id`` was indexed at, if it was indexed with this very fingerprint
        (``fp_bytes``: ``Fingerprint.to_bytes()``)."""
        old = self.index.document(doc_id)
        # block tables written by earlier versions hold the whole bytes
        if old is not None and old.payload in (without_bands(fp_bytes), fp_bytes):
            return (old.ts, doc_id)
        return None

    def detect(self, fp: Fingerprint, order: Order) -> Verdict:
        return build_verdict(fp, order, self.probe(fp, order))

    def forget(self, doc_id: str) -> bool:
        """Remove a document from the index; False if it was not there."""
        return self.index.delete(doc_id)

    def expire(self, newest_ts: float, allowance: float) -> int:
        """Delete the entries that can no longer match anything under ``retention``: event times before
        ``newest_ts - retention - allowance`` (``allowance``: how late a document may still arrive and
        find every entry it should). Returns how many were deleted."""
        if self.retention is None:
            return 0
        return self.index.expire(newest_ts - self.retention - allowance)
