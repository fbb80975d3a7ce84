"""Records: the codec round-trips, the derived keys (doc ids, expiry) rebuild from the records alone."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.index import DERIVED_NAMESPACES, BlockIndex, rebuild_derived_keys
from stream.index.records import (
    HANDLE_NS,
    PAYLOAD_FLAG,
    RecordCodec,
    StoredDocument,
    first_shared_band,
    lookup_puts,
    pack_bands,
)
from stream.storage import MemoryStore
from tests.index.helpers import FORCED, make_set

U64 = st.integers(0, (1 << 64) - 1)


def test_a_record_without_payload_has_neither_flag_nor_length() -> None:
    """The payload flag and length are there only when a payload is: the per-call and the batch
    inserts write the same bytes for a payload-less record."""
    index = BlockIndex(k=3)
    index.insert(0xABC, "id-é", 2.5)
    index.insert(0xDEF, "other", 3.5, payload=b"p")
    records = dict(index.store.scan_prefix(HANDLE_NS))
    assert struct.pack(">QdB", 0xABC, 2.5, 0) + b"\x0f" + "id-é".encode() in records.values()
    assert struct.pack(">QdB", 0xDEF, 3.5, 0x80) + b"\x0f" + b"\x00\x00\x00\x01p" + b"other" in records.values()


@settings(max_examples=100, deadline=None)
@given(U64, st.floats(allow_nan=False), st.integers(0, 3), st.data(), st.text(), st.binary(max_size=40))
def test_the_codec_round_trips_and_derives_the_lookup_keys(fp: int, ts: float, bands: int, data: st.DataObject,
                                                           doc_id: str, payload: bytes) -> None:
    codec = RecordCodec(4 + bands, bands)
    pairs = tuple(data.draw(st.lists(st.tuples(U64, U64), min_size=bands, max_size=bands)))
    tables = frozenset(data.draw(st.sets(st.integers(0, 3 + bands), min_size=1)))
    doc = StoredDocument(fp, ts, tables, pairs if bands else (), doc_id, payload)
    value = codec.encode(doc)
    # a record keeps band values only (records.pack_bands): the extensions come back as 0
    assert codec.decode(value) == doc._replace(bands=tuple((v, 0) for v, _ in doc.bands))
    handle = b"\x00\x00\x00\x01\x02"
    id_key = b"\xfd" + doc_id.encode("utf-8", "surrogatepass")
    assert codec.derived_keys(HANDLE_NS + handle, value) == lookup_puts(handle, ts, id_key)


def derived(store: MemoryStore) -> dict[bytes, bytes]:
    return {key: value for key, value in store.scan_prefix(b"") if key[0] in DERIVED_NAMESPACES}


def test_rebuild_derived_keys_gives_what_the_index_wrote_and_drops_stale_ones() -> None:
    """A store that keeps derived keys out of its log recovers without them, and may hold stale
    ones from an earlier owner: the rebuild makes them exactly what the index wrote."""
    live = MemoryStore()
    index = BlockIndex(k=3, bands=2, store=live, **FORCED)  # type: ignore[arg-type]
    rng = random.Random(3)
    docs = make_set(5, 3, 60, "one_block")
    for i, (doc_id, fp) in enumerate(docs.items()):
        bands = [(rng.getrandbits(64), i)] * 2 if i % 2 else []
        index.insert(fp, doc_id, ts=float(i % 5) - 2.0, bands=bands, payload=b"p" * (i % 3))
    assert index.delete(next(iter(docs)))
    index.close()
    recovered = MemoryStore()
    recovered.write_ops([(key, value) for key, value in live.scan_prefix(b"") if key[0] not in DERIVED_NAMESPACES])
    recovered.put(b"\xfdgone", b"\x00\x00\x00\x00\x09")
    recovered.put(b"\xfe" + bytes(8) + b"\x00\x00\x00\x00\x09", b"")
    assert rebuild_derived_keys(recovered, chunk=7) == 2 * (len(docs) - 1)
    assert derived(recovered) == derived(live) and len(recovered) == len(live)
    reopened = BlockIndex(k=3, bands=2, store=recovered, **FORCED)  # type: ignore[arg-type]
    doc_id, fp = list(docs.items())[1]
    assert reopened.document(doc_id) is not None and reopened.expire(0.0) > 0


def test_rebuild_derived_keys_of_a_store_without_records() -> None:
    store = MemoryStore()
    store.put(b"\xfdstale", b"\x00\x00\x00\x00\x01")
    assert rebuild_derived_keys(store) == 0 and len(store) == 0
    store.put(HANDLE_NS + bytes(5), b"a record without the index's config")
    with pytest.raises(ValueError, match="no config"):
        rebuild_derived_keys(store)


def test_record_columns_are_the_decoded_records() -> None:
    index = BlockIndex(k=3, bands=2)
    index.insert(5, "a", bands=[(11, 1), (12, 2)])
    index.insert(6, "b", tables=[1, 2])
    index.insert(7, "c", bands=[(21, 3), (22, 4)], tables=[0, 5])
    codec = RecordCodec(6, 2)
    columns = codec.columns(index.store)
    decoded = [codec.decode(value) for _, value in index.store.scan_prefix(HANDLE_NS)]
    assert columns.fingerprints.tolist() == [doc.fingerprint for doc in decoded] == [5, 6, 7]
    assert [set(columns.in_table(t).nonzero()[0].tolist()) for t in range(6)] == [
        {i for i, doc in enumerate(decoded) if t in doc.tables} for t in range(6)]
    assert columns.band_values.tolist() == [[11, 12], [0, 0], [21, 22]]


def test_the_codec_s_memo_of_table_sets_stays_bounded_and_exact() -> None:
    """A partition meets a new set of its tables with almost every document: the memo of those sets
    is bounded (it kept ~2.3 KB a document before), and every record still round-trips."""
    from stream.index.records import MASK_MEMO

    codec, rng = RecordCodec(28, 24), random.Random(5)
    for n in range(3 * MASK_MEMO):
        tables = frozenset(t for t in range(28) if rng.random() < 0.5)
        doc = StoredDocument(rng.getrandbits(64), float(n), tables, tuple((rng.getrandbits(64), 0) for _ in range(24)),
                             f"d{n}", b"")
        assert codec.decode(codec.encode(doc)) == doc
    assert len(codec._masks) <= MASK_MEMO and len(codec._tables_of_mask) <= MASK_MEMO


# values whose bytes make runs of zero bytes across column boundaries when XORed
BAND_VALUE = st.sampled_from([0, 0xFF, 0xFF << 56, 0xFF00, 1, (1 << 64) - 1]) | U64


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(BAND_VALUE, BAND_VALUE), min_size=0, max_size=24), st.integers(0, 4), st.booleans())
def test_first_shared_band_is_the_lowest_column_with_equal_values(columns: list[tuple[int, int]], head: int,
                                                                 payload: bool) -> None:
    """The packed comparison (one XOR, then zero bytes on a column boundary) against a loop over
    the columns; a record keeping fewer bands than the query tells nothing (None)."""
    stored, query = [s for s, _ in columns], [q for _, q in columns]
    record = b"h" * head + pack_bands([(v, 0) for v in stored]) + b"\x00" * 9
    expected = next((c for c, (s, q) in enumerate(columns) if s == q), None)
    flag = PAYLOAD_FLAG if payload else 0
    assert first_shared_band(record, head, len(columns) | flag, pack_bands([(v, 0) for v in query])) == expected
    if columns:
        assert first_shared_band(record, head, (len(columns) - 1) | flag, pack_bands([(v, 0) for v in query])) is None
