"""The records of ``BlockIndex`` besides its bucket entries (table.py), and what a query returns.

Each document has three small records::

    0xFD doc_id(utf-8)           -> handle(5)                          by id: delete, redelivery
    0xFC handle(5)               -> fp(8) ts(8) n(1) mask bands [len(4) payload] doc_id
                                                                       by handle: hits, delete
    0xFE ts(8, order-preserving) handle(5) -> b""                      by event time: expire
    0xFF b"config" | b"stats" | b"handle"                              index metadata

The payload is the caller's opaque bytes (the detector's serialized fingerprint with its sketch),
returned with every hit: one record per document, read by the same multi-get that finds the hits.
``n`` is the number of bands, plus ``PAYLOAD_FLAG`` when a payload (with its length) follows them: a
record without one is laid out as in format 2.

A handle is a per-store sequence number; entries carry it (5 bytes) instead of the doc id so that a
long id is stored twice, not k + 1 + 2 times. Handles are reserved in blocks (one metadata write per
``HANDLE_BLOCK`` inserts) so that a crash can skip handles but never reuse a live one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

HANDLE_NS, DOC_NS, EXPIRY_NS, META_NS = b"\xfc", b"\xfd", b"\xfe", b"\xff"
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


class Record(NamedTuple):
    """A document as the index stores it (``BlockIndex._encode_record``)."""

    fingerprint: int
    ts: float
    tables: frozenset[int]
    bands: tuple[tuple[int, int], ...]
    doc_id: str
    payload: bytes = b""


def ts_key(ts: float) -> bytes:
    """8 bytes whose byte order is the numeric order of ``ts`` (IEEE 754 with the sign handled)."""
    (bits,) = _UNPACK_U64(_PACK_F64(ts + 0.0))  # + 0.0 turns -0.0 into 0.0
    return (bits ^ _ALL if bits & _SIGN else bits | _SIGN).to_bytes(8, "big")


def ts_from_key(raw: bytes) -> float:
    bits = int.from_bytes(raw, "big")
    bits = bits ^ _SIGN if bits & _SIGN else bits ^ _ALL
    (ts,) = struct.unpack(">d", bits.to_bytes(8, "big"))
    return float(ts)


def pack_bands(pairs: Sequence[tuple[int, int]]) -> bytes:
    return struct.pack(f">{2 * len(pairs)}Q", *[x for pair in pairs for x in pair])


def record_tail(value: bytes, pos: int, n: int) -> tuple[bytes, int]:
    """A record's payload and where its doc id starts, from ``pos`` = the end of the mask and the
    head's band count ``n``."""
    pos += 16 * (n & ~PAYLOAD_FLAG)
    if not n & PAYLOAD_FLAG:
        return b"", pos
    (size,) = PAYLOAD_LEN.unpack_from(value, pos)
    return value[pos + 4 : pos + 4 + size], pos + 4 + size


def doc_key(doc_id: str) -> bytes:
    # surrogatepass: any Python str is a valid id, even one holding lone surrogates
    return DOC_NS + doc_id.encode("utf-8", "surrogatepass")


def lookup_puts(hb: bytes, ts: float, id_key: bytes) -> list[tuple[bytes, bytes]]:
    """The expiry and doc-id keys of the document with handle bytes ``hb``: written by an insert,
    deleted with the document, rebuilt from the records by ``BlockIndex.lookup_keys``."""
    return [(EXPIRY_NS + ts_key(ts) + hb, b""), (id_key, hb)]
