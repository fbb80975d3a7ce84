"""A deployment's state re-keyed for other partition counts (``dedup repartition``): pure, no Kafka.

The block table's changelog holds, per index partition, the index's records (each document's
fingerprint, time, bands and payload: the serialized fingerprint with its sketch) and the probe
stage's keys beside them; the gather state's, each document's gather state. Nothing is fingerprinted
again: each document is inserted afresh (new handles, entries and splits) into the partitions its keys
map to under the new count, with its place and version keys; each gather state moves to its id's new
partition and says which of them hold the document (its placement), as a deployment with the new count
would. The internal topics' input positions are left out: the new deployment's topics are new.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from stream.detect import MAX_MATCHES
from stream.errors import ConfigError
from stream.fingerprint import Fingerprint
from stream.index import CONFIG_KEY, BatchBands, BlockIndex, StoredDocument, TableLayout, key_kind, read_records
from stream.service.stages.gather import HELD_PREFIX
from stream.service.stages.gather_state import GatherState
from stream.service.stages.messages import dumps, loads, version_from_json
from stream.service.stages.probe import SETTINGS_KEY, SOURCE_PREFIX, VERSION_KEY, source_key
from stream.service.stages.routing import NO_ANCHORS, doc_partition, index_tables, routes

INSERT_CHUNK = 4096
KeyValues = list[tuple[bytes, bytes]]


@dataclass
class BlockState:
    """The documents of every old block-table partition, one row per id (its tables merged), and the
    probe stage's keys: where each document's input record is, the newest version of each id. Rows are
    columns of plain values (bands packed, tables a mask): a million documents fit in ~1 GB."""

    skip_prefix: bytes  # keys left out: the probe agent's input positions
    config: bytes | None = None
    settings: bytes | None = None
    rows: dict[str, int] = field(default_factory=dict)  # doc id -> row
    ids: list[str] = field(default_factory=list)
    fingerprints: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    bands: list[bytes] = field(default_factory=list)  # 8 bytes per band value, big-endian
    payloads: list[bytes] = field(default_factory=list)
    masks: list[int] = field(default_factory=list)  # bit t: indexed in table t
    sources: dict[bytes, bytes] = field(default_factory=dict)  # place key -> the input record
    versions: dict[bytes, bytes] = field(default_factory=dict)

    def add_partition(self, items: Mapping[bytes, bytes]) -> None:
        """One old partition's keys (the latest value of each, deleted ones left out)."""
        records = []
        for key, value in items.items():
            kind = key_kind(key)
            if kind == "record":
                records.append(value)
            elif kind == "meta" and not key.startswith(self.skip_prefix):
                self._add_meta(key, value)
        if not records:
            return
        if self.config is None:
            self.config = items.get(CONFIG_KEY)
        if self.config is None or items.get(CONFIG_KEY) != self.config:
            raise ConfigError("block table partitions hold index records of different settings (or none)")
        for doc in read_records(self.config, records):
            self.add_document(doc)

    def _add_meta(self, key: bytes, value: bytes) -> None:
        if key == SETTINGS_KEY:
            if self.settings is not None and self.settings != value:
                raise ConfigError("block table partitions were built with different settings")
            self.settings = value
        elif key.startswith(SOURCE_PREFIX):
            self.sources[key] = value
        elif key.startswith(VERSION_KEY):
            known = self.versions.get(key)
            if known is None or _version(value) > _version(known):
                self.versions[key] = value

    def add_document(self, doc: StoredDocument) -> None:
        """A document as one partition's record holds it (``tables``: those of that partition)."""
        bands = struct.pack(f">{len(doc.bands)}Q", *[value for value, _ in doc.bands])
        mask = sum(1 << t for t in doc.tables)
        row = self.rows.get(doc.doc_id)
        if row is None:
            self.rows[doc.doc_id] = len(self.ids)
            self.ids.append(doc.doc_id)
            self.fingerprints.append(doc.fingerprint)
            self.times.append(doc.ts)
            self.bands.append(bands)
            self.payloads.append(doc.payload)
            self.masks.append(mask)
            return
        if (self.fingerprints[row], self.times[row], self.bands[row], self.payloads[row]) != (
                doc.fingerprint, doc.ts, bands, doc.payload):
            raise ConfigError(f"document {doc.doc_id!r} is indexed as two versions in two partitions: its "
                              "newest version is still being indexed (let the old deployment finish)")
        self.masks[row] |= mask

    def band_pairs(self, row: int) -> tuple[tuple[int, int], ...]:
        packed = self.bands[row]
        return tuple((value, 0) for value in struct.unpack(f">{len(packed) // 8}Q", packed))

    def layout(self) -> TableLayout:
        if self.config is None:
            return TableLayout()
        settings = loads(self.config)
        return TableLayout(int(settings["k"]), int(settings["bands"]), int(settings["bits"]))


