"""The records of ``BlockIndex`` besides its bucket entries (simhash/table.py): their layout, codec and scans.

Each document has three small records::

    0xFD doc_id(utf-8)           -> handle(5)                          by id: delete, redelivery
    0xFC handle(5)               -> fp(8) ts(8) n(1) mask values(8 n) [len(4) payload] doc_id
                                                                       by handle: hits, delete
    0xFE ts(8, order-preserving) handle(5) -> b""                      by event time: expire
    0xFF b"config" | b"stats" | b"handle"                              index metadata

The record (0xFC) is the document; the doc-id and expiry keys are *derived* from it
(``DERIVED_NAMESPACES``, ``RecordCodec.derived_keys``): a changelog-backed store may keep them out of
its log and rebuild them after recovery (``rebuild_derived_keys``).

The payload is the caller's opaque bytes (the detector's serialized fingerprint with its sketch),
returned with every hit: one record per document, read by the same multi-get that finds the hits.
``n`` is the number of bands, plus ``PAYLOAD_FLAG`` when a payload (with its length) follows them.
``mask`` has one bit per table the document is indexed in (``(tables + 7) // 8`` bytes).

A handle is a per-store sequence number; entries carry it (5 bytes) instead of the doc id so that a
long id is stored twice, not k + 1 + 2 times. Handles are reserved in blocks (one metadata write per
``HANDLE_BLOCK`` inserts) so that a crash can skip handles but never reuse a live one.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from stream.storage import KVStore

HANDLE_NS, DOC_NS, EXPIRY_NS, META_NS = b"\xfc", b"\xfd", b"\xfe", b"\xff"
RECORD_NAMESPACE = HANDLE_NS
# First bytes of the keys derived from the records (doc ids, expiry keys).
DERIVED_NAMESPACES = DOC_NS + EXPIRY_NS
CONFIG_KEY, STATS_KEY, HANDLE_KEY = META_NS + b"config", META_NS + b"stats", META_NS + b"handle"
# the stamp of the band runs a clean close left on disk (bands/tables.py)
BAND_STAMP_KEY = META_NS + b"bandruns"
# A store of another version is refused on open: docs/index.md, "Storage layout" lists what changed.
FORMAT_VERSION = 9
HANDLE_LEN = 5  # bytes: 2^40 documents per store before handles wrap
HANDLE_BLOCK = 4096
RECORD_HEAD = struct.Struct(">QdB")  # fingerprint, ts, number of bands (+ PAYLOAD_FLAG)
PAYLOAD_FLAG = 0x80  # in the record head's band count: a payload follows the bands
PAYLOAD_LEN = struct.Struct(">I")
_SIGN = 1 << 63
_PACK_F64, _UNPACK_U64 = struct.Struct(">d").pack, struct.Struct(">Q").unpack
_ALL = (1 << 64) - 1


class IndexHit(NamedTuple):
    """One indexed document found by a query."""

    doc_id: str
    distance: int  # Hamming distance between the query fingerprint and the stored one
    ts: float
    fingerprint: int
    via: str  # "simhash" (distance <= k, exact) or "band" (shares an LSH band bucket)
    payload: bytes = b""  # what the insert stored with the document


class StoredDocument(NamedTuple):
    """A document as the index stores it (its record, ``RecordCodec``)."""

    fingerprint: int
    ts: float
    tables: frozenset[int]
    bands: tuple[tuple[int, int], ...]  # (band value, 0): the index keeps no extension
    doc_id: str
    payload: bytes = b""


def ts_key(ts: float) -> bytes:
    """8 bytes whose byte order is the numeric order of ``ts`` (IEEE 754 with the sign handled)."""
    (bits,) = _UNPACK_U64(_PACK_F64(ts + 0.0))  # + 0.0 turns -0.0 into 0.0
    return (bits ^ _ALL if bits & _SIGN else bits | _SIGN).to_bytes(8, "big")


def handle_bytes(handle: int) -> bytes:
    return handle.to_bytes(HANDLE_LEN, "big")


def doc_key(doc_id: str) -> bytes:
    # surrogatepass: any Python str is a valid id, even one holding lone surrogates
    return DOC_NS + doc_id.encode("utf-8", "surrogatepass")


def lookup_puts(hb: bytes, ts: float, id_key: bytes) -> list[tuple[bytes, bytes]]:
    """The expiry and doc-id keys of the document with handle bytes ``hb``: written by an insert,
    deleted with the document, derived from its record by ``RecordCodec.derived_keys``."""
    return [(EXPIRY_NS + ts_key(ts) + hb, b""), (id_key, hb)]


def pack_bands(pairs: Sequence[tuple[int, int]] | np.ndarray) -> bytes:
    """The band values, 8 bytes each, big-endian: the index keeps no extension (band tables do not
    split), so a record stores 8 bytes per band, not 16. ``pairs``: (value, extension) pairs, or an
    array of them."""
    return struct.pack(f">{len(pairs)}Q", *[value for value, _ in pairs])


def record_tail(value: bytes, pos: int, n: int) -> tuple[bytes, int]:
    """A record's payload and where its doc id starts, from ``pos`` = the end of the mask and the
    head's band count ``n``."""
    pos += 8 * (n & ~PAYLOAD_FLAG)
    if not n & PAYLOAD_FLAG:
        return b"", pos
    (size,) = PAYLOAD_LEN.unpack_from(value, pos)
    return value[pos + 4 : pos + 4 + size], pos + 4 + size


