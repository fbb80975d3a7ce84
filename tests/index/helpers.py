"""Fingerprint sets, brute force and the changelog-cut check shared by the index tests (and the
service's table store tests)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from stream.index import BlockIndex
from stream.index.records import META_NS, handle_bytes
from stream.index.simhash.schemes import BlockScheme, near_equal_widths
from stream.index.simhash.segments import SEGMENT_TAG, root_entries
from stream.index.simhash.table import ENTRY_TAG
from stream.storage import KVStore, MemoryStore

BITS = 64


MASK = (1 << BITS) - 1


def flip(fp: int, distance: int, rng: random.Random) -> int:
    for bit in rng.sample(range(BITS), distance):
        fp ^= 1 << bit
    return fp


def make_set(seed: int, k: int, n: int, skew: str) -> dict[str, int]:
    """doc id -> fingerprint: a skewed background plus planted neighbours of a few centres."""
    rng = random.Random(seed)
    widths = near_equal_widths(BITS, k + 1)
    top_low = BITS - widths[0]
    second_low = top_low - widths[1]
    shared_top = rng.getrandbits(widths[0]) << top_low
    shared_two = shared_top | rng.getrandbits(widths[1]) << second_low
    docs: dict[str, int] = {}
    for i in range(n):
        r = rng.getrandbits(BITS)
        if skew == "one_block" and i % 5:  # 80% share table 0's block
            fp = shared_top | (r & ((1 << top_low) - 1))
        elif skew == "two_blocks" and i % 5:  # 80% share the blocks of tables 0 and 1
            fp = shared_two | (r & ((1 << second_low) - 1))
        elif skew == "duplicates" and i % 2:  # half are one of three exact fingerprints
            fp = [shared_top, shared_two, MASK][i % 3]
        else:
            fp = r
        docs[f"bg{i}"] = fp
    centres = rng.sample(sorted(docs.values()), min(5, len(docs)))
    for c, centre in enumerate(centres):
        for d in range(k + 2):  # 0..k are neighbours, k + 1 is not
            for rep in range(2):
                docs[f"c{c}d{d}r{rep}"] = flip(centre, d, rng)
    return docs


def brute_force(docs: dict[str, int], query: int, k: int) -> dict[str, int]:
    return {doc: (fp ^ query).bit_count() for doc, fp in docs.items() if (fp ^ query).bit_count() <= k}


def insert_batch_exactly(index: BlockIndex, docs: dict[str, int], batch: dict[str, int], k: int = 3) -> dict[str, int]:
    """``query_insert_many`` of ``batch``: each answer equals brute force over ``docs`` and the batch's
    earlier documents; returns ``docs`` with the batch."""
    answers = index.query_insert_many(list(batch.values()), list(batch))
    seen = dict(docs)
    for (doc, fp), hits in zip(batch.items(), answers, strict=True):
        assert {h.doc_id: h.distance for h in hits} == brute_force(seen, fp, k), doc
        seen[doc] = fp
    return seen


FORCED = {"split_mu": 0.0, "split_cap": 8, "min_split": 4}


SKEWS = st.sampled_from(["uniform", "one_block", "two_blocks", "duplicates"])


K = 3


def stored_contents(index: BlockIndex) -> dict[bytes, bytes]:
    """The index's store after ``write_pending`` as ``logical_contents`` gives it: what the batch path
    and the one-document path must agree on."""
    index.write_pending()
    return logical_contents(index.store, index.layout.simhash)


def logical_contents(store: KVStore, schemes: Sequence[BlockScheme]) -> dict[bytes, bytes]:
    """A block index's store, metadata left out, with every top-level bucket's entries as the entry
    keys they stand for (segments and tombstones resolved: stream/index/simhash/segments.py)."""
    out: dict[bytes, bytes] = {}
    by_root: dict[bytes, list[tuple[bytes, bytes]]] = defaultdict(list)
    for key, value in store.scan_prefix(b""):
        if key.startswith(META_NS):
            continue
        if key[0] < len(schemes):
            root = key[: 1 + schemes[key[0]].top_len]
            if key[len(root) : len(root) + 1] in (ENTRY_TAG, SEGMENT_TAG):
                by_root[root].append((key, value))
                continue
        out[key] = value
    for root, kept in by_root.items():
        pairs, _, _ = root_entries(kept, root + ENTRY_TAG, root + SEGMENT_TAG, schemes[root[0]].payload_len)
        out.update((root + ENTRY_TAG + handle_bytes(handle), payload) for handle, payload in pairs)
    return out


class ChangelogStore(MemoryStore):
    """A MemoryStore that also records its writes in changelog order (``write_ops`` writes through
    ``put`` and ``delete``)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self.log.append((key, bytes(value)))
        super().put(key, value)

    def delete(self, key: bytes) -> None:
        self.log.append((key, None))
        super().delete(key)


def replay(log: list[tuple[bytes, bytes | None]]) -> MemoryStore:
    store = MemoryStore()
    for key, value in log:
        if value is None:
            store.delete(key)
        else:
            store.put(key, value)
    return store


def open_index(store: MemoryStore, write_buffer: int = 0) -> BlockIndex:
    return BlockIndex(None, k=K, store=store, write_buffer=write_buffer, **FORCED)  # type: ignore[arg-type]


Log = list[tuple[bytes, bytes | None]]


def check_every_prefix_plus_redelivery(
    open_live: Callable[[str], tuple[BlockIndex, Log]], recover: Callable[[Log, str], BlockIndex]
) -> None:
    """Interrupt one insert (a plain one, or the replacement of an indexed id) after every prefix of
    its changelog records, recover from that prefix, redeliver it and the rest: queries must equal
    brute force. ``open_live(name)`` gives an index and its (growing) log; ``recover(log, name)``
    does what a worker taking the state over does. Shared with the service's table store tests."""
    rng = random.Random(7)
    docs = list(make_set(3, K, 40, "one_block").items())
    cut_at = 30  # the operations around here split buckets (FORCED thresholds)
    # a replacement (new fingerprint for an indexed id) is the interrupted operation in one variant
    stream = [*docs[:cut_at], (docs[5][0], flip(docs[5][1], 2, rng)), *docs[cut_at:]]
    for interrupted in (cut_at, cut_at + 1):
        index, log = open_live(f"live{interrupted}")
        for doc_id, fp in stream[:interrupted]:
            index.insert(fp, doc_id)
        before = len(log)
        index.insert(stream[interrupted][1], stream[interrupted][0])
        full_log = list(log)
        assert len(full_log) > before
        for cut in range(before, len(full_log) + 1):
            recovered = recover(full_log[:cut], f"cut{interrupted}-{cut}")
            for doc_id, fp in stream[interrupted:]:  # redelivery of the interrupted insert, then the rest
                recovered.insert(fp, doc_id)
            final = dict(stream)
            for query in list(final.values())[::3] + [flip(fp, K, rng) for fp in list(final.values())[:10]]:
                got = {hit.doc_id: hit.distance for hit in recovered.query(query)}
                assert got == brute_force(final, query, K), f"cut {cut - before}/{len(full_log) - before}"