def _version(raw: bytes) -> tuple[float, float, int, int]:
    version = version_from_json(loads(raw))
    return version if version is not None else (float("-inf"), 0.0, 0, 0)


Routed = list[list[tuple[int, tuple[int, ...]]]]  # per new partition: (row, the tables it owns there)


def routed(state: BlockState, partitions: int, anchors: bool = True) -> Routed:
    """Per new partition, its documents in canonical order (time, id) as (row, the tables it owns),
    routed by their anchors too unless the new deployment has no anchor table. A document whose
    fingerprint routes to other tables than its records name is refused: its records were written by
    other settings or code."""
    layout = state.layout()
    out: Routed = [[] for _ in range(partitions)]
    for row in sorted(range(len(state.ids)), key=lambda r: (state.times[r], state.ids[r])):
        keys = layout.routing_keys(state.fingerprints[row], state.band_pairs(row))
        if sum(1 << t for t, _ in keys) != state.masks[row]:
            raise ConfigError(f"document {state.ids[row]!r} is indexed in other tables than its fingerprint routes "
                              "to: the index was built by other settings")
        payload = state.payloads[row]
        held = Fingerprint.from_bytes(payload).anchors()[0] if anchors and payload else NO_ANCHORS
        for partition, tables in routes(keys, held, partitions).items():
            out[partition].append((row, tuple(index_tables(tables))))
    return out


@dataclass
class Placement:
    """Which new partitions hold each indexed document: per row, bit p for partition p (an int per row, not
    a list: a million documents at 8 partitions)."""

    rows: dict[str, int]
    masks: list[int]

    @classmethod
    def of(cls, state: BlockState, documents: Routed) -> Placement:
        masks = [0] * len(state.ids)
        for partition, rows in enumerate(documents):
            bit = 1 << partition
            for row, _ in rows:
                masks[row] |= bit
        return cls(state.rows, masks)

    def partitions(self, doc: str) -> list[int]:
        """The new partitions holding ``doc``, ascending; none for an id without a record (an empty
        document, or one retention deleted)."""
        row = self.rows.get(doc)
        mask = 0 if row is None else self.masks[row]
        return [p for p in range(mask.bit_length()) if mask >> p & 1]


def _chunk_bands(state: BlockState, rows: list[int], width: int) -> BatchBands:
    """The bands of ``rows`` for ``insert_many``: one uint64 array when every row has them (unpacking
    them into Python pairs cost more than the insert's own band work), else pairs per row."""
    packed = [state.bands[r] for r in rows]
    if not width or any(len(p) != 8 * width for p in packed):
        return [state.band_pairs(r) for r in rows]
    out = np.zeros((len(rows), width, 2), dtype=np.uint64)
    out[:, :, 0] = np.frombuffer(b"".join(packed), dtype=">u8").reshape(len(rows), width)
    return out