def shares_band(record: bytes, head: int, n: int, columns: list[int], query: bytes) -> bool:
    """Whether the record (bands from ``head``, ``n`` of them + PAYLOAD_FLAG) has the query's band
    value in one of ``columns`` (``query``: the query's band values as ``pack_bands`` packs them)."""
    count = n & ~PAYLOAD_FLAG
    return any(c < count and record[head + 8 * c : head + 8 * c + 8] == query[8 * c : 8 * c + 8] for c in columns)


_NO_DIFFERENCE = bytes(8)


def first_shared_band(record: bytes, head: int, n: int, query: bytes) -> int | None:
    """The lowest band column in which the record and the query (its band values as ``pack_bands``
    packs them) have the same value, over all bands (not only the tables at hand); None when there is
    none, or when the record keeps fewer bands than the query has (then nobody can tell, and every
    table that finds the pair reports it)."""
    size = len(query)
    if 8 * (n & ~PAYLOAD_FLAG) < size:
        return None
    # one XOR of all columns, then the first 8 zero bytes on a column boundary: ~2.4x a loop over columns
    diff = (int.from_bytes(record[head : head + size], "big") ^ int.from_bytes(query, "big")).to_bytes(size, "big")
    at = diff.find(_NO_DIFFERENCE)
    while at >= 0:
        if not at % 8:
            return at // 8
        at = diff.find(_NO_DIFFERENCE, at + 8 - at % 8)
    return None


@dataclass
class RecordColumns:
    """Every record of a store, as columns (``RecordCodec.columns``): what an index derives its
    in-memory state from when it opens a store that is not empty (the band map, the root filter)."""

    handles: np.ndarray  # uint64
    fingerprints: np.ndarray  # uint64
    masks: np.ndarray  # uint64: bit t set when the document is indexed in table t
    band_values: np.ndarray  # (documents, bands) uint64; zeros for a document without bands

    def in_table(self, t: int) -> np.ndarray:
        """Which documents are indexed in table t (bool per document)."""
        return ((self.masks >> np.uint64(t)) & np.uint64(1)).astype(bool)


# Memo entries per RecordCodec map: a partition owning some of 28 tables meets a new set of them with
# almost every document (~2.3 KB a document, never freed, in a 250k-document backlog), so the memo
# starts again once it holds this many; the common sets come back at once.
MASK_MEMO = 4096


