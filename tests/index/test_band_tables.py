"""LSH band tables (the band map): same band value only, hot values, deletes, reopening, the bands memo."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stream.index import BlockIndex

MASK = (1 << 64) - 1


def test_band_tables_find_same_band_only() -> None:
    idx = BlockIndex(k=3, bands=2)
    far_a, far_b, far_c = 0, MASK, 0x00FF00FF00FF00FF  # far apart in Hamming distance
    idx.insert(far_a, "a", bands=[(111, 5), (222, 6)])
    idx.insert(far_b, "b", bands=[(111, 7), (333, 8)])
    idx.insert(far_c, "c", bands=[(444, 9), (555, 10)])
    hits = idx.query(far_a, bands=[(111, 0), (999, 0)])
    assert {h.doc_id: (h.via, h.distance) for h in hits} == {"a": ("simhash", 0), "b": ("band", 64)}
    assert [h.doc_id for h in idx.query(12345 << 20, bands=[(444, 0), (0, 0)])] == ["c"]
    assert idx.query(0x0F0F0F0F0F0F0F0F, bands=[(1, 0), (2, 0)]) == []
    with pytest.raises(ValueError, match="bands"):
        idx.query(0, bands=[(1, 0)])  # one band for two band tables


def test_a_hot_band_value_finds_every_mate_and_survives_deletes_and_reopening(tmp_path: Path) -> None:
    """Band tables do not split (stream/index/bands/memtable.py): a band value that 300 documents share finds
    all of them, with any extension; a delete takes one out; a reopened index rebuilds them from the records."""
    path = str(tmp_path / "idx")
    idx = BlockIndex(path, k=3, bands=2, min_split=4)
    rng = random.Random(1)
    for i in range(300):
        idx.insert(rng.getrandbits(64), f"d{i}", bands=[(7, rng.getrandbits(64)), (rng.getrandbits(64), 0)])
    assert idx.delete("d5")
    expected = {f"d{i}" for i in range(300)} - {"d5"}
    assert {h.doc_id for h in idx.query(rng.getrandbits(64), bands=[(7, 1), (0, 0)]) if h.via == "band"} == expected
    assert idx.stats().kinds["band"].splits == 0 and len(idx.band_map) == 2 * 299
    idx.close()
    reopened = BlockIndex(path, k=3, bands=2, min_split=4)
    assert len(reopened.band_map) == 2 * 299
    assert {h.doc_id for h in reopened.query(rng.getrandbits(64), bands=[(7, 2), (0, 0)])} == expected
    reopened.close()


def test_bands_conversion_memo_follows_the_caller_objects() -> None:
    """The index converts a bands tuple once for a query and the insert that follows; a list the
    caller changes in place between calls is converted again, and records keep the right bands."""
    idx = BlockIndex(k=3, bands=2)
    mine = ((111, 5), (222, 6))
    assert idx.query(0, bands=mine) == []
    idx.insert(0, "a", bands=mine)
    idx.insert(MASK, "b", bands=((333, 7), (444, 8)))
    probe = [(111, 0), (999, 0)]
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=probe)] == ["a"]
    probe[0] = (333, 0)  # same list object, other bands
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=probe)] == ["b"]
    idx.insert(0, "a", bands=mine)  # redelivery: the stored record's bands equal, nothing changes
    assert len(idx) == 2
    idx.insert(0, "a", bands=((555, 1), (666, 2)))  # other bands replace the old ones
    assert idx.query(0x00FF00FF00FF00FF, bands=((111, 0), (999, 0))) == []
    assert [h.doc_id for h in idx.query(0x00FF00FF00FF00FF, bands=((555, 0), (0, 0)))] == ["a"]