class _RebuildStore:
    """A ``KVStore`` over a dict: an index built afresh on a store nothing else writes never scans it
    while inserting (its bucket cache is complete), so ``MemoryStore``'s sorted key list only cost
    (~20% of the rebuild's CPU); a scan sorts the keys then."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self.values.get(key)

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        return [self.values.get(key) for key in keys]

    def put(self, key: bytes, value: bytes) -> None:
        self.values[key] = value

    def delete(self, key: bytes) -> None:
        self.values.pop(key, None)

    def write_ops(self, ops: Sequence[tuple[bytes, bytes | None]]) -> None:
        for key, value in ops:
            if value is None:
                self.values.pop(key, None)
            else:
                self.values[key] = value

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        for key in sorted(k for k in self.values if k.startswith(prefix)):
            yield key, self.values[key]

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def block_partition(state: BlockState, documents: list[tuple[int, tuple[int, ...]]]
                    ) -> Iterator[tuple[bytes, bytes]]:
    """The changelog of one new block-table partition: its index built afresh from ``documents``, their
    place keys, every id's version key and the settings. A version key refuses older versions of its id;
    which new partitions a deployment with the new count would have sent a deleted id (no record, no
    gather state) is not known, so every one gets it."""
    layout = state.layout()
    store = _RebuildStore()
    index = BlockIndex(None, k=layout.k, bands=layout.bands, bits=layout.bits, store=store, sole_writer=True)
    for start in range(0, len(documents), INSERT_CHUNK):
        chunk = documents[start : start + INSERT_CHUNK]
        rows = [row for row, _ in chunk]
        index.insert_many([state.fingerprints[r] for r in rows], [state.ids[r] for r in rows],
                          [state.times[r] for r in rows], _chunk_bands(state, rows, layout.bands),
                          [tables for _, tables in chunk], [state.payloads[r] for r in rows])
    index.write_pending()  # its entries as segments and the watermark past them: the new worker redoes nothing
    yield from ((key, value) for key, value in store.values.items() if key_kind(key) != "derived")
    del index, store
    if state.settings is not None:
        yield SETTINGS_KEY, state.settings
    for row, _ in documents:
        key = source_key((state.times[row], state.ids[row]))
        value = state.sources.get(key)
        if value is not None:
            yield key, value
    yield from state.versions.items()


def block_partitions(state: BlockState, documents: Routed) -> Iterator[tuple[int, Iterator[tuple[bytes, bytes]]]]:
    """Every new block-table partition's changelog, its documents as ``routed`` them, one partition at a
    time (one index in memory)."""
    for partition, rows in enumerate(documents):
        yield partition, block_partition(state, rows)


@dataclass
class GatherStates:
    """The old gather states re-keyed: per new partition its (id, state) records."""

    partitions: list[KeyValues]
    unfinished: list[str]  # ids whose current round has not completed: the old deployment was not done
    held: int = 0  # of the records: keys of revisions held to be published later (``gather.HELD_PREFIX``)

    @property
    def count(self) -> int:
        """Gather states moved."""
        return sum(len(p) for p in self.partitions) - self.held


def gather_partitions(old: Iterable[Mapping[bytes, bytes]], partitions: int, skip_prefix: bytes,
                      placed: Callable[[str], list[int]], limit: int = MAX_MATCHES) -> GatherStates:
    """Each gather state to its id's partition under the new count, as a deployment with that count would
    hold it: where the document is indexed (``placed``: the new partitions holding its record), its
    finished round answered by those, so its next version drops it from those and no others. A held
    revision's key goes with it, so the new deployment publishes it when due."""
    out = GatherStates([[] for _ in range(partitions)], [])
    for items in old:
        for key, value in items.items():
            if key.startswith(skip_prefix):
                continue
            if key.startswith(HELD_PREFIX):
                doc = key[len(HELD_PREFIX):].decode("utf-8", "surrogatepass")
                out.partitions[doc_partition(doc, partitions)].append((key, value))
                out.held += 1
                continue
            state = GatherState.from_json(loads(value), limit)
            if not state.complete:
                out.unfinished.append(state.doc)
                continue
            doc = key.decode("utf-8", "surrogatepass")
            where = placed(doc)
            state.expected, state.got, state.placed, state.dropping = len(where), list(where), list(where), []
            out.partitions[doc_partition(doc, partitions)].append((key, dumps(state.to_json())))
    return out