class RecordCodec:
    """Encodes and decodes the records of an index with ``table_count`` tables (the mask's width)."""

    def __init__(self, table_count: int, bands: int) -> None:
        self.table_count, self.bands = table_count, bands
        self.mask_len = (table_count + 7) // 8
        self.head = RECORD_HEAD.size + self.mask_len  # where the bands start
        self._masks: dict[frozenset[int], bytes] = {}
        self._tables_of_mask: dict[int, frozenset[int]] = {}  # decode's inverse of _masks

    def mask_bytes(self, tables: frozenset[int]) -> bytes:
        mask = self._masks.get(tables)
        if mask is None:
            if len(self._masks) >= MASK_MEMO:
                self._masks.clear()
            mask = self._masks[tables] = sum(1 << t for t in tables).to_bytes(self.mask_len, "little")
        return mask

    def encode(self, doc: StoredDocument) -> bytes:
        payload = doc.payload
        n = len(doc.bands) | (PAYLOAD_FLAG if payload else 0)
        parts = [RECORD_HEAD.pack(doc.fingerprint, doc.ts, n), self.mask_bytes(doc.tables)]
        if doc.bands:
            parts.append(pack_bands(doc.bands))
        if payload:
            parts += (PAYLOAD_LEN.pack(len(payload)), payload)
        parts.append(doc.doc_id.encode("utf-8", "surrogatepass"))
        return b"".join(parts)

    def decode(self, value: bytes) -> StoredDocument:
        fingerprint, ts, n = RECORD_HEAD.unpack_from(value)
        nbands = n & ~PAYLOAD_FLAG
        pos = RECORD_HEAD.size
        mask = int.from_bytes(value[pos : pos + self.mask_len], "little")
        flat = struct.unpack_from(f">{nbands}Q", value, self.head)  # pack_bands
        bands = tuple((band, 0) for band in flat)
        tables = self._tables_of_mask.get(mask)
        if tables is None:
            if len(self._tables_of_mask) >= MASK_MEMO:
                self._tables_of_mask.clear()
            tables = self._tables_of_mask[mask] = frozenset(t for t in range(self.table_count) if mask >> t & 1)
        payload, pos = record_tail(value, self.head, n)
        return StoredDocument(fingerprint, ts, tables, bands, value[pos:].decode("utf-8", "surrogatepass"), payload)

    def derived_keys(self, record_key: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
        """The expiry and doc-id keys of a stored record (``record_key`` = RECORD_NAMESPACE + handle,
        as a scan of that namespace returns it)."""
        _, ts, n = RECORD_HEAD.unpack_from(value)
        _, start = record_tail(value, self.head, n)
        return lookup_puts(record_key[1:], ts, DOC_NS + value[start:])

    def columns(self, store: KVStore) -> RecordColumns:
        """Every record of ``store``, by one scan, as columns (the layout of ``encode``)."""
        chunks = list(self.column_chunks(store, 1 << 62))
        return chunks[0] if chunks else self._columns([], [], [], [])

    def column_chunks(self, store: KVStore, chunk: int = 1 << 18) -> Iterator[RecordColumns]:
        """The records of ``store`` in handle order, ``chunk`` at a time, as columns: what an open
        derives its state from without holding every record at once."""
        handles: list[int] = []
        fps: list[int] = []
        masks: list[int] = []
        band_rows: list[bytes] = []
        head, width = self.head, 8 * self.bands
        empty = bytes(width)
        for key, value in store.scan_prefix(HANDLE_NS):
            fingerprint, _, n = RECORD_HEAD.unpack_from(value)
            handles.append(int.from_bytes(key[1:], "big"))
            fps.append(fingerprint)
            masks.append(int.from_bytes(value[RECORD_HEAD.size : head], "little"))
            band_rows.append(value[head : head + width] if n & ~PAYLOAD_FLAG else empty)
            if len(handles) >= chunk:
                yield self._columns(handles, fps, masks, band_rows)
                handles, fps, masks, band_rows = [], [], [], []
        if handles:
            yield self._columns(handles, fps, masks, band_rows)

    def _columns(self, handles: list[int], fps: list[int], masks: list[int], band_rows: list[bytes]) -> RecordColumns:
        values = np.frombuffer(b"".join(band_rows), dtype=">u8").astype(np.uint64).reshape(len(fps), self.bands)
        return RecordColumns(np.array(handles, dtype=np.uint64), np.array(fps, dtype=np.uint64),
                             np.array(masks, dtype=np.uint64), values)


# -- the store's metadata -------------------------------------------------------------------------

def index_config(k: int, bits: int, bands: int) -> dict[str, int]:
    return {"version": FORMAT_VERSION, "k": k, "bits": bits, "bands": bands}


def check_config(store: KVStore, config: dict[str, int]) -> bool:
    """Write ``config`` to a new store, check it against an old one's; True for a new, empty store."""
    raw = store.get(CONFIG_KEY)
    if raw is None:
        empty = next(iter(store.scan_prefix(b"")), None) is None
        store.put(CONFIG_KEY, json.dumps(config).encode())
        return empty
    stored = json.loads(raw)
    if stored != config:
        if stored.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"store has block-index format version {stored.get('version')}, this code reads version "
                f"{FORMAT_VERSION} only: rebuild it (dedup scan: a new --state directory; the service: a "
                "new app_id, or delete its state and changelog topics)")
        raise ValueError(f"store was built with {stored}, not {config}")
    return False


