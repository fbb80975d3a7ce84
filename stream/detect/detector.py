"""Detector: probe the block table, verify every candidate against its stored sketch, insert.

``probe`` is partition-local (the streaming service calls it once per Kafka partition that owns
some of the document's block keys, with ``tables`` naming them); ``dedup scan`` calls it once with
all tables. Records (each indexed document's serialized Fingerprint and order) live in a KVStore
next to the index.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Collection

from stream.detect.verdict import Match, Order, Verdict, build_verdict
from stream.fingerprint import Fingerprint, similarity
from stream.index import BlockIndex
from stream.index.store import KVStore

_ORDER = struct.Struct("<dH")


def _record_key(doc_id: str) -> bytes:
    return b"rec\x00" + doc_id.encode()


def encode_record(fp: Fingerprint, order: Order, fp_bytes: bytes | None = None) -> bytes:
    """``fp_bytes``: ``fp.to_bytes()`` when the caller already has it (a probe message carries it)."""
    oid = order[1].encode()
    return _ORDER.pack(order[0], len(oid)) + oid + (fp_bytes if fp_bytes is not None else fp.to_bytes())


def decode_record(raw: bytes) -> tuple[Fingerprint, Order]:
    ts, n = _ORDER.unpack_from(raw)
    start = _ORDER.size
    oid = raw[start : start + n].decode()
    return Fingerprint.from_bytes(raw[start + n :]), (ts, oid)


# Decoding a stored record costs ~55 us, and near-duplicate clusters make the same earlier documents
# candidates again and again (docs/service.md, "Probe stage"). Keyed by the record's bytes: a
# replaced record has other bytes, so it is never served stale.
decode_record_cached = functools.lru_cache(maxsize=4096)(decode_record)


class Detector:
    """Finds every indexed document whose verified similarity to a new one reaches ``threshold``."""

    def __init__(self, index: BlockIndex, records: KVStore, threshold: float = 0.8, mu: float = 0.9) -> None:
        self.index = index
        self.records = records
        self.threshold = threshold
        self.mu = mu
        self.candidates = 0  # running totals, for statistics
        self.verified = 0

    def probe(self, fp: Fingerprint, order: Order, tables: Collection[int] | None = None,
              insert: bool = True, fp_bytes: bytes | None = None) -> list[Match]:
        if fp.empty:
            return []
        bands = tuple(fp.bands)  # one tuple for query and insert: the index converts it once
        hits = {h.doc_id: h for h in self.index.query(fp.simhash, bands, tables=tables)
                if h.doc_id != fp.doc_id}
        matches = []
        ids = list(hits)
        raws = self.records.multi_get([_record_key(i) for i in ids]) if ids else []
        self.candidates += len(ids)
        for doc_id, raw in zip(ids, raws, strict=True):
            if raw is None:  # expired or deleted between index and record: not a match any more
                continue
            other, other_order = decode_record_cached(raw)
            score = similarity(fp, other, fp.spec, self.mu)
            if score >= self.threshold:
                self.verified += 1
                matches.append(Match(doc_id, (fp.simhash ^ other.simhash).bit_count(), score, other_order,
                                     exact=fp.content_hash == other.content_hash))
        if insert:
            # record first: an index entry never points at a missing sketch, even in a changelog
            # prefix replayed after a crash (the index writes its own keys in commit order)
            self.records.put(_record_key(fp.doc_id), encode_record(fp, order, fp_bytes))
            self.index.insert(fp.simhash, fp.doc_id, order[0], bands, tables=tables)
        return matches

    def detect(self, fp: Fingerprint, order: Order) -> Verdict:
        return build_verdict(fp, order, self.probe(fp, order))

    def forget(self, doc_id: str) -> None:
        self.index.delete(doc_id)
        self.records.delete(_record_key(doc_id))
