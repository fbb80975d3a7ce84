"""``Detector.probe`` written out over the index's one-document path: query, verify, insert.

The product probes through ``Detector.probe_many`` (the index's batch path); this loop is what it
must equal, document by document."""

from __future__ import annotations

from collections.abc import Collection

from stream.detect import Detector, Match, Order
from stream.fingerprint import Fingerprint


def probe_one(detector: Detector, fp: Fingerprint, order: Order, tables: Collection[int] | None = None,
              insert: bool = True) -> list[Match]:
    """``fp``'s verified matches among the documents ``detector`` indexed, then ``fp`` indexed too."""
    if fp.empty:
        return []
    assert order[1] == fp.doc_id
    hits = detector.index.query(fp.simhash, tuple(fp.bands), tables=tables, once=detector.once)
    matches = detector.verify(fp, order, hits)
    if insert:
        detector.insert(fp, order, tables)
    return matches