def rebuild_derived_keys(store: KVStore, chunk: int = 4096) -> int:
    """Replace every derived key in ``store`` (``DERIVED_NAMESPACES``) by those its records give;
    returns how many it wrote. For a store that keeps derived keys out of its changelog: run after
    recovery, before an index reads the store (recovery restored the records only, and derived keys
    left from an earlier owner may be stale)."""
    for namespace in DERIVED_NAMESPACES:
        _write_chunks(store, ((key, None) for key, _ in store.scan_prefix(bytes([namespace]))), chunk)
    raw = store.get(CONFIG_KEY)
    if raw is None:
        if next(iter(store.scan_prefix(HANDLE_NS)), None) is not None:
            raise ValueError("store has block-index records but no config")
        return 0
    config = json.loads(raw)
    if config.get("version") != FORMAT_VERSION:
        raise ValueError(f"store has block-index format version {config.get('version')}, not {FORMAT_VERSION}")
    codec = RecordCodec(config["k"] + 1 + config["bands"], config["bands"])
    derived = (op for key, value in store.scan_prefix(HANDLE_NS) for op in codec.derived_keys(key, value))
    return _write_chunks(store, derived, chunk)


def _write_chunks(store: KVStore, ops: Iterator[tuple[bytes, bytes | None]], chunk: int) -> int:
    written = 0
    batch: list[tuple[bytes, bytes | None]] = []
    for op in ops:
        batch.append(op)
        if len(batch) >= chunk:
            store.write_ops(batch)
            written, batch = written + len(batch), []
    if batch:
        store.write_ops(batch)
    return written + len(batch)


# -- reading a store's records from outside (``dedup repartition``) -------------------------------

def key_kind(key: bytes) -> str:
    """What a key of a block-index store holds: ``record`` (a document), ``derived`` (its doc-id and
    expiry keys), ``meta`` (the 0xFF namespace: the index's metadata and its owner's keys) or ``entry``
    (a table's bucket entry, which an index rebuilds from the records by inserting them again)."""
    first = key[:1]
    if first == RECORD_NAMESPACE:
        return "record"
    if first and first[0] in DERIVED_NAMESPACES:
        return "derived"
    return "meta" if first == META_NS else "entry"


def read_records(config: bytes, values: Iterable[bytes]) -> Iterator[StoredDocument]:
    """The documents of record values (keys of kind ``record``) of a store whose config key held
    ``config``; a ``ValueError`` for a store of another format version."""
    settings = json.loads(config)
    if settings.get("version") != FORMAT_VERSION:
        raise ValueError(f"store has block-index format version {settings.get('version')}, not {FORMAT_VERSION}")
    codec = RecordCodec(settings["k"] + 1 + settings["bands"], settings["bands"])
    return (codec.decode(value) for value in values)
