"""Re-splitting: split nodes deal sub-buckets lazily, refused splits wait until the bucket doubles."""

from __future__ import annotations

import random
from pathlib import Path

from stream.index import BlockIndex
from stream.index.simhash.schemes import SimhashBlocks
from stream.index.simhash.table import CHILD_TAG


def test_a_split_node_values_its_entries_as_child_does_after_adds_and_removes() -> None:
    """A split node keeps each group's sub-key values and values entries added since on the next
    deal; a removal moves positions, so the values are computed again."""
    from stream.index.simhash.table import SplitBucket

    rng = random.Random(13)
    scheme = SimhashBlocks(64, 3, 0)
    node = SplitBucket(scheme.root_state((0, 0))[1])

    def expected(group: int) -> list[int]:
        return [int.from_bytes(scheme.child((rest, node.aux), group)[0], "big") for rest in node.rests]

    for round_ in range(4):
        for _ in range(50):
            fp = rng.getrandbits(64)
            node.add(len(node) + 1000 * round_, fp, scheme.root_state((fp, 0))[0])
        for group in range(scheme.groups((0, node.aux))):
            assert node.group_values(scheme, group).tolist() == expected(group)
        assert node.remove(node.handles[rng.randrange(len(node))])
        assert node.group_values(scheme, 1).tolist() == expected(1)


def test_a_split_bucket_deals_only_the_sub_buckets_a_query_reaches(tmp_path: object) -> None:
    """A split top-level bucket is loaded with its entries and deals a sub-bucket when a descent
    reaches it: after reopening, one query caches the root and the k + 1 leaves it reaches (not the
    thousands a split makes), answers exactly, and inserts and deletes below the split stay exact
    for sub-buckets dealt later."""

    from stream.index.simhash.table import SplitBucket

    rng = random.Random(11)
    hot = 0xBEEF << 48
    docs = {f"d{i}": hot | rng.getrandbits(48) for i in range(3000)}
    path = str(Path(str(tmp_path)) / "i")
    index = BlockIndex(path, k=3, min_split=256)
    for doc, fp in docs.items():
        index.insert(fp, doc)
    assert index.stats().splits >= 1
    index.close()
    reopened = BlockIndex(path, k=3, min_split=256)
    query = next(iter(docs.values())) ^ 0b101  # two bits away from d0
    found = {hit.doc_id: hit.distance for hit in reopened.query(query)}
    assert found == {doc: (fp ^ query).bit_count() for doc, fp in docs.items() if (fp ^ query).bit_count() <= 3}
    root = reopened.cache.buckets[b"\x00" + (0xBEEF).to_bytes(2, "big")]
    assert isinstance(root, SplitBucket) and len(root) == len(docs)
    sub_buckets = [key for key in reopened.cache.buckets if CHILD_TAG in key[3:4]]
    assert 4 <= len(sub_buckets) <= 4 * 4  # the leaves reached (and a nested level at most)
    # a new neighbour and a delete below the split, then sub-buckets dealt after them
    reopened.insert(query ^ 1, "new")
    assert reopened.delete("d0")
    for probe in (query, query ^ (1 << 40), query ^ (1 << 20)):
        expected = {doc for doc, fp in {**docs, "new": query ^ 1}.items()
                    if doc != "d0" and (fp ^ probe).bit_count() <= 3}
        assert {hit.doc_id for hit in reopened.query(probe)} == expected
    reopened.close()


def test_a_refused_split_is_remembered_when_its_bucket_is_evicted_and_dealt_again() -> None:
    """A leaf whose split was refused (here: copies of one fingerprint, which no split separates)
    is not checked again until it doubles, also after the cache dropped it and dealt it anew: the
    check walks every entry, and at Zipf 1M re-dealt leaves re-ran it on every insert."""
    rng = random.Random(14)
    hot = 0xBEEF << 48
    index = BlockIndex(k=3, min_split=64)
    for i in range(3000):  # a split hot bucket among many small ones
        index.insert(hot | rng.getrandbits(48) if i % 4 == 0 else rng.getrandbits(64), f"d{i}")
    copy = hot | rng.getrandbits(48)
    for i in range(100):
        index.insert(copy, f"copy{i}")
    refused = index.stats().kinds["simhash"].refused_splits
    assert refused >= 1
    index.cache.max_bytes = 1  # the next put evicts everything: loaded and dealt again from the store
    index.insert(copy, "copy100")
    index.cache.max_bytes = 1 << 30
    for i in range(101, 120):
        index.insert(copy, f"copy{i}")
    assert index.stats().kinds["simhash"].refused_splits == refused
    assert {hit.doc_id for hit in index.query(copy)} >= {f"copy{i}" for i in range(120)}


def test_resplit_off_keeps_one_level() -> None:
    idx = BlockIndex(k=3, resplit=False, split_cap=2, min_split=1)
    for i in range(100):
        idx.insert(0xFFFF << 48 | i, f"d{i}")
    assert idx.stats().splits == 0 and len(idx.stats().kinds["simhash"].levels) == 1
    idx.query(0xFFFF << 48)
    assert idx.stats().kinds["simhash"].candidates_max >= 100
